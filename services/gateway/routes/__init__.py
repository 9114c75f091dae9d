"""The gateway's HTTP routes, one module per resource: `score` (`/score`, `/score/batch`; `score_asgi` answers
`/score` as plain ASGI ahead of FastAPI's router), `meta` (`/health`, `/ready`, `/reward_fns`, `/metrics`),
`admin`, `graders`, `monitors`, `pools` (external pools), `openrlhf` and `slime` (with `trainer_protocol`
and `query_split`, what they share). `deps` holds the objects the lifespan builds and hands to the routes;
`error_handlers` is the one place that turns exceptions into HTTP answers."""
