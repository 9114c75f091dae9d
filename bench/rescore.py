"""`rewardfleet score` against a bare client posting the same lines to `/score/batch` (goal: ≥ 0.9).

One gateway (a trivial async function, so the gateway costs as little as it can and the command's own
overhead shows the most), the same N lines, the same batch size and requests in flight. Alternating rounds:

- baseline: a bare `AsyncRewardClient` that reads the same JSONL and posts its lines with `score_batch`
  (nothing written, no ordering, no summary);
- command: `rewardfleet score INPUT -o OUT --url ...` as a user runs it, a child process, timed end to end
  (interpreter start, imports, reading, writing every line, the summary), against the bare client run as a
  child process too (`BARE_SCRIPT`: interpreter start, imports, reading, posting); and the same work in this
  process (`run_score` from reading INPUT to the last line written) against the bare client in this process,
  once without and once with the progress bar drawn (to a terminal console writing nowhere).

With `--other-checkout DIR` (another checkout of the repository, e.g. main), each round also runs that
checkout's command as a child process (`PYTHONPATH=DIR/.editable`), so a change is measured against the code
before it in the same rounds: its own end-to-end ratio, and this command ÷ that one.

Within a round the bare client goes first in even rounds and last in odd ones (the machine's load drifts).
Prints samples/s of each (medians), each round's ratios, and the median of the rounds' ratios (the verdicts),
and the CPU time of each child process over its whole life (start-up and teardown included), which depends
little on the machine's load.

    .venv/bin/python -m bench.rescore [--lines 20000] [--rounds 5] [--batch-size 64] [--concurrency 8]
        [--other-checkout DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from rich.console import Console

from bench.common import REPO_ROOT, BenchResult, Row, gateway, median, print_result, write_fn
from bench.harness.processes import rewardfleet_cmd
from rewardfleet.services.client import AsyncRewardClient
from rewardfleet.services.rescore.inputs import ReadOptions, read_items
from rewardfleet.services.rescore.runner import Entry, RunOptions
from rewardfleet.services.rescore.session import Target, fewer_collections, run_score

TRIVIAL = """
async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if ground_truth in solution_str else 0.0
"""


# The bare client as a script of its own, for the end-to-end (child process) comparison.
BARE_SCRIPT = """
import asyncio, json, sys
from rewardfleet.services.client import AsyncRewardClient

async def main(url, src, batch_size, concurrency):
    with open(src, "rb") as f:
        samples = [json.loads(line) for line in f]
    async with AsyncRewardClient(url, max_concurrency=concurrency) as client:
        semaphore = asyncio.Semaphore(concurrency)
        async def one(chunk):
            async with semaphore:
                results = await client.score_batch(chunk)
            if any(not r.ok for r in results):
                raise RuntimeError("a sample failed")
        chunks = [samples[i : i + batch_size] for i in range(0, len(samples), batch_size)]
        await asyncio.gather(*(one(c) for c in chunks))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


def _lines(n: int) -> list[dict[str, object]]:
    return [
        {
            "data_source": "bench",
            "reward_fn": "trivial",
            "solution_str": f"The answer is {i % 7}.",
            "ground_truth": "3",
            "extra_info": {"index": i},
            "uid": f"u{i}",
        }
        for i in range(n)
    ]


async def _bare(url: str, src: Path, batch_size: int, concurrency: int) -> float:
    started = time.perf_counter()
    with src.open("rb") as f:
        samples = [json.loads(line) for line in f]
    async with AsyncRewardClient(url, max_concurrency=concurrency) as client:
        semaphore = asyncio.Semaphore(concurrency)

        async def one(chunk: list[dict[str, object]]) -> None:
            async with semaphore:
                results = await client.score_batch(chunk)
            if any(not r.ok for r in results):
                raise RuntimeError("a sample failed in the baseline")

        chunks = [samples[i : i + batch_size] for i in range(0, len(samples), batch_size)]
        await asyncio.gather(*(one(c) for c in chunks))
        return time.perf_counter() - started


def _command_in_process(url: str, src: Path, out: Path, options: RunOptions, bar: bool = False) -> float:
    console = Console(file=io.StringIO(), force_terminal=True, width=120) if bar else None
    started = time.perf_counter()
    with fewer_collections():  # as the command reads and builds its entries
        _, items = read_items(src, ReadOptions())
        entries = [Entry(i) for i in items]
    with out.open("wb") as f:
        asyncio.run(run_score(Target(url=url), entries, f, options, console, bar))
    return time.perf_counter() - started


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # children waited for (the gateway still runs)
    return usage.ru_utime + usage.ru_stime


def _timed_child(cmd: list[str], cpu_s: list[float], env: dict[str, str] | None = None) -> float:
    """Wall time of `cmd`; its CPU time (user + system, its whole life) is appended to `cpu_s`."""
    cpu_started = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False, env=env
    )
    took = time.perf_counter() - started
    cpu_s.append(_children_cpu_s() - cpu_started)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return took


def _command_child(
    url: str,
    src: Path,
    out: Path,
    batch_size: int,
    concurrency: int,
    cpu_s: list[float],
    checkout: Path | None = None,
) -> float:
    # Another checkout's command: its .editable folder first on the path (as this one's is for the bench).
    env = None if checkout is None else {**os.environ, "PYTHONPATH": str(checkout / ".editable")}
    return _timed_child(
        rewardfleet_cmd(
            "score",
            str(src),
            "-o",
            str(out),
            "--url",
            url,
            "--no-progress",
            "--batch-size",
            str(batch_size),
            "--concurrency",
            str(concurrency),
        ),
        cpu_s,
        env,
    )


def _bare_child(
    url: str, script: Path, src: Path, batch_size: int, concurrency: int, cpu_s: list[float]
) -> float:
    return _timed_child(
        [sys.executable, str(script), url, str(src), str(batch_size), str(concurrency)], cpu_s
    )


def run(lines: int, rounds: int, batch_size: int, concurrency: int, other: Path | None = None) -> BenchResult:
    result = BenchResult("rescore")
    samples = _lines(lines)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "in.jsonl"
        src.write_text("".join(json.dumps(s) + "\n" for s in samples))
        fns = write_fn(tmp / "fns", "trivial", TRIVIAL)
        script = tmp / "bare_client.py"
        script.write_text(BARE_SCRIPT)
        # No result cache: every round must reach the function, not the previous round's answers.
        config = {"workers": 1, "result_cache_size": 0, "idempotency": "off"}
        options = RunOptions(batch_size=batch_size, concurrency=concurrency)
        times: dict[str, list[float]] = {
            k: [] for k in ("bare", "bare_child", "child", "inproc", "bar", "other")
        }
        cpu: dict[str, list[float]] = {"bare": [], "inproc": [], "bare_child": [], "child": [], "other": []}

        def bare_in_process() -> float:
            cpu_started = time.process_time()
            took = asyncio.run(_bare(url, src, batch_size, concurrency))
            cpu["bare"].append(time.process_time() - cpu_started)
            return took

        def command_in_process(r: int) -> float:
            cpu_started = time.process_time()
            took = _command_in_process(url, src, tmp / f"inproc-{r}.jsonl", options)
            cpu["inproc"].append(time.process_time() - cpu_started)
            return took

        with gateway(tmp, config, [fns]) as url:
            asyncio.run(_bare(url, src, batch_size, concurrency))  # warm-up
            for r in range(rounds):
                steps: list[tuple[str, Callable[[], float]]] = [
                    ("bare", bare_in_process),
                    (
                        "bare_child",
                        partial(_bare_child, url, script, src, batch_size, concurrency, cpu["bare_child"]),
                    ),
                    (
                        "child",
                        partial(
                            _command_child,
                            url,
                            src,
                            tmp / f"child-{r}.jsonl",
                            batch_size,
                            concurrency,
                            cpu["child"],
                        ),
                    ),
                    ("inproc", partial(command_in_process, r)),
                    *(
                        [
                            (
                                "other",
                                partial(
                                    _command_child,
                                    url,
                                    src,
                                    tmp / f"other-{r}.jsonl",
                                    batch_size,
                                    concurrency,
                                    cpu["other"],
                                    other,
                                ),
                            )
                        ]
                        if other is not None
                        else []
                    ),
                    (
                        "bar",
                        partial(_command_in_process, url, src, tmp / f"bar-{r}.jsonl", options, bar=True),
                    ),
                ]
                for name, step in steps if r % 2 == 0 else steps[::-1]:
                    times[name].append(step())
                last = {name: v[-1] for name, v in times.items() if v}
                rate_now = {name: f"{lines / took:.0f}" for name, took in last.items()}
                result.notes.append(
                    f"round {r + 1}: samples/s bare {rate_now['bare']}, command {rate_now['inproc']} "
                    f"(ratio {last['bare'] / last['inproc']:.2f}), with the bar {rate_now['bar']} "
                    f"({last['bare'] / last['bar']:.2f}); child processes: bare {rate_now['bare_child']}, "
                    f"command {rate_now['child']} (ratio {last['bare_child'] / last['child']:.2f})"
                    + (
                        f"; other checkout {rate_now['other']} "
                        f"(ratio {last['bare_child'] / last['other']:.2f}, "
                        f"this ÷ other {last['other'] / last['child']:.2f})"
                        if other is not None
                        else ""
                    )
                )
        written = (tmp / "child-0.jsonl").read_bytes()
        if written.count(b"\n") != lines or written != (tmp / "inproc-0.jsonl").read_bytes():
            raise RuntimeError("the command's OUTPUT is not one line per input line, or differs between runs")
        if other is not None and (tmp / "other-0.jsonl").read_bytes() != written:
            raise RuntimeError(f"the command of {other} wrote a different OUTPUT")
    rate = {name: lines / median(v) for name, v in times.items() if v}
    detail = f"{lines} lines, batch {batch_size}, {concurrency} in flight, {rounds} rounds"
    # On a 2-core host the client's CPU is taken from the gateway: the client-side CPU per sample explains
    # most of the gap (a loaded machine turns every CPU second into wall time).
    cpu_us = {k: 1e6 * median(v) / lines for k, v in cpu.items() if k in ("bare", "inproc")}
    # The child processes' CPU over their whole life (start-up, imports, teardown included): what the machine
    # pays per run, nearly independent of its load; the difference is the command's own cost.
    child_cpu_s = {k: median(cpu[k]) for k in ("bare_child", "child")}
    extra_cpu_s = median([c - b for b, c in zip(cpu["bare_child"], cpu["child"], strict=True)])
    # The verdicts: the median over rounds of each round's ratio (its two runs close in time, so the machine's
    # drifting load mostly cancels), not the ratio of two medians taken from different rounds.
    end_to_end = median([b / c for b, c in zip(times["bare_child"], times["child"], strict=True)])
    in_process = median([b / c for b, c in zip(times["bare"], times["inproc"], strict=True)])
    with_bar = median([b / c for b, c in zip(times["bare"], times["bar"], strict=True)])
    if other is not None:
        result.rows += [
            Row("rescore", f"CPU s per run (child process): score of {other}", median(cpu["other"])),
            Row("rescore", f"score of {other} (child process) samples/s", rate["other"], fmt="{:.0f}"),
            Row(
                "rescore",
                f"rewardfleet score of {other} ÷ bare client (child processes; median of rounds)",
                median([b / c for b, c in zip(times["bare_child"], times["other"], strict=True)]),
            ),
            Row(
                "rescore",
                f"rewardfleet score ÷ that of {other} (child processes, wall; median of rounds)",
                median([o / c for o, c in zip(times["other"], times["child"], strict=True)]),
            ),
        ]  # fmt: skip
    result.rows += [
        Row("rescore", "client CPU µs/sample: bare client", cpu_us["bare"], fmt="{:.0f}"),
        Row(
            "rescore", "client CPU µs/sample: rewardfleet score (in process)", cpu_us["inproc"], fmt="{:.0f}"
        ),
        Row("rescore", "CPU s per run (child process): bare client", child_cpu_s["bare_child"], fmt="{:.2f}"),
        Row(
            "rescore", "CPU s per run (child process): rewardfleet score", child_cpu_s["child"], fmt="{:.2f}"
        ),
        Row(
            "rescore",
            "CPU s per run: rewardfleet score - bare client (median of rounds)",
            extra_cpu_s,
            fmt="{:.2f}",
        ),
        Row("rescore", "bare client /score/batch samples/s", rate["bare"], fmt="{:.0f}", detail=detail),
        Row("rescore", "bare client (child process) samples/s", rate["bare_child"], fmt="{:.0f}"),
        Row("rescore", "rewardfleet score (child process) samples/s", rate["child"], fmt="{:.0f}"),
        Row("rescore", "rewardfleet score (in process) samples/s", rate["inproc"], fmt="{:.0f}"),
        Row("rescore", "rewardfleet score (in process, progress bar) samples/s", rate["bar"], fmt="{:.0f}"),
        Row(
            "rescore",
            "rewardfleet score ÷ bare client (both child processes, end to end; median of rounds)",
            end_to_end,
            target="≥ 0.9",
            met=end_to_end >= 0.9,
        ),
        Row(
            "rescore",
            "rewardfleet score ÷ bare client (in process, no start-up; median of rounds)",
            in_process,
            target="≥ 0.9",
            met=in_process >= 0.9,
        ),
        Row(
            "rescore",
            "rewardfleet score with the progress bar ÷ bare client (in process)",
            with_bar,
        ),
    ]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--other-checkout", type=Path, default=None, help="also run this checkout's command, each round"
    )
    args = parser.parse_args()
    print_result(run(args.lines, args.rounds, args.batch_size, args.concurrency, args.other_checkout))


if __name__ == "__main__":
    main()
