"""The per-request and per-call metrics counted in plain attributes expose what client_python exposed.

The reference is the contract as client_python built it before (names, HELP, labels, buckets, the updates of
`observe_request` / `observe_call`); both get the same observations and their exposition lines must be equal,
in order, with only the `_created` timestamps' values masked (creation times differ by microseconds).
"""

from __future__ import annotations

import math
import re

import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.exposition import generate_latest

from bench.harness.metrics_reference import Reference
from rewardfleet.services.gateway.hot_path.plain_metrics import PlainCounter, PlainHistogram
from rewardfleet.services.gateway.metrics import GatewayMetrics

HOT_FAMILIES = (
    "rewardfleet_gateway_requests",
    "rewardfleet_gateway_request_duration_seconds",
    "rewardfleet_reward_fn_duration_seconds",
    "rewardfleet_reward_fn_outcomes",
    "rewardfleet_reward_score",
    "rewardfleet_reward_score_positive_sum",
    "rewardfleet_reward_score_negative_sum",
    "rewardfleet_reward_score_squared_sum",
)
_LINE = re.compile(r"^(?:# (?:HELP|TYPE) )?([a-zA-Z_:][a-zA-Z0-9_:]*)")
_SUFFIXES = ("_total", "_created", "_bucket", "_count", "_sum", "")


def hot_lines(exposition: bytes) -> list[str]:
    """The lines of the hot families, in order, each `_created` value masked."""
    kept = []
    for line in exposition.decode().splitlines():
        match = _LINE.match(line)
        assert match is not None, line
        name = match.group(1)
        family = next(
            (
                name.removesuffix(s)
                for s in _SUFFIXES
                if name.endswith(s) and name.removesuffix(s) in HOT_FAMILIES
            ),
            None,
        )
        if family is None:
            continue
        if not line.startswith("#") and name.endswith("_created"):
            line = line.rsplit(" ", 1)[0] + " <created>"
        kept.append(line)
    return kept


def feed(target: GatewayMetrics | Reference) -> None:
    for route, status, duration_s in [
        ("/score", 200, 0.0),
        ("/score", 200, 0.005),  # on a bound: counted in le="0.005"
        ("/score", 200, 0.0050001),
        ("/score", 422, 0.0001),
        ("/score/batch", 200, 61.0),  # above the last finite bound: +Inf only
        ("unmatched", 404, 0.002),
        ("/score", 200, 2.5),
    ]:
        target.observe_request(route, status, duration_s)
    for fn, source, outcome, compute_s, score in [
        ("gsm8k", "openai/gsm8k", "ok", 0.0005, 1.0),
        ("gsm8k", "openai/gsm8k", "ok", 0.002, 0.0),
        ("gsm8k", "openai/gsm8k", "ok", 0.3, -0.5),
        ("gsm8k", "other", "ok", 121.0, -10.0),  # on the lowest bound
        ("gsm8k", "other", "ok", 0.01, -11.0),  # below it: counted in le="-10.0" (the first bound >= it)
        ("gsm8k", "other", "ok", 0.01, 12.5),
        ("gsm8k", "openai/gsm8k", "error", 0.004, None),
        ("judge", "hh", "timeout", 30.0, None),
        ("judge", "hh", "ok", 1.0, None),  # ok without a score: call metrics only
        ("judge", "hh", "ok", 0.7, 0.9),
        ("judge", "inf", "ok", 0.1, math.inf),
        ("judge", "nan", "ok", 0.1, math.nan),  # client_python counts NaN in no bucket; its sum is NaN
    ]:
        target.observe_call(fn, source, outcome, compute_s, score)


def test_exposition_matches_client_python_line_for_line() -> None:
    plain, reference = GatewayMetrics(), Reference()
    assert hot_lines(plain.exposition()[0]) == hot_lines(
        generate_latest(reference.registry)
    )  # nothing observed
    feed(plain)
    feed(reference)
    got, want = hot_lines(plain.exposition()[0]), hot_lines(generate_latest(reference.registry))
    assert got == want
    # what the parity covers: the score histogram has its buckets and `_count` but no `_sum`
    assert any(
        line.startswith('rewardfleet_reward_score_count{data_source="other",reward_fn="gsm8k"} 3.0')
        for line in got
    )
    assert not any(line.startswith("rewardfleet_reward_score_sum") for line in got)
    assert any(
        line.startswith('rewardfleet_reward_fn_duration_seconds_sum{reward_fn="judge"}') for line in got
    )


def test_registry_reads_the_plain_samples() -> None:
    metrics = GatewayMetrics()
    metrics.observe_request("/score", 200, 0.01)
    metrics.observe_request("/score", 200, 0.02)
    metrics.observe_call("f", "d", "ok", 0.001, -0.25)
    read = metrics.registry.get_sample_value
    assert read("rewardfleet_gateway_requests_total", {"route": "/score", "status": "200"}) == 2.0
    assert read("rewardfleet_gateway_request_duration_seconds_sum", {"route": "/score"}) == pytest.approx(
        0.03
    )
    assert (
        read("rewardfleet_reward_score_bucket", {"reward_fn": "f", "data_source": "d", "le": "-0.1"}) == 1.0
    )
    assert (
        read("rewardfleet_reward_score_bucket", {"reward_fn": "f", "data_source": "d", "le": "-0.5"}) == 0.0
    )
    assert read("rewardfleet_reward_score_negative_sum_total", {"reward_fn": "f", "data_source": "d"}) == 0.25


def test_plain_families_keep_client_python_checks() -> None:
    registry = CollectorRegistry()
    counter = PlainCounter("things", "Things.", ["kind"], namespace="ns", registry=registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):  # the name is taken, for client_python too
        Counter("things", "Again.", namespace="ns", registry=registry)
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("a").inc(-1.0)
    with pytest.raises(ValueError, match="1 label values expected, got 2"):
        counter.labels("a", "b")
    with pytest.raises(ValueError, match="not in sorted order"):
        PlainHistogram("h", "H.", [], buckets=[1.0, 0.5], registry=registry)
    with pytest.raises(ValueError, match="'le' is the bucket label"):
        PlainHistogram("h", "H.", ["le"], buckets=[1.0], registry=registry)
    assert counter.labels(7) is counter.labels("7")  # label values are strings, as client_python's
