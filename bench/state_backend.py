"""The cost of shared state: requests/s of one gateway replica with the Redis state backend ÷ the same
gateway with in-process state, for `POST /score` of a trivial async function (every sample a new uid, so
each one claims, runs and stores through Redis), and for GRPO groups of 8 (each member joins, reports and is
answered through Redis). A real redis-server (no persistence) on 127.0.0.1, TCP or (`--unix-socket`, a
co-located Redis) a unix socket.

Fairness on a small shared machine: both gateways run the same settings side by side; every round runs the
two backends back to back (their order alternating between rounds) after a warm-up, and the ratio printed is
the median of the rounds' own ratios, so a burst of someone else's load moves both sides of one ratio
instead of one side of it. The load generator is the lean one (bench/raw_load.py, `--load aiohttp` for
bench/load.py's): aiohttp's client spent more CPU per request than the gateway, on the same cores.
Per-process CPU per request (gateway, redis-server, load generator) says where the time goes: with one
gateway process, "gateway-bound" = in-process ÷ Redis gateway CPU per request is the ratio a replica with a
core of its own would see.

    .venv/bin/python -m bench.state_backend [--duration-s 4] [--rounds 5] [--concurrency 64]
        [--load raw|aiohttp] [--unix-socket] [--ceiling] [--pin]

`--ceiling` adds a third gateway: in-process state, but its function makes one no-op call through the same
pipeliner to the same Redis. Fleet-wide idempotency must ask Redis before it runs a function, so this is the
most any Redis design can reach here; the Redis backend's own cost is the rest.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Row, gateway, median, print_result, write_fn
from bench.harness.redis_server import RedisServer
from bench.load import LoadResult, run_load
from bench.raw_load import run_raw_load

TRIVIAL = """
async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    return float(len(solution_str))
"""
ROUND_TRIP = """
import os

import redis.asyncio as aioredis

from rewardfleet.services.gateway.state_store.redis_pipeline import Pipeliner

_state = {}


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if not _state:
        client = aioredis.Redis.from_url(os.environ["BENCH_ROUND_TRIP_URL"])
        script = client.register_script("return 1")
        await client.script_load(script.script)
        _state.update(pipe=Pipeliner(client, 5.0), script=script)
    await _state["pipe"].run(_state["script"], [], [])  # one no-op call, pipelined like the backend's
    return float(len(solution_str))
"""
GROUP_SIZE = 8
BACKENDS = ("memory", "redis")
KINDS = ("ungrouped", "grouped")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def sample_body(n: int) -> bytes:
    return json.dumps(
        {
            "data_source": "bench",
            "reward_fn": "trivial",
            "solution_str": "The answer is 42.",
            "ground_truth": "42",
            "uid": f"u-{n}",
        }
    ).encode()


def grouped_body(tag: str) -> Callable[[int], bytes]:
    def body(n: int) -> bytes:
        group, index = divmod(n - 1, GROUP_SIZE)
        return json.dumps(
            {
                "data_source": "bench",
                "reward_fn": "trivial",
                "solution_str": "x" * (index + 1),
                "ground_truth": "42",
                "uid": f"{tag}-{group}",
                "group_id": f"{tag}-{group}",
                "group_size": GROUP_SIZE,
                "group_index": index,
                "group_fn": "rank_normalise",
            }
        ).encode()

    return body


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def gateway_pid(url: str) -> int:
    """The process serving `url` (bench.common.gateway starts it as `... gateway --port N ...`)."""
    port = url.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"gateway" in argv and b"--port" in argv and argv[argv.index(b"--port") + 1] == port.encode():
            return int(entry.name)
    raise RuntimeError(f"no gateway process found for {url}")


@dataclass
class Measured:
    load: LoadResult
    cpu_us: dict[str, float]  # process -> CPU µs per answered request


def measure(
    url: str,
    body: Callable[[int], bytes],
    pids: dict[str, int],
    load: str,
    concurrency: int,
    duration_s: float,
    warmup_s: float,
) -> Measured:
    """One load; CPU is counted over the whole load (warm-up included) and divided by every request sent in
    it, so it is per request whatever the split between warm-up and measurement."""
    before = {name: process_cpu_s(pid) for name, pid in pids.items()}
    before_own = own_cpu_s()
    if load == "raw":
        result = run_raw_load(url + "/score", body, concurrency, duration_s, warmup_s)
    else:
        result = asyncio.run(run_load(url + "/score", body, concurrency, duration_s, warmup_s))
    spent = {name: process_cpu_s(pid) - before[name] for name, pid in pids.items()}
    spent["load generator"] = own_cpu_s() - before_own
    # requests answered during the whole load ≈ measured rate × (warm-up + measured time)
    total = max(1.0, result.rps * (duration_s + warmup_s))
    return Measured(result, {name: s / total * 1e6 for name, s in spent.items()})


def alternating(rounds: int, ceiling: bool = False) -> Iterator[tuple[int, str, str]]:
    """(round, kind, backend): the backends back to back for each kind, their order flipped every round;
    with `ceiling`, ungrouped rounds also run the in-process gateway whose function makes one round trip."""
    for r in range(rounds):
        for kind in KINDS:
            backends = (*BACKENDS, "round trip") if ceiling and kind == "ungrouped" else BACKENDS
            for backend in backends if r % 2 == 0 else backends[::-1]:
                yield r, kind, backend


def run(
    duration_s: float = 4.0,
    rounds: int = 5,
    concurrency: int = 64,
    warmup_s: float = 1.0,
    load: str = "raw",
    unix_socket: bool = False,
    ceiling: bool = False,
    pin: bool = False,
) -> BenchResult:
    result = BenchResult("state_backend")
    figures: dict[tuple[str, str], list[Measured]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        fns = write_fn(tmp / "fns", "trivial", TRIVIAL)
        rt_fns = write_fn(tmp / "rt_fns", "trivial", ROUND_TRIP)
        socket_path = tmp / "redis.sock"
        extra = ("--unixsocket", str(socket_path), "--unixsocketperm", "700") if unix_socket else ()
        redis = RedisServer(tmp, extra_args=extra).start()
        state_url = f"unix://{socket_path}" if unix_socket else redis.url
        base: dict[str, Any] = {
            "builtin_package": None,
            "workers": 1,
            "groups": {"timeout_s": 3},
        }  # the last, partial groups of a round end soon
        try:
            with contextlib.ExitStack() as stack:
                urls = {
                    "memory": stack.enter_context(gateway(tmp, base, [fns], name="memory")),
                    "redis": stack.enter_context(
                        gateway(tmp, {**base, "state_url": state_url}, [fns], name="redis")
                    ),
                }
                if ceiling:
                    urls["round trip"] = stack.enter_context(
                        gateway(tmp, base, [rt_fns], "roundtrip", {"BENCH_ROUND_TRIP_URL": state_url})
                    )
                assert redis.proc is not None
                redis_pid = redis.proc.pid
                if pin:  # the gateways on CPU 0; redis-server and the load generator on CPU 1
                    for url in urls.values():
                        os.sched_setaffinity(gateway_pid(url), {0})
                    os.sched_setaffinity(redis_pid, {1})
                    os.sched_setaffinity(0, {1})
                for r, kind, backend in alternating(rounds, ceiling):
                    body = sample_body if kind == "ungrouped" else grouped_body(f"{backend}{r}")
                    pids = {"gateway": gateway_pid(urls[backend]), "redis-server": redis_pid}
                    figures.setdefault((backend, kind), []).append(
                        measure(urls[backend], body, pids, load, concurrency, duration_s, warmup_s)
                    )
        finally:
            redis.stop()
    report(result, figures)
    transport = ("a unix socket" if unix_socket else "TCP") + (
        ", gateway pinned to CPU 0, redis-server and load generator to CPU 1" if pin else ""
    )
    result.notes.append(
        f"One gateway replica, trivial async function, concurrency {concurrency}, {rounds} rounds of "
        f"{duration_s:g} s per backend and kind (backends back to back, order alternating), load generator "
        f"{load}, Redis over {transport}; every sample a new uid (no cache hits); groups of {GROUP_SIZE} "
        "with rank_normalise. Ratios: median of the rounds' own ratios."
    )
    return result


def report(result: BenchResult, figures: dict[tuple[str, str], list[Measured]]) -> None:
    for (backend, kind), runs in sorted(
        figures.items(), key=lambda item: (KINDS.index(item[0][1]), item[0][0])
    ):
        loads = [m.load for m in runs]
        cpu = {name: median([m.cpu_us[name] for m in runs]) for name in runs[0].cpu_us}
        p50 = median([lr.percentile(0.5) for lr in loads]) * 1000
        p99 = median([lr.percentile(0.99) for lr in loads]) * 1000
        errors = sum(lr.errors for lr in loads)
        result.rows.append(
            Row(
                "state_backend",
                f"{kind} req/s, {backend}",
                median([lr.rps for lr in loads]),
                detail=f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, errors {errors}; CPU µs/request: "
                + ", ".join(f"{name} {us:.0f}" for name, us in cpu.items()),
                fmt="{:.0f}",
            )
        )
    for kind in KINDS:
        memory, redis = figures[("memory", kind)], figures[("redis", kind)]
        ratio = median([b.load.rps / a.load.rps for a, b in zip(memory, redis, strict=True)])
        bound = median(
            [a.cpu_us["gateway"] / b.cpu_us["gateway"] for a, b in zip(memory, redis, strict=True)]
        )
        label = "ungrouped" if kind == "ungrouped" else f"grouped ({GROUP_SIZE})"
        if kind == "ungrouped":
            result.rows.append(
                Row("state_backend", f"{label} redis ÷ in-process", ratio, "≥ 0.8", ratio >= 0.8)
            )
        else:
            result.rows.append(Row("state_backend", f"{label} redis ÷ in-process", ratio))
        result.rows.append(Row("state_backend", f"{label} gateway-bound (gateway CPU/request ratio)", bound))
    if ("round trip", "ungrouped") in figures:
        memory, trip = figures[("memory", "ungrouped")], figures[("round trip", "ungrouped")]
        ratio = median([b.load.rps / a.load.rps for a, b in zip(memory, trip, strict=True)])
        bound = median([a.cpu_us["gateway"] / b.cpu_us["gateway"] for a, b in zip(memory, trip, strict=True)])
        result.rows.append(
            Row("state_backend", "ceiling: in-process + 1 no-op round trip ÷ in-process", ratio)
        )
        result.rows.append(Row("state_backend", "ceiling gateway-bound (gateway CPU/request ratio)", bound))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration-s", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup-s", type=float, default=1.0)
    parser.add_argument("--load", choices=("raw", "aiohttp"), default="raw")
    parser.add_argument("--unix-socket", action="store_true", help="reach Redis over a unix socket")
    parser.add_argument(
        "--ceiling",
        action="store_true",
        help="also run in-process state with one no-op pipelined Redis call per request (the floor of any "
        "design that asks Redis before running the function)",
    )
    parser.add_argument(
        "--pin",
        action="store_true",
        help="gateway on CPU 0, redis-server and the load generator on CPU 1 (Redis off the gateway's core, "
        "as on its own host)",
    )
    args = parser.parse_args()
    print_result(
        run(
            args.duration_s,
            args.rounds,
            args.concurrency,
            args.warmup_s,
            args.load,
            args.unix_socket,
            args.ceiling,
            args.pin,
        )
    )


if __name__ == "__main__":
    main()
