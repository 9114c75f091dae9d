"""Where the memory of a post in flight goes, inside one gateway process (issue 44).

The gateway runs in this process (the CLI's settings: uvloop, httptools, the collector tuned as its own
process); stand-in judges and one load generator are child processes on 127.0.0.1. After a warm-up burst, a
burst of `--posts` posts is sent, each awaiting a judge for `--latency-s`; once they are all in flight the
process is read, and the figures are deltas over the idle process before the burst:

- RSS (/proc/self/statm), and what Python's allocators hold (tracemalloc's traced bytes, by file and line
  and by package: uvicorn, httptools, aiohttp, starlette, asyncio, rewardfleet, ...);
- the objects the cyclic collector tracks, by type (`gc.get_objects`), with their shallow sizes.

tracemalloc costs memory and CPU of its own: read the shares, not the absolute RSS (bench/inflight_memory.py
measures that, without tracemalloc).

    .venv/bin/python -m bench.inflight_attribution --posts 2048
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import yaml

from bench.common import ChildProcess, free_port
from bench.inflight_load import JUDGE_FN, burst_client
from bench.inflight_memory import SLEEP_FN


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _package(filename: str) -> str:
    parts = Path(filename).parts
    for marker in ("site-packages", "rewardfleet", "python3.11"):
        if marker in parts:
            i = parts.index(marker)
            rest = parts[i + 1 :] if marker != "rewardfleet" else parts[i:]
            if marker == "rewardfleet":
                return "/".join(rest[:4]) if len(rest) > 3 else "/".join(rest)
            return rest[0] if rest else filename
    return filename


def _name(obj: object) -> str:
    """The type's name; a coroutine's, a function's and a cell's owner are named too (`coroutine:f`)."""
    kind = type(obj).__qualname__
    code = getattr(obj, "cr_code", None) or getattr(obj, "__code__", None)
    if code is not None:
        return f"{kind}:{code.co_qualname}"
    return kind


def _types() -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        counts[_name(obj)] += 1
    return counts


def _type_bytes() -> collections.Counter[str]:
    sizes: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        try:
            sizes[_name(obj)] += sys.getsizeof(obj)
        except TypeError:
            continue
    return sizes


def _traced(snap0: tracemalloc.Snapshot, snap1: tracemalloc.Snapshot, held: int, top: int) -> None:
    traced = sum(s.size for s in snap1.statistics("filename"))
    traced -= sum(s.size for s in snap0.statistics("filename"))
    print(f"\ntraced +{traced / held:.0f} B/post")
    by_pkg: collections.Counter[str] = collections.Counter()
    for stat in snap1.compare_to(snap0, "filename"):
        by_pkg[_package(stat.traceback[0].filename)] += stat.size_diff
    print("traced bytes per post, by package:")
    for pkg, size in by_pkg.most_common(top):
        print(f"  {size / held:8.0f}  {pkg}")
    print("\ntraced bytes per post (and blocks), by line:")
    for stat in snap1.compare_to(snap0, "lineno")[:top]:
        frame = stat.traceback[0]
        where = f"{frame.filename}:{frame.lineno}"
        print(f"  {stat.size_diff / held:8.0f}  {stat.count_diff / held:5.2f}  {where}")


def _owners(kinds: list[str], before: set[int]) -> None:
    """Who holds the new objects of `kinds`: the referrers of a sample of them, by type (and one's repr)."""
    new = [o for o in gc.get_objects() if type(o).__qualname__ in kinds and id(o) not in before]
    for kind in kinds:
        sample = [o for o in new if type(o).__qualname__ == kind][:200]
        holders: collections.Counter[str] = collections.Counter()
        for obj in sample:
            for ref in gc.get_referrers(obj):
                if ref is sample or ref is new:
                    continue
                holders[_name(ref)] += 1
        print(f"\nnew {kind} ({len(sample)} sampled), held by: {holders.most_common(8)}")
        if sample:
            print("  e.g.", repr(sample[0])[:300])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--posts", type=int, default=2048)
    ap.add_argument("--latency-s", type=float, default=20.0)
    ap.add_argument("--judges", type=int, default=2)
    ap.add_argument("--function", choices=["sleep", "judge"], default="judge")
    ap.add_argument("--state-server", action="store_true", help="state in the gateway's own Redis server")
    ap.add_argument("--frames", type=int, default=1, help="tracemalloc frames per allocation")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--owners", nargs="*", default=[], help="types whose new objects' referrers are shown")
    args = ap.parse_args()

    import uvicorn

    from rewardfleet.services.gateway.app import create_app
    from rewardfleet.services.gateway.processes.args import build_settings

    tmp = Path(tempfile.mkdtemp(prefix="bench-attr-"))
    judge_ports = [free_port() for _ in range(args.judges)]
    judges = [
        ChildProcess([sys.executable, "-m", "bench.judge_server", "--port", str(p)], tmp / f"judge-{i}.log")
        for i, p in enumerate(judge_ports)
    ]
    (tmp / "fns").mkdir()
    source = JUDGE_FN if args.function == "judge" else SLEEP_FN
    (tmp / "fns" / "judged.py").write_text(source.format(ports=judge_ports, latency_s=args.latency_s))
    n = args.posts
    config = {
        "builtin_package": None,
        "reward_fns_dirs": [str(tmp / "fns")],
        "max_inflight_requests": n + 1024,
        "http_max_connections": n + 1024,
        "functions": {"judged": {"timeout_s": args.latency_s * 4}},
    }
    (tmp / "gateway.yaml").write_text(yaml.safe_dump(config))
    port = free_port()
    state = None
    if args.state_server:  # as under --processes: idempotency, leases and groups in Redis
        from rewardfleet.services.gateway.processes.state_server import StateServer

        state = StateServer()
        state.start()
    settings = build_settings(
        tmp / "gateway.yaml", "127.0.0.1", port, None, None, state.url if state is not None else None
    )
    app = create_app(settings, freeze_startup=True)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            loop="uvloop",
            http="httptools",
            lifespan="on",
            log_level="warning",
            backlog=n + 1024,
        )
    )
    report: dict[str, Any] = {}

    def burst(count: int, first: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        out: multiprocessing.Queue = ctx.Queue()
        proc = ctx.Process(target=burst_client, args=("127.0.0.2", port, first, count, args.latency_s, out))
        proc.start()
        report.setdefault("procs", []).append((proc, out))

    def inflight() -> int:
        gateway = getattr(app.state, "gateway", None)
        return 0 if gateway is None else int(gateway.metrics.inflight_count)

    def watch() -> None:
        try:
            for p, judge in zip(judge_ports, judges, strict=True):
                judge.wait_http(f"http://127.0.0.1:{p}/health", timeout_s=60)
            while not server.started:
                time.sleep(0.1)
            burst(256, 10_000_000)  # warm-up: lazy imports, metric children, the connection pool
            proc, out = report["procs"][-1]
            print("warm-up:", out.get(timeout=args.latency_s * 4 + 120), flush=True)
            proc.join(30)
            gc.collect()
            types0, bytes0, rss0 = _types(), _type_bytes(), _rss()
            before = {id(o) for o in gc.get_objects()} if args.owners else set()
            if args.frames:
                tracemalloc.start(args.frames)
                snap0 = tracemalloc.take_snapshot()
            burst(n, 0)
            deadline = time.monotonic() + args.latency_s * 4 + 120
            while inflight() < n and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0)  # the last posts' judge calls connect
            rss1 = _rss()
            held = inflight()
            types1, bytes1 = _types(), _type_bytes()
            print(f"in flight {held}; RSS +{(rss1 - rss0) / held:.0f} B/post")
            print("\ngc-tracked objects per post (count, shallow bytes), by type:")
            diff = {t: types1[t] - types0.get(t, 0) for t in types1}
            total = sum(bytes1.values()) - sum(bytes0.values())
            print(f"  {sum(diff.values()) / held:6.2f}  {total / held:7.0f}  (all)")
            largest = sorted(diff.items(), key=lambda kv: -(bytes1[kv[0]] - bytes0.get(kv[0], 0)))
            for t, c in largest[: args.top]:
                print(f"  {c / held:6.2f}  {(bytes1[t] - bytes0.get(t, 0)) / held:7.0f}  {t}")
            if args.frames:
                _traced(snap0, tracemalloc.take_snapshot(), held, args.top)
            if args.owners:
                _owners(args.owners, before)
            unreachable = gc.collect()
            print(
                f"\ncyclic garbage at the plateau: {unreachable / held:.2f} objects a post; RSS then "
                f"+{(_rss() - rss0) / held:.0f} B/post"
            )
            proc, out = report["procs"][-1]
            print("\nburst:", out.get(timeout=args.latency_s * 4 + 240), flush=True)
            proc.join(30)
            time.sleep(2.0)  # the last connections close
            retained = _rss() - rss0
            ctypes.CDLL("libc.so.6").malloc_trim(0)
            trimmed = _rss() - rss0
            print(
                f"after the burst: RSS +{retained / held:.0f} B/post kept, "
                f"+{trimmed / held:.0f} after malloc_trim"
            )
        finally:
            server.should_exit = True

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        server.run()
    finally:
        for judge in judges:
            judge.stop()
        if state is not None:
            state.stop()


if __name__ == "__main__":
    main()
