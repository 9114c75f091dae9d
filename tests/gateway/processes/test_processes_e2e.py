"""`rewardfleet gateway --processes 2` with its own state server, end to end over real uvicorn.

Posts spread over both processes; a group whose members land on different processes is scored once per
member and judged as one group; a uid retried on the other process runs once; `/metrics` from either process
counts both; judge probes run in one process only; SIGTERM mid-load answers every admitted request; the state
server killed mid-load gives typed 503s and the gateway recovers when its supervisor restarts it.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually, eventually_async

FNS = Path(__file__).parent / "fns"
PROBE_ROUND = 2  # answers x questions in the probe config below


def runs(log: Path) -> list[tuple[str, int]]:
    if not log.exists():
        return []
    return [(uid, int(pid)) for uid, pid in (line.split() for line in log.read_text().splitlines())]


def poll(check: Any, what: str, timeout_s: float = 60.0) -> Any:
    return eventually(check, what=what, timeout_s=timeout_s, interval_s=0.05, retry_on=())


async def apoll(check: Any, what: str, timeout_s: float = 60.0) -> Any:
    return await eventually_async(check, what=what, timeout_s=timeout_s, interval_s=0.05, retry_on=())


class Gateway:
    def __init__(self, tmp: Path, processes: int = 2) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "builtin_package": None,
            "reward_fns_dirs": [str(FNS)],
            "functions": {
                "pidlog": {"reward_kwargs": {"log_path": str(tmp / "runs.log")}},
                "probed": {
                    "path": f"{FNS / 'pidlog.py'}:compute_score",
                    "reward_kwargs": {"log_path": str(tmp / "probes.log")},
                },
            },
            "judge_probes": {
                "functions": ["probed"],
                "answers": [":"],
                "extra_answers": ["Thought process:"],
                "questions": [{"question": "2+2?", "answer": "4"}],
                "interval_s": 600,
                "retry_s": 1,
            },
        }
        cfg = tmp / "gateway.yaml"
        cfg.write_text(yaml.safe_dump(config))
        cmd = rewardfleet_cmd(
            "gateway", "--port", str(self.port), "--config", str(cfg), "--processes", str(processes)
        )
        self.proc = ChildProcess(cmd, tmp / "gateway.log")
        self.proc.wait_http(f"{self.url}/ready", timeout_s=120)

    def workers(self) -> list[psutil.Process]:
        children = psutil.Process(self.proc.pid).children()
        return [
            p for p in children if "redis" not in p.name() and "resource_tracker" not in " ".join(p.cmdline())
        ]

    def state_server(self) -> psutil.Process:
        (server,) = [p for p in psutil.Process(self.proc.pid).children(recursive=True) if "redis" in p.name()]
        return server

    def metric(self, name: str) -> float:
        for line in httpx.get(f"{self.url}/metrics", timeout=10).text.splitlines():
            if line.split(" ")[0] == name:
                return float(line.rsplit(" ", 1)[1])
        return 0.0


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    gw = Gateway(tmp_path_factory.mktemp("processes"))
    try:
        yield gw
    finally:
        gw.proc.stop(timeout_s=30)


def body(uid: str, solution: str = "abc", **more: Any) -> dict[str, Any]:
    sample = {
        "reward_fn": "pidlog",
        "data_source": "x",
        "solution_str": solution,
        "ground_truth": "",
        "uid": uid,
    }
    return {**sample, **more}


async def post_each_on_new_connection(url: str, bodies: list[dict[str, Any]]) -> list[httpx.Response]:
    """Each post on a connection of its own, so the kernel picks a process for each."""

    async def post(b: dict[str, Any]) -> httpx.Response:
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            for _ in range(100):
                resp = await client.post("/score", json=b)
                if resp.status_code != 503:
                    return resp
                await asyncio.sleep(0.1)  # a trainer's back-off before it retries a 503 (the behaviour)
            return resp

    return list(await asyncio.gather(*(post(b) for b in bodies)))


def test_two_processes_serve_and_metrics_count_both(gateway: Gateway) -> None:
    assert len(gateway.workers()) == 2
    before = gateway.metric('rewardfleet_gateway_requests_total{route="/score",status="200"}')
    pids: set[int] = set()
    posted = 0
    for attempt in range(5):  # the kernel picks the process; a loaded machine may favour one for a while
        bodies = [body(f"m{attempt}-{i}", extra_info={"delay_s": 0.2}) for i in range(40)]
        responses = asyncio.run(post_each_on_new_connection(gateway.url, bodies))
        posted += len(bodies)
        assert all(r.status_code == 200 for r in responses)
        pids |= {r.json()["extra"]["pid"] for r in responses}
        if len(pids) == 2:
            break
    assert pids == {p.pid for p in gateway.workers()}  # both processes answered some
    after = gateway.metric('rewardfleet_gateway_requests_total{route="/score",status="200"}')
    assert after - before == posted  # one scrape, either process, counts both


async def connections_on_both_processes(url: str, wanted: int, limit: int) -> list[httpx.AsyncClient]:
    """`wanted` clients, each holding one keep-alive connection, at least one on each process: a connection
    belongs to the process that accepted it, and a first post on it (a plain sample) says which that is. At
    most `limit` connections are tried; the ones not needed are closed."""
    by_pid: dict[int, list[httpx.AsyncClient]] = {}
    for i in range(limit):
        client = httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=1))
        resp = await client.post("/score", json=body(f"steer-{time.monotonic_ns()}-{i}"))
        if resp.status_code != 200:
            await client.aclose()
            continue
        by_pid.setdefault(resp.json()["extra"]["pid"], []).append(client)
        if len(by_pid) >= 2 and sum(map(len, by_pid.values())) >= wanted:
            break
    if len(by_pid) < 2:
        for clients in by_pid.values():
            for client in clients:
                await client.aclose()
        return []
    chosen = [clients.pop() for clients in by_pid.values()]  # one on each process first
    rest = [c for clients in by_pid.values() for c in clients]
    spare = wanted - len(chosen)
    chosen += rest[:spare]
    for client in rest[spare:]:
        await client.aclose()
    return chosen


async def post_group_over_both(url: str, members: list[dict[str, Any]]) -> list[httpx.Response]:
    clients = await connections_on_both_processes(url, len(members), limit=64)
    try:
        if len(clients) < len(members):
            return []
        return list(
            await asyncio.gather(*(c.post("/score", json=m) for c, m in zip(clients, members, strict=True)))
        )
    finally:
        for client in clients:
            await client.aclose()


def test_a_group_over_both_processes_is_judged_once(gateway: Gateway) -> None:
    """The members are posted on connections already seen on each process (kept alive), so the group spans
    both however the kernel spreads new connections on a loaded machine; the pids in the answers prove it."""
    for attempt in range(3):  # another try only if a kept-alive connection was closed meanwhile
        members = [
            body(
                f"g{attempt}-{i}",
                "y" * (i + 1),
                group_id=f"grp-{attempt}",
                group_size=8,
                group_index=i,
                group_fn="rank_normalise",
            )
            for i in range(8)
        ]
        responses = asyncio.run(post_group_over_both(gateway.url, members))
        assert responses, "64 connections never reached both processes"
        assert all(r.status_code == 200 and r.json()["status"] == "ok" for r in responses), responses[0].text
        if len({r.json()["extra"]["pid"] for r in responses}) == 2:
            break
    else:
        pytest.fail("8 members on connections seen on both processes never reached both in 3 tries")
    ran = [uid for uid, _ in runs(gateway.tmp / "runs.log") if uid.startswith(f"g{attempt}-")]
    assert sorted(ran) == sorted(m["uid"] for m in members)  # each member's function ran once
    groups = {str(r.json()["extra"]["group"]) for r in responses}
    assert len(groups) == 1  # every member saw the same group result
    scores = sorted(r.json()["score"] for r in responses)
    assert scores == sorted(set(scores)) and len(scores) == 8  # ranks, normalised over the whole group


def test_a_retried_uid_runs_once_across_processes(gateway: Gateway) -> None:
    slow = body("retry-me", "abcd", extra_info={"delay_s": 1.0})

    async def scenario() -> list[httpx.Response]:
        first = asyncio.create_task(post_each_on_new_connection(gateway.url, [slow]))
        await apoll(
            lambda: any(uid == "retry-me" for uid, _ in runs(gateway.tmp / "runs.log")), "the first run"
        )
        during = await post_each_on_new_connection(gateway.url, [slow] * 6)
        after = await post_each_on_new_connection(gateway.url, [slow] * 6)
        return [*(await first), *during, *after]

    responses = asyncio.run(scenario())
    assert [r.json()["score"] for r in responses] == [4.0] * 13
    assert [uid for uid, _ in runs(gateway.tmp / "runs.log")].count("retry-me") == 1


def test_probes_run_in_one_process(gateway: Gateway) -> None:
    probes = gateway.tmp / "probes.log"
    poll(lambda: len(runs(probes)) >= PROBE_ROUND, "a probe round")
    status = poll(lambda: httpx.get(f"{gateway.url}/monitors", timeout=10).json(), "/monitors")
    assert len({pid for _, pid in runs(probes)}) == 1
    assert len(runs(probes)) == PROBE_ROUND  # one round in the fleet, not one per process
    assert status


def test_state_server_killed_mid_load_recovers(gateway: Gateway) -> None:
    bodies = [body(f"k{i}", "q" * (i % 5 + 1), extra_info={"delay_s": 0.5}) for i in range(120)]
    seen: list[dict[str, Any]] = []

    async def scenario() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=gateway.url, timeout=60) as client:

            async def post(b: dict[str, Any]) -> httpx.Response:
                for _ in range(400):
                    resp = await client.post("/score", json=b)
                    if resp.status_code != 503:
                        return resp
                    seen.append(resp.json())
                    await asyncio.sleep(0.05)  # a trainer's back-off before it retries a 503 (the behaviour)
                return resp

            tasks = [asyncio.create_task(post(b)) for b in bodies[:60]]
            started = lambda: sum(uid.startswith("k") for uid, _ in runs(gateway.tmp / "runs.log")) >= 30  # noqa: E731
            await apoll(started, "posts running")
            gateway.state_server().kill()
            tasks += [asyncio.create_task(post(b)) for b in bodies[60:]]
            return list(await asyncio.gather(*tasks))

    responses = asyncio.run(scenario())
    assert [r.status_code for r in responses] == [200] * len(bodies)
    assert [r.json()["score"] for r in responses] == [float(len(b["solution_str"])) for b in bodies]
    assert seen, "killing the state server should have refused some requests"
    assert {e["error"]["type"] for e in seen} == {"StateStoreUnavailable"}


def test_sigterm_mid_load_answers_everything_admitted(tmp_path: Path) -> None:
    gw = Gateway(tmp_path)
    try:
        bodies = [body(f"t{i}", "x" * (i % 7 + 1), extra_info={"delay_s": 2.0}) for i in range(16)]

        async def scenario() -> list[httpx.Response]:
            task = asyncio.create_task(post_each_on_new_connection(gw.url, bodies))
            await apoll(lambda: len(runs(tmp_path / "runs.log")) == len(bodies), "every post admitted")
            gw.proc.signal(signal.SIGTERM)
            return await task

        responses = asyncio.run(scenario())
        assert [r.status_code for r in responses] == [200] * len(bodies)
        assert [r.json()["score"] for r in responses] == [float(len(b["solution_str"])) for b in bodies]
        assert gw.proc.stop(timeout_s=30) == 0
    finally:
        gw.proc.stop(timeout_s=30)
