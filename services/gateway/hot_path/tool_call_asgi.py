"""Tool calls of environment sessions answered as plain ASGI, ahead of FastAPI's router.

Two kinds of `POST` are taken, each straight to the handler its declared route calls, with the route's
`Request`:

    exact paths (`/sessions/call`)        the handler of that path's route, `handler(request)`
    <prefix>/<server>/<tool>              NeMo Gym's tool call, for a server in `servers` and a tool name
                                          no earlier route of that prefix declares: `handler(request,
                                          server, tool)`

Every error the handler raises is answered by the app's own exception handlers, as the router's exception
middleware would (an exception no handler takes goes up to the server error middleware: 500), so the
answers are the route's, byte for byte. Anything else (another method, another path, a server without an
environment) goes on to the router. `scope["route"]`, `endpoint` and `path_params` are set as the router
sets them, so the request metrics label the call with the route's template. Why: docs/architecture.md, "The
hot path".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rewardfleet.services.gateway.hot_path.score_asgi import error_handler, route_path

Handler = Callable[[Request], Awaitable[Response]]
ToolHandler = Callable[[Request, str, str], Awaitable[Response]]


@dataclass(frozen=True)
class ToolRoutes:
    """NeMo Gym's `POST <prefix>/{server}/{tool}`: `route` is the declared one, `servers` the servers whose
    tools it serves, `reserved` the names earlier routes of the prefix take (`verify`, ...)."""

    prefix: str
    route: APIRoute
    handler: ToolHandler
    servers: Collection[str]
    reserved: Collection[str]

    def match(self, path: str) -> tuple[str, str] | None:
        """(server, tool) when the path is a tool call this takes, else None."""
        if not path.startswith(self.prefix) or path[len(self.prefix) : len(self.prefix) + 1] != "/":
            return None
        server, slash, tool = path[len(self.prefix) + 1 :].partition("/")
        if not slash or not tool or "/" in tool or server not in self.servers or tool in self.reserved:
            return None
        return server, tool


def may_take(exact: Collection[str], tools: ToolRoutes | None) -> Callable[[str], bool]:
    """Whether a `POST` to a path as the app receives it (maybe `/k/<key>/...`) may be one the middleware
    takes: what `GatewayApp` sends below FastAPI's outer layers (`GatewayApp.also_fast`)."""
    suffixes = tuple(exact)
    marker = None if tools is None else tools.prefix + "/"

    def takes(path: str) -> bool:
        return path.endswith(suffixes) or (marker is not None and marker in path)

    return takes


class ToolCallFastPath:
    """The middleware. `exact`: path -> (declared route, its handler); `tools`: NeMo Gym's tool calls, or
    None. The handlers are the routes' own, handed in by the app so this package imports nothing of the
    gateway."""

    def __init__(
        self, app: ASGIApp, exact: Mapping[str, tuple[APIRoute, Handler]], tools: ToolRoutes | None
    ) -> None:
        self.app = app
        self.exact = dict(exact)
        self.tools = tools

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        taken = self.exact.get(path)
        request: Request
        if taken is not None:
            route, handler = taken
            scope["route"] = route
            scope["endpoint"] = route.endpoint
            scope["path_params"] = {}
            request = Request(scope, receive, send)
            pending = handler(request)
        else:
            matched = None if self.tools is None else self.tools.match(path)
            if matched is None:
                await self.app(scope, receive, send)
                return
            assert self.tools is not None
            server, tool = matched
            scope["route"] = self.tools.route
            scope["endpoint"] = self.tools.route.endpoint
            scope["path_params"] = {"server": server, "tool": tool}
            request = Request(scope, receive, send)
            pending = self.tools.handler(request, server, tool)
        try:
            response = await pending
        except Exception as exc:
            on_error = error_handler(scope["app"], exc)
            if on_error is None:
                raise  # the server error middleware answers 500, as for the route
            response = await on_error(request, exc)
        await response(scope, receive, send)
