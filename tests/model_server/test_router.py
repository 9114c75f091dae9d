"""Registration and routing through the real sglang-router 0.3.2 binary (one router per model pool)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port
from tests.support.model_server import RunningServer

ROUTER_BIN = Path(sys.executable).parent / "sglang-router"


def start_router(worker: RunningServer, log_dir: Path, name: str) -> tuple[ChildProcess, str]:
    if not ROUTER_BIN.exists() and shutil.which("sglang-router") is None:
        pytest.skip("sglang-router binary not installed")
    port = free_port()
    cmd = [
        str(ROUTER_BIN if ROUTER_BIN.exists() else shutil.which("sglang-router")),
        "launch",
        "--worker-urls",
        worker.url,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--policy",
        "round_robin",
        # Each router exports its own metrics; the default port (29000) would clash between routers.
        "--prometheus-host",
        "127.0.0.1",
        "--prometheus-port",
        str(free_port()),
    ]
    proc = ChildProcess(cmd, log_dir / f"router-{name}-{port}.log")
    url = f"http://127.0.0.1:{port}"
    try:
        ready = proc.wait_http(url + "/readiness", timeout_s=60)
    except Exception:
        proc.stop()
        raise
    assert ready.json()["healthy_workers"] == 1
    return proc, url


@pytest.fixture(scope="module")
def rm_router(rm_server: RunningServer, log_dir: Path) -> Iterator[str]:
    proc, url = start_router(rm_server, log_dir, "rm")
    yield url
    proc.stop()


@pytest.fixture(scope="module")
def lm_router(lm_server: RunningServer, log_dir: Path) -> Iterator[str]:
    proc, url = start_router(lm_server, log_dir, "lm")
    yield url
    proc.stop()


def test_router_registers_and_proxies_reward_endpoints(rm_router: str, rm_server: RunningServer) -> None:
    with httpx.Client(timeout=30) as c:
        direct = c.post(rm_server.url + "/v1/embeddings", json={"model": "tiny-rm", "input": "2+2=4"}).json()
        via = c.post(rm_router + "/v1/embeddings", json={"model": "tiny-rm", "input": "2+2=4"})
        assert via.status_code == 200, via.text
        assert via.json()["data"][0]["embedding"] == pytest.approx(direct["data"][0]["embedding"], abs=1e-6)
        cls = c.post(rm_router + "/v1/classify", json={"model": "tiny-rm", "input": ["a", "b"]})
        assert cls.status_code == 200, cls.text
        assert [d["probs"] for d in cls.json()["data"]] == [[1.0], [1.0]]
        workers = c.get(rm_router + "/workers").json()
    assert rm_server.url in str(workers)


def test_router_passes_400s_through(rm_router: str) -> None:
    with httpx.Client(timeout=30) as c:
        r = c.post(rm_router + "/v1/embeddings", json={"model": "tiny-rm", "input": ""})
    assert r.status_code == 400 and "must not be empty" in r.text


def test_router_proxies_generate_and_chat(lm_router: str, lm_server: RunningServer) -> None:
    sp = {"max_new_tokens": 5, "temperature": 0, "ignore_eos": True}
    messages = [{"role": "user", "content": "Grade: 2+2=5"}]
    with httpx.Client(timeout=60) as c:
        direct = c.post(lm_server.url + "/generate", json={"text": "hi", "sampling_params": sp}).json()
        via = c.post(lm_router + "/generate", json={"text": "hi", "sampling_params": sp})
        assert via.status_code == 200, via.text
        assert via.json()["output_ids"] == direct["output_ids"]
        assert via.json()["meta_info"]["finish_reason"] == {"type": "length", "length": 5}
        chat_direct = c.post(
            lm_server.url + "/v1/chat/completions",
            json={"model": "tiny-judge", "messages": messages, "max_tokens": 4, "temperature": 0},
        )
        # The router rewrites max_tokens into max_completion_tokens and injects its own defaults.
        chat = c.post(
            lm_router + "/v1/chat/completions",
            json={"model": "tiny-judge", "messages": messages, "max_tokens": 4, "temperature": 0},
        )
        assert chat.status_code == 200, chat.text
    got = chat.json()["choices"][0]
    assert got["message"]["content"] == chat_direct.json()["choices"][0]["message"]["content"]
    assert chat.json()["usage"]["completion_tokens"] <= 4
