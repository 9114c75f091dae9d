"""SGLang's native-route 400 bodies as the reward functions' HTTP helper sees them: straight from the
stand-in (which answers each fault in SGLang 0.5.23's shape, checked against its source in
tests/sglang_conformance/test_native_errors.py) and through the real sglang-router 0.3.2, which refuses a
wrongly typed `/generate` body itself (422, plain text) before any worker sees it. Every case is a typed
error with the status and the server's own words."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from rewardfleet.services.common.router_http import RemoteCallError, post_json, server_message
from tests.sglang_conformance import sglang_source as sgl
from tests.support.remote_fleet import Fleet


async def _refusal(
    session: aiohttp.ClientSession, address: str, path: str, body: Any, status: int = 400
) -> RemoteCallError:
    with pytest.raises(RemoteCallError) as info:
        await post_json(session, address, path, body)
    err = info.value
    assert (err.kind, err.status) == ("http_status", status), err
    return err


async def test_generate_contract_error_text_reaches_the_caller(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    body = {"text": "hi", "sampling_params": {"max_new_tokens": "x"}}
    expected = sgl.generate_contract_error(body)
    assert expected is not None
    err = await _refusal(http_client, fleet.judge.server_url, "/generate", body)
    assert err.server_message == expected and expected in str(err)
    # Through the router: its own typed extractor refuses the body first, as plain text.
    err = await _refusal(http_client, fleet.judge.address, "/generate", body, status=422)
    assert err.server_message is None and "max_new_tokens" in str(err)


@pytest.mark.parametrize(
    ("pool", "path", "body", "needle"),
    [
        ("judge", "/generate", {"text": 5}, "text"),  # ErrorResponse (request validation)
        ("reward_model", "/classify", {"text": 5}, "text"),
        (
            "judge",
            "/generate",
            {"sampling_params": {}},
            "text",
        ),  # {"error": {"message"}} (handler ValueError)
        ("reward_model", "/classify", {"text": ""}, "empty"),
    ],
)
async def test_every_native_error_shape_yields_the_server_message(
    fleet: Fleet, http_client: aiohttp.ClientSession, pool: str, path: str, body: Any, needle: str
) -> None:
    err = await _refusal(http_client, getattr(fleet, pool).server_url, path, body)
    assert err.server_message is not None and needle in err.server_message, err.body
    assert err.server_message in str(err)


async def test_handler_error_passes_through_the_router(
    fleet: Fleet, http_client: aiohttp.ClientSession
) -> None:
    err = await _refusal(http_client, fleet.judge.address, "/generate", {"sampling_params": {}})
    assert err.server_message is not None and "text" in err.server_message


def test_server_message_reads_all_three_shapes_and_nothing_else() -> None:
    assert server_message('{"object": "error", "message": "m", "type": "Bad Request", "code": 400}') == "m"
    assert server_message('{"error": "invalid type: string \\"x\\", expected i64"}') == (
        'invalid type: string "x", expected i64'
    )
    assert server_message('{"error": {"message": "m"}}') == "m"
    assert server_message("<html>bad gateway</html>") is None
    assert server_message('{"detail": "Not Found"}') is None
    assert server_message("[1]") is None
