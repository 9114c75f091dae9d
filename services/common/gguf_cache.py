"""Converted copies of GGUF files, kept in the user's cache folder.

Converted copies of GGUF files, kept under `$XDG_CACHE_HOME/rewardfleet/<kind>/<key>/` (default
`~/.cache/rewardfleet/...`).

transformers reads a GGUF file slowly: parsing it takes seconds per read, converting SmolLM2's 49 152-token
vocabulary tens of seconds. The gateway caches the converted tokenizer (`gguf-tokenizers`), the model server
the whole converted checkpoint (`gguf-checkpoints`); later loads read a plain HF folder. The key is the file's
resolved path, size and modification time, so a replaced file is converted again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_dir(kind: str, file: Path) -> Path:
    stat = file.stat()
    key = hashlib.sha256(f"{file.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:24]
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "rewardfleet" / kind / key


def publish(cached: Path, write: Callable[[Path], None]) -> bool:
    """`write(folder)` into a folder beside `cached`, then rename it to `cached`: a concurrent loader (another
    worker or server) never sees half a folder. False when the cache cannot be written (a read-only home:
    no cache, every load converts again); if another process published first, its copy is kept."""
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=cached.parent))
    except OSError:
        return False
    try:
        write(staging)
        staging.rename(cached)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return cached.is_dir()
    return True
