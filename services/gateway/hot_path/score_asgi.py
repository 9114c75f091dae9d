"""`POST /score` answered as plain ASGI, ahead of FastAPI's router.

The request goes from the body limits to the same scoring code the route uses (`score_sample`), and every
error is answered by the app's own exception handlers, so the answers are the route's, byte for byte. The
route stays declared in `routes/score.py` (/docs and the OpenAPI schema come from it). Only an exact
`POST /score` is taken; `/score/` (redirected), other methods (405) and every other path go on to the router.
`scope["route"]` is set to the declared route, so the request metrics label it "/score". Why and what it
saves: docs/architecture.md, "The hot path".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from fastapi.routing import APIRoute
from starlette.applications import Starlette
from starlette.datastructures import State
from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Receive, Scope, Send

_HEADERS = b"content-type", b"application/json"


class ScoreFastPath:
    """The middleware. `route` is the declared `POST /score` route; `score_sample` and `result_json` are the
    route's scoring and rendering (routes/score.py), handed in by the app so this package imports nothing of
    the gateway."""

    def __init__(
        self,
        app: ASGIApp,
        route: APIRoute,
        score_sample: Callable[[State, bytes], Awaitable[Any]],
        result_json: Callable[[Any], bytes],
    ) -> None:
        self.app = app
        self.route = route
        self.path = route.path
        self.score_sample = score_sample
        self.result_json = result_json

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or route_path(scope) != self.path:
            await self.app(scope, receive, send)
            return
        scope["route"] = self.route
        scope["endpoint"] = self.route.endpoint
        try:
            body = self.result_json(await self.score_sample(scope["app"].state, await _read_body(receive)))
        except Exception as exc:
            handler = error_handler(scope["app"], exc)
            if handler is None:
                raise  # the server error middleware answers 500, as for the route
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, send)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-length", str(len(body)).encode()), _HEADERS],
            }
        )
        await send({"type": "http.response.body", "body": body})


def error_handler(app: Starlette, exc: Exception) -> Callable[[Request, Exception], Any] | None:
    """The handler Starlette's exception middleware would pick: the app's, by the exception's classes,
    except the catch-all `Exception` one, which belongs to the server error middleware outside."""
    handlers = app.exception_handlers
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        handler: Callable[[Request, Exception], Any] | None = handlers.get(cls)
        if handler is not None:
            return handler
    return None


def route_path(scope: Scope) -> str:
    """The path the router matches, as Starlette reads it: without the app's mount point (`root_path`)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and path[len(root) : len(root) + 1] == "/":
        return path[len(root) :]
    return path


async def _read_body(receive: Receive) -> bytes:
    """The whole body, as `Request.body()` reads it; a client gone before the end raises ClientDisconnect."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        if not message.get("more_body", False):
            if not chunks:
                return chunk  # type: ignore[no-any-return]
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)
