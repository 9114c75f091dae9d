"""Run every benchmark script of `bench/` in one go, print the table, write `docs/BENCHMARKS.md`,
`docs/bench_cost_growth.png` and `docs/bench_step_growth.png`.

Every ratio is measured against a baseline taken in the same invocation (alternating rounds, medians), on
127.0.0.1 only, with bounded load. A benchmark that fails is reported as failed and the others still run.

    bash bench/setup                             # once: the `bench` extra (matplotlib, Ray Serve)
    .venv/bin/python -m bench.run_all            # full: about 30-35 minutes on 2 shared cores
    .venv/bin/python -m bench.run_all --quick    # smoke-sized: about 10 minutes on a loaded machine, noisier
    .venv/bin/python -m bench.run_all --only 1 4 # a subset (the docs are not rewritten for a subset)
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from bench import (
    batching,
    code_sandbox,
    cost_growth,
    cpu_heavy,
    determinism,
    gateway_overhead,
    image_rm_server,
    inflight,
    judge_overlap,
    judge_throughput,
    noisy_neighbour,
    prm_server,
    rescore,
    router_hop,
    state_backend,
    step_admission,
    step_growth,
    trainer_view,
)
from bench.common import REPO_ROOT, BenchResult, Row
from bench.router_hop import RmStack, rm_stack

DOCS = REPO_ROOT / "docs"
NOTES = Path(__file__).with_name("NOTES.md")  # the hand-written analysis appended to the generated page
PLOT = "bench_cost_growth.png"
STEP_PLOT = "bench_step_growth.png"
CODE = "9. code sandbox"
STATE = "10. state backend"
JUDGE = "11. judge throughput (SmolLM2-135M)"
PRM = "12. process reward model server (/pooling)"
RESCORE = "14. re-scoring: rewardfleet score vs a bare client"
IMAGE_RM = "15. image reward model server (CLIP)"
NOISY = "16. noisy neighbour: tenants sharing one judge pool"
DETERMINISM = "18. deterministic inference: deterministic / default throughput"


def _titled(title: str, plan: Callable[[], BenchResult]) -> Callable[[], BenchResult]:
    """A script that names its result by its file name gets the numbered title of this page."""

    def run() -> BenchResult:
        res = plan()
        res.name = title
        for row in res.rows:
            row.bench = title
        return res

    return run


def _plans(quick: bool, stack: Callable[[], RmStack]) -> dict[int, Callable[[], BenchResult]]:
    if quick:
        return {
            1: lambda: gateway_overhead.run(duration_s=3, warmup_s=1, rounds=1),
            2: lambda: batching.run(requests=1000, offline_seconds=1.0, rounds=1, minilm=False),
            3: lambda: router_hop.run(duration_s=3, warmup_s=1, rounds=1, stack=stack()),
            4: lambda: judge_overlap.run(rounds=1),
            5: lambda: cpu_heavy.run(duration_s=3, warmup_s=1, rounds=1),
            6: lambda: cost_growth.run(duration_s=2, warmup_s=1, stack=stack()),
            7: lambda: trainer_view.run(samples=256, tokens=256, rounds=1),
            8: lambda: step_growth.run(
                sizes=(128, 512), lengths=(256, 1024), fixed_tokens=256, fixed_samples=512
            ),
            9: _titled(CODE, lambda: code_sandbox.run(samples_count=16, rounds=1)),
            10: _titled(STATE, lambda: state_backend.run(duration_s=3, rounds=1)),
            11: _titled(JUDGE, lambda: judge_throughput.run(8, 32, 2)),
            12: _titled(
                PRM, lambda: prm_server.run(requests=800, offline_seconds=1.0, rounds=1, smollm2_requests=200)
            ),
            13: lambda: _step_admission(quick=True),
            14: _titled(RESCORE, lambda: rescore.run(lines=5000, rounds=3, batch_size=64, concurrency=8)),
            15: _titled(IMAGE_RM, lambda: image_rm_server.run(requests=400, offline_seconds=1.0, rounds=1)),
            16: _titled(NOISY, lambda: noisy_neighbour.run(duration_s=5)),
            17: lambda: inflight.plan(quick=True),
            18: _titled(DETERMINISM, lambda: determinism.run(requests=200, rounds=1)),
        }
    return {
        1: lambda: gateway_overhead.run(duration_s=5, warmup_s=2, rounds=3, sync=True),
        2: lambda: batching.run(requests=3000, offline_seconds=2.0, rounds=2, minilm=True),
        3: lambda: router_hop.run(duration_s=6, warmup_s=2, rounds=3, stack=stack()),
        4: lambda: judge_overlap.run(rounds=2),
        5: lambda: cpu_heavy.run(duration_s=6, warmup_s=2, rounds=3),
        6: lambda: cost_growth.run(duration_s=6, warmup_s=2, stack=stack()),
        # GRPO's 512 prompts x 8 responses; math-verify on 512 of them (20-80 ms a call at this length).
        7: lambda: trainer_view.run(samples=4096, tokens=1024, rounds=3, sizes={"math_verify": 512}),
        # samples 512 -> 4096 at 1024 tokens; tokens 256 -> 4096 at 1024 samples
        8: lambda: step_growth.run(fixed_samples=1024),
        9: _titled(CODE, lambda: code_sandbox.run(samples_count=40, rounds=2)),
        10: _titled(STATE, lambda: state_backend.run(duration_s=6, rounds=2)),
        # SmolLM2-135M judge on the CPU, 16 samples: the slowest benchmark (minutes per figure when loaded)
        11: _titled(JUDGE, lambda: judge_throughput.run(16, 64, 2)),
        12: _titled(PRM, lambda: prm_server.run(requests=2000, offline_seconds=2.0, rounds=2)),
        # a whole GRPO step posted at once, default admission settings (4096 and 8192 posts): one gateway
        # process, then `--processes auto` beside the plain ASGI app
        13: lambda: _step_admission(quick=False),
        # `rewardfleet score` (a child process, end to end) over 20,000 lines vs a bare client: ~3 minutes
        14: _titled(RESCORE, lambda: rescore.run(lines=20000, rounds=5, batch_size=64, concurrency=8)),
        # (text, image) pairs on a random CLIP: server under single-pair posts / offline best batch
        15: _titled(IMAGE_RM, lambda: image_rm_server.run(requests=1500, offline_seconds=2.0, rounds=2)),
        # two tenants on one pool of 16 slots: B at 100% and 80% of its share, alone and beside A at 10x
        16: _titled(NOISY, lambda: noisy_neighbour.run(duration_s=12)),
        17: lambda: inflight.plan(),
        # each kind's server with and without --enable-deterministic-inference, same load, alternating
        18: _titled(DETERMINISM, lambda: determinism.run(requests=600, rounds=2)),
    }


def _step_admission(quick: bool) -> BenchResult:
    """Benchmark 13: one gateway process (its first burst, then the same client's second), then
    `rewardfleet gateway --processes auto` with each size's first burst also sent to the plain ASGI app."""
    sizes = (4096,) if quick else (4096, 8192)
    one = step_admission.run(sizes=sizes, low_s=20.0, high_s=30.0, repeats=1 if quick else 2)
    auto = step_admission.run(sizes=sizes, low_s=20.0, high_s=30.0, processes="auto", plain=True)
    one.rows += auto.rows
    one.notes += ["--processes auto:", *auto.notes]
    return one


def _machine() -> str:
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} cores, {platform.python_implementation()} {platform.python_version()}, "
        f"load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (shared machine)"
    )


def _commit() -> str:
    out = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip() + (" + uncommitted changes" if dirty else "")


def table(results: list[BenchResult]) -> list[str]:
    lines = ["| benchmark | measure | value | target | verdict | detail |", "|---|---|---:|---|---|---|"]
    for res in results:
        if res.skipped:
            lines.append(f"| {res.name} | — | — | — | failed | {res.skipped} |")
        rows: list[Row] = res.rows
        for row in rows:
            verdict = {None: "", True: "met", False: "**not met**"}[row.met]
            lines.append(
                f"| {row.bench} | {row.metric} | {row.shown} | {row.target} | {verdict} | {row.detail} |"
            )
    return lines


def verdicts(results: list[BenchResult]) -> list[str]:
    """One line per target: met / NOT met, or why it has no verdict (a benchmark that failed or was not
    measured)."""
    lines = []
    for res in results:
        if res.skipped:
            lines.append(f"{res.name}: failed, no verdict ({res.skipped})")
        for row in res.rows:
            if row.target:
                verdict = "no verdict (not measured)" if row.met is None else row.verdict
                lines.append(f"{row.bench} | {row.metric}: {row.shown} (target {row.target}) -> {verdict}")
    return lines


def write_docs(results: list[BenchResult], header: list[str], plot_ok: bool) -> Path:
    DOCS.mkdir(exist_ok=True)
    out = [
        "# Benchmarks",
        "",
        "Generated by `bench/run_all.py`; every number below comes from the run described here. Ratios are "
        "against a baseline measured in the same run (alternating rounds, medians), loopback only.",
        "",
        *[f"- {line}" for line in header],
        "",
        "## Results",
        "",
        *table(results),
        "",
    ]
    for res in results:
        out += [f"### {res.name}", "", "```", *res.notes, "```", ""]
        if res.name.startswith("6.") and plot_ok:
            out += [f"![latency and throughput as concurrency grows]({PLOT})", ""]
        if res.name.startswith("8.") and "step_growth" in res.data:
            out += [f"![one step's reward wall time as samples and response length grow]({STEP_PLOT})", ""]
    if NOTES.exists():
        out += [NOTES.read_text().rstrip(), ""]
    path = DOCS / "BENCHMARKS.md"
    path.write_text("\n".join(out))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="short, single-round measurements")
    ap.add_argument("--only", type=int, nargs="+", choices=range(1, 19), help="run only these benchmarks")
    ap.add_argument("--no-docs", action="store_true", help="print only; do not rewrite docs/")
    args = ap.parse_args()

    started = time.monotonic()
    header = [
        f"run: {datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}, "
        f"`python -m bench.run_all{' --quick' if args.quick else ''}`, commit {_commit()}",
        f"machine: {_machine()}",
    ]
    results: list[BenchResult] = []
    shared: list[RmStack] = []
    with tempfile.TemporaryDirectory(prefix="rf-runall-") as tmp_name, ExitStack() as resources:

        def stack() -> RmStack:  # started on first use, shared by benchmarks 3 and 6
            if not shared:
                shared.append(resources.enter_context(rm_stack(Path(tmp_name))))
            return shared[0]

        for number, plan in _plans(args.quick, stack).items():
            if args.only and number not in args.only:
                continue
            print(f"\n=== benchmark {number} ({time.monotonic() - started:.0f} s elapsed)", flush=True)
            try:
                res = plan()
            except Exception as exc:
                traceback.print_exc()
                res = BenchResult(f"{number}. (failed)", skipped=f"{type(exc).__name__}: {exc}"[:300])
            for note in res.notes:
                print("  " + note)
            results.append(res)
    elapsed = time.monotonic() - started
    header.append(f"wall time of the whole run: {elapsed / 60:.1f} min")

    print("\n" + "\n".join(header) + "\n")
    for line in table(results):
        print(line)
    print("\nverdicts (every row with a target):")
    for line in verdicts(results):
        print("  " + line)
    if args.no_docs or args.only:
        return
    curve = next((r.data["curve"] for r in results if "curve" in r.data), None)
    if curve:
        cost_growth.plot(
            curve, DOCS / PLOT, f"gateway -> sglang-router -> CPU model server, {datetime.date.today()}"
        )
    growth = next((r.data["step_growth"] for r in results if "step_growth" in r.data), None)
    if growth:
        step_growth.plot(
            growth, DOCS / STEP_PLOT, f"one step's rewards, verl 0.9.1 reward loop, {datetime.date.today()}"
        )
    print(f"\nwrote {write_docs(results, header, curve is not None)}")


if __name__ == "__main__":
    main()
