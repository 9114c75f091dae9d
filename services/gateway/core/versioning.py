"""Version strings of everything that can score a sample.

A reward function's version is a hash of its source file *and* its `FunctionConfig` (timeout, reward_kwargs,
on_error_score, ...): the same file run with other kwargs is another reward, and a training run must be able
to tell them apart in its logs. A drop-in folder's file also hashes the folder's helpers (core/registry.py):
an edited helper is another reward too. Composites, graders and group functions hash their spec together with
the versions of what they call, so changing a component changes the composite's version too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from rewardfleet.services.gateway.schemas import canonical_json

VERSION_CHARS = 12


def digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two part lists hash alike
        h.update(part)
    return h.hexdigest()[:VERSION_CHARS]


def function_version(source_file: Path, config: BaseModel | dict[str, Any]) -> str:
    """Hash of the function's source bytes and its config."""
    return digest(source_file.read_bytes(), canonical_json(config))


def spec_version(spec: BaseModel | dict[str, Any], dependencies: Iterable[str] = ()) -> str:
    """Hash of a declarative spec and the versions of the functions it calls (in a stable order)."""
    return digest(canonical_json(spec), *(d.encode() for d in dependencies))
