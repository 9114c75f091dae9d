"""The cost of shared state: requests/s of one gateway replica with the Redis state backend ÷ the same
gateway with in-process state, for `POST /score` of a trivial async function (every sample a new uid, so
each one claims, runs and stores through Redis), and for GRPO groups of 8 (each member joins, reports and is
answered through Redis). A real redis-server (no persistence) on 127.0.0.1; rounds alternate the backends.
Prints req/s, p50, p99 and the ratios (target ≥ 0.8 ungrouped; grouped has no target).

    .venv/bin/python -m bench.state_backend [--duration-s 6] [--rounds 2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Row, gateway, median, print_result, write_fn
from bench.load import LoadResult, run_load
from tests.state_store.redis_server import RedisServer

TRIVIAL = """
async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return float(len(solution_str))
"""
GROUP_SIZE = 8


def sample_body(n: int) -> bytes:
    return json.dumps(
        {
            "data_source": "bench",
            "reward_fn": "trivial",
            "solution_str": "The answer is 42.",
            "ground_truth": "42",
            "uid": f"u-{n}",
        }
    ).encode()


def grouped_body(tag: str) -> Callable[[int], bytes]:
    def body(n: int) -> bytes:
        group, index = divmod(n - 1, GROUP_SIZE)
        return json.dumps(
            {
                "data_source": "bench",
                "reward_fn": "trivial",
                "solution_str": "x" * (index + 1),
                "ground_truth": "42",
                "uid": f"{tag}-{group}",
                "group_id": f"{tag}-{group}",
                "group_size": GROUP_SIZE,
                "group_index": index,
                "group_fn": "rank_normalise",
            }
        ).encode()

    return body


def run(
    duration_s: float = 6.0, rounds: int = 2, concurrency: int = 64, warmup_s: float = 1.5
) -> BenchResult:
    result = BenchResult("state_backend")
    figures: dict[tuple[str, str], list[LoadResult]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        fns = write_fn(tmp / "fns", "trivial", TRIVIAL)
        redis = RedisServer(tmp).start()
        base: dict[str, Any] = {
            "builtin_package": None,
            "workers": 1,
            "groups": {"timeout_s": 3},
        }  # the last, partial groups of a round end soon
        try:
            with (
                gateway(tmp, base, [fns], name="memory") as memory_url,
                gateway(tmp, {**base, "state_url": redis.url}, [fns], name="redis") as redis_url,
            ):
                for r in range(rounds):
                    for backend, url in (("memory", memory_url), ("redis", redis_url)):
                        for kind in ("ungrouped", "grouped"):
                            body = sample_body if kind == "ungrouped" else grouped_body(f"{backend}{r}")
                            load = asyncio.run(
                                run_load(url + "/score", body, concurrency, duration_s, warmup_s)
                            )
                            figures.setdefault((backend, kind), []).append(load)
        finally:
            redis.stop()
    rps: dict[tuple[str, str], float] = {}
    for (backend, kind), loads in figures.items():
        rps[(backend, kind)] = median([lr.rps for lr in loads])
        p50 = median([lr.percentile(0.5) for lr in loads]) * 1000
        p99 = median([lr.percentile(0.99) for lr in loads]) * 1000
        errors = sum(lr.errors for lr in loads)
        result.rows.append(
            Row(
                "state_backend",
                f"{kind} req/s, {backend}",
                rps[(backend, kind)],
                detail=f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, errors {errors}",
                fmt="{:.0f}",
            )
        )
    ungrouped = rps[("redis", "ungrouped")] / rps[("memory", "ungrouped")]
    grouped = rps[("redis", "grouped")] / rps[("memory", "grouped")]
    result.rows.append(
        Row("state_backend", "ungrouped redis ÷ in-process", ungrouped, "≥ 0.8", ungrouped >= 0.8)
    )
    result.rows.append(Row("state_backend", "grouped (8) redis ÷ in-process", grouped))
    result.notes.append(
        f"One gateway replica, trivial async function, concurrency {concurrency}, {rounds} alternating "
        f"rounds of {duration_s:.0f} s; every sample a new uid (no cache hits); groups of {GROUP_SIZE} "
        "with rank_normalise."
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration-s", type=float, default=6.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    print_result(run(args.duration_s, args.rounds, args.concurrency))


if __name__ == "__main__":
    main()
