"""The hot path: what every `POST /score` passes through outside its handler, kept lean on purpose.

    score_front.py     `GatewayApp`: the app class; `POST /score` enters below FastAPI's outer layers
    score_asgi.py      `ScoreFastPath`: `POST /score` as plain ASGI, ahead of FastAPI's router
    tool_call_asgi.py  `ToolCallFastPath`: environment sessions' tool calls as plain ASGI, likewise
    http_protocol.py   `GatewayHttpProtocol`: uvicorn's httptools protocol, holding less per connection
    plain_metrics.py   labelled counters and histograms in plain attributes, exposed by a Collector
    gc_tuning.py       the cyclic collector's settings for the gateway's own process

A leaf: it imports nothing of the gateway (app.py hands score_asgi the declared route and routes/score.py's
scoring), so metrics.py builds on plain_metrics and app.py installs the rest.
"""
