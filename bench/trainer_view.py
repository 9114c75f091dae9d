"""One GRPO step's rewards, seen from the trainer: wall time for verl 0.9.1's reward loop to score a step's
batch (512 prompts x 8 responses by default), for three reward kinds, four ways, in one run:

1. `verl`: verl's own path in the trainer process: its reward manager calling `default_compute_score`
   (gsm8k), verl's math-verify scorer (CPU-heavy), or an async function posting straight to the judge
   (remote judge: this is verl's async reward-loop style, the peer of issue 18's path 4);
2. `fleet`: the same reward loop calling the fleet's verl file (`verl_reward.compute_score`, one `POST /score`
   per sample) against a gateway on this machine;
3. `fleet-batched`: the batched mode (`verl_batch.compute_score`): the loop's concurrent calls go out as a
   few `POST /score/batch` requests.

For the sync kinds the batched mode also runs against a second gateway with `pool_chunking: false` (one
pool task per sample, as before chunked dispatch): the before/after of the gateway's pool dispatch.

Kinds: `gsm8k` (a cheap rule), `math_verify` (symbolic checks of RL-length responses written unlike the gold
answer), `judge` (a server answering after U(1 s, 4 s), seeded per sample). Alternating rounds, medians;
every path's scores are checked against path 1's, sample by sample.

Each path has one verl worker for the whole run, on one event loop, as verl runs its reward workers (Ray
actors started once): the reward function's clients keep their connections from step to step. Each kind's
first step (as large as the measured ones) opens them and is printed apart, not counted.

    .venv/bin/python -m bench.trainer_view [--samples 4096] [--tokens 1024] [--rounds 2] [--kinds gsm8k judge]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import OFFLINE_ENV, BenchResult, Row, gateway, median, print_result, write_fn
from bench.harness.processes import ChildProcess, free_port
from bench.judge_server import JUDGE_FN
from bench.state_backend import gateway_pid, own_cpu_s, process_cpu_s
from bench.trainer_steps import (
    KINDS,
    VERL_MATH_VERIFY_FN,
    RewardActors,
    make_step,
    train_tokenizer,
    verl_config,
)

PATHS = ("verl", "fleet", "fleet-batched")
LABELS = {
    "verl": "verl in-trainer",
    "fleet": "fleet, POST /score per sample",
    "fleet-batched": "fleet, batched (/score/batch)",
}
UNCHUNKED = "fleet-batched-unchunked"
UNCHUNKED_LABEL = "fleet, batched, one pool task per sample (pool_chunking off)"
# Issue 29's goals for one post per sample (wall time / verl's in-trainer path).
PER_SAMPLE_TARGETS = {"gsm8k": 1.15, "judge": 1.05}
GATEWAY_FN = {"gsm8k": None, "math_verify": "math_verify", "judge": "bench_judge"}


@dataclass
class Stack:
    """What the paths need: the policy tokenizer, the gateway, and where path 1's function files are."""

    tokenizer_dir: Path
    tokenizer: Any
    gateway_url: str
    verl_fns: Path
    unchunked_url: str
    actors: RewardActors


@contextmanager
def stack(tmp: Path, workers: int = 4) -> Iterator[Stack]:
    """Judge server, gateway (built-ins + the judge function; limits raised for a whole step in flight).
    4 pool workers: as many processes as verl's math-verify pool has (on a shared machine the process count
    decides the share of the CPU each side gets)."""
    from transformers import AutoTokenizer

    tokenizer_dir = train_tokenizer(tmp / "tokenizer")
    port = free_port()
    judge = ChildProcess(
        [*_python(), "-m", "bench.judge_server", "--port", str(port)], tmp / "judge.log", env=OFFLINE_ENV
    )
    try:
        judge.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=60)
        judge_fn = JUDGE_FN.format(url=f"http://127.0.0.1:{port}/judge")
        gw_fns = write_fn(tmp / "gw_fns", "bench_judge", judge_fn)
        verl_fns = write_fn(tmp / "verl_fns", "judge", judge_fn)
        write_fn(verl_fns, "math_verify_verl", VERL_MATH_VERIFY_FN)
        config = {
            "builtin_package": "rewardfleet.reward_fns",
            "workers": workers,
            "max_inflight_requests": 8192,
            "max_queued_requests": 8192,
            "max_pool_queue": 16384,
            "functions": {"bench_judge": {"timeout_s": 60}},
        }
        with (
            gateway(tmp, config, [gw_fns], name="gw-trainer") as base,
            gateway(tmp, {**config, "pool_chunking": False}, [gw_fns], name="gw-unchunked") as unchunked,
        ):
            tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
            actors = RewardActors()
            try:
                yield Stack(tokenizer_dir, tokenizer, base, verl_fns, unchunked, actors)
            finally:
                actors.close()
    finally:
        judge.stop()


def _python() -> list[str]:
    import sys

    return [sys.executable]


def path_config(st: Stack, kind: str, path: str, samples: int) -> tuple[Any, Callable[[], Any] | None]:
    """verl's config for one (kind, path), and the coroutine function closing its clients afterwards."""
    if path == "verl":
        fn = {"gsm8k": None, "math_verify": "math_verify_verl.py", "judge": "judge.py"}[kind]
        return verl_config(st.tokenizer_dir, str(st.verl_fns / fn) if fn else None, "compute_score", {}), None
    from rewardfleet.services.integrations import verl_batch, verl_reward

    kwargs: dict[str, Any] = {"gateway_url": st.unchunked_url if path == UNCHUNKED else st.gateway_url}
    if GATEWAY_FN[kind]:
        kwargs["reward_fn"] = GATEWAY_FN[kind]
    module: Any = verl_reward if path == "fleet" else verl_batch
    if path == "fleet" and kind == "judge":
        kwargs["max_concurrency"] = samples  # a judge step needs every sample in flight (default 256)
    pkg = f"pkg://{module.__name__}"
    return verl_config(st.tokenizer_dir, pkg, "compute_score", kwargs), module.aclose


@dataclass
class Spent:
    """Where one path's step went, besides its wall time: CPU seconds of this process (verl's reward loop
    and the client), of the gateway's own process and of its pool workers, and the responses' text size
    (what the requests carry, in MB of UTF-8)."""

    trainer_cpu_s: float = 0.0
    gateway_cpu_s: float = 0.0
    workers_cpu_s: float = 0.0
    body_mb: float = 0.0


def measure(
    st: Stack,
    kind: str,
    samples: int,
    tokens: int,
    seed: int,
    paths: Sequence[str] = PATHS,
    spent: dict[str, Spent] | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """Wall seconds of each path on one step (the same batch for all), and per path the number of samples
    whose score differs from the first path's (e.g. verl's math-verify scorer gives 0.0 after its 30 s
    timeout: a silent wrong reward that a loaded machine can provoke). `spent` gets each path's CPU split
    (`Spent`): CPU seconds stay comparable on a shared machine where wall times drift."""
    step = make_step(kind, samples, tokens, st.tokenizer, seed)
    body_mb = response_mb(step, st.tokenizer) if spent is not None else 0.0
    walls: dict[str, float] = {}
    differ: dict[str, int] = {}
    reference: list[float] | None = None
    for path in paths:
        config, after = path_config(st, kind, path, samples)
        pid = _gateway_pid(st, path)
        before = _cpu(pid)
        wall, scores = st.actors.score(f"{kind}:{path}:{samples}", config, step, after)
        if spent is not None:
            trainer, gateway, workers = (b - a for a, b in zip(before, _cpu(pid), strict=True))
            spent[path] = Spent(trainer, gateway, workers, body_mb)
        if reference is None:
            reference = scores
        else:
            differ[path] = sum(abs(a - b) > 1e-6 for a, b in zip(scores, reference, strict=True))
        walls[path] = wall
    return walls, differ


def response_mb(step: Any, tokenizer: Any) -> float:
    """MB of the step's response texts as verl decodes them (what the fleet's requests carry)."""
    batch = step.data.batch
    length = batch["responses"].shape[-1]
    valid = batch["attention_mask"][:, -length:].sum(-1).tolist()
    ids = [row[:n] for row, n in zip(batch["responses"].tolist(), valid, strict=True)]
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    return sum(len(t.encode("utf-8")) for t in texts) / 1e6


def _gateway_pid(st: Stack, path: str) -> int | None:
    if path == "verl":
        return None
    return gateway_pid(st.unchunked_url if path == UNCHUNKED else st.gateway_url)


def _cpu(gateway: int | None) -> tuple[float, float, float]:
    """CPU seconds so far: this process, the gateway process, its pool workers (its child processes)."""
    if gateway is None:
        return own_cpu_s(), 0.0, 0.0
    import psutil

    workers = 0.0
    for child in psutil.Process(gateway).children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        workers += times.user + times.system
    return own_cpu_s(), process_cpu_s(gateway), workers


def warm(st: Stack, kinds: Sequence[str], sizes: dict[str, int] | None = None) -> dict[str, dict[str, float]]:
    """Start verl's math-verify pool (4 spawned processes: they can take longer than its 30 s timeout to
    start on a loaded machine), the gateway's workers and each path's worker and clients before measuring.
    With `sizes`, each kind's first step is as large as its measured ones: it opens the connections a step
    needs (the judge's: one per sample in flight), which later steps reuse, as a training run's do after
    its first step. Returns that first step's wall seconds, per kind and path."""
    first: dict[str, dict[str, float]] = {}
    for kind in kinds:
        if sizes is not None:
            first[kind] = measure(st, kind, sizes[kind], 128, seed=7)[0]
        elif kind != "judge":
            measure(st, kind, 64, 128, seed=7)
    return first


def run(
    samples: int = 4096,
    tokens: int = 1024,
    rounds: int = 2,
    kinds: Sequence[str] = KINDS,
    sizes: dict[str, int] | None = None,
) -> BenchResult:
    """`sizes`: samples per kind where it should differ from `samples` (e.g. fewer for math-verify)."""
    result = BenchResult("7. trainer view: one GRPO step's rewards")
    walls: dict[str, dict[str, list[float]]] = {k: {p: [] for p in (*PATHS, UNCHUNKED)} for k in kinds}
    cpu: dict[str, dict[str, list[Spent]]] = {k: {p: [] for p in PATHS} for k in kinds}
    mismatches: list[str] = []
    size = {kind: (sizes or {}).get(kind, samples) for kind in kinds}
    with tempfile.TemporaryDirectory(prefix="rf-trainer-") as tmp_name, stack(Path(tmp_name)) as st:
        first = warm(st, kinds, size)
        for r in range(rounds):
            for kind in kinds:
                n = (sizes or {}).get(kind, samples)
                fleet = (*PATHS[1:], UNCHUNKED) if kind != "judge" else PATHS[1:]  # judge: async, no pool
                order = (PATHS[0], *(fleet if r % 2 == 0 else reversed(fleet)))  # alternate the fleet paths
                spent: dict[str, Spent] = {}
                measured, differ = measure(st, kind, n, tokens, seed=100 + r, paths=order, spent=spent)
                for path in PATHS:
                    if path in spent:
                        cpu[kind][path].append(spent[path])
                for path, wall in measured.items():
                    walls[kind][path].append(wall)
                for path, count in differ.items():
                    if count:
                        mismatches.append(f"round {r} {kind}: {path} differs from verl on {count} of {n}")
    result.notes.append(
        f"verl 0.9.1 RewardLoopWorker.compute_score_batch in this process, one worker per path kept across "
        f"steps on one event loop (as verl's Ray actors are: clients and their connections live on), "
        f"responses up to {tokens} tokens (half to all of it), gateway with 4 pool workers (as verl's "
        f"math-verify pool) on the same cores, {rounds} rounds after a first step of each, medians; scores "
        f"compared with path 1's sample by sample"
    )
    for kind, walls_first in first.items():
        result.notes.append(
            f"first step ({kind}, {size[kind]} samples, not counted: it opens the connections later steps "
            "reuse): " + ", ".join(f"{LABELS[p]} {w:.2f} s" for p, w in walls_first.items())
        )
    result.notes.append(f"{'kind':12} {'samples':>7} " + " ".join(f"{LABELS[p]:>31}" for p in PATHS))
    for kind in kinds:
        n = (sizes or {}).get(kind, samples)
        base = median(walls[kind]["verl"])
        cells = []
        for path in PATHS:
            wall = median(walls[kind][path])
            cells.append(f"{wall:9.2f} s (x{wall / base:5.2f})".rjust(31))
            if path != "verl":
                target = PER_SAMPLE_TARGETS.get(kind) if path == "fleet" else None
                result.rows.append(
                    Row(
                        result.name,
                        f"{kind}, {n} samples: {LABELS[path]} / verl in-trainer (wall time)",
                        wall / base,
                        target=f"<= {target}" if target else "",
                        met=(wall / base <= target) if target else None,
                        detail=f"{wall:.2f} s vs {base:.2f} s",
                    )
                )
        result.notes.append(f"{kind:12} {n:7d} " + " ".join(cells))
        if walls[kind][UNCHUNKED]:
            before, after = median(walls[kind][UNCHUNKED]), median(walls[kind]["fleet-batched"])
            result.rows.append(
                Row(
                    result.name,
                    f"{kind}, {n} samples: batched, chunked pool dispatch / one pool task per sample",
                    after / before,
                    detail=f"{after:.2f} s vs {before:.2f} s (verl's: {base:.2f} s)",
                )
            )
            result.data.setdefault("unchunked", {})[kind] = before
        result.data.setdefault("cells", {})[kind] = {p: median(walls[kind][p]) for p in PATHS}
    result.notes.append(
        "where the time goes, CPU seconds per step (medians): trainer process (verl's loop, the client) / "
        "gateway process / its pool workers; wall for reference"
    )
    for kind in kinds:
        for path in PATHS:
            runs = cpu[kind][path]
            if not runs:
                continue
            trainer = median([r.trainer_cpu_s for r in runs])
            gw = median([r.gateway_cpu_s for r in runs])
            workers = median([r.workers_cpu_s for r in runs])
            result.notes.append(
                f"  {kind:12} {LABELS[path]:31} trainer {trainer:6.2f} / gateway {gw:6.2f} / "
                f"workers {workers:6.2f} s; wall {median(walls[kind][path]):6.2f} s"
            )
    result.data["cpu"] = {
        kind: {path: [vars(r) for r in runs] for path, runs in per.items()} for kind, per in cpu.items()
    }
    before_after = [
        f"{k}: per-sample x{median(walls[k]['fleet']) / median(walls[k]['verl']):.2f} -> batched "
        f"x{median(walls[k]['fleet-batched']) / median(walls[k]['verl']):.2f}"
        for k in kinds
    ]
    result.notes.append(
        "score mismatches: "
        + ("; ".join(mismatches) if mismatches else "none (every path scored every sample alike)")
    )
    result.notes.append("before/after batching (wall time / verl in-trainer): " + "; ".join(before_after))
    chunking = [
        f"{k}: {UNCHUNKED_LABEL} x{median(walls[k][UNCHUNKED]) / median(walls[k]['verl']):.2f} -> chunked "
        f"x{median(walls[k]['fleet-batched']) / median(walls[k]['verl']):.2f}"
        for k in kinds
        if walls[k][UNCHUNKED]
    ]
    if chunking:
        result.notes.append("before/after chunked pool dispatch (wall time / verl): " + "; ".join(chunking))
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=1024, help="longest response, in tokens")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    ap.add_argument("--quick", action="store_true", help="256 samples, 256 tokens, 1 round")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.tokens, args.rounds = 256, 256, 1
    print_result(run(args.samples, args.tokens, args.rounds, args.kinds))


if __name__ == "__main__":
    main()
