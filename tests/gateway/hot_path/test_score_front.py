"""`GatewayApp` (hot_path/score_front.py): `POST /score` enters the gateway's middleware below FastAPI's outer
layers, and answers as it did through them.

Which layers a post went through is read from the reward function itself: it walks the frames that await it
(a coroutine's `f_back` is its awaiter while it runs) and writes their names to a file. The same request with
the shortcut switched off (`fast_score_chain = None`) must show FastAPI's layers, so the check can fail.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.types import Receive, Scope, Send

from rewardfleet.services.common.request_metrics import RequestMetrics
from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.hot_path.score_front import GatewayApp

FASTAPI_LAYERS = {"FastAPI.__call__", "Starlette.__call__", "ServerErrorMiddleware.__call__"}
KEY = "k-front-0123456789abcdef"

FRAMES_FN = """
import sys

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    frame, names = sys._getframe(), []
    while frame is not None:
        names.append(frame.f_code.co_qualname)
        frame = frame.f_back
    with open({path!r}, "w") as out:
        out.write("\\n".join(names))
    return 1.0
"""

SAMPLE = {"data_source": "d", "solution_str": "x", "ground_truth": "x", "reward_fn": "frames"}


@pytest.fixture
def frames_app(tmp_path: Path) -> Iterator[tuple[TestClient, GatewayApp, Path]]:
    folder = tmp_path / "fns"
    folder.mkdir()
    record = tmp_path / "frames.txt"
    (folder / "frames.py").write_text(FRAMES_FN.format(path=str(record)))
    config = GatewayConfig(reward_fns_dirs=[folder], builtin_package=None, workers=1, api_keys=[KEY])
    app = create_app(config)
    assert isinstance(app, GatewayApp)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, app, record


def _frames(client: TestClient, record: Path, path: str = "/score") -> list[str]:
    resp = client.post(path, json=SAMPLE, headers={"authorization": f"Bearer {KEY}"})
    assert resp.status_code == 200 and resp.json()["score"] == 1.0, resp.text
    return record.read_text().splitlines()


def test_score_skips_fastapis_outer_layers(frames_app: tuple[TestClient, GatewayApp, Path]) -> None:
    client, app, record = frames_app
    assert app.fast_score_chain is not None  # the stack is the shape the shortcut knows
    names = _frames(client, record)
    assert "GatewayApp.__call__" in names and "RequestMetrics.__call__" in names
    assert not FASTAPI_LAYERS & set(names), names
    # the path key form (`/k/<key>/score`, rewritten by PathKey) takes it too
    assert not FASTAPI_LAYERS & set(_frames(client, record, f"/k/{KEY}/score"))
    app.fast_score_chain = None  # switched off: the same post goes through FastAPI's layers
    assert set(_frames(client, record)) >= FASTAPI_LAYERS


def test_other_requests_take_fastapis_path(frames_app: tuple[TestClient, GatewayApp, Path]) -> None:
    client, app, _ = frames_app
    seen: list[str] = []
    chain = app.fast_score_chain

    async def spy(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope["path"])
        assert chain is not None
        await chain(scope, receive, send)

    app.fast_score_chain = spy
    auth = {"authorization": f"Bearer {KEY}"}
    assert client.get("/health").status_code == 200
    assert client.post("/score/batch", json={"samples": [SAMPLE]}, headers=auth).status_code == 200
    assert client.get("/score", headers=auth).status_code == 405
    assert seen == []
    assert client.post("/score", json=SAMPLE, headers=auth).status_code == 200
    assert seen == ["/score"]


def test_a_bad_key_is_refused_as_before(frames_app: tuple[TestClient, GatewayApp, Path]) -> None:
    client, _, record = frames_app
    resp = client.post("/score", json=SAMPLE, headers={"authorization": "Bearer wrong"})
    assert resp.status_code == 401 and not record.exists()


@pytest.mark.parametrize("when", ["before the response", "after the response started"])
def test_an_error_escaping_the_middleware(
    frames_app: tuple[TestClient, GatewayApp, Path], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """As Starlette's server-error middleware: the app's 500 envelope if nothing was sent yet, else the
    response as sent; the error is raised on to the server either way (TestClient re-raises it when asked)."""
    client, _, _ = frames_app
    original = RequestMetrics.__call__

    async def broken(self: RequestMetrics, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["path"] != "/score":
            await original(self, scope, receive, send)
            return
        if when != "before the response":
            await original(self, scope, receive, send)
        raise RuntimeError("middleware broke")

    monkeypatch.setattr(RequestMetrics, "__call__", broken)
    resp = client.post("/score", json=SAMPLE, headers={"authorization": f"Bearer {KEY}"})
    if when == "before the response":
        assert resp.status_code == 500
        error = resp.json()["error"]
        assert error["type"] == "InternalError" and "middleware broke" in error["message"]
    else:
        assert resp.status_code == 200 and resp.json()["score"] == 1.0
    with pytest.raises(RuntimeError, match="middleware broke"):
        TestClient(client.app).post("/score", json=SAMPLE, headers={"authorization": f"Bearer {KEY}"})


def test_an_unknown_stack_shape_keeps_fastapis_path(tmp_path: Path) -> None:
    """FastAPI's own body limit (`max_body_size`) wraps the user middleware: the shortcut stands aside."""
    app = GatewayApp(max_body_size=1024)
    app.add_middleware(_Through)
    app.add_api_route("/score", lambda: None, methods=["POST"], status_code=204)
    with TestClient(app) as client:
        assert client.post("/score", content=b"{}").status_code == 204
    assert app.middleware_stack is not None and app.fast_score_chain is None


class _Through:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def test_root_path_and_app_are_set(frames_app: tuple[TestClient, GatewayApp, Path]) -> None:
    client, app, record = frames_app
    app.root_path = "/api"
    try:
        resp = client.post("/api/score", json=SAMPLE, headers={"authorization": f"Bearer {KEY}"})
    finally:
        app.root_path = ""
    assert resp.status_code == 200 and json.loads(resp.text)["score"] == 1.0
    assert "GatewayApp.__call__" in record.read_text().splitlines()
