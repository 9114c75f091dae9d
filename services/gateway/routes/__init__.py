"""The gateway's HTTP routes, one module per resource.

score (its plain-ASGI path is hot_path/score_asgi.py), meta (/health /ready /reward_fns /metrics), graders,
admin, pools, monitors, openrlhf and slime (over trainer_protocol, query_split), nemo_gym (NeMo Gym's
resources-server protocol; nemo_gym_sessions for a server that names an environment, nemo_gym_body the body
both read, nemo_gym_mcp a server's tools over MCP when it sets `expose_tools_over_mcp`), sessions
(environment sessions in the gateway's own JSON), openenv (OpenEnv's HTTP and WebSocket protocol;
openenv_wire its shapes, openenv_mcp its JSON-RPC `POST /mcp`) and mcp (MCP streamable HTTP; mcp_server the
SDK's side), both over environment_sessions; deps hands them the `Gateway` (facade.py), error_handlers
answers errors."""
