"""NeMo Gym's files at one commit, read at test time (never copied into this repository).

From the local mirror (`NEMO_GYM_MIRROR`, a bare clone of NVIDIA-NeMo/Gym) at `COMMIT`; without it, from
NeMo Gym 0.4.0's wheel that .ci/setup downloads (tests/reward_fns/nemo_gym_rows.py), but only a file whose
bytes hash to what `COMMIT` holds (`PINNED`), so both sources give the pinned commit's rows or none. A file
neither gives raises `MirrorMissing`, whose message the tests skip with.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from tests.reward_fns import nemo_gym_rows

MIRROR = Path(os.environ.get("NEMO_GYM_MIRROR", "/work/.mirror/NVIDIA-NeMo+Gym/repo"))
COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
_RS = "resources_servers"
# SHA-256 of each file the tests read (resources_servers/<server>/data/<name>), at COMMIT.
PINNED: dict[tuple[str, str], str] = {
    (
        "example_single_tool_call",
        "example_rollouts.jsonl",
    ): "eef169e88e53059788e7c9cf7c48f08cd9e1d0e305f8b1410853f62355adb55f",
    (
        "example_single_tool_call",
        "example.jsonl",
    ): "883c8fd9d6fb1e1a0d31d18cb76086dde7a66f12dfe1a5805e2332f140491d65",
    (
        "example_multi_step",
        "example_rollouts.jsonl",
    ): "1194485f04ca618d090a1a60a4d5d414982147a61e9d3fb93948f50de80c2c47",
    (
        "example_multi_step",
        "example.jsonl",
    ): "e7712387d4761484ea54b85446a1f761f9ccba26fc859303514925552cf33d67",
    (
        "calendar",
        "example_rollouts.jsonl",
    ): "9c115bd6f3a7dedd9f944e4d152c813cd525791e80acb4b09e6719b025fd57c3",
    ("calendar", "example.jsonl"): "4383b50c7d24e91c421c0f1844c314a7716b6139d7a29e48a436fabc576ecb34",
    (
        "blackjack",
        "example_rollouts.jsonl",
    ): "e35fff8c8230a2919d66347d7f8dbe53098ce5588d7aac75d9d74b3c8a0557ff",
    ("blackjack", "example.jsonl"): "45de330cd07a5e4d662e61db769ad7700628a456f74fb458920231e9b95bc517",
    (
        "grl_sokoban",
        "example_rollouts.jsonl",
    ): "5456af3791762238d71cd20c6069bd33656709a119aa69a9b709d16593d48fc4",
    ("grl_sokoban", "example.jsonl"): "ac8b281e3d25232ea05e6b5c26d78a17df2dffe967004690a8557fc597eb811c",
    (
        "example_tool_call_multireward",
        "example_rollouts.jsonl",
    ): "f0f1e4baa64f6ccd24dcca89824e18433babb8144d2070c14754d0797b334da3",
    (
        "example_tool_call_multireward",
        "example.jsonl",
    ): "2dd989a37f1e10866edd5ea45a8863551b41bd2dc6921e592c64888c3342989b",
    (
        "example_mcp_weather",
        "example_rollouts.jsonl",
    ): "9189e77b115a84d18241b072f8e11e62b680c191751863b088d6628ee61078e4",
    (
        "example_mcp_weather",
        "example.jsonl",
    ): "865b713945a0d277edc78053bea4be85dcad070c0c50be8a1ff36b10c1ea6838",
    (
        "math_advanced_calculations",
        "example_rollouts.jsonl",
    ): "5f28f4a4dce2fc27c8889e869acacf1f9162e990a396bc56270b5b87598ba0d7",
    (
        "math_advanced_calculations",
        "example.jsonl",
    ): "cc18edd78945de2b85610fece530db35178562a9c96bf5f294daab282527acfc",
    (
        "circle_click",
        "example_rollouts.jsonl",
    ): "7cb2458e03f9978ade6cfa961039636ffb0778832cb746d2a3e9464b74f0adf3",
    ("openenv", "example_rollouts.jsonl"): "4e321f79c483ea2c5a88f3bbf3462e86cff4c4f1ebf2e9b2e8e2b456274b5aaa",
    ("circle_click", "example.jsonl"): "6d40538edbe5237e2f5017a7f84d96b23a3d1e35ec5ff0c5b5777e5ac745e6d0",
    (
        "workplace_assistant",
        "example_rollouts.jsonl",
    ): "b8265d1307e22f86b86a169034e10490399dbf19e1d5736991d6b86a10bc2d03",
    (
        "workplace_assistant",
        "example.jsonl",
    ): "2df8a2537121aa40041b46a96683f0397cc945bf5de83062b76ca6e3eaf6296d",
}


class MirrorMissing(Exception):
    pass


def _from_mirror(path: str) -> bytes | None:
    if not MIRROR.is_dir():
        return None
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{path}"], capture_output=True, check=False
    )
    return done.stdout if done.returncode == 0 else None


def _from_wheel(path: str) -> bytes | None:
    try:
        with zipfile.ZipFile(nemo_gym_rows.wheel_path()) as wheel:
            return wheel.read(path)
    except (FileNotFoundError, KeyError):
        return None


@cache
def read(server: str, name: str) -> str:
    """A data file of a NeMo Gym server at `COMMIT`; MirrorMissing (saying why) when no source gives it."""
    path = f"{_RS}/{server}/data/{name}"
    pinned = PINNED.get((server, name))
    if pinned is None:
        raise MirrorMissing(f"{path}: no pinned hash (add it to PINNED from the mirror at {COMMIT[:12]})")
    for source in (_from_mirror, _from_wheel):
        data = source(path)
        if data is not None and hashlib.sha256(data).hexdigest() == pinned:
            return data.decode()
    raise MirrorMissing(
        f"{path} at NeMo Gym {COMMIT[:12]}: not in the mirror {MIRROR} (set NEMO_GYM_MIRROR to a clone of "
        f"NVIDIA-NeMo/Gym), and NeMo Gym {nemo_gym_rows.VERSION}'s wheel (.ci/setup) lacks it or holds "
        "another version of it"
    )


def jsonl(server: str, name: str) -> list[dict[str, Any]]:
    """The rows of `resources_servers/<server>/data/<name>`."""
    text = read(server, name)
    return [json.loads(line) for line in text.splitlines() if line.strip()]
