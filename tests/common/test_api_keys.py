"""`check_api_keys` and `ApiKeyMiddleware` at the ASGI level (on real servers: tests/gateway/reliability/
test_guards.py, tests/model_server/test_api_key.py, tests/security/test_api_keys.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.types import Message, Receive, Scope, Send

from rewardfleet.services.common.api_keys import (
    MIN_API_KEY_CHARS,
    ApiKeyMiddleware,
    check_api_keys,
    read_keys_file,
)

KEY = "a" * MIN_API_KEY_CHARS


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ([""], "api_keys: an API key must not be empty"),
        ([KEY, " "], "api_keys[1]: an API key must not be empty"),
        ([KEY[:-1]], f"api_keys: an API key needs at least {MIN_API_KEY_CHARS} characters, this one has 15"),
        ([f"{KEY}\n"], "api_keys: an API key must not start or end with whitespace"),
    ],
)
def test_weak_keys_are_refused_naming_the_setting(keys: list[str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        check_api_keys(keys, "api_keys")


def test_the_error_never_shows_the_key() -> None:
    with pytest.raises(ValueError) as info:
        check_api_keys(["secret-but-short"[:15]], "api_key")
    assert "secret" not in str(info.value)


def test_keys_file_skips_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# ops keys\n\n  {KEY}  \n#{KEY}x\n")
    assert read_keys_file(path) == [KEY]


async def _call(mw: ApiKeyMiddleware, method: str, path: str, auth: bytes | None) -> list[Message]:
    sent: list[Message] = []
    headers = [(b"authorization", auth)] if auth is not None else []
    scope = {"type": "http", "method": method, "path": path, "headers": headers}

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await mw(scope, receive, send)
    return sent


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})


async def test_bearer_in_any_case_and_the_public_routes() -> None:
    mw = ApiKeyMiddleware(
        _ok, [KEY], public_paths={"/health"}, public_prefixes=("/probe",), public_methods={"OPTIONS"}
    )
    for method, path, auth in [
        ("POST", "/score", b"Bearer " + KEY.encode()),
        ("POST", "/score", b"bearer " + KEY.encode()),
        ("GET", "/health", None),
        ("GET", "/probe/x", None),
        ("OPTIONS", "/score", None),
    ]:
        assert (await _call(mw, method, path, auth))[0]["status"] == 200, (method, path, auth)
    for auth in (None, b"Bearer ", b"Bearer " + KEY[:-1].encode(), KEY.encode(), b"Basic " + KEY.encode()):
        sent = await _call(mw, "POST", "/score", auth)
        assert sent[0]["status"] == 401, auth
        assert json.loads(sent[1]["body"])["error"]["type"] == "Unauthorized"
        assert (b"www-authenticate", b'Bearer realm="rewardfleet"') in sent[0]["headers"]


async def test_the_service_chooses_its_refusal() -> None:
    sglang = b'{"error": "Unauthorized"}'
    mw = ApiKeyMiddleware(_ok, [KEY], error_body=lambda s, t, m: sglang, challenge=False)
    sent = await _call(mw, "GET", "/v1/models", None)
    assert sent[1]["body"] == b'{"error": "Unauthorized"}'
    assert all(name != b"www-authenticate" for name, _ in sent[0]["headers"])


def test_the_middleware_needs_strong_keys() -> None:
    with pytest.raises(ValueError, match="needs at least one key"):
        ApiKeyMiddleware(_ok, [])
    with pytest.raises(ValueError, match="must not be empty"):
        ApiKeyMiddleware(_ok, [""])


@pytest.mark.parametrize(
    ("headers", "accepted"),
    [
        ([], False),
        ([(b"authorization", b"Bearer wrong-key-0123456789")], False),
        ([(b"authorization", b"Bearer " + KEY.encode())], True),
    ],
)
async def test_a_websocket_handshake_needs_the_key(
    headers: list[tuple[bytes, bytes]], accepted: bool
) -> None:
    reached: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "websocket", "path": "/openenv/x/ws", "headers": headers}
    await ApiKeyMiddleware(app, [KEY], public_paths={"/openenv/x/ws"})(scope, receive, send)
    assert bool(reached) == accepted
    assert sent == ([] if accepted else [{"type": "websocket.close", "code": 1008}])
