"""Writes tests/nemo_gym/pinned_manifest.json from NeMo Gym's snapshot: facts about the pinned commit only
(every resources server's folder, and the git blob id of each file under the folders `COVERED` of each),
no NeMo Gym content. gym_mirror reads a file from NeMo Gym's wheel when the snapshot is absent, and accepts
it only when its blob id is the one listed here.

    .venv/bin/python -m tests.nemo_gym.pin_manifest [--check]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from typing import Any

from tests.nemo_gym import gym_mirror

# The folders of a server whose files the tests read (rows, task files, configs, prompt templates).
# "." is the files at the top of a server's folder (app.py, prompts.py, schemas.py: prompts some servers keep
# in code).
COVERED = ("data", "configs", "prompt_templates", "prompts", ".")


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(gym_mirror.MIRROR), *args], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def build() -> dict[str, Any]:
    """The manifest of the pinned commit, read from the snapshot."""
    servers: dict[str, dict[str, str]] = {}
    for line in _git("ls-tree", gym_mirror.COMMIT, f"{gym_mirror.SERVERS}/").splitlines():
        meta, path = line.split("\t", 1)
        name = path.rsplit("/", 1)[1]
        if meta.split()[1] == "tree" and not name.startswith("."):
            servers[name] = {}
    for line in _git("ls-tree", "-r", gym_mirror.COMMIT, f"{gym_mirror.SERVERS}/").splitlines():
        meta, path = line.split("\t", 1)
        _, kind, blob = meta.split()
        _, server, rest = [*path.split("/", 2), ""][:3]
        if kind == "blob" and server in servers and gym_mirror.folder_of(rest) in COVERED:
            servers[server][rest] = blob
    return {
        "repository": "NVIDIA-NeMo/Gym",
        "commit": gym_mirror.COMMIT,
        "generated_by": "python -m tests.nemo_gym.pin_manifest",
        "covered": list(COVERED),
        "servers": {s: dict(sorted(files.items())) for s, files in sorted(servers.items())},
    }


def render(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, indent=1) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed manifest differs")
    args = parser.parse_args()
    if (why_not := gym_mirror.missing()) is not None:
        sys.exit(why_not)
    text = render(build())
    if args.check:
        sys.exit(0 if gym_mirror.MANIFEST.read_text() == text else f"{gym_mirror.MANIFEST} is out of date")
    gym_mirror.MANIFEST.write_text(text)
    print(f"wrote {gym_mirror.MANIFEST}")


if __name__ == "__main__":
    main()
