"""Cost growth of one step's rewards, trainer's view: how the wall time of the trainer-view benchmark's three
paths grows with the step's sample count (512 -> 4096 at a fixed response length) and with the response
length (256 -> 4096 tokens at 4096 samples), for the cheap rule (gsm8k), where per-sample overheads show most.
One measurement per point, paths in the same step; the plot goes next to the concurrency plot. Issue 29's
goal (the batched step at the longest responses <= 1.2 of verl's) is judged on the median of `goal_rounds`
more measurements of that point: one ~1 s step per path swings by 1.5x on a shared machine.

    .venv/bin/python -m bench.step_growth [--kind gsm8k] [--plot out.png] [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Row, median, print_result
from bench.trainer_view import LABELS, PATHS, Spent, measure, stack, warm

SIZES = (512, 1024, 2048, 4096)
LENGTHS = (256, 1024, 4096)


def run(
    kind: str = "gsm8k",
    sizes: Sequence[int] = SIZES,
    lengths: Sequence[int] = LENGTHS,
    fixed_tokens: int = 1024,
    fixed_samples: int = 4096,
    goal_rounds: int = 3,
) -> BenchResult:
    result = BenchResult("8. step cost growth (trainer view)")
    points: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="rf-stepgrowth-") as tmp_name, stack(Path(tmp_name)) as st:
        warm(st, [kind])
        plan = [("samples", n, fixed_tokens) for n in sizes] + [("tokens", fixed_samples, t) for t in lengths]
        for axis, samples, tokens in plan:
            spent: dict[str, Spent] = {}
            walls, _ = measure(st, kind, samples, tokens, seed=samples + tokens, spent=spent)
            points.append({"axis": axis, "samples": samples, "tokens": tokens, **walls, "spent": spent})
        goal = [measure(st, kind, fixed_samples, lengths[-1], seed=1000 + r)[0] for r in range(goal_rounds)]
    result.data["step_growth"] = {"kind": kind, "points": points}
    result.notes.append(
        f"{kind}, verl 0.9.1 reward loop in this process; wall seconds per step (one measurement per point)"
    )
    result.notes.append(f"{'samples':>7} {'tokens':>6} " + " ".join(f"{LABELS[p]:>31}" for p in PATHS))
    for point in points:
        base = point["verl"]
        result.notes.append(
            f"{point['samples']:7d} {point['tokens']:6d} "
            + " ".join(f"{point[p]:9.2f} s (x{point[p] / base:5.2f})".rjust(31) for p in PATHS)
        )
    _per_mb(result, points)
    _long_responses_goal(result, goal, fixed_samples, lengths[-1])
    for axis, first, last in _ends(points):
        for path in PATHS:
            growth = last[path] / first[path]
            what = "samples" if axis == "samples" else "tokens"
            result.rows.append(
                Row(
                    result.name,
                    f"{LABELS[path]}: wall x for {what} {first[what]} -> {last[what]}",
                    growth,
                    detail=f"{first[path]:.2f} s -> {last[path]:.2f} s",
                )
            )
    return result


def _per_mb(result: BenchResult, points: list[dict[str, Any]]) -> None:
    """Per-character cost of the request path: CPU seconds per MB of response text, marginal between the
    shortest and the longest responses of the tokens axis (the per-sample costs cancel), split into the
    client's share (this process's CPU beyond verl's own path), the gateway process and its pool workers.
    CPU, not wall time: it does not drift with the other work on a shared machine."""
    on_axis = [p for p in points if p["axis"] == "tokens"]
    if len(on_axis) < 2:
        return
    first, last = on_axis[0], on_axis[-1]
    mb = last["spent"]["verl"].body_mb - first["spent"]["verl"].body_mb
    if mb <= 0:
        return
    result.notes.append(
        f"CPU per MB of response text, {first['tokens']} -> {last['tokens']} tokens "
        f"({first['spent']['verl'].body_mb:.1f} -> {last['spent']['verl'].body_mb:.1f} MB a step), marginal "
        "ms/MB: trainer process (verl's loop + the client) / gateway process / its pool workers"
    )
    for path in PATHS:
        parts = [
            (name, (getattr(last["spent"][path], attr) - getattr(first["spent"][path], attr)) / mb * 1e3)
            for name, attr in (
                ("trainer", "trainer_cpu_s"),
                ("gateway", "gateway_cpu_s"),
                ("workers", "workers_cpu_s"),
            )
        ]
        result.notes.append(f"  {LABELS[path]:31} " + " / ".join(f"{n} {v:6.1f}" for n, v in parts))
        if path == "verl":
            continue
        request_path = parts[1][1] + parts[2][1]
        result.rows.append(
            Row(
                result.name,
                f"{LABELS[path]}: gateway + pool CPU per MB of responses (marginal)",
                request_path,
                detail=", ".join(f"{n} {v:.1f}" for n, v in parts) + " ms/MB",
                fmt="{:.1f} ms",
            )
        )


def _long_responses_goal(
    result: BenchResult, rounds: list[dict[str, float]], samples: int, tokens: int
) -> None:
    if not rounds:
        return
    ratios = [r["fleet-batched"] / r["verl"] for r in rounds]
    ratio = median(ratios)
    result.rows.append(
        Row(
            result.name,
            f"{LABELS['fleet-batched']}, {tokens} tokens: wall / verl in-trainer",
            ratio,
            target="<= 1.2",
            met=ratio <= 1.2,
            detail=f"median of {len(ratios)} rounds ({', '.join(f'{x:.2f}' for x in ratios)}), "
            f"{samples} samples",
        )
    )


def _ends(points: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    out = []
    for axis in ("samples", "tokens"):
        on_axis = [p for p in points if p["axis"] == axis]
        if len(on_axis) >= 2:
            out.append((axis, on_axis[0], on_axis[-1]))
    return out


def plot(growth: dict[str, Any], path: Path, title: str) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = growth["points"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, axis, label in zip(
        axes, ("samples", "tokens"), ("samples per step", "response tokens (max)"), strict=True
    ):
        on_axis = [p for p in points if p["axis"] == axis]
        if not on_axis:
            continue
        xs = [p[axis] for p in on_axis]
        for name in PATHS:
            ax.plot(xs, [p[name] for p in on_axis], marker="o", label=LABELS[name])
        fixed = "tokens" if axis == "samples" else "samples"
        ax.set(
            xscale="log",
            yscale="log",
            xlabel=label,
            ylabel="wall time per step (s)",
            title=f"{growth['kind']}: {fixed} fixed at {on_axis[0][fixed]}",
        )
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", default="gsm8k", choices=("gsm8k", "math_verify"))
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="sizes 128/512, lengths 256/1024 at 512 samples")
    args = ap.parse_args()
    if args.quick:
        result = run(args.kind, (128, 512), (256, 1024), fixed_tokens=256, fixed_samples=512)
    else:
        result = run(args.kind)
    print_result(result)
    if args.plot:
        plot(result.data["step_growth"], args.plot, "one step's rewards, verl 0.9.1 reward loop")


if __name__ == "__main__":
    main()
