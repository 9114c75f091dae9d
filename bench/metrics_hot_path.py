"""Microseconds per `GatewayMetrics.observe_call` / `observe_request` (the per-call and per-request metrics,
counted in plain attributes) against the same updates on client_python's `Counter`/`Histogram` children
(bound once, as the gateway did before), in one process, alternating rounds; prints each and the ratio.

    .venv/bin/python -m bench.metrics_hot_path [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import timeit

from bench.common import BenchResult, Row, median, print_result
from bench.harness.metrics_reference import Reference
from rewardfleet.services.gateway.metrics import GatewayMetrics


def _us_per_op(stmt: object, number: int) -> float:
    return timeit.timeit(stmt, number=number) / number * 1e6  # type: ignore[arg-type]


def run(calls: int = 20_000, rounds: int = 5) -> BenchResult:
    result = BenchResult("metrics_hot_path")
    plain, client = GatewayMetrics(), Reference()
    times: dict[str, dict[str, list[float]]] = {"call": {}, "request": {}}
    for _ in range(rounds):  # alternating, so a busy second on this shared machine hits both
        for name, m in (("plain", plain), ("client_python", client)):
            times["call"].setdefault(name, []).append(
                _us_per_op(lambda m=m: m.observe_call("trivial", "bench", "ok", 0.0004, 1.0), calls)
            )
            times["request"].setdefault(name, []).append(
                _us_per_op(lambda m=m: m.observe_request("/score", 200, 0.0012), calls)
            )
    for what, by in times.items():
        new, old = median(by["plain"]), median(by["client_python"])
        label = {"call": "observe_call", "request": "observe_request"}[what]
        result.rows.append(Row("metrics", f"{label} us, plain", new, fmt="{:.2f}"))
        result.rows.append(Row("metrics", f"{label} us, client_python", old, fmt="{:.2f}"))
        result.rows.append(Row("metrics", f"{label} plain / client_python", new / old, fmt="{:.3f}"))
    result.notes.append(f"{calls} updates per round, {rounds} alternating rounds, medians")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print_result(run(args.calls, args.rounds))


if __name__ == "__main__":
    main()
