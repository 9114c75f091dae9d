"""NeMo Gym's data files at one commit, read at test time (never copied into this repository): from NeMo
Gym's snapshot, else from its wheel when the bytes are the pinned commit's (tests/nemo_gym/gym_mirror.py). A
file neither gives raises `MirrorMissing`, whose message the tests skip with.
"""

from __future__ import annotations

import json
from typing import Any

from tests.nemo_gym import gym_mirror

MIRROR = gym_mirror.MIRROR
COMMIT = gym_mirror.COMMIT
MirrorMissing = gym_mirror.Unavailable


def read(server: str, name: str) -> str:
    """A data file of a NeMo Gym server at `COMMIT`; MirrorMissing (saying why) when no source gives it."""
    path = f"{gym_mirror.SERVERS}/{server}/data/{name}"
    text = gym_mirror.show(path)
    if text is None:
        raise FileNotFoundError(f"{path}: no such file at NeMo Gym {COMMIT[:12]}")
    return text


def jsonl(server: str, name: str) -> list[dict[str, Any]]:
    """The rows of `resources_servers/<server>/data/<name>`."""
    text = read(server, name)
    return [json.loads(line) for line in text.splitlines() if line.strip()]
