"""NeMo Gym's resources-server protocol on the gateway (`/verify`, `/seed_session`, `/aggregate_metrics`).

config.py    `nemo_gym.servers.<name>`: which reward function a server's verify bodies go to, and how
mapping.py   a verify body as a `/score` sample, and a result as the verify answer
metrics.py   `/aggregate_metrics`: the figures NeMo Gym's reward profile computes (pass@k, majority@k, ...)
The routes are routes/nemo_gym.py; docs/nemo_gym.md tells the whole protocol.
"""
