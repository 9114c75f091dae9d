"""NeMo Gym's GitHub snapshot, read at test time at one pinned commit (nothing of it is committed here): the
list of resources servers, their recorded rollouts, task files and configs."""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
MIRROR = Path(os.environ.get("NEMO_GYM_MIRROR", "/work/.mirror/NVIDIA-NeMo+Gym/repo"))
SERVERS = "resources_servers"


def missing() -> str | None:
    """Why the snapshot cannot be read (None: it can)."""
    if not MIRROR.exists():
        return f"NeMo Gym's snapshot is not at {MIRROR} (set NEMO_GYM_MIRROR to a clone of NVIDIA-NeMo/Gym)"
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "cat-file", "-e", f"{COMMIT}^{{commit}}"], capture_output=True
    )
    if done.returncode != 0:
        return f"NeMo Gym's snapshot at {MIRROR} lacks commit {COMMIT}"
    return None


@functools.lru_cache(maxsize=512)
def show(path: str) -> str | None:
    """The text of `path` at the pinned commit, or None when it does not exist there."""
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{path}"], capture_output=True, timeout=60
    )
    return done.stdout.decode() if done.returncode == 0 else None


def listing(path: str) -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "ls-tree", "--name-only", f"{COMMIT}:{path}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.split() if done.returncode == 0 else []


def servers() -> list[str]:
    """Every resources server at the pinned commit (a folder of `resources_servers/`)."""
    return sorted(n for n in listing(SERVERS) if not n.startswith("."))


def data(server: str, name: str) -> list[dict[str, Any]]:
    """The JSON rows of `resources_servers/<server>/data/<name>`; lines that are not JSON (the placeholder
    rows some servers ship) are left out."""
    rows = []
    for line in (show(f"{SERVERS}/{server}/data/{name}") or "").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def rollouts(server: str) -> list[dict[str, Any]]:
    return data(server, "example_rollouts.jsonl")


def config(server: str, name: str) -> dict[str, Any]:
    """One config file of the server, parsed (its settings, prompt template paths and defaults)."""
    import yaml

    text = show(f"{SERVERS}/{server}/configs/{name}")
    if text is None:
        raise FileNotFoundError(f"{server}: no configs/{name} at {COMMIT}")
    return dict(yaml.safe_load(text))


def prompt_text(row: dict[str, Any]) -> str:
    """The prompt of a row, as one string (joins a rollout to its task row)."""
    raw = row.get("responses_create_params", {}).get("input")
    if isinstance(raw, str):
        return raw
    return "\n".join(str(m.get("content")) for m in raw or [] if isinstance(m, dict))
