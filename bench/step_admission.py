"""A whole GRPO step posted at once: 4096 and 8192 concurrent single-sample posts of an async judge-style
function (it only awaits a remote call), against a gateway with the default admission settings. Every post
should be accepted and scored, and they should overlap: wall time ÷ the largest single judge latency (the
best possible) <= 1.05.

The function awaits a POST to the stand-in judge (`bench/judge_server.py`, its own process) through the
gateway's shared `http_client`, so the gateway's connection pool to judges is on the path; the judge answers
after a latency drawn from U(low, high) (seeded, carried in `extra_info`). `--judge sleep` awaits
`asyncio.sleep` in the gateway instead (no judge process: admission and the gateway alone).

Also printed: accepted / refused (429) / failed counts, the spread of arrivals (when the last post reached
its function, from the function's own clock: the gateway's per-request cost, not admission), when the judge
had read the last call (from the judge's answer: the wall time is about that plus the largest latency), the
CPU each process spent until then (sampled 20 times a second), and the gateway's RSS growth per request in
flight (what `max_inflight_requests` bounds). From the gateway's CPU until the judge had read the last call
comes the best ratio one gateway process could reach on a core of its own, were the client and the judge
free: the goal is out of one process's reach when that is above the target, whatever the machine's other
cores do.

One client process on the same 2 cores as the gateway (the file-descriptor limit raised): the client's own
cost is in the wall time. By default it is the fleet's `AsyncRewardClient`, as a trainer's adapter posts:
every sample in flight, so a connection per post. The goal's verdict is on the first burst, which opens
them all; `--repeats 2` sends the step again through the same client, on the connections now open (a
trainer's next step within the gateway's `keep_alive_s`), printed apart. `--client aiohttp` posts through
aiohttp with a new connection per post every time instead (a generic client's cost).

    .venv/bin/python -m bench.step_admission [--samples 4096 8192] [--low-s 20 --high-s 30] [--judge sleep]
        [--client fleet|aiohttp] [--repeats 2] [--processes N|auto] [--plain]

`--processes N|auto` runs `rewardfleet gateway --processes` (N processes on one socket, their state in the
gateway's own state server, whose CPU and RSS count as the gateway's). `--plain` sends each size's first
burst, right after the gateway's, to `bench.plain_asgi` (a plain ASGI app under uvicorn with the same
settings and processes, doing only the function's await): the gateway's wall time over it is the framework's
cost (target <= 1.1), beside the gateway's CPU per post (all its processes, from /proc; target <= 0.3 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.common import OFFLINE_ENV, BenchResult, Row, print_result, write_fn
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.proc_stats import cpu_s, rss_bytes, tree
from rewardfleet.services.client import AsyncRewardClient, GatewayUnavailable, RetryPolicy
from rewardfleet.services.common.open_files import raise_open_files_limit
from rewardfleet.services.gateway.processes.args import parse_processes

TARGET = 1.05  # first burst: wall time / the largest judge latency
CPU_TARGET_MS = 0.3  # gateway CPU per post
PLAIN_TARGET = 1.1  # first burst: wall time / the plain ASGI app's

# The judge-style function: its whole work is one awaited remote call, through the gateway's shared session.
HTTP_JUDGE = """
import time


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, http_client=None):
    started = time.monotonic()
    body = {"response": solution_str, "latency_s": extra_info["judge_latency_s"]}
    async with http_client.post(extra_info["judge_url"], json=body) as resp:
        resp.raise_for_status()
        answer = await resp.json()
    judged = answer["received_monotonic"]
    return {"score": float(answer["score"]), "started_monotonic": started, "judged_monotonic": judged}
"""

SLEEP_JUDGE = """
import asyncio
import time


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    started = time.monotonic()
    await asyncio.sleep(extra_info["judge_latency_s"])  # stands in for a remote judge's answer time
    return {"score": 1.0, "started_monotonic": started}
"""


@dataclass
class Burst:
    samples: int
    wall_s: float
    max_latency_s: float
    accepted: int
    refused: int
    failed: int
    arrivals_span_s: float  # first send -> the last post's function started
    judged_span_s: float  # first send -> the judge had read the last call (nan with --judge sleep)
    rss_growth_bytes: int
    failures: dict[str, int]
    gateway_cpu_s: float
    client_cpu_s: float
    judge_cpu_s: float  # the stand-in judge process (0 with --judge sleep)
    # CPU seconds each process spent from the first send until the last post reached its function, and until
    # the judge had read the last call
    arrival_cpu_s: dict[str, float] = field(default_factory=dict)
    judged_cpu_s: dict[str, float] = field(default_factory=dict)
    processes: int = 1  # gateway processes (`--processes`)
    repeat: int = 0  # 0: the client's first burst (a new connection per post); later: connections open

    @property
    def ratio(self) -> float:
        return self.wall_s / self.max_latency_s

    @property
    def cpu_floor_s(self) -> float:
        """The burst's CPU (client, gateway, judge) spread over this machine's cores. Sending the posts (the
        client's, the gateway's and the judge's part of it) has to happen before the last one can start
        waiting, so on one shared host the arrival span cannot shrink much below that share of it."""
        return (self.gateway_cpu_s + self.client_cpu_s + self.judge_cpu_s) / (os.cpu_count() or 1)

    @property
    def gateway_judged_ms(self) -> float:
        """The gateway's CPU a post until the judge had read every call (the arrival work, then the judge
        call's connection and request), in milliseconds; the arrival work alone with `--judge sleep`."""
        spent = self.judged_cpu_s or self.arrival_cpu_s
        return spent.get("gateway", 0.0) / self.samples * 1000

    @property
    def one_process_ratio(self) -> float:
        """The ratio one gateway process could reach on a core of its own, with a client and a judge that
        cost nothing: its work for every post done back to back, then the largest latency."""
        return (self.max_latency_s + self.gateway_judged_ms * self.samples / 1000) / self.max_latency_s


Send = Callable[[dict[str, Any]], Awaitable[tuple[int, dict[str, Any]]]]


async def _bursts(
    base: str,
    latencies: list[float],
    judge_url: str | None,
    gateway_pids: list[int],
    timeout_s: float,
    judge_pid: int | None = None,
    client: str = "fleet",
    repeats: int = 1,
) -> list[Burst]:
    """`repeats` bursts of the same posts (new uids each time) through one client: the first opens a
    connection per post, the later ones find them open (as a trainer's next step does within the gateway's
    `keep_alive_s`); the aiohttp client opens new ones every time."""
    post = _fleet_poster if client == "fleet" else _aiohttp_poster
    async with post(base, len(latencies), timeout_s) as send:
        return [
            await _burst(send, latencies, judge_url, gateway_pids, judge_pid, repeat)
            for repeat in range(repeats)
        ]


async def _burst(
    send: Send,
    latencies: list[float],
    judge_url: str | None,
    gateway_pids: list[int],
    judge_pid: int | None,
    repeat: int,
) -> Burst:
    samples = [
        {
            "data_source": "bench",
            "reward_fn": "step_judge",
            "solution_str": "the answer is yes",
            "uid": f"s{len(latencies)}-{repeat}-{i}",  # never a cached answer
            "extra_info": {"judge_latency_s": lat, "judge_url": judge_url},
        }
        for i, lat in enumerate(latencies)
    ]
    statuses: list[int] = []
    starts: list[float] = []
    judged: list[float] = []
    failures: Counter[str] = Counter()
    rss_before = rss_bytes(*gateway_pids)
    rss_peak = rss_before
    cpu_trace: list[tuple[float, dict[str, float]]] = []

    def cpu_now() -> dict[str, float]:
        now = {"client": time.process_time(), "gateway": cpu_s(*gateway_pids)}
        if judge_pid is not None:
            now["judge"] = cpu_s(judge_pid)
        return now

    async def one(sample: dict[str, Any]) -> None:
        try:
            status, answer = await send(sample)
        except Exception as exc:  # counted, never retried: a failure here is a failure of the run
            failures[type(exc).__name__] += 1
            return
        statuses.append(status)
        if status == 200 and answer["status"] == "ok":
            starts.append(answer["extra"]["started_monotonic"])
            if "judged_monotonic" in answer["extra"]:
                judged.append(answer["extra"]["judged_monotonic"])
        elif status != 429:
            error = answer.get("error") or {}
            failures[f"{status} {error.get('type', answer.get('status'))}"] += 1

    async def watch() -> None:  # the gateway's RSS, and every process's CPU, 20 times a second
        nonlocal rss_peak
        while True:
            rss_peak = max(rss_peak, rss_bytes(*gateway_pids))
            cpu_trace.append((time.monotonic(), cpu_now()))
            await asyncio.sleep(0.05)

    cpu_trace.append((time.monotonic(), cpu_now()))
    watcher = asyncio.create_task(watch())
    sent = time.monotonic()
    await asyncio.gather(*(one(s) for s in samples))
    wall = time.monotonic() - sent
    watcher.cancel()
    cpu_trace.append((time.monotonic(), cpu_now()))  # the last sample: the whole burst's CPU
    total_cpu = _spent_until(cpu_trace, float("inf"))
    accepted = len(starts)
    refused = statuses.count(429)
    arrival_cpu = _spent_until(cpu_trace, max(starts)) if starts else {}
    judged_cpu = _spent_until(cpu_trace, max(judged)) if judged else {}
    return Burst(
        samples=len(samples),
        wall_s=wall,
        max_latency_s=max(latencies),
        accepted=accepted,
        refused=refused,
        failed=len(samples) - accepted - refused,
        arrivals_span_s=(max(starts) - sent) if starts else float("nan"),
        judged_span_s=(max(judged) - sent) if judged else float("nan"),
        rss_growth_bytes=rss_peak - rss_before,
        failures=dict(failures),
        gateway_cpu_s=total_cpu["gateway"],
        client_cpu_s=total_cpu["client"],
        judge_cpu_s=total_cpu.get("judge", 0.0),
        arrival_cpu_s=arrival_cpu,
        judged_cpu_s=judged_cpu,
        repeat=repeat,
    )


def _spent(cpu: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.2f} s" for name, seconds in cpu.items())


def _spent_until(trace: list[tuple[float, dict[str, float]]], until: float) -> dict[str, float]:
    """CPU seconds each process spent from the trace's first sample to the first one taken at or after
    `until` (the samples are 50 ms apart: at most that much is counted past it), else to the last one."""
    first = trace[0][1]
    last = next((cpu for at, cpu in trace if at >= until), trace[-1][1])
    return {name: last[name] - first[name] for name in first}


@asynccontextmanager
async def _fleet_poster(base: str, samples: int, timeout_s: float) -> AsyncIterator[Send]:
    """Posts through the fleet's own client, as a trainer's adapter does: every sample in flight at once
    (`max_concurrency` = the step), one attempt each (a 429 is counted, never retried)."""
    once = RetryPolicy(max_attempts=1)
    async with AsyncRewardClient(base, timeout_s=timeout_s, max_concurrency=samples, retry=once) as client:

        async def send(sample: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            try:
                result = await client.score(sample)
            except GatewayUnavailable as exc:
                if exc.last_status is None:
                    raise
                return exc.last_status, {}
            error = {"type": result.error.type} if result.error else None
            return 200, {"status": result.status, "extra": result.extra, "error": error}

        yield send


@asynccontextmanager
async def _aiohttp_poster(base: str, samples: int, timeout_s: float) -> AsyncIterator[Send]:
    """Posts through aiohttp, one new connection per post (no keep-alive): a generic client's cost."""
    headers = {"content-type": "application/json"}
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def send(sample: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            async with session.post(
                base + "/score", data=json.dumps(sample).encode(), headers=headers
            ) as resp:
                return resp.status, await resp.json()

        yield send


def _spawned(pid: int) -> int:
    """uvicorn's worker processes under `pid` (started by multiprocessing's spawn)."""
    count = 0
    for one in tree(pid):
        try:
            count += b"spawn_main" in Path(f"/proc/{one}/cmdline").read_bytes()
        except OSError:
            continue
    return count


def _settle(child: ChildProcess, processes: int) -> None:
    """Wait until every worker process is up: one `/ready` answered says only that one is. Above one the
    tree is uvicorn's supervisor, its N workers and (the gateway's) a state server."""
    for _ in range(300):
        if processes == 1 or _spawned(child.pid) >= processes:
            break
        time.sleep(0.1)
    time.sleep(2.0 if processes > 1 else 0.0)  # and past their start-up (a worker answers once started)


@contextmanager
def _gateway(
    tmp: Path, fns: Path, timeout_s: float, settings: dict[str, int], processes: int = 1
) -> Iterator[tuple[str, list[int]]]:
    """`rewardfleet gateway --processes N` with the admission settings at their defaults unless `settings`
    names them (only the benchmark's function, its `timeout_s` above the judge's latencies, no built-ins);
    yields its base URL and pid (its tree's CPU and RSS: the workers and, above one process, the state
    server of its own) once `/ready` says 200."""
    port = free_port()
    cfg = tmp / "gateway.yaml"
    config: dict[str, Any] = {
        "builtin_package": None,
        "functions": {"step_judge": {"timeout_s": timeout_s}},
        **settings,
    }
    cfg.write_text(yaml.safe_dump(config))
    cmd = rewardfleet_cmd(
        "gateway", "--port", str(port), "--config", str(cfg), "--log-level", "warning",
        "--processes", str(processes), "--reward-fns", str(fns),
    )  # fmt: skip
    child = ChildProcess(cmd, tmp / "gateway.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/ready", timeout_s=120)
        _settle(child, processes)
        yield base, [child.pid]
    finally:
        child.stop()


@contextmanager
def _plain(tmp: Path, processes: int, max_inflight: int) -> Iterator[tuple[str, list[int]]]:
    """The baseline (`bench.plain_asgi`): a plain ASGI app under uvicorn with the gateway's settings."""
    port = free_port()
    cmd = [sys.executable, "-m", "bench.plain_asgi", "--port", str(port), "--processes", str(processes)]
    child = ChildProcess([*cmd, "--max-inflight", str(max_inflight)], tmp / "plain.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/ready", timeout_s=60)
        _settle(child, processes)
        yield base, [child.pid]
    finally:
        child.stop()


def run(
    sizes: tuple[int, ...] = (4096, 8192),
    low_s: float = 20.0,
    high_s: float = 30.0,
    judge: str = "http",
    settings: dict[str, int] | None = None,
    client: str = "fleet",
    repeats: int = 1,
    processes: int | str = 1,
    plain: bool = False,
) -> BenchResult:
    """`settings`: gateway settings instead of the defaults (e.g. the old `http_max_connections: 256`).
    `processes`: `rewardfleet gateway --processes` (a number or "auto"). `plain`: the same first burst, for
    each size right after the gateway's, sent to `bench.plain_asgi` run as the gateway is."""
    n_procs = parse_processes(str(processes))
    name = "13. a whole step posted at once (admission)"
    result = BenchResult(name if n_procs == 1 else f"{name}, --processes {processes}")
    raise_open_files_limit(2 * max(sizes) + 1024, "one client connection per post, and the judge's side")
    bursts: list[Burst] = []
    baselines: dict[int, Burst] = {}
    with tempfile.TemporaryDirectory(prefix="rf-step-admission-") as tmp_name, ExitStack() as stack:
        tmp = Path(tmp_name)
        fns = write_fn(tmp / "fns", "step_judge", HTTP_JUDGE if judge == "http" else SLEEP_JUDGE)
        judge_proc = None
        judge_url = None
        if judge == "http":
            port = free_port()
            cmd = [sys.executable, "-m", "bench.judge_server", "--port", str(port)]
            judge_proc = ChildProcess(cmd, tmp / "judge.log")
            stack.callback(judge_proc.stop)
            judge_proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=60)
            judge_url = f"http://127.0.0.1:{port}/judge"
        base, pids = stack.enter_context(_gateway(tmp, fns, 2 * high_s + 60, settings or {}, n_procs))
        inflight = (settings or {}).get("max_inflight_requests", 16384)
        plain_server = stack.enter_context(_plain(tmp, n_procs, inflight)) if plain else None
        judge_pid = None if judge_proc is None else judge_proc.pid
        timeout_s = 4 * high_s + 120
        for n in sizes:
            rng = random.Random(2900 + n)
            latencies = [rng.uniform(low_s, high_s) for _ in range(n)]
            burst = _bursts(base, latencies, judge_url, pids, timeout_s, judge_pid, client, repeats)
            bursts += [replace(b, processes=n_procs) for b in asyncio.run(burst)]
            if plain_server is not None:  # the same first burst, to the baseline, right after
                pbase, ppids = plain_server
                first = _bursts(pbase, latencies, judge_url, ppids, timeout_s, judge_pid, client, 1)
                baselines[n] = asyncio.run(first)[0]
    result.notes.append(
        f"admission settings: {settings or 'defaults'}; async judge-style function ({judge}: "
        + ("a POST through the gateway's http_client to the stand-in judge process" if judge == "http"
           else "asyncio.sleep in the gateway")
        + f"), judge latency U({low_s:g} s, {high_s:g} s), one client process: "
        + ("the fleet's AsyncRewardClient" if client == "fleet" else "aiohttp, a new connection per post")
        + ("" if n_procs == 1 else
           f"; `rewardfleet gateway --processes {processes}`: {n_procs} processes on one socket, state in "
           "its own state server: gateway CPU and RSS are theirs and the state server's together")
    )  # fmt: skip
    for b in bursts:
        size = f"{b.samples} posts" + (f", {b.processes} gateway processes" if b.processes > 1 else "")
        which = size + (f", burst {b.repeat + 1} through the same client" if b.repeat else "")
        judged = (
            f"; the judge had read the last call {b.judged_span_s:.2f} s after the first send, CPU until "
            f"then: {_spent(b.judged_cpu_s)}"
        )
        bound = (
            f"; one gateway process on a core of its own ({b.gateway_judged_ms:.2f} ms a post until then), "
            f"with a client and a judge that cost nothing, could reach {b.one_process_ratio:.3f} at best"
        )
        result.notes.append(
            f"{which}: accepted {b.accepted}, refused (429) {b.refused}, failed {b.failed}"
            f"{f' {b.failures}' if b.failures else ''}; "
            f"wall {b.wall_s:.2f} s / max latency {b.max_latency_s:.2f} s = {b.ratio:.3f}; last post reached "
            f"its function {b.arrivals_span_s:.2f} s after the first send; gateway RSS +"
            f"{b.rss_growth_bytes / 2**20:.0f} MiB ({b.rss_growth_bytes / b.samples / 1024:.1f} KiB a post "
            f"in flight); CPU: gateway {b.gateway_cpu_s:.2f} s "
            f"({b.gateway_cpu_s / b.samples * 1000:.2f} ms a post), client {b.client_cpu_s:.2f} s, judge "
            f"{b.judge_cpu_s:.2f} s: {b.cpu_floor_s:.2f} s over this machine's {os.cpu_count()} cores; "
            f"CPU until the last post reached its function: {_spent(b.arrival_cpu_s)}"
            + (judged if b.judged_cpu_s else "")
            + (bound if b.processes == 1 else "")
        )
        detail = (
            f"last post reached its function {b.arrivals_span_s:.2f} s after the first send; gateway "
            f"CPU {b.gateway_cpu_s / b.samples * 1000:.2f} ms a post"
        )
        if b.repeat:  # the same step again through the same client: information, not the goal's verdict
            measure = f"wall time / largest single latency ({size}, burst {b.repeat + 1}, same client)"
            result.rows.append(Row(result.name, measure, b.ratio, detail=detail, fmt="{:.3f}"))
            continue
        result.rows.append(
            Row(
                result.name,
                f"posts accepted and scored ({size} at once)",
                b.accepted,
                f"all {b.samples}",
                b.accepted == b.samples,
                f"refused (429) {b.refused}, failed {b.failed}",
                fmt="{:.0f}",
            )
        )
        result.rows.append(
            Row(
                result.name,
                f"wall time / largest single latency ({size})",
                b.ratio,
                f"<= {TARGET:g}",
                b.ratio <= TARGET,
                detail,
                fmt="{:.3f}",
            )
        )
        cpu_ms = b.gateway_cpu_s / b.samples * 1000
        result.rows.append(
            Row(
                result.name,
                f"gateway CPU per post, ms ({size}, first burst)",
                cpu_ms,
                f"<= {CPU_TARGET_MS:g}",
                cpu_ms <= CPU_TARGET_MS,
                "every gateway process"
                + (" and its state server" if b.processes > 1 else "")
                + " over the whole burst, from /proc",
            )
        )
        if (base := baselines.get(b.samples)) is not None:
            result.rows.append(_plain_row(result.name, size, b, base))
        if b.judged_cpu_s:  # the stand-in judge process is on the path (not with --judge sleep)
            result.rows.append(
                Row(
                    result.name,
                    f"s from the first send until the judge had read the last call ({size})",
                    b.judged_span_s,
                    detail=f"CPU until then: {_spent(b.judged_cpu_s)}",
                    fmt="{:.2f}",
                )
            )
        if b.processes > 1:
            continue
        result.rows.append(
            Row(
                result.name,
                f"best ratio for one gateway process on a core of its own ({size})",
                b.one_process_ratio,
                detail=f"client, judge free; the gateway's {b.gateway_judged_ms:.2f} ms a post back to back",
                fmt="{:.3f}",
            )
        )
    for n, base in baselines.items():
        result.notes.append(
            f"{n} posts to bench.plain_asgi ({n_procs} process{'es' if n_procs > 1 else ''}, the same "
            f"latencies and client): accepted {base.accepted}, failed {base.failed}; wall "
            f"{base.wall_s:.2f} s = {base.ratio:.3f} of the largest latency; its CPU "
            f"{base.gateway_cpu_s:.2f} s ({base.gateway_cpu_s / base.samples * 1000:.2f} ms a post), "
            f"client {base.client_cpu_s:.2f} s"
        )
    return result


def _plain_row(bench: str, size: str, b: Burst, base: Burst) -> Row:
    """The gateway's first-burst wall time over the plain ASGI app's, for the same posts in the same run."""
    ratio = b.wall_s / base.wall_s
    return Row(
        bench,
        f"wall time / plain ASGI app's ({size}, first burst)",
        ratio,
        f"<= {PLAIN_TARGET:g}",
        ratio <= PLAIN_TARGET,
        f"gateway {b.wall_s:.2f} s, plain {base.wall_s:.2f} s (its CPU "
        f"{base.gateway_cpu_s / base.samples * 1000:.2f} ms a post); measured right after the gateway's",
        fmt="{:.3f}",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, nargs="+", default=[4096, 8192])
    ap.add_argument("--low-s", type=float, default=20.0)
    ap.add_argument("--high-s", type=float, default=30.0)
    ap.add_argument("--judge", choices=("http", "sleep"), default="http")
    ap.add_argument(
        "--client",
        choices=("fleet", "aiohttp"),
        default="fleet",
        help="the fleet's AsyncRewardClient (a trainer's adapter), or aiohttp with a new connection per post",
    )
    ap.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=INT", help="gateway settings instead of the defaults"
    )
    ap.add_argument("--repeats", type=int, default=1, help="bursts per size through one client")
    ap.add_argument("--processes", default="1", help="rewardfleet gateway --processes: a number or auto")
    ap.add_argument(
        "--plain", action="store_true", help="also send each first burst to bench.plain_asgi (the baseline)"
    )
    args = ap.parse_args()
    settings = {key: int(value) for key, value in (item.split("=", 1) for item in args.set)}
    print_result(
        run(
            tuple(args.samples),
            args.low_s,
            args.high_s,
            args.judge,
            settings,
            args.client,
            args.repeats,
            args.processes,
            args.plain,
        )
    )


if __name__ == "__main__":
    main()
