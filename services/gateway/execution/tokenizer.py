"""The reward model's tokenizer (`reward_model_tokenizer`), loaded only when configured.

The reward model's tokenizer (`reward_model_tokenizer`). transformers is an optional dependency, imported
only when a tokenizer is configured.

The path is an HF checkpoint folder (or hub name) or a `.gguf` file: transformers reads a GGUF file's
tokenizer, chat template included, with `from_pretrained(folder, gguf_file=name)` (this needs the `gguf`
package of the `model` extra). That is what the embedded judge (`builtin:smollm2-135m-instruct`) needs for
the judge's probability mode; `rewardfleet up` writes the built-in's resolved file path here.

Converting a GGUF vocabulary takes tens of seconds (SmolLM2's 49 152 tokens: ~40 s on a busy 2-core
machine), and the gateway and every worker process load the tokenizer. So the first load saves the converted
fast tokenizer (chat template included) under `$XDG_CACHE_HOME/rewardfleet/gguf-tokenizers/<key>/`, keyed by
the file's path, size and mtime; later loads read that folder in about a second. While there is no cached
copy yet, `load_tokenizer` returns at once a `LazyTokenizer` that converts in a background thread, so the
gateway is not held back (`rewardfleet up` starts it before the judge pool has even loaded); the first call
that needs the tokenizer waits for the conversion (reward functions call tokenizers off the event loop).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from rewardfleet.services.common.gguf_cache import cache_dir, publish
from rewardfleet.services.gateway.errors import TokenizerUnavailable

CACHE_KIND = "gguf-tokenizers"  # services/common/gguf_cache.py's folder for converted GGUF tokenizers


def load_tokenizer(path: str) -> Any:
    if path.startswith("builtin:"):
        # The gateway does not import the model server's code (import contract); the fleet resolves the name.
        raise TokenizerUnavailable(
            f"reward_model_tokenizer: {path!r} is a built-in model name, which `rewardfleet up` resolves; "
            "a gateway started alone needs the checkpoint's path (for a GGUF model, the .gguf file)"
        )
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(
            "reward_model_tokenizer is set but transformers is not installed; "
            "install the model extra: pip install 'reward-fleet[model]'"
        ) from exc
    file = Path(path)
    try:
        if file.suffix == ".gguf" and file.is_file():
            cached = cache_dir(CACHE_KIND, file)
            if (cached / "tokenizer_config.json").is_file():
                return AutoTokenizer.from_pretrained(str(cached))
            return LazyTokenizer(AutoTokenizer, file)
        return AutoTokenizer.from_pretrained(path)
    except Exception as exc:
        raise TokenizerUnavailable(f"reward_model_tokenizer: cannot load {path!r}: {exc}") from exc


def _gguf_tokenizer(auto: Any, file: Path, cached: Path) -> Any:
    if (cached / "tokenizer_config.json").is_file():
        return auto.from_pretrained(str(cached))
    tokenizer = auto.from_pretrained(str(file.parent), gguf_file=file.name)
    publish(cached, lambda folder: tokenizer.save_pretrained(str(folder)))
    return tokenizer


class LazyTokenizer:
    """A GGUF tokenizer converting in a background thread; attribute access and calls wait for it."""

    def __init__(self, auto: Any, file: Path) -> None:
        self._auto = auto
        self._file = file
        # Where the converted copy goes is decided now, in the caller's environment, not whenever the thread
        # gets to run (XDG_CACHE_HOME may have changed by then).
        self._cached = cache_dir(CACHE_KIND, file)
        self._tokenizer: Any = None
        self._error: TokenizerUnavailable | None = None
        self._done = threading.Event()
        threading.Thread(target=self._load, name="gguf-tokenizer", daemon=True).start()

    def _load(self) -> None:
        try:
            self._tokenizer = _gguf_tokenizer(self._auto, self._file, self._cached)
        except Exception as exc:
            self._error = TokenizerUnavailable(
                f"reward_model_tokenizer: cannot load {str(self._file)!r}: {exc}"
            )
        finally:
            self._done.set()

    def get(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._tokenizer

    def __getattr__(self, name: str) -> Any:
        return getattr(self.get(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get()(*args, **kwargs)

    def __len__(self) -> int:
        return len(self.get())
