"""Where no cache can be written, a GGUF checkpoint is served from its file as it is
(runners/gguf_checkpoint.py; the converted copy is checked against the file in test_smollm2_judge.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardfleet.services.model_server.checkpoints import Checkpoint
from rewardfleet.services.model_server.runners.gguf_checkpoint import loadable


def test_without_a_writable_cache_the_gguf_file_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")  # never read: nothing is converted when the cache cannot be written
    not_a_dir = tmp_path / "cache-is-a-file"
    not_a_dir.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(not_a_dir))
    checkpoint = Checkpoint(tmp_path, gguf.name)
    assert loadable(checkpoint) is checkpoint
