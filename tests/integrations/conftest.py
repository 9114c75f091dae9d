"""A live gateway (real uvicorn, real reward-function loading) with test functions, shared per module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live_gateway import LiveGateway, start_live_gateway


@pytest.fixture(scope="module")
def live_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """A gateway this module may kill and restart."""
    gateway = start_live_gateway(tmp_path_factory.mktemp("gateway"))
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def trainer_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """One gateway for every trainer's own client code (TRL, verl, OpenRLHF, slime): started once."""
    gateway = start_live_gateway(tmp_path_factory.mktemp("trainer-gateway"))
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 causal LM checkpoint with its ChatML tokenizer: the trainers' policy and tokenizer."""
    from bench.harness.tiny_models import build_tiny_qwen2

    return Path(build_tiny_qwen2(tmp_path_factory.mktemp("policy") / "qwen2", kind="causal"))
