"""A CPU model server speaking SGLang's HTTP API subset, with server-side dynamic batching.

cli.py          `rewardfleet serve-model`; config.py its settings (one pydantic-settings class)
app.py          the app factory; its lifespan boots and closes the `ModelServer` (server.py)
deps.py         the FastAPI dependency handing the `ModelServer` to the routes
routes/         HTTP routes; schemas.py their request bodies, responses.py SGLang's response pieces
errors.py       the exceptions and the one place that maps them to SGLang's error shapes
batcher.py      dynamic batching for forward passes; continuous.py continuous batching for generation
engine.py       the pooling engine in its own process (an HTTP front and a scheduler process)
runners/        one runner per model kind; checkpoints.py where a checkpoint lives
image_inputs.py the image inputs of `/v1/embeddings`, checked in the HTTP front
metrics.py      Prometheus metrics on an explicit registry
"""
