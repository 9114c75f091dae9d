"""The gateway's HTTP routes, one module per resource: score (its plain-ASGI path is hot_path/score_asgi.py),
meta (/health /ready /reward_fns /metrics), graders, admin, pools, monitors, openrlhf and slime (over
trainer_protocol, query_split), nemo_gym (NeMo Gym's resources-server protocol; nemo_gym_sessions for a
server that names an environment, nemo_gym_body the body both read), sessions (environment sessions in the
gateway's own JSON); deps hands them the `Gateway` (facade.py), error_handlers answers errors."""
