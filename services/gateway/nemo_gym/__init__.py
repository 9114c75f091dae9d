"""NeMo Gym's resources-server protocol on the gateway (`/verify`, `/seed_session`, `/aggregate_metrics`).

config.py    the `nemo_gym.servers.<name>` section: the resources servers the gateway stands in for
mapping.py   a verify body as a `/score` sample, and a result as the verify answer
metrics.py   `/aggregate_metrics`: the figures NeMo Gym's reward profile computes (pass@k, majority@k, ...)
Its routes are routes/nemo_gym.py; docs/nemo_gym.md tells the whole protocol.
"""
