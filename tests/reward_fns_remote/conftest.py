"""One stand-in SGLang server per pool (judge, reward model, encoder), each behind a real sglang-router.

Started once per module: six processes on loopback. A module that uses `fleet` runs its functions directly
(`await compute_score(...)`) with a real aiohttp session, as the gateway would call them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack

import aiohttp
import pytest

from tests.support.remote_fleet import Fleet, start_pool


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    tmp = tmp_path_factory.mktemp("fleet")
    with ExitStack() as stack:
        yield Fleet(
            judge=start_pool(stack, tmp, "judge", "judge", "--canned-text", "Verdict: correct"),
            reward_model=start_pool(stack, tmp, "reward_model", "reward"),
            encoder=start_pool(stack, tmp, "encoder", "encoder", "--dim", "64"),
        )


@pytest.fixture
async def http_client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session
