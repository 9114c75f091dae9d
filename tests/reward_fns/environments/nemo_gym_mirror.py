"""NeMo Gym's repository at one commit, read at test time from the local mirror (never copied into ours).

`MIRROR` is a bare git directory (`fetch github:NVIDIA-NeMo/Gym`); the tests that need it skip, naming it,
when it is absent. `COMMIT` pins what the recorded rollouts and tasks are read from.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

MIRROR = Path(os.environ.get("NEMO_GYM_MIRROR", "/work/.mirror/NVIDIA-NeMo+Gym/repo"))
COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"


class MirrorMissing(Exception):
    pass


@cache
def read(path: str) -> str:
    """One file of NeMo Gym at `COMMIT`; MirrorMissing (with the reason) when the mirror cannot give it."""
    if not MIRROR.is_dir():
        raise MirrorMissing(
            f"NeMo Gym's mirror {MIRROR} is absent (set NEMO_GYM_MIRROR to a clone of NVIDIA-NeMo/Gym)"
        )
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{path}"], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise MirrorMissing(
            f"NeMo Gym's mirror {MIRROR} has no {path} at {COMMIT[:12]}: {done.stderr.strip()}"
        )
    return done.stdout


def jsonl(server: str, name: str) -> list[dict[str, Any]]:
    """The rows of `resources_servers/<server>/data/<name>`."""
    text = read(f"resources_servers/{server}/data/{name}")
    return [json.loads(line) for line in text.splitlines() if line.strip()]
