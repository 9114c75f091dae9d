"""What every work route shares: mode and readiness checks, body parsing, the injected delay and failures,
the error body for each kind of fault (a body FastAPI would refuse is SGLang's validation error on every
route, /v1/* included; a refusal by the serving layer is `create_error_response`'s), counting, and the
`x-standin-*` headers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from tests.sglang_standin.errors import (
    ContractError,
    StandinError,
    TypeInvalid,
    contract_error,
    native_error,
    openai_error,
    validation_error,
)
from tests.sglang_standin.state import Mode, StandinState

Handler = Callable[[dict[str, Any]], Awaitable[Response | dict[str, Any] | list[Any]]]


async def serve(
    state: StandinState, route: str, request: Request, handler: Handler, openai: bool, modes: tuple[Mode, ...]
) -> Response:
    config = state.config
    make_error = openai_error if openai else native_error
    if config.mode not in modes:
        return make_error(400, f"{route} is not served by a {config.mode} model")
    if not state.ready():
        return make_error(503, "server is not ready")
    try:
        body = await request.json()
    except json.JSONDecodeError:
        return validation_error("request body is not JSON")
    if not isinstance(body, dict):
        return validation_error("request body must be a JSON object")
    state.last_body[route] = body
    if config.delay_ms > 0 and await _client_left_within(request, config.delay_ms / 1000.0):
        # SGLang aborts a request whose client disconnected (tokenizer_manager checks
        # `request.is_disconnected()` while waiting): nothing is served, so nothing is counted as served.
        state.abandoned[route] += 1
        return Response(status_code=499)
    if config.fail_rate > 0 and state.rng.random() < config.fail_rate:
        state.failed[route] += 1
        return make_error(config.fail_status, f"injected failure on replica {config.replica_id}")
    try:
        result = await handler(body)
    except StandinError as exc:
        return make_error(exc.status, exc.message)
    except ContractError as exc:
        return contract_error(str(exc))
    except TypeInvalid as exc:
        return validation_error(str(exc))
    state.served[route] += 1
    if isinstance(result, Response):
        result.headers.update(state.headers())
        return result
    return JSONResponse(result, headers=state.headers())


async def _client_left_within(request: Request, seconds: float) -> bool:
    """Wait `seconds`, or less if the client disconnects first; True if it did."""

    async def disconnected() -> None:
        # The body has been read, so the next ASGI message is `http.disconnect` when the client goes away.
        while (await request.receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnected(), seconds)
    except TimeoutError:
        return False
    return True


def sse(items: list[Any]) -> StreamingResponse:
    """Server-sent events of `items`, then `data: [DONE]`, as SGLang streams."""

    async def events() -> AsyncIterator[bytes]:
        for item in items:
            yield b"data: " + json.dumps(item).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")
