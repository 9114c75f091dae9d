"""Code rewards: the cost of isolation.

1. Code samples/s through the gateway (the `code` built-in, bubblewrap backend, 2 sandbox slots) ÷ the same
   programs and test cases run as bare subprocesses (the same harness, the same rlimits via prlimit, the same
   first-pass/retry-pass conversation and comparison, the same 2 slots; no bwrap, no uid switch, no gateway)
   in the same run, alternating rounds, medians (target >= 0.8). Measured for the warm sandbox (the default:
   one sandbox per pass, a zygote forking each case) and, in the same rounds, for `sandbox.warm: false` (one
   sandbox per case, as before the zygote).
2. Gateway throughput with 1 and with 2 sandbox slots (warm).

    .venv/bin/python -m bench.code_sandbox [--samples 40] [--rounds 2] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import BenchResult, Row, gateway, median, print_result
from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.bubblewrap import HARNESS, BubblewrapRun, interpreter
from rewardfleet.reward_fns._sandbox.settings import MIB, SandboxSettings
from rewardfleet.reward_fns._sandbox.slots import SlotPool

SUM_CASES = {"inputs": ["2\n1\n2\n", "3\n1\n2\n3\n", "1\n-5\n"], "outputs": ["3\n", "6\n", "-5\n"]}
CALL_CASES = {"fn_name": "solve", "inputs": ["1\n2", "5\n5", "7\n1"], "outputs": ["3", "10", "8"]}
# What RL rollouts look like: mostly right, some wrong (which costs the one-by-one retry pass), some broken.
PROGRAMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("n=int(input())\nprint(sum(int(input()) for _ in range(n)))", SUM_CASES),
    ("import sys\ndata=sys.stdin.read().split()\nprint(sum(map(int,data[1:])))", SUM_CASES),
    ("def solve(a, b):\n    return a + b", CALL_CASES),
    ("n=int(input())\ns=sum(int(input()) for _ in range(n))\nprint(s if s > 0 else 0)", SUM_CASES),
    ("def solve(a, b):\n    return a * b", CALL_CASES),
    ("n=int(input()\nprint(n)", SUM_CASES),
)
SANDBOX = {"case_timeout_s": 5.0, "retry_case_timeout_s": 5.0, "memory_limit_mb": 1024}


def samples(count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"```python\n{PROGRAMS[i % len(PROGRAMS)][0]}\n```", PROGRAMS[i % len(PROGRAMS)][1])
        for i in range(count)
    ]


class BareRun(BubblewrapRun):
    """The same runner, one bare subprocess per case under the same rlimits (no namespaces)."""

    def command(self) -> list[str]:
        s = self._settings
        return [
            "prlimit",
            f"--cpu={math.ceil(s.sample_timeout_s) + 1}",
            f"--as={s.memory_limit_mb * MIB}",
            f"--fsize={s.max_file_bytes}",
            "--core=0",
            "--",
            str(interpreter(s)),
            "-I",
            str(HARNESS),
        ]

    async def close(self) -> None:
        # No namespace init to kill here: end the runner's process group (it started it in a new session).
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
        await super().close()


async def bare_round(items: list[tuple[str, dict[str, Any]]], slots: int) -> float:
    settings = SandboxSettings(**SANDBOX, slots=slots)
    pool = SlotPool(slots)

    async def one(completion: str, cases: dict[str, Any]) -> float:
        job = {
            "solution": code.extract_program(completion),
            "fn_name": cases.get("fn_name"),
            "inputs": cases["inputs"],
            "case_timeout_s": settings.case_timeout_s,
            "retry_case_timeout_s": settings.retry_case_timeout_s,
            "each_cases": settings.retry_cases,
        }
        async with pool.hold() as slot:
            run = BareRun(settings, slot)
            try:
                result = await code.judge(run, job, cases["outputs"], True, settings.sample_timeout_s)
            finally:
                await run.close()
        return float(result["score"])

    started = time.perf_counter()
    await asyncio.gather(*(one(c, t) for c, t in items))
    return len(items) / (time.perf_counter() - started)


async def gateway_round(url: str, items: list[tuple[str, dict[str, Any]]], concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(timeout=300) as client:

        async def one(completion: str, cases: dict[str, Any]) -> None:
            async with gate:
                body = {"data_source": "apps", "solution_str": completion, "ground_truth": cases}
                answer = (await client.post(f"{url}/score", json=body)).json()
                if answer["status"] != "ok":
                    raise RuntimeError(f"sample failed: {answer}")

        started = time.perf_counter()
        await asyncio.gather(*(one(c, t) for c, t in items))
        return len(items) / (time.perf_counter() - started)


def run(samples_count: int = 40, rounds: int = 2, concurrency: int = 8) -> BenchResult:
    result = BenchResult("code_sandbox")
    items = samples(samples_count)
    rates: dict[str, list[float]] = {"bare_2": [], "gw_1": [], "gw_2": [], "gw_2_cold": []}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        configs = {
            slots: {
                "workers": 1,
                "functions": {
                    "code": {"timeout_s": 300, "reward_kwargs": {"sandbox": {**SANDBOX, "slots": slots}}}
                },
            }
            for slots in (1, 2)
        }
        cold = {"workers": 1, "functions": {"code": {**configs[2]["functions"]["code"]}}}
        cold["functions"]["code"]["reward_kwargs"] = {"sandbox": {**SANDBOX, "slots": 2, "warm": False}}
        with (
            gateway(tmp, configs[1], name="gw1") as url1,
            gateway(tmp, configs[2], name="gw2") as url2,
            gateway(tmp, cold, name="gw2cold") as url_cold,
        ):
            asyncio.run(gateway_round(url2, items[:4], concurrency))  # warm-up
            asyncio.run(gateway_round(url_cold, items[:4], concurrency))
            for i in range(rounds):
                # Alternating order: the bare baseline first in even rounds, last in odd ones.
                arms = [
                    ("bare_2", lambda: bare_round(items, 2)),
                    ("gw_2", lambda: gateway_round(url2, items, concurrency)),
                    ("gw_2_cold", lambda: gateway_round(url_cold, items, concurrency)),
                ]
                for name, arm in arms if i % 2 == 0 else arms[::-1]:
                    rates[name].append(asyncio.run(arm()))
                rates["gw_1"].append(asyncio.run(gateway_round(url1, items, concurrency)))
    bare, gw1, gw2 = median(rates["bare_2"]), median(rates["gw_1"]), median(rates["gw_2"])
    gw2_cold = median(rates["gw_2_cold"])
    ratio = gw2 / bare
    # Each round's own ratios (its arms ran back to back), for the spread on a shared machine.
    warm_rounds = [w / b for w, b in zip(rates["gw_2"], rates["bare_2"], strict=True)]
    cold_rounds = [c / b for c, b in zip(rates["gw_2_cold"], rates["bare_2"], strict=True)]
    result.notes.append(
        f"code_sandbox: {samples_count} samples a round ({len(PROGRAMS)} programs, 3 cases each, 2 of 6 "
        f"wrong or broken so they take the retry pass), {rounds} alternating rounds, "
        f"client concurrency {concurrency}"
    )
    result.rows += [
        Row(
            "code_sandbox",
            "gateway+bubblewrap / bare subprocess samples/s (2 slots)",
            ratio,
            ">= 0.8",
            ratio >= 0.8,
            "per round " + ", ".join(f"{r:.2f}" for r in warm_rounds),
        ),
        Row(
            "code_sandbox",
            "before the zygote (sandbox.warm: false, a sandbox per case) / bare subprocess (2 slots)",
            gw2_cold / bare,
            detail="per round " + ", ".join(f"{r:.2f}" for r in cold_rounds),
        ),
        Row("code_sandbox", "warm / one sandbox per case samples/s (2 slots)", gw2 / gw2_cold),
        Row("code_sandbox", "bare subprocess samples/s (2 slots)", bare),
        Row("code_sandbox", "gateway+bubblewrap samples/s, 1 slot", gw1),
        Row("code_sandbox", "gateway+bubblewrap samples/s, 2 slots", gw2),
        Row("code_sandbox", "gateway+bubblewrap samples/s, 2 slots, a sandbox per case", gw2_cold),
        Row("code_sandbox", "2 slots / 1 slot", gw2 / gw1),
    ]
    result.data = {"rates": rates}
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    print_result(run(args.samples, args.rounds, args.concurrency))


if __name__ == "__main__":
    main()
