"""`POST /score` as plain ASGI (hot_path/score_asgi.py) answers exactly as the FastAPI route it skips.

Two apps from one config: the gateway as built, and the same app with the fast path taken out, so every
request goes through FastAPI's router to `routes/score.py`. Each request is sent to both and the answers
must be equal: status, headers and body (only the measured `timings` differ). A counter on the fast path's
body read proves which app took which path, so the comparison cannot pass by both apps using the router.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.facade import Gateway
from rewardfleet.services.gateway.hot_path import score_asgi
from rewardfleet.services.gateway.hot_path.score_asgi import ScoreFastPath
from tests.support.gateway import REWARD_FILES

OK = {"data_source": "d", "solution_str": "1", "ground_truth": "1", "reward_fn": "verl_sync", "uid": "u1"}
REQUESTS: dict[str, tuple[bytes, dict[str, str]]] = {
    "sync function": (json.dumps(OK).encode(), {}),
    "async function": (json.dumps({**OK, "reward_fn": "returns_async"}).encode(), {}),
    "text/plain body": (json.dumps(OK).encode(), {"content-type": "text/plain"}),
    "function raises": (json.dumps({**OK, "reward_fn": "raises"}).encode(), {}),
    "malformed JSON": (b'{"data_source": "d", "solution_str": ', {}),
    "empty body": (b"", {}),
    "not an object": (b"[1, 2]", {}),
    "missing field": (b'{"solution_str": "x"}', {}),
    "wrong type": (json.dumps({**OK, "extra_info": [1]}).encode(), {}),
    "unknown function": (json.dumps({**OK, "reward_fn": "nope"}).encode(), {}),
    "field over its bound": (json.dumps({**OK, "uid": "u" * 300}).encode(), {}),
    "body over max_body_bytes": (json.dumps({**OK, "solution_str": "x" * 70_000}).encode(), {}),
}


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, TestClient]]:
    folder = tmp_path_factory.mktemp("fns")
    for name in ("verl_sync.py", "returns_async.py", "raises.py"):
        shutil.copy(REWARD_FILES / name, folder / name)
    config = GatewayConfig(
        reward_fns_dirs=[folder], builtin_package=None, workers=1, max_body_bytes=64 * 1024
    )
    fast = create_app(config)
    routed = create_app(config)
    routed.user_middleware = [m for m in routed.user_middleware if m.cls is not ScoreFastPath]
    assert len(routed.user_middleware) == len(fast.user_middleware) - 1
    with (
        TestClient(fast, raise_server_exceptions=False) as fast_client,
        TestClient(routed, raise_server_exceptions=False) as routed_client,
    ):
        yield fast_client, routed_client


@pytest.fixture
def fast_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per request the fast path read."""
    reads: list[int] = []
    original = score_asgi._read_body

    async def counting(receive: Any) -> bytes:
        reads.append(1)
        return await original(receive)

    monkeypatch.setattr(score_asgi, "_read_body", counting)
    return reads


def _answer(resp: httpx.Response) -> tuple[int, list[tuple[str, str]], Any]:
    headers = sorted((k, v) for k, v in resp.headers.items() if k != "content-length")
    try:
        body = resp.json()
    except ValueError:
        return resp.status_code, headers, resp.text
    if isinstance(body, dict):
        body.pop("timings", None)
    return resp.status_code, headers, body


@pytest.mark.parametrize("name", list(REQUESTS))
def test_answers_as_the_route(apps: tuple[TestClient, TestClient], fast_reads: list[int], name: str) -> None:
    fast, routed = apps
    content, headers = REQUESTS[name]
    fast_answer = _answer(fast.post("/score", content=content, headers=headers))
    over_limit = name == "body over max_body_bytes"  # refused by Content-Length, before any read
    assert fast_reads == ([] if over_limit else [1])
    assert _answer(routed.post("/score", content=content, headers=headers)) == fast_answer
    assert fast_reads == ([] if over_limit else [1])  # the routed app never used the fast path
    assert fast_answer[0] == (413 if over_limit else 200) or fast_answer[0] in (404, 413, 422)


def test_the_status_codes_are_the_routes(apps: tuple[TestClient, TestClient]) -> None:
    fast, _ = apps
    expected = {
        "sync function": 200,
        "function raises": 200,
        "malformed JSON": 422,
        "empty body": 422,
        "unknown function": 404,
        "field over its bound": 413,
        "body over max_body_bytes": 413,
    }
    for name, status in expected.items():
        content, headers = REQUESTS[name]
        assert fast.post("/score", content=content, headers=headers).status_code == status, name


@pytest.mark.parametrize(("method", "path"), [("GET", "/score"), ("PUT", "/score"), ("POST", "/score/")])
def test_other_methods_and_paths_go_to_the_router(
    apps: tuple[TestClient, TestClient], fast_reads: list[int], method: str, path: str
) -> None:
    fast, routed = apps
    kwargs: dict[str, Any] = {"content": json.dumps(OK).encode(), "follow_redirects": False}
    fast_answer = _answer(fast.request(method, path, **kwargs))
    assert fast_answer == _answer(routed.request(method, path, **kwargs))
    assert fast_reads == []
    assert fast_answer[0] in (307, 405)


def test_unexpected_error_is_the_same_500(
    apps: tuple[TestClient, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(self: Gateway, sample: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(Gateway, "score", broken)
    fast, routed = apps
    content = json.dumps(OK).encode()
    fast_answer = _answer(fast.post("/score", content=content))
    assert fast_answer == _answer(routed.post("/score", content=content))
    assert fast_answer[0] == 500 and fast_answer[2]["error"]["type"] == "InternalError"
    assert "RuntimeError: boom" in fast_answer[2]["error"]["message"]


def test_requests_are_counted_under_the_route(apps: tuple[TestClient, TestClient]) -> None:
    fast, _ = apps
    line = 'rewardfleet_gateway_requests_total{route="/score",status="200"}'

    def count() -> float:
        for row in fast.get("/metrics").text.splitlines():
            if row.startswith(line):
                return float(row.split()[-1])
        return 0.0

    before = count()
    assert fast.post("/score", content=json.dumps(OK).encode()).status_code == 200
    assert count() == before + 1


def test_mounted_under_a_root_path(tmp_path: Path, fast_reads: list[int]) -> None:
    """Behind a proxy that strips a prefix (uvicorn --root-path), `/api/score` is still the route."""
    folder = tmp_path / "fns"
    folder.mkdir()
    shutil.copy(REWARD_FILES / "verl_sync.py", folder / "verl_sync.py")
    app = create_app(GatewayConfig(reward_fns_dirs=[folder], builtin_package=None, workers=1))
    with TestClient(app, root_path="/api") as client:
        resp = client.post("/api/score", content=json.dumps(OK).encode())
    assert resp.status_code == 200 and resp.json()["score"] == 1.0
    assert fast_reads == [1]
