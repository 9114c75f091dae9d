"""Re-scoring test fixtures: one real gateway per module over tests/rescore/reward_files/."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.rescore import Gateway, start_gateway


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = start_gateway(tmp_path_factory.mktemp("gateway"), {})
    try:
        yield gw
    finally:
        gw.proc.stop()
