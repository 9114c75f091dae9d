"""Tool calls as plain ASGI (hot_path/tool_call_asgi.py) answer exactly as the FastAPI routes they skip.

Two apps from one config (two tenants, NeMo Gym servers over the test environments): the gateway as built,
and the same app with the fast path taken out, so every tool call goes through FastAPI's router to
`routes/sessions.py` / `routes/nemo_gym.py`. Each request is sent to both, each with a session of its own
opened the same way, and the answers must be equal: status, headers and body, the app's own token written
as `<token>`. A counter on the fast path's `Request` proves which app took which path, so the comparison
cannot pass by both apps using the router; the request metrics must label both alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.requests import Request

from rewardfleet.services.gateway.app import create_app
from rewardfleet.services.gateway.config import GatewayConfig
from rewardfleet.services.gateway.hot_path import tool_call_asgi
from rewardfleet.services.gateway.hot_path.tool_call_asgi import ToolCallFastPath

ENVS = Path(__file__).parents[2] / "environments" / "envs"
KEY_A = "fast-path-tenant-a-0123456789"
KEY_B = "fast-path-tenant-b-0123456789"  # admin: reads /metrics
UNKNOWN = "A" * 43  # a well-formed token no session has
A = {"authorization": f"Bearer {KEY_A}"}
B = {"authorization": f"Bearer {KEY_B}"}
COOKIE = "rewardfleet_session_probe"


@pytest.fixture(scope="module")
def apps() -> Iterator[tuple[TestClient, TestClient]]:
    config = GatewayConfig.model_validate(
        {
            "builtin_package": None,
            "workers": 1,
            "max_body_bytes": 16 * 1024,
            "tenants": {"a": {"api_keys": [KEY_A]}, "b": {"api_keys": [KEY_B], "admin": True}},
            "environments": {"folders": [str(ENVS)]},
            "nemo_gym": {
                "servers": {
                    "probe": {"environment": "probe"},
                    "counter": {"environment": "example_session_state_mgmt"},
                }
            },
        }
    )
    fast = create_app(config)
    routed = create_app(config)
    routed.user_middleware = [m for m in routed.user_middleware if m.cls is not ToolCallFastPath]
    assert len(routed.user_middleware) == len(fast.user_middleware) - 1
    routed.also_fast = lambda path: False  # type: ignore[attr-defined]
    with (
        TestClient(fast, raise_server_exceptions=False) as fast_client,
        TestClient(routed, raise_server_exceptions=False) as routed_client,
    ):
        yield fast_client, routed_client


@pytest.fixture
def fast_requests(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every request the fast path took (only it makes a `Request` in that module)."""
    taken: list[str] = []

    class Counted(Request):
        def __init__(self, scope: Any, *args: Any) -> None:
            taken.append(scope["path"])
            super().__init__(scope, *args)

    monkeypatch.setattr(tool_call_asgi, "Request", Counted)
    return taken


def _token(client: TestClient) -> str:
    answer = client.post("/sessions/open", json={"env": "probe", "task": {"start": 1}}, headers=A)
    answer.raise_for_status()
    return str(answer.json()["token"])


def _cookie(client: TestClient) -> str:
    answer = client.post("/nemo_gym/probe/seed_session", json={"start": 1}, headers=A)
    answer.raise_for_status()
    return str(answer.cookies[COOKIE])


def _answer(resp: httpx.Response, token: str) -> tuple[int, list[tuple[str, str]], Any]:
    headers = sorted((k, v.replace(token, "<token>")) for k, v in resp.headers.multi_items())
    text = resp.text.replace(token, "<token>")
    try:
        return resp.status_code, headers, json.loads(text)
    except json.JSONDecodeError:
        return resp.status_code, headers, text


def _call(tool: str, arguments: Any) -> Callable[[str], dict[str, Any]]:
    return lambda token: {"token": token, "tool": tool, "arguments": arguments}


def _deep(token: str, depth: int = 1000) -> bytes:
    """A call whose arguments nest `depth` objects deep (raw: json.dumps itself would recurse too deep)."""
    nested = b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"token": "%s", "tool": "put", "arguments": {"payload": %s}}' % (token.encode(), nested)


# name -> (body of the token, headers, path, taken by the fast path)
NATIVE: dict[str, tuple[Callable[[str], Any], dict[str, str], str, bool]] = {
    "a call": (_call("put", {"payload": {"k": 1}}), A, "/sessions/call", True),
    "the tool's own error": (_call("fail", {}), A, "/sessions/call", True),
    "the environment crashes": (_call("crash", {}), A, "/sessions/call", True),
    "the tool answers NaN": (_call("nan", {}), A, "/sessions/call", True),
    "an argument of the wrong type": (_call("add", {"n": "x"}), A, "/sessions/call", True),
    "an argument out of range": (_call("add", {"n": 5000}), A, "/sessions/call", True),
    "an unknown argument": (_call("put", {"payload": {}, "evil": 1}), A, "/sessions/call", True),
    "arguments not an object": (_call("put", [1, 2]), A, "/sessions/call", True),
    "an unknown tool": (_call("nope" * 40, {}), A, "/sessions/call", True),
    "the state grows past its bound": (_call("grow", {"chars": 8000}), A, "/sessions/call", True),
    "an unknown field": (lambda t: {**_call("put", {"payload": {}})(t), "x": 1}, A, "/sessions/call", True),
    "no token": (lambda t: {"tool": "put", "arguments": {}}, A, "/sessions/call", True),
    "a token too long": (lambda t: _call("put", {})("t" * 200), A, "/sessions/call", True),
    "malformed JSON": (lambda t: b'{"token": "' + t.encode() + b'", ', A, "/sessions/call", True),
    "a body not an object": (lambda t: [t], A, "/sessions/call", True),
    "an empty body": (lambda t: b"", A, "/sessions/call", True),
    "nested too deep": (_deep, A, "/sessions/call", True),
    "an unknown token": (lambda t: _call("put", {"payload": {}})(UNKNOWN), A, "/sessions/call", True),
    "another tenant's token": (_call("put", {"payload": {}}), B, "/sessions/call", True),
    "no key": (_call("put", {"payload": {}}), {}, "/sessions/call", False),
    "a wrong key": (_call("put", {"payload": {}}), {"authorization": "Bearer nope"}, "/sessions/call", False),
    "a body over max_body_bytes": (
        _call("put", {"payload": {"x": "y" * 20_000}}),
        A,
        "/sessions/call",
        False,
    ),
    "the key in the path": (_call("put", {"payload": {}}), {}, f"/k/{KEY_A}/sessions/call", True),
    "a trailing slash (the router's)": (_call("put", {"payload": {}}), A, "/sessions/call/", False),
}


@pytest.mark.parametrize("name", list(NATIVE))
def test_native_calls_answer_as_the_route(
    apps: tuple[TestClient, TestClient], fast_requests: list[str], name: str
) -> None:
    make, headers, path, taken = NATIVE[name]
    answers = []
    for client in apps:
        token = _token(client)
        body = make(token)
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        resp = client.post(path, content=raw, headers=headers, follow_redirects=False)
        answers.append(_answer(resp, token))
    assert answers[0] == answers[1]
    assert fast_requests == (["/sessions/call"] if taken else [])


PROBE = "/nemo_gym/probe"
# name -> (body, headers, path, cookie value: None = the session's token, "" = no cookie; the path the fast
# path sees, None = not taken)
GYM: dict[str, tuple[bytes, dict[str, str], str, str | None, str | None]] = {
    "a call": (b'{"payload": {"k": 1}}', A, f"{PROBE}/put", None, f"{PROBE}/put"),
    "the tool's own error": (b"{}", A, f"{PROBE}/fail", None, f"{PROBE}/fail"),
    "the environment crashes": (b"{}", A, f"{PROBE}/crash", None, f"{PROBE}/crash"),
    "the tool answers NaN": (b"{}", A, f"{PROBE}/nan", None, f"{PROBE}/nan"),
    "an argument of the wrong type": (b'{"n": "x"}', A, f"{PROBE}/add", None, f"{PROBE}/add"),
    "an unknown argument": (b'{"payload": {}, "evil": 1}', A, f"{PROBE}/put", None, f"{PROBE}/put"),
    "arguments not an object": (b"[1, 2]", A, f"{PROBE}/put", None, f"{PROBE}/put"),
    "malformed JSON": (b'{"payload": ', A, f"{PROBE}/put", None, f"{PROBE}/put"),
    "an empty body": (b"", A, f"{PROBE}/put", None, f"{PROBE}/put"),
    "nested too deep": (
        b'{"payload": ' + b'{"a":' * 1000 + b"1" + b"}" * 1001,
        A,
        f"{PROBE}/put",
        None,
        f"{PROBE}/put",
    ),
    "an unknown tool": (b"{}", A, f"{PROBE}/{'n' * 200}", None, f"{PROBE}/{'n' * 200}"),
    "the state grows past its bound": (b'{"chars": 8000}', A, f"{PROBE}/grow", None, f"{PROBE}/grow"),
    "no cookie": (b"{}", A, f"{PROBE}/put", "", f"{PROBE}/put"),
    "an unknown token": (b"{}", A, f"{PROBE}/put", UNKNOWN, f"{PROBE}/put"),
    "a cookie that is no token": (b"{}", A, f"{PROBE}/put", "x" * 300, f"{PROBE}/put"),
    "a cookie to quote, bad arguments": (b"[", A, f"{PROBE}/put", "bad,token", f"{PROBE}/put"),
    "another tenant's token": (b'{"payload": {}}', B, f"{PROBE}/put", None, f"{PROBE}/put"),
    "no key": (b'{"payload": {}}', {}, f"{PROBE}/put", None, None),
    "a body over max_body_bytes": (
        b'{"payload": {"x": "%s"}}' % (b"y" * 20_000),
        A,
        f"{PROBE}/put",
        None,
        None,
    ),
    "the key in the path": (b'{"payload": {}}', {}, f"/k/{KEY_A}{PROBE}/put", None, f"{PROBE}/put"),
    "verify (its own route)": (b'{"expected": 1}', A, f"{PROBE}/verify", None, None),
    "an unknown server (the router's 404)": (b"{}", A, "/nemo_gym/nope/put", None, None),
    "a path too long for a tool (the router's 404)": (b"{}", A, f"{PROBE}/put/x", None, None),
}


@pytest.mark.parametrize("name", list(GYM))
def test_nemo_gym_tool_calls_answer_as_the_route(
    apps: tuple[TestClient, TestClient], fast_requests: list[str], name: str
) -> None:
    raw, headers, path, cookie, seen = GYM[name]
    answers = []
    for client in apps:
        token = _cookie(client)
        value = token if cookie is None else cookie
        sent = {**headers, "cookie": f"{COOKIE}={value}"} if value else headers
        client.cookies.clear()  # only what this request names
        resp = client.post(path, content=raw, headers=sent, follow_redirects=False)
        answers.append(_answer(resp, token))
    assert answers[0] == answers[1]
    assert fast_requests == ([seen] if seen else [])


def test_the_request_metrics_label_both_paths_alike(apps: tuple[TestClient, TestClient]) -> None:
    """The fast path's calls are counted under the declared routes' templates, as the router's are."""
    series = []
    for client in apps:
        token = _token(client)
        call = {"token": token, "tool": "put", "arguments": {"payload": {}}}
        assert client.post("/sessions/call", json=call, headers=A).status_code == 200
        client.cookies.clear()
        sent = {**A, "cookie": f"{COOKIE}={_cookie(client)}"}
        client.cookies.clear()
        assert client.post(f"{PROBE}/put", json={"payload": {}}, headers=sent).status_code == 200
        text = client.get("/metrics", headers=B).text
        series.append(
            sorted(
                line
                for line in text.splitlines()
                if line.startswith(
                    ("rewardfleet_gateway_requests_total", "rewardfleet_environment_tool_calls_total")
                )
                and "/metrics" not in line
            )
        )
    assert series[0] == series[1]
    assert any('route="/sessions/call",status="200"' in line for line in series[0])
    assert any('route="/nemo_gym/{server}/{tool}",status="200"' in line for line in series[0])


def test_the_session_cookie_is_the_header_set_cookie_writes() -> None:
    """NeMo Gym's answers write the cookie of a plain token themselves: the same bytes as Starlette's."""
    from starlette.responses import JSONResponse

    from rewardfleet.services.gateway.routes.nemo_gym_sessions import _answer as gym_answer

    for token in (UNKNOWN, "abc-_DEF123", "x", "bad,token", 'a"b', "a b;c=d"):
        written = gym_answer({}, "probe", token)
        expected = JSONResponse({})
        expected.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/")
        assert written.raw_headers == expected.raw_headers, token
