"""The memory of one post in flight in one gateway process (issue 44): RSS over the idle process, per post.

For each N: a fresh `rewardfleet gateway` (one process, the CLI as an operator runs it), a warm-up burst of
256 posts (lazy imports, metric children, the judge connections' pool), then the idle RSS; then N posts at
once, each on a connection of its own, and the gateway's RSS once all N are in flight (its own count). Two
functions, so the gateway's own cost and the function's are told apart:

- `sleep`: `await asyncio.sleep(latency_s)`: what any post costs the gateway (its connection, uvicorn,
  the framework, the gateway's per-request objects, the function's task);
- `judge`: the same post awaiting a stand-in judge over HTTP through the gateway's `http_client` (aiohttp):
  the difference is the judge call's connection and request objects.

The slope between the smallest and the largest N is the cost of one more post, without what the process
grows by once whatever N is (allocator arenas, the accept backlog).

    .venv/bin/python -m bench.inflight_memory --posts 2048 4096 8192 --function sleep judge
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.common import ChildProcess, free_port, rewardfleet_cmd
from bench.inflight_load import JUDGE_FN, burst_client, gateway_inflight, rss_and_cpu
from bench.proc_stats import tree

SLEEP_FN = """
import asyncio

LATENCY_S = {latency_s}


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(LATENCY_S)
    return 1.0 if solution_str.endswith("yes") else 0.0
"""
WARM_UP_POSTS = 256


@dataclass
class Point:
    function: str
    posts: int
    held: int  # posts in flight when the RSS was read
    idle_rss_bytes: int
    peak_rss_bytes: int
    answered: int

    @property
    def per_post_bytes(self) -> float:
        return (self.peak_rss_bytes - self.idle_rss_bytes) / max(self.held, 1)


def _burst(port: int, first: int, count: int, latency_s: float) -> tuple[multiprocessing.Process, object]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=burst_client, args=("127.0.0.2", port, first, count, latency_s, out))
    proc.start()
    return proc, out


def measure(function: str, posts: int, latency_s: float, tmp: Path, judge_ports: list[int]) -> Point:
    fns = tmp / f"fns-{function}"
    fns.mkdir(exist_ok=True)
    source = JUDGE_FN if function == "judge" else SLEEP_FN
    (fns / "judged.py").write_text(source.format(ports=judge_ports, latency_s=latency_s))
    config = {
        "builtin_package": None,
        "reward_fns_dirs": [str(fns)],
        "max_inflight_requests": posts + 1024,
        "http_max_connections": posts + 1024,
        "functions": {"judged": {"timeout_s": latency_s * 4}},
    }
    (tmp / "gateway.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    cmd = rewardfleet_cmd("gateway", "--port", str(port), "--config", str(tmp / "gateway.yaml"))
    gateway = ChildProcess([*cmd, "--log-level", "warning"], tmp / f"gateway-{function}-{posts}.log")
    try:
        gateway.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=120)
        proc, out = _burst(port, 10_000_000, WARM_UP_POSTS, latency_s)
        out.get(timeout=latency_s * 4 + 120)  # type: ignore[attr-defined]
        proc.join(30)
        time.sleep(1.0)  # the warm-up's connections close
        idle, _ = rss_and_cpu(tree(gateway.pid))
        proc, out = _burst(port, 0, posts, latency_s)
        peak, held = idle, 0.0
        deadline = time.monotonic() + latency_s * 2 + 60
        while time.monotonic() < deadline:
            held = gateway_inflight(port)
            if held >= posts:
                time.sleep(1.0)  # the last posts' judge calls connect
                held = gateway_inflight(port)
                peak = max(peak, rss_and_cpu(tree(gateway.pid))[0])
                break
            time.sleep(0.5)
        results: dict[str, int] = out.get(timeout=latency_s * 4 + 240)  # type: ignore[attr-defined]
        proc.join(30)
        return Point(function, posts, int(held), idle, peak, results.get("ok", 0))
    finally:
        gateway.stop(timeout_s=60)


def slope_bytes(points: list[Point]) -> float:
    """The RSS of one more post in flight: between the smallest and the largest N of one function."""
    lo, hi = points[0], points[-1]
    grown = hi.peak_rss_bytes - hi.idle_rss_bytes - lo.peak_rss_bytes + lo.idle_rss_bytes
    return grown / max(hi.held - lo.held, 1)


def run(
    posts: list[int], functions: list[str], latency_s: float = 20.0, judges: int = 2, echo: bool = False
) -> dict[str, list[Point]]:
    """Each function's points, in the order of `posts` (a fresh gateway for each)."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-inflight-memory-"))
    judge_ports = [free_port() for _ in range(judges if "judge" in functions else 0)]  # none for `sleep`
    procs = [
        ChildProcess([sys.executable, "-m", "bench.judge_server", "--port", str(p)], tmp / f"judge-{i}.log")
        for i, p in enumerate(judge_ports)
    ]
    out: dict[str, list[Point]] = {}
    try:
        for p, judge in zip(judge_ports, procs, strict=True):
            judge.wait_http(f"http://127.0.0.1:{p}/health", timeout_s=60)
        for function in functions:
            for n in posts:
                point = measure(function, n, latency_s, tmp, judge_ports)
                out.setdefault(function, []).append(point)
                if echo:
                    grown = (point.peak_rss_bytes - point.idle_rss_bytes) / 2**20
                    print(
                        f"{function:5s} N={n:5d} in flight {point.held:5d} answered {point.answered:5d}: "
                        f"idle RSS {point.idle_rss_bytes / 2**20:.1f} MiB, +{grown:.1f} MiB = "
                        f"{point.per_post_bytes / 1024:.1f} KiB a post",
                        flush=True,
                    )
            if echo and len(out[function]) > 1:
                lo, hi = out[function][0].posts, out[function][-1].posts
                print(f"{function:5s} slope N={lo}..{hi}: {slope_bytes(out[function]) / 1024:.1f} KiB a post")
    finally:
        for judge in procs:
            judge.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--posts", type=int, nargs="+", default=[2048, 4096, 8192])
    ap.add_argument("--function", nargs="+", choices=["sleep", "judge"], default=["sleep", "judge"])
    ap.add_argument("--latency-s", type=float, default=20.0)
    ap.add_argument("--judges", type=int, default=2)
    args = ap.parse_args()
    if max(args.posts) * 2 + 2048 > 20000:
        sys.exit("one process holds a socket per post and one per judge call: at most ~8,900 posts here")
    run(args.posts, args.function, args.latency_s, args.judges, echo=True)


if __name__ == "__main__":
    main()
