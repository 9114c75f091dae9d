"""Gateway test fixtures: the main gateway (`gw`) over a temp copy of `reward_files/`, and a stand-in router
that answers `GET /health`."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.harness.processes import ChildProcess, free_port
from tests.support.gateway import REWARD_FILES, Gateway, gateway_cmd, write_config


class _HealthHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="package")
def fake_router() -> Iterator[str]:
    """A stand-in router on 127.0.0.1 that answers `GET /health` with 200; yields its `host:port`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HealthHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="package")
def reward_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user_fns")
    for path in REWARD_FILES.glob("*.py"):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture(scope="package")
def gw(tmp_path_factory: pytest.TempPathFactory, reward_folder: Path, fake_router: str) -> Iterator[Gateway]:
    """The main gateway: built-ins + every file of reward_files/, two workers, small limits."""
    tmp = tmp_path_factory.mktemp("gw")
    config = {
        "workers": 2,
        "max_body_bytes": 64 * 1024,
        "max_batch_samples": 50,
        "routers": {"rm": fake_router, "judge": "127.0.0.1:9"},  # judge is rewritten below
        "default_router": "rm",
        "dispatch": {"test/overridden": "verl_sync"},
        "functions": {
            "hang": {"timeout_s": 1.0},
            "hang_async": {"timeout_s": 0.5},
            "inject_named": {"reward_kwargs": {"scale": 2.0}},
            "inject_sync": {"reward_kwargs": {"bonus": 0.5}},
            "raises_fallback": {
                "path": f"{reward_folder / 'raises.py'}:compute_score",
                "on_error_score": -1.0,
                "data_sources": ["test/fallback"],
            },
            "hang_fallback": {
                "path": f"{reward_folder / 'hang.py'}:compute_score",
                "timeout_s": 0.5,
                "on_error_score": 0.0,
            },
            "steps_only": {"score_aggregate": "first_error"},
            "steps_product": {
                "path": f"{reward_folder / 'steps_only.py'}:compute_score",
                "score_aggregate": "product",
            },
            "tool_use": {"reward_kwargs": {"answer_fn": "gsm8k"}, "timeout_s": 5.0},
        },
    }
    # The judge "router" is the gateway itself (it answers /health), so /ready sees two reachable routers.
    port = free_port()
    config["routers"]["judge"] = f"127.0.0.1:{port}"
    cfg = write_config(tmp / "gateway.yaml", config)
    proc = ChildProcess(
        gateway_cmd("--port", str(port), "--config", str(cfg), "--reward-fns", str(reward_folder)),
        tmp / "gateway.log",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        proc.wait_http(f"{url}/health", timeout_s=90)
        yield Gateway(proc, url, port, reward_folder)
    finally:
        proc.stop()
