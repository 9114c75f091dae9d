"""The catalogue served: a gateway from deploy/nemo_gym/catalog.yaml and a stand-in judge for the replays.

The stand-in (tests/nemo_gym/judge_replay.py) answers the judge replays' recorded requests."""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from bench.harness.processes import ChildProcess, free_port
from tests.nemo_gym import gym_mirror
from tests.nemo_gym.catalog import CONFIG, REPLAYS
from tests.nemo_gym.judge_rows import (
    answer_only_recordings,
    arena_recordings,
    judge_inputs,
    judge_kwargs,
    judge_text,
    recorded_judge,
    rubric_recordings,
)
from tests.support.gateway import Gateway, start_gateway


def judge_recordings() -> list[dict[str, Any]]:
    """Every recorded judge request of the judge replays whose rows can be read, with the judge's recorded
    answer."""
    out = []
    for server, replay in REPLAYS.items():
        if replay.judge is None:
            continue
        try:
            out += _server_recordings(server)
        except gym_mirror.Unavailable:
            continue  # its tests skip, naming the file
    return out


def _server_recordings(server: str) -> list[dict[str, Any]]:
    out = []
    for row in gym_mirror.rollouts(server):
        out += answer_only_recordings(server, row) + rubric_recordings(row) + arena_recordings(server, row)
        for e in recorded_judge(row):
            messages = [{"role": m.get("role"), "content": m.get("content")} for m in judge_inputs(e)]
            out.append({"messages": messages, "answer": judge_text(e)})
    return out


def gateway_config(base: dict[str, Any], judge_url: str | None) -> dict[str, Any]:
    """The catalogue's gateway config with the judge replays pointed at the stand-in judge at `judge_url`."""
    config = {**base, "workers": 2, "max_body_bytes": 8 * 1024 * 1024}
    judged = {s: r.judge for s, r in REPLAYS.items() if r.judge is not None}
    if judged and judge_url is not None:
        config["external_pools"] = {JUDGE_POOL: {"base_url": f"{judge_url}/v1", "model": "recorded"}}
        functions = dict(config.get("functions") or {})
        for server, name in judged.items():
            fn = importlib.import_module(f"rewardfleet.reward_fns.{name}").compute_score
            given = (functions.get(name) or {}).get("reward_kwargs") or {}
            try:
                theirs = judge_kwargs(server, fn)
            except gym_mirror.Unavailable:
                continue  # its tests skip, naming the file
            kwargs = {**given, **theirs, "pool": JUDGE_POOL}
            functions[name] = {"timeout_s": 60.0, "reward_kwargs": kwargs}
        config["functions"] = functions
    return config


JUDGE_POOL = "nemo_gym_judge"


def require_judge_sources(server: str) -> None:
    """Skip (naming the file) when a judge server's prompt sources cannot be read here: `gateway_config`
    left its judge settings out, so its replays would fail for that reason instead."""
    replay = REPLAYS[server]
    if replay.judge is not None:
        fn = importlib.import_module(f"rewardfleet.reward_fns.{replay.judge}").compute_score
        with gym_mirror.skip_unavailable():
            judge_kwargs(server, fn)
            _server_recordings(server)


@contextlib.contextmanager
def serving(tmp: Path) -> Iterator[Gateway]:
    """A gateway configured from deploy/nemo_gym/catalog.yaml and, for the judge replays, a stand-in judge
    answering the recorded judge requests; both stopped on exit."""
    recordings = tmp / "judge_recordings.json"
    recordings.write_text(json.dumps(judge_recordings()))
    port = free_port()
    cmd = [sys.executable, "-m", "tests.nemo_gym.judge_replay", "--port", str(port)]
    judge = ChildProcess([*cmd, "--recordings", str(recordings)], tmp / "judge.log")
    try:
        judge.wait_http(f"http://127.0.0.1:{port}/replay/log", timeout_s=60)
        base = yaml.safe_load(CONFIG.read_text())["gateway"]
        gateway = start_gateway(tmp, gateway_config(base, f"http://127.0.0.1:{port}"), None)
        try:
            yield gateway
        finally:
            gateway.proc.stop()
    finally:
        judge.stop()
