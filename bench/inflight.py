"""Benchmark 17: 65,536 posts in flight at once through `rewardfleet gateway --processes N`, each awaiting a
judge-like call of `latency_s` (a stand-in judge over HTTP, through the gateway's own `http_client`).

Everything is a real process on 127.0.0.1: the gateway with N processes and its own state server, J stand-in
judge processes (bench/judge_server.py), and C load-generator processes, each posting from a source address
of its own (127.0.0.2, 127.0.0.3, ...: one address has ~28k ephemeral ports). Each post is one connection
(`Connection: close`), as a trainer's first burst is. Printed: answered / lost, wall ÷ latency, the RSS per
post in flight of the gateway processes (the uvicorn workers that hold the posts) and, apart, the growth of
the state server and of the supervisor (peaks over the same processes before the burst; per post: over the
most posts in flight at once, all of them when the function's latency outlasts the burst's arrival), and
the gateway's CPU per post. In `run_all` (`plan`) it is followed by bench/inflight_memory.py, which measures
one process's bytes per post at two N and tells the gateway's own share (the ≤ 16 KiB target) from the
judge call's.

    .venv/bin/python -m bench.inflight --posts 65536 --processes 8
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench import inflight_memory
from bench.common import BenchResult, Row
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.inflight_load import JUDGE_FN, burst_client, gateway_inflight, rss_and_cpu
from bench.proc_stats import tree
from bench.state_calls import script_calls, state_url

INFLIGHT = "17. in flight: 65,536 posts through --processes"
WORKERS, STATE, SUPERVISOR = "gateway processes", "state server", "supervisor and the rest"


@dataclass
class Outcome:
    posts: int
    answered: int
    wall_s: float
    latency_s: float
    rss_per_post_bytes: float  # the gateway processes' peak growth over the most posts in flight at once
    cpu_per_post_ms: float
    failures: dict[str, int]
    rss_growth_bytes: dict[str, int]  # per role (WORKERS, STATE, SUPERVISOR): peak over before the burst
    held: int  # the most posts in flight at once (the gateway's own count)
    state_after_bytes: int  # the state server's growth once every post was answered (results cached)
    script_calls_per_s: float  # the state server's script calls over the whole run (bench/state_calls.py)
    held_calls_per_s: float  # ... over a window with every post held, none arriving or answered: renewals

    @property
    def lost(self) -> int:
        return self.posts - self.answered


def _roles(root: int) -> dict[str, list[int]]:
    """The gateway's processes by role: the uvicorn workers (the root's children that multiprocessing
    started, with whatever they start), the state server (redis-server), the supervisor (the root) and the
    rest."""
    roles: dict[str, list[int]] = {WORKERS: [], STATE: [], SUPERVISOR: [root]}
    for child in _children(root):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if b"redis-server" in cmdline:
            roles[STATE].append(child)
        elif b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            roles[WORKERS] += tree(child)
        else:
            roles[SUPERVISOR] += tree(child)
    return roles


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return found


def _rss_by_role(root: int) -> dict[str, int]:
    return {role: rss_and_cpu(pids)[0] for role, pids in _roles(root).items()}


def run(
    posts: int = 65536,
    processes: int = 8,
    judges: int = 4,
    clients: int = 4,
    latency_s: float = 30.0,
    keep_dir: Path | None = None,
) -> Outcome:
    tmp = Path(keep_dir or tempfile.mkdtemp(prefix="bench-inflight-"))
    judge_ports = [free_port() for _ in range(judges)]
    judge_procs = [
        ChildProcess([sys.executable, "-m", "bench.judge_server", "--port", str(p)], tmp / f"judge-{i}.log")
        for i, p in enumerate(judge_ports)
    ]
    fns = tmp / "fns"
    fns.mkdir(exist_ok=True)
    (fns / "judged.py").write_text(JUDGE_FN.format(ports=judge_ports, latency_s=latency_s))
    per_process = posts // processes + 1024
    config = {
        "builtin_package": None,
        "reward_fns_dirs": [str(fns)],
        "max_inflight_requests": per_process,
        "http_max_connections": per_process,
        "functions": {"judged": {"timeout_s": latency_s * 4}},  # the default 30 s is a 30 s judge's latency
    }
    (tmp / "gateway.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    cmd = rewardfleet_cmd(
        "gateway",
        "--port",
        str(port),
        "--config",
        str(tmp / "gateway.yaml"),
        "--processes",
        str(processes),
        "--log-level",
        "warning",
    )
    gateway = ChildProcess(cmd, tmp / "gateway.log")
    try:
        for p, proc in zip(judge_ports, judge_procs, strict=True):
            proc.wait_http(f"http://127.0.0.1:{p}/health", timeout_s=60)
        gateway.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=180)
        _, cpu_before = rss_and_cpu(tree(gateway.pid))
        before = _rss_by_role(gateway.pid)
        url = state_url(_roles(gateway.pid)[WORKERS])
        calls_before = script_calls(url)
        ctx = multiprocessing.get_context("spawn")
        out: multiprocessing.Queue = ctx.Queue()
        share = posts // clients
        started = time.monotonic()
        procs = [
            ctx.Process(
                target=burst_client,
                args=(
                    f"127.0.0.{2 + c}",
                    port,
                    c * share,
                    share if c < clients - 1 else posts - c * share,
                    latency_s,
                    out,
                ),
            )
            for c in range(clients)
        ]
        for proc in procs:
            proc.start()
        # Peak RSS per role and the most posts in flight at once (the gateway's own count): a post's memory
        # is reused, not returned, once it is answered, so the peak RSS is that of the most in flight at once.
        peak, held = dict(before), 0.0
        deadline = started + latency_s * 4 + 180
        while time.monotonic() < deadline:
            inflight = gateway_inflight(port)
            held = max(held, inflight)
            peak = {role: max(rss, peak[role]) for role, rss in _rss_by_role(gateway.pid).items()}
            if inflight >= posts or not any(p.is_alive() for p in procs):
                break
            time.sleep(0.5)
        held_calls_per_s = 0.0
        # Every post held (none arrives, none is answered before the first one's latency): renewals only.
        window_s = min(latency_s / 4, started + latency_s - time.monotonic() - 2)
        if held >= posts and window_s >= 3:
            first, t0 = script_calls(url), time.monotonic()
            time.sleep(window_s)
            held_calls_per_s = (script_calls(url) - first) / (time.monotonic() - t0)
        failures: dict[str, int] = {}
        for _ in procs:
            for key, n in out.get(timeout=latency_s * 4 + 240).items():
                failures[key] = failures.get(key, 0) + n
        wall = time.monotonic() - started
        for proc in procs:
            proc.join(timeout=30)
        _, cpu_after = rss_and_cpu(tree(gateway.pid))
        calls = script_calls(url) - calls_before
        state_after = _rss_by_role(gateway.pid)[STATE] - before[STATE]  # with the answers' cached results
        answered = failures.pop("ok", 0)
        growth = {role: peak[role] - before[role] for role in before}
        return Outcome(
            posts=posts,
            answered=answered,
            wall_s=wall,
            latency_s=latency_s,
            rss_per_post_bytes=growth[WORKERS] / max(held, 1),
            cpu_per_post_ms=(cpu_after - cpu_before) / posts * 1000,
            failures=failures,
            rss_growth_bytes=growth,
            held=int(held),
            state_after_bytes=state_after,
            script_calls_per_s=calls / wall,
            held_calls_per_s=held_calls_per_s,
        )
    finally:
        gateway.stop(timeout_s=60)
        for proc in judge_procs:
            proc.stop()


def plan(quick: bool = False) -> BenchResult:
    posts = 8192 if quick else 65536
    o = run(posts=posts, processes=8)
    rows = [
        Row(
            INFLIGHT,
            f"{posts} posts answered",
            o.answered,
            f"= {posts}",
            o.answered == posts,
            f"lost {o.lost}; failures {o.failures}",
            fmt="{:.0f}",
        ),
        Row(INFLIGHT, "wall / judge latency", o.wall_s / o.latency_s, detail=f"wall {o.wall_s:.1f} s"),
        Row(
            INFLIGHT,
            "gateway processes' RSS per post in flight (KiB)",
            o.rss_per_post_bytes / 1024,
            detail=f"at most {o.held} posts in flight at once; the function's aiohttp judge call included, "
            "and the churn of posts answered while others arrive (the gateway's own share: the next rows)",
        ),
        Row(
            INFLIGHT,
            "state server's RSS growth (MiB)",
            o.rss_growth_bytes[STATE] / 2**20,
            detail=f"{o.state_after_bytes / 2**20:.1f} MiB once answered (results cached); supervisor "
            f"and the rest: {o.rss_growth_bytes[SUPERVISOR] / 2**20:.1f} MiB",
        ),
        Row(INFLIGHT, "gateway CPU per post (ms)", o.cpu_per_post_ms, detail="8 processes, 2 cores"),
    ]
    return BenchResult(INFLIGHT, rows + memory_rows(quick))


def memory_rows(quick: bool) -> list[Row]:
    """The memory of one post in flight in one gateway process (bench/inflight_memory.py): the slope between
    two burst sizes, for a function that only awaits (the gateway's own share, the target) and for one that
    awaits an aiohttp judge call (what such a function adds)."""

    sizes = [1024, 4096] if quick else [2048, 8192]
    points = inflight_memory.run(sizes, ["sleep", "judge"])
    rows = []
    for function, what in (("sleep", "the gateway's own"), ("judge", "with an aiohttp judge call")):
        own = points[function]
        slope = inflight_memory.slope_bytes(own)
        answered = all(p.answered == p.posts for p in own)
        rows.append(
            Row(
                INFLIGHT,
                f"RSS per post in flight, one gateway process, {what} (KiB, slope N={sizes[0]}..{sizes[1]})",
                slope / 1024,
                "<= 16" if function == "sleep" else "",
                slope <= 16 * 1024 if function == "sleep" else None,
                ", ".join(f"N={p.posts}: {p.per_post_bytes / 1024:.1f} KiB" for p in own)
                + ("" if answered else "; NOT every post answered"),
            )
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--posts", type=int, default=65536)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--judges", type=int, default=4)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--latency-s", type=float, default=30.0)
    args = ap.parse_args()
    o = run(args.posts, args.processes, args.judges, args.clients, args.latency_s)
    print(
        f"posts={o.posts} answered={o.answered} lost={o.lost} failures={o.failures}\n"
        f"wall={o.wall_s:.1f}s wall/latency={o.wall_s / o.latency_s:.3f}\n"
        f"gateway processes' RSS per post in flight={o.rss_per_post_bytes / 1024:.1f} KiB (target <= 16; "
        f"at most {o.held} in flight at once; +{o.rss_growth_bytes[WORKERS] / 2**20:.1f} MiB)\n"
        f"state server's RSS growth={o.rss_growth_bytes[STATE] / 2**20:.1f} MiB "
        f"({o.rss_growth_bytes[STATE] / max(o.held, 1):.0f} bytes a post in flight), "
        f"{o.state_after_bytes / 2**20:.1f} MiB once answered; supervisor and the rest: "
        f"{o.rss_growth_bytes[SUPERVISOR] / 2**20:.1f} MiB\n"
        f"gateway CPU per post={o.cpu_per_post_ms:.3f} ms\n"
        f"state server script calls/s={o.script_calls_per_s:.0f} over the run, "
        f"{o.held_calls_per_s:.0f} with every post held (renewals; 0: no such window)"
    )


if __name__ == "__main__":
    main()
