"""CPU-heavy functions: the built-in `math_verify` (sync, so it runs in the gateway's process pool).

1. Throughput with 2 worker processes ÷ with 1 (alternating rounds, medians; target >= 1.7).
2. While a 2-worker pool is saturated with math-verify calls, the p99 latency of a trivial async function
   served by the same gateway (target < 50 ms: the event loop stays free); the same probe with the pool idle
   is measured in the same run as the baseline.

    .venv/bin/python -m bench.cpu_heavy [--duration-s 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Row, gateway, median, print_result, write_fn
from bench.load import LoadResult, run_load


def math_body(i: int) -> bytes:
    """A different problem per request (math-verify caches parses, and a repeated input measures the cache),
    with a response of the length RL rollouts have: a few steps of worked LaTeX, then the boxed answer."""
    a, b = i % 997 + 1, i % 991 + 2
    steps = " ".join(
        f"Step {k}: we have $\\frac{{{a + k}}}{{{b}}} - \\frac{{{k}}}{{{b}}} = \\frac{{{a}}}{{{b}}}$, "
        f"and $x^{{2}} + {k}x = {k * k}$ gives $x = {k}\\cdot\\frac{{\\sqrt{{5}} - 1}}{{2}}$."
        for k in range(1, 7)
    )
    return json.dumps(
        {
            "data_source": "bench",
            "reward_fn": "math_verify",
            # Written differently from the gold answer, so math-verify compares symbolically (its real job).
            "solution_str": f"{steps} So the answer is "
            f"\\boxed{{\\frac{{{a}\\sqrt{{2}}}}{{{b}}} + \\frac{{\\sqrt{{2}}}}{{2}}}}.",
            "ground_truth": f"\\frac{{({2 * a + b})\\sqrt{{2}}}}{{{2 * b}}}",
        }
    ).encode()


TRIVIAL = json.dumps({"data_source": "bench", "reward_fn": "trivial", "solution_str": "x"}).encode()
TRIVIAL_FN = """
async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0
"""


def _direct_worker(seconds: float, start_at: float, out: Any) -> None:
    """In a child process: call math-verify back to back on fresh inputs for `seconds`; count the calls."""
    from rewardfleet.reward_fns.math_verify import compute_score

    time.sleep(max(0.0, start_at - time.time()))
    n, stop = 0, time.time() + seconds
    while time.time() < stop:
        sample = json.loads(math_body(n + os.getpid() * 1000))
        compute_score(sample["data_source"], sample["solution_str"], sample["ground_truth"])
        n += 1
    out.put(n / seconds)


def direct_scaling(seconds: float) -> tuple[float, float]:
    """The machine's own ceiling, no gateway: calls/s of math-verify in 1 process, then in 2 at once."""
    ctx = multiprocessing.get_context("spawn")
    rates = []
    for procs in (1, 2):
        queue = ctx.Queue()
        start_at = time.time() + 3.0  # after the children have imported math-verify
        children = [ctx.Process(target=_direct_worker, args=(seconds, start_at, queue)) for _ in range(procs)]
        for child in children:
            child.start()
        rates.append(sum(queue.get(timeout=seconds + 60) for _ in children))
        for child in children:
            child.join()
    return rates[0], rates[1]


def _config(workers: int) -> dict[str, object]:
    return {"builtin_package": "rewardfleet.reward_fns", "workers": workers}


async def _saturated(
    base: str, duration_s: float, warmup_s: float, math_clients: int
) -> tuple[LoadResult, ...]:
    return tuple(
        await asyncio.gather(
            run_load(base + "/score", math_body, math_clients, duration_s, warmup_s),
            run_load(base + "/score", TRIVIAL, 4, duration_s, warmup_s),
        )
    )


def run(
    duration_s: float = 8.0, warmup_s: float = 2.0, rounds: int = 2, concurrency: int = 16
) -> BenchResult:
    result = BenchResult("5. CPU-heavy functions")
    tput: dict[int, list[float]] = {1: [], 2: []}
    probe_idle: list[float] = []
    probe_busy: list[float] = []
    busy_tput: list[float] = []
    ceiling: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="rf-cpu-") as tmp_name:
        tmp = Path(tmp_name)
        fns = write_fn(tmp / "fns", "trivial", TRIVIAL_FN)
        for _ in range(rounds):
            ceiling.append(direct_scaling(duration_s / 2))
            for workers in (1, 2):
                with gateway(tmp, _config(workers), [fns], name=f"gw-w{workers}") as base:
                    load = asyncio.run(
                        run_load(base + "/score", math_body, concurrency, duration_s, warmup_s)
                    )
                    if load.errors:
                        raise RuntimeError(f"{load.errors} failed math-verify requests")
                    tput[workers].append(load.rps)
                    if workers == 2:
                        idle = asyncio.run(run_load(base + "/score", TRIVIAL, 4, duration_s / 2, 1.0))
                        probe_idle.append(idle.percentile(0.99))
                        math, probe = asyncio.run(_saturated(base, duration_s, warmup_s, concurrency))
                        probe_busy.append(probe.percentile(0.99))
                        busy_tput.append(math.rps)
    t1, t2 = median(tput[1]), median(tput[2])
    result.notes.append(
        f"math-verify via the process pool, {concurrency} closed-loop clients, {duration_s:.0f} s x {rounds} "
        f"alternating rounds, medians: 1 worker {t1:.0f} req/s, 2 workers {t2:.0f} req/s"
    )
    d1, d2 = median([c[0] for c in ceiling]), median([c[1] for c in ceiling])
    result.notes.append(
        f"machine ceiling, same run, no gateway: math-verify in 1 process {d1:.0f} calls/s, in 2 processes "
        f"{d2:.0f} calls/s (x{d2 / d1:.2f}); the gateway's 2-worker/1-worker ratio cannot beat this"
    )
    result.notes.append(
        f"trivial async probe (4 clients): p99 idle pool {median(probe_idle) * 1e3:.1f} ms, saturated pool "
        f"{median(probe_busy) * 1e3:.1f} ms (math-verify meanwhile {median(busy_tput):.0f} req/s)"
    )
    result.rows.append(
        Row(
            result.name,
            "math-verify req/s, 2 workers / 1 worker",
            t2 / t1,
            ">= 1.7",
            t2 / t1 >= 1.7,
            f"{t2:.0f} vs {t1:.0f} req/s; machine ceiling (2 bare processes / 1) x{d2 / d1:.2f}",
        )
    )
    p99 = median(probe_busy) * 1e3
    result.rows.append(
        Row(
            result.name,
            "p99 ms of trivial async requests, pool saturated",
            p99,
            "< 50 ms",
            p99 < 50,
            f"idle pool p99 {median(probe_idle) * 1e3:.1f} ms",
            fmt="{:.1f}",
        )
    )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration-s", type=float, default=8.0)
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    result = run(args.duration_s, args.warmup_s, args.rounds, args.concurrency)
    print_result(result)


if __name__ == "__main__":
    main()
