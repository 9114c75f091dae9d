"""Every route of a live gateway, fuzzed from its own OpenAPI document (schemathesis, bounded examples).

The rule checked: no answer is a 5xx, except the documented failure of a reward function (500
`RewardFunctionFailed` / 504 `RewardFunctionTimeout` with the error envelope, on the trainer protocol
routes). Bad input must be a 4xx naming the field.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from rewardfleet.services.gateway.errors import RewardFunctionFailed, RewardFunctionTimeout
from tests.support.live_gateway import LiveGateway

DOCUMENTED_FAILURES = {500: RewardFunctionFailed.type, 504: RewardFunctionTimeout.type}


def check(case: Any, statuses: Counter[tuple[str, int]]) -> None:
    response = case.call(timeout=30)
    statuses[(case.path, response.status_code)] += 1
    if response.status_code < 500:
        return
    error_type = None
    with contextlib.suppress(ValueError):
        error_type = response.json().get("error", {}).get("type")
    assert DOCUMENTED_FAILURES.get(response.status_code) == error_type, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}\n"
        f"{case.as_curl_command()}"
    )


def test_no_undocumented_5xx(trainer_gateway: LiveGateway) -> None:
    # schemathesis' own pytest plugin does not run on this pytest; its strategies are driven directly.
    schema = schemathesis.openapi.from_url(f"{trainer_gateway.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10  # every route is in the document
    statuses: Counter[tuple[str, int]] = Counter()
    for operation, mode in itertools.product(operations, GenerationMode):  # valid and invalid requests
        fuzz = settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )(given(case=operation.as_strategy(generation_mode=mode))(lambda case: check(case, statuses)))
        try:
            fuzz()
        except Unsatisfiable:
            if mode is GenerationMode.POSITIVE:
                raise
            # a route without parameters or body (GET /health) has no invalid request to make
    # every operation was really called, and bad input was really generated (4xx seen)
    assert {path for path, _ in statuses} == {op.path for op in operations}
    assert any(400 <= status < 500 for _, status in statuses), statuses
