"""The CPU model server serving a process reward model on vLLM's `/pooling` (a script, not a test).

In one run, alternating rounds:

1. offline throughput of the server's own PRM batch function (`ProcessRewardRunner.steps`: tokenise, forward,
   pick the step-tag rows) at batch sizes 1/8/16/32, in this process, same thread count as the server; the
   best one is the baseline;
2. the server (`rewardfleet serve-model --step-tag-id ...`, dynamic batching on) under C concurrent clients
   that each post one input per request to `/pooling` (aiohttp, a bounded number of requests).

Prints samples/s and the ratio server / offline best (target >= 0.85, as for the DisRM in bench/batching.py).
The model is a tiny random `Qwen2ForProcessRewardModel` (tests/tiny_prm.py); each input has 3 steps.

    .venv/bin/python -m bench.prm_server [--concurrency 64] [--requests 2000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.batching import _load
from bench.common import OFFLINE_ENV, BenchResult, add_served_vs_offline, print_result
from tests.support import ChildProcess, free_port, rewardfleet_cmd
from tests.tiny_prm import STEP_TAG, build_tiny_qwen2_prm, step_tag_id

STEPS = (
    "Three plus four means adding four to three, so we count up from three.",
    "Counting up four times gives four, five, six and then seven at the end.",
    "So the answer is seven, which we check by subtracting four from it again.",
)
TEXT = "".join(step + STEP_TAG for step in STEPS)  # ~60 tokens, 3 step tags


def offline(model_path: Path, tag: int, threads: int, seconds: float) -> dict[int, float]:
    """Samples/s of the server's PRM batch function (same code path, no HTTP) at several batch sizes."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.loader import load_runner
    from rewardfleet.services.model_server.runners.prm import StepInput

    torch.set_num_threads(threads)
    runner = load_runner(ModelServerSettings(model_path=model_path, step_tag_id=tag))
    fn = runner.operations()["steps"]
    out = {}
    for bs in (1, 8, 16, 32):
        batch = [StepInput(text=f"{i} {TEXT}") for i in range(bs)]
        warm_until = time.perf_counter() + min(0.5, seconds / 4)
        while time.perf_counter() < warm_until:
            fn(batch)
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            fn(batch)
            n += bs
        out[bs] = n / (time.perf_counter() - started)
    return out


def served(
    model_path: Path, tag: int, threads: int, concurrency: int, requests: int, max_batch_size: int, log: Path
) -> tuple[float, float]:
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(model_path), "--port", str(port), "--step-tag-id", str(tag),
        "--torch-num-threads", str(threads), "--max-batch-size", str(max_batch_size), "--max-queue", "4096",
        "--log-level", "warning",
    )  # fmt: skip
    child = ChildProcess(cmd, log, env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=120)
        probe = httpx.post(base + "/pooling", json={"input": TEXT}, timeout=30).json()
        if len(probe["data"][0]["data"]) != len(STEPS):
            raise RuntimeError(f"expected {len(STEPS)} step rows: {probe}")
        rps, lat = asyncio.run(_load(base + "/pooling", "input", TEXT, concurrency, requests))
        return rps, statistics.median(lat) * 1000
    finally:
        child.stop(timeout_s=30)


def run(
    concurrency: int = 64,
    requests: int = 2000,
    threads: int = 1,
    offline_seconds: float = 2.0,
    hidden_size: int = 64,
    layers: int = 4,
    rounds: int = 2,
    max_batch_size: int = 32,
) -> BenchResult:
    os.environ.update(OFFLINE_ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-prm-"))
    model = build_tiny_qwen2_prm(work / "prm", hidden_size=hidden_size, num_layers=layers)
    tag = step_tag_id(model)
    result = BenchResult("prm_server")
    result.notes.append(
        f"tiny Qwen2ForProcessRewardModel (hidden {hidden_size}, {layers} layers), {len(STEPS)} steps per "
        f"input; concurrency {concurrency} single-input clients on /pooling, {requests} requests a run, "
        f"server --max-batch-size {max_batch_size}, torch threads {threads}, {os.cpu_count()} cores, "
        f"{rounds} alternating rounds, medians; samples/s"
    )
    offs: dict[int, list[float]] = {}
    ons: list[tuple[float, float]] = []
    for r in range(rounds):
        steps = ("offline", "server") if r % 2 == 0 else ("server", "offline")
        for step in steps:
            if step == "offline":
                for bs, sps in offline(model, tag, threads, offline_seconds).items():
                    offs.setdefault(bs, []).append(sps)
            else:
                ons.append(
                    served(
                        model, tag, threads, concurrency, requests, max_batch_size, work / f"server-{r}.log"
                    )
                )
    add_served_vs_offline(result, "PRM /pooling", offs, ons, unit="bs{}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=2000, help="requests per server run")
    ap.add_argument("--threads", type=int, default=1, help="torch threads, offline and in the server")
    ap.add_argument("--offline-seconds", type=float, default=2.0)
    ap.add_argument("--hidden-size", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-batch-size", type=int, default=32, help="the server's (its default: 32)")
    args = ap.parse_args()
    print_result(
        run(
            args.concurrency,
            args.requests,
            args.threads,
            args.offline_seconds,
            args.hidden_size,
            args.layers,
            args.rounds,
            args.max_batch_size,
        )
    )


if __name__ == "__main__":
    main()
