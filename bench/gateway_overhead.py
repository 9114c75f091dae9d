"""Requests/s of the gateway's `POST /score` (a trivial async reward function) against a bare FastAPI
endpoint that parses the same JSON body and returns the same JSON shape. Same machine, same run, same uvicorn
settings (uvloop, httptools, 1 worker, no access log), each server its own process on 127.0.0.1; load from an
aiohttp client and, if installed, wrk, at concurrency 64. Prints req/s, p50, p99, the server's CPU per
request and the ratios (target ≥ 0.8).

    .venv/bin/python -m bench.gateway_overhead [--duration-s 8] [--rounds 2] [--sync] [--other-checkout DIR]

`--other-checkout DIR` adds a third target in the same alternating rounds: the gateway of another checkout
(DIR/.editable on PYTHONPATH, e.g. main's code in a `git archive` copy), for an A/B of a change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from bench.common import BenchResult, Row, median, print_result
from bench.load import run_load
from bench.state_backend import process_cpu_s

REPO_ROOT = Path(__file__).resolve().parent.parent
BODY = {
    "data_source": "bench",
    "solution_str": "The answer is 42.",
    "ground_truth": "42",
    "extra_info": {"index": 7},
    "reward_fn": "trivial",
    "uid": "u-1",
}
TRIVIAL_ASYNC = """
async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0
"""
TRIVIAL_SYNC = """
def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0
"""
OTHER = "gateway (async fn, other checkout)"
UVICORN_FLAGS = [
    "--loop",
    "uvloop",
    "--http",
    "httptools",
    "--workers",
    "1",
    "--no-access-log",
    "--log-level",
    "warning",
]


def bare_app() -> FastAPI:
    """The baseline: one POST endpoint, JSON in, a result of the gateway's shape out."""
    app = FastAPI()

    @app.post("/score")
    async def score(request: Request) -> JSONResponse:
        body = await request.json()
        return JSONResponse(
            {
                "uid": body.get("uid"),
                "score": 1.0,
                "extra": {},
                "reward_fn": "trivial",
                "data_source": body.get("data_source"),
                "status": "ok",
                "error": None,
                "fallback_score": False,
                "timings": {"queue_s": None, "compute_s": 1e-5, "total_s": 2e-5},
            }
        )

    return app


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(
    cmd: list[str], port: int, log: Path, pythonpath: Path | None = None
) -> Iterator[tuple[str, int]]:
    """Yields the server's /score URL and its process id (its CPU time is read from /proc)."""
    env = None if pythonpath is None else {**os.environ, "PYTHONPATH": str(pythonpath)}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"{cmd} exited:\n{log.read_text()[-2000:]}")
                try:
                    httpx.post(f"http://127.0.0.1:{port}/score", json=BODY, timeout=2).raise_for_status()
                    break
                except httpx.HTTPError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            yield f"http://127.0.0.1:{port}/score", proc.pid
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def _wrk(url: str, duration_s: float, tmp: Path, concurrency: int = 64) -> tuple[float, float, float] | None:
    if shutil.which("wrk") is None:
        return None
    script = tmp / "post.lua"
    script.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = {json.dumps(json.dumps(BODY))}\n"
    )
    subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", "-d2s", "-s", str(script), url], capture_output=True, check=True
    )
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{concurrency}",
            f"-d{max(1, int(duration_s))}s",
            "--latency",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def pct(p: str) -> float:
        value, unit = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]

    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    return rps, pct("50"), pct("99")


def run(
    duration_s: float = 8.0,
    warmup_s: float = 2.0,
    rounds: int = 2,
    concurrency: int = 64,
    sync: bool = False,
    other_checkout: Path | None = None,
) -> BenchResult:
    """Alternating rounds (bare, gateway[, gateway sync]) so drift on a shared machine hits every target."""
    body = json.dumps(BODY).encode()
    results: dict[str, dict[str, list[tuple[float, float, float]]]] = {}
    cpu: dict[str, list[float]] = {}  # server CPU seconds per request, per round (the aiohttp load)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "fns").mkdir()
        (tmp / "fns" / "trivial.py").write_text(TRIVIAL_ASYNC)
        (tmp / "sync_fns").mkdir()
        (tmp / "sync_fns" / "trivial.py").write_text(TRIVIAL_SYNC)
        (tmp / "gw.yaml").write_text("builtin_package: null\nworkers: 1\n")
        targets: dict[str, Path | None] = {"bare FastAPI": None, "gateway (async fn)": tmp / "fns"}
        if sync:
            targets["gateway (sync fn, pool)"] = tmp / "sync_fns"
        if other_checkout is not None:
            targets[OTHER] = tmp / "fns"
        for _ in range(rounds):
            for name, folder in targets.items():
                port = _free_port()
                if folder is None:
                    cmd = [
                        sys.executable,
                        "-m",
                        "uvicorn",
                        "bench.gateway_overhead:bare_app",
                        "--factory",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        *UVICORN_FLAGS,
                    ]
                else:
                    cmd = [
                        sys.executable,
                        "-m",
                        "rewardfleet.services.gateway",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--config",
                        str(tmp / "gw.yaml"),
                        "--reward-fns",
                        str(folder),
                        "--log-level",
                        "warning",
                    ]
                pythonpath = other_checkout / ".editable" if name == OTHER and other_checkout else None
                with _server(cmd, port, tmp / f"{port}.log", pythonpath) as (url, pid):
                    cpu_before = process_cpu_s(pid)
                    load = asyncio.run(run_load(url, body, concurrency, duration_s, warmup_s))
                    # Warm-up included: CPU over every request the load sent (answered, since no errors).
                    served = load.requests + int(load.rps * warmup_s)
                    cpu.setdefault(name, []).append((process_cpu_s(pid) - cpu_before) / max(1, served))
                    if load.errors:
                        raise RuntimeError(f"{name}: {load.errors} non-200 answers")
                    per_tool = results.setdefault(name, {})
                    per_tool.setdefault("aiohttp", []).append(
                        (load.rps, load.percentile(0.5), load.percentile(0.99))
                    )
                    wrk = _wrk(url, duration_s, tmp, concurrency)
                    if wrk is not None:
                        per_tool.setdefault("wrk", []).append(wrk)

    result = BenchResult("1. gateway overhead")
    result.notes.append(
        f"concurrency {concurrency}, {duration_s:.0f} s per measurement, {rounds} alternating rounds, medians"
    )
    medians: dict[tuple[str, str], tuple[float, float, float]] = {}
    for name, per_tool in results.items():
        for tool, runs in per_tool.items():
            medians[(name, tool)] = (
                median([r[0] for r in runs]),
                median([r[1] for r in runs]) * 1e3,
                median([r[2] for r in runs]) * 1e3,
            )
            rps, p50, p99 = medians[(name, tool)]
            result.notes.append(f"{name:26} {tool:8} {rps:7.0f} req/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")
    for tool in ("aiohttp", "wrk"):
        base = medians.get(("bare FastAPI", tool))
        if base is None:
            continue
        for name in targets:
            if name == "bare FastAPI" or (name, tool) not in medians:
                continue
            rps, p50, p99 = medians[(name, tool)]
            ratio = rps / base[0]
            targeted = name == "gateway (async fn)"  # the sync row shows the pool's cost, for information
            result.rows.append(
                Row(
                    result.name,
                    f"req/s {name} / bare FastAPI ({tool}, c{concurrency})",
                    ratio,
                    ">= 0.8" if targeted else "",
                    (ratio >= 0.8) if targeted else None,
                    f"{rps:.0f} vs {base[0]:.0f} req/s; p50 {p50:.1f} vs {base[1]:.1f} ms, "
                    f"p99 {p99:.1f} vs {base[2]:.1f} ms",
                )
            )
    for tool in ("aiohttp", "wrk"):  # the A/B: this checkout's gateway against the other one's
        this, other = medians.get(("gateway (async fn)", tool)), medians.get((OTHER, tool))
        if this is not None and other is not None:
            result.rows.append(
                Row(result.name, f"req/s gateway (async fn) / other checkout's ({tool})", this[0] / other[0])
            )
    if "gateway (async fn)" in cpu and OTHER in cpu:
        result.rows.append(
            Row(
                result.name,
                "server CPU per request: other checkout's / gateway (async fn)",
                median(cpu[OTHER]) / median(cpu["gateway (async fn)"]),
            )
        )
    # Server CPU per request: on a shared 2-core machine (the load generator on the same cores, other work
    # coming and going) req/s drifts between rounds, CPU per request much less; for a server that is the
    # bottleneck, bare / gateway CPU per request is the throughput ratio it can reach.
    if "bare FastAPI" in cpu:
        bare_us = median(cpu["bare FastAPI"]) * 1e6
        for name in targets:
            if name == "bare FastAPI" or name not in cpu:
                continue
            us = median(cpu[name]) * 1e6
            targeted = name == "gateway (async fn)"
            result.notes.append(f"{name:26} server CPU {us:6.0f} us/request (bare FastAPI {bare_us:.0f})")
            result.rows.append(
                Row(
                    result.name,
                    f"server CPU per request: bare FastAPI / {name} (aiohttp, c{concurrency})",
                    bare_us / us,
                    ">= 0.8" if targeted else "",
                    (bare_us / us >= 0.8) if targeted else None,
                    f"{us:.0f} vs {bare_us:.0f} us/request",
                )
            )
    if shutil.which("wrk") is None:  # the wrk rows are absent: say so, in the table too
        result.notes.append("wrk is not installed (apt-get install -y wrk): the wrk rows were not measured")
        result.rows.append(
            Row(
                result.name,
                f"req/s gateway (async fn) / bare FastAPI (wrk, c{concurrency})",
                float("nan"),
                ">= 0.8",
                None,
                "not measured: wrk is not installed (apt-get install -y wrk)",
                fmt="—",
            )
        )
    result.data["medians"] = {f"{k[0]} | {k[1]}": v for k, v in medians.items()}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration-s", type=float, default=8.0)
    parser.add_argument("--warmup-s", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--rounds", type=int, default=2, help="alternating rounds per target; medians reported"
    )
    parser.add_argument(
        "--sync", action="store_true", help="also measure a trivial sync function (process pool)"
    )
    parser.add_argument(
        "--other-checkout",
        type=Path,
        default=None,
        help="also measure the gateway of this checkout (its .editable on PYTHONPATH), same rounds",
    )
    args = parser.parse_args()
    result = run(
        args.duration_s, args.warmup_s, args.rounds, args.concurrency, args.sync, args.other_checkout
    )
    print_result(result)


if __name__ == "__main__":
    main()
