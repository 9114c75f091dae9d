"""The model in its own engine process (services/model_server/engine.py): same answers as in-process, and a
dead engine turns the server unhealthy with 503s instead of hanging requests."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from bench.harness.waiting import eventually
from tests.support.model_server import RunningServer, start_server

TEXTS = ["The answer is 42.", "Paris is the capital of France.", "x" * 50]


def _scores(server: RunningServer) -> list[float]:
    with server.client() as client:
        r = client.post("/classify", json={"text": TEXTS})
        assert r.status_code == 200, r.text
        return [row["embedding"][0] for row in r.json()]


def test_engine_and_in_process_servers_answer_alike(tiny_models: dict[str, Path], log_dir: Path) -> None:
    engine = start_server(tiny_models["qwen2_rm"], log_dir, name="engine")
    inproc = start_server(tiny_models["qwen2_rm"], log_dir, "--no-engine-process", name="inproc")
    try:
        with engine.client() as c:
            info = c.get("/server_info").json()["rewardfleet"]
        assert info["engine_pid"] != engine.process.pid  # the model is not in the HTTP process
        with inproc.client() as c:
            assert c.get("/server_info").json()["rewardfleet"]["engine_pid"] == inproc.process.pid
        assert _scores(engine) == pytest.approx(_scores(inproc), abs=1e-5)
        with engine.client() as c:  # a bad input in a batch stays a 400 for that request
            r = c.post("/classify", json={"input_ids": [10**9]})
            assert r.status_code == 400 and "outside the vocabulary" in r.text
    finally:
        engine.process.stop()
        inproc.process.stop()


def test_dead_engine_turns_the_server_unhealthy(tiny_models: dict[str, Path], log_dir: Path) -> None:
    server = start_server(tiny_models["qwen2_rm"], log_dir, name="dying")
    try:
        with server.client() as c:
            pid = c.get("/server_info").json()["rewardfleet"]["engine_pid"]
            assert pid != server.process.pid
            os.kill(pid, signal.SIGKILL)
            r = c.post("/classify", json={"text": "after the engine died"})
            assert r.status_code == 503, r.text
            assert "engine" in r.text
            eventually(lambda: c.get("/health").status_code == 503, timeout_s=30, interval_s=0.1,
                       what="/health 503 with a dead engine", retry_on=())  # fmt: skip
    finally:
        server.process.stop()
