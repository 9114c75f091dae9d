"""Fixtures of the trainer-route tests: a scripted scorer and an HTTP client on the app around it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from rewardfleet.services.gateway.routes.trainer_protocol import TrainerBackend
from tests.gateway.routes.trainer_scorer import Scorer, trainer_app


@pytest.fixture
def scorer() -> Scorer:
    return Scorer()


@pytest.fixture
async def http(scorer: Scorer) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=trainer_app(TrainerBackend(score_one=scorer)))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as client:
        yield client
