"""Property-based fuzzing of POST /score and /score/batch: random JSON, wrong types, huge strings, bad bytes.
Never a 5xx; every refusal is the documented envelope; every accepted sample is answered."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.reliability import report

FIELDS = ["data_source", "solution_str", "response", "ground_truth", "label", "extra_info", "prompt",
          "reward_fn", "uid", "group_id"]  # fmt: skip
EXAMPLES = 2000

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
huge = st.sampled_from([10, 5_000, 70_000]).map(lambda n: "x" * n)
field_values = json_values | huge | st.sampled_from(["quick", "nope", "x"])
samples = st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), field_values, max_size=8)
valid_ish = st.fixed_dictionaries(
    {"data_source": st.text(max_size=20), "solution_str": st.text(max_size=200) | huge},
    optional={
        "ground_truth": json_values,
        "extra_info": json_values,
        "prompt": json_values,
        "uid": json_values,
    },
)
bodies = samples | valid_ish | st.lists(samples, max_size=3).map(lambda s: {"samples": s}) | json_values


@pytest.fixture(scope="module")
def fuzz_gateway(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import shutil

    from bench.harness.processes import free_port
    from tests.support.reliability import FNS, GatewayProc

    tmp = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(FNS, tmp / "fns")
    config = {"workers": 1, "default_reward_fn": "quick", "max_solution_chars": 60_000,
              "max_body_bytes": 64 * 1024, "max_batch_samples": 2}  # fmt: skip
    gw = GatewayProc(tmp, config, free_port()).start()
    yield gw
    gw.stop()


def test_fuzzed_bodies_never_5xx(fuzz_gateway: Any) -> None:
    seen: dict[int, int] = {}
    answered = 0

    def check(resp: httpx.Response, body: Any) -> None:
        nonlocal answered
        seen[resp.status_code] = seen.get(resp.status_code, 0) + 1
        assert resp.status_code < 500, (body, resp.text[:500])
        data = resp.json()
        if resp.status_code == 200:
            results = data.get("results", [data])
            for result in results:
                assert result["status"] in {"ok", "error", "timeout"} and "score" in result
                answered += 1
        else:
            assert set(data) == {"error"} and {"type", "message"} <= set(data["error"]), data

    with httpx.Client(base_url=fuzz_gateway.url, timeout=30) as client:

        @settings(
            max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        @given(body=bodies, path=st.sampled_from(["/score", "/score/batch"]), raw=st.binary(max_size=40))
        def run(body: Any, path: str, raw: bytes) -> None:
            check(client.post(path, content=json.dumps(body)), body)  # Infinity/NaN tokens too
            if raw:
                check(client.post(path, content=raw), raw)

        run()
    report("FUZZ", examples=EXAMPLES, requests=sum(seen.values()), samples_answered=answered,
           statuses=dict(sorted(seen.items())))  # fmt: skip
    assert seen.get(200, 0) > 0 and seen.get(422, 0) > 0
