"""The GGUF tokenizer's converted copy goes where the caller's environment said when the load began, even
though the conversion runs later in a background thread (a race the SmolLM2 test hit under load)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.gateway.execution.tokenizer import LazyTokenizer


class _SlowAuto:
    """Stands in for AutoTokenizer: converting waits until the test lets it, then saves like a tokenizer."""

    release = threading.Event()

    @classmethod
    def from_pretrained(cls, path: str, gguf_file: str | None = None) -> Any:
        cls.release.wait(timeout=30)
        return _Saved()


class _Saved:
    def save_pretrained(self, folder: str) -> None:
        (Path(folder) / "tokenizer_config.json").write_text("{}")


def test_the_cache_folder_is_chosen_when_the_load_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "judge.gguf"
    gguf.write_bytes(b"GGUF")
    first, later = tmp_path / "first-cache", tmp_path / "later-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(first))
    lazy = LazyTokenizer(_SlowAuto, gguf)
    monkeypatch.setenv("XDG_CACHE_HOME", str(later))  # the caller restores its environment before conversion
    _SlowAuto.release.set()
    assert isinstance(lazy.get(), _Saved)
    assert list(first.glob("rewardfleet/gguf-tokenizers/*/tokenizer_config.json"))
    assert not later.exists()
