"""Which routes the gateway forwards to an external pool: an `api: vllm_pooling` pool (a vLLM PRM server)
only `/pooling`, at the server's root; an OpenAI-style pool never `/pooling`."""

from __future__ import annotations

import pytest

from rewardfleet.services.gateway.pools.external_pools import forwarded_route


@pytest.mark.parametrize(
    ("path", "api", "route"),
    [
        ("pooling", "vllm_pooling", "pooling"),
        ("v1/pooling", "vllm_pooling", None),  # vLLM serves /pooling at the root, not under /v1
        ("chat/completions", "vllm_pooling", None),
        ("v1/embeddings", "vllm_pooling", None),
        ("pooling/../tokenize", "vllm_pooling", None),
        ("pooling", "openai", None),
        ("v1/pooling", "openai", None),
        ("v1/chat/completions", "openai", "chat/completions"),
    ],
)
def test_forwarded_routes_by_pool_api(path: str, api: str, route: str | None) -> None:
    assert forwarded_route(path, api) == route
