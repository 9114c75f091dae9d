"""NeMo Gym's optional MCP exposure of an environment server's tools.

NeMo Gym's optional MCP exposure of an environment server: its tools over MCP at `<prefix>/<server>/mcp`
(and `/mcp` at the root of the server's own port), for a server with `expose_tools_over_mcp: true`.

The protocol is NeMo Gym's (`nemo_gym/mcp_auto_exposure.py`): `seed_session`'s answer carries
`{"mcp": {"server_name", "url_path": "/mcp", "transport": "http", "headers": {"X-NeMo-Gym-Session-Token":
token}}}`; the agent's MCP client (streamable HTTP, stateless, JSON answers) sends that header with every
request; `tools/list` lists the environment's tools, `tools/call` calls one on the session the token names.
The token is the session's own bearer token (256 random bits; the store keeps only its SHA-256) and is
found with the caller's tenant, so another tenant's token is the same unknown session as a forged one (NeMo
Gym signs a session id into its token instead).
Served by the same SDK server as `/mcp/<env>` (routes/mcp.py), without its `seed` tool.
"""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from rewardfleet.services.gateway.environments.errors import UnknownTool
from rewardfleet.services.gateway.nemo_gym.config import NeMoGymConfig
from rewardfleet.services.gateway.routes.mcp import McpEndpoints
from rewardfleet.services.gateway.routes.nemo_gym_sessions import MCP_TOKEN_HEADER


def path(config: NeMoGymConfig) -> str:
    return f"{config.prefix}/{{server}}/mcp"


class GymMcpEndpoint:
    """The ASGI endpoint of `<prefix>/<server>/mcp`: the server's environment over `McpEndpoints`."""

    def __init__(self, config: NeMoGymConfig, mcp: McpEndpoints) -> None:
        self.config = config
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = str(scope.get("path_params", {}).get("server", ""))
        spec = self.config.servers.get(server)
        if spec is None or spec.environment is None or not spec.expose_tools_over_mcp:
            raise UnknownTool(
                f"NeMo Gym server {server[:64]!r} serves no MCP (expose_tools_over_mcp is not set)",
                field="server",
            )
        await self.mcp.serve(scope, receive, send, spec.environment, header=MCP_TOKEN_HEADER)
