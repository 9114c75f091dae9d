"""`rewardfleet up --ray` on a real local Ray cluster of three raylets (`ray.cluster_utils.Cluster`).

A light fleet: a reward-model pool of two CPU model servers (a tiny Qwen2 reward model built here) and one
gateway with its router on the head node (the only node offering the `gateway_node` resource), scaling to two
there on load, sharing a real Redis. One cluster and one fleet for the module: it comes up across nodes and
answers; verl's reward loop on the cluster finds it; a pool and the gateways scale up under load and back down
with drained exits; a replica's node is removed while ~2,000 posts are in flight and none is lost, the replica
coming back on another node; Ctrl-C leaves no actor, process or port behind.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ray = pytest.importorskip("ray", reason="the Ray engine tests need ray (pip install 'reward-fleet[ray]')")
from ray.cluster_utils import Cluster  # noqa: E402

from bench.common import write_fn  # noqa: E402
from bench.harness.processes import REPO_ROOT, VENV_BIN, ChildProcess, rewardfleet_cmd  # noqa: E402
from bench.harness.redis_server import RedisServer  # noqa: E402
from bench.harness.tiny_models import build_tiny_qwen2  # noqa: E402
from bench.harness.waiting import eventually  # noqa: E402
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy  # noqa: E402
from tests.fleet.procs import alive, cmdline, descendants  # noqa: E402

# The module's first test also starts the cluster and the fleet (~1-3 min on 2 busy cores).
pytestmark = pytest.mark.timeout(900)
NAMESPACE = "rewardfleet"  # the defaults: a trainer finds the fleet without configuration
# verl's config stack needs antlr4 4.9, the gateway 4.13 (tests/integrations/test_verl_trainer_code.py).
ANTLR_FOR_VERL = VENV_BIN.parent / "antlr4-4.9"
WAIT_FN = """
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(float(extra_info["latency_s"]))
    return 1.0
"""


@dataclass
class RayFleet:
    cluster: Cluster
    proc: ChildProcess
    run_dir: Path
    rm: Path

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "fleet.json").read_text())
        return data

    def gateway(self) -> str:
        urls: list[str] = ray.get(
            ray.get_actor("rewardfleet", namespace=NAMESPACE).gateways.remote(), timeout=10
        )
        assert urls, "no gateway published"
        return urls[0]


def _sample(i: int, tag: str = "sample") -> dict[str, Any]:
    return {
        "data_source": "chat", "reward_fn": "reward_model", "solution_str": f"It is {2 * i}.",
        "ground_truth": None, "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
        "uid": f"{tag}-{i}",  # a uid already scored would be answered from the gateway's result cache
    }  # fmt: skip


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayFleet]:
    tmp = tmp_path_factory.mktemp("ray")
    rm = build_tiny_qwen2(tmp / "rm", "seq_cls", seed=2)
    write_fn(tmp / "fns", "wait", WAIT_FN)
    (tmp / "redis").mkdir()
    redis = RedisServer(tmp / "redis").start()  # the gateways' shared state, as more than one needs
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 4, "resources": {"gateway_node": 2}, "include_dashboard": False},
    )
    for _ in range(2):
        cluster.add_node(num_cpus=3)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, namespace=NAMESPACE, log_to_driver=False)
    (tmp / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:
          reward_model:
            kind: reward_model
            model_path: {rm}
            served_model_name: tiny-rm
            replicas: 2
            server_args: {{torch-num-threads: 1, max-batch-size: 32}}
            router: {{policy: round_robin, health_check_interval_secs: 1, health_check_timeout_secs: 1}}
          scaled:
            kind: reward_model
            model_path: {rm}
            served_model_name: tiny-rm
            server_args: {{torch-num-threads: 1, max-batch-size: 1}}
            router: {{policy: round_robin, health_check_interval_secs: 1, health_check_timeout_secs: 1}}
        default_pool: reward_model
        run_dir: {tmp / "run"}
        ready_timeout_s: 360
        gateway:
          workers: 1
          reward_fns_dirs: [{tmp / "fns"}]
          state: {{state_url: "{redis.url}"}}
          functions:
            reward_model: {{timeout_s: 60, reward_kwargs: {{model: tiny-rm}}}}
            scaled:
              path: "rewardfleet.reward_fns.reward_model:compute_score"
              timeout_s: 60
              reward_kwargs: {{pool: scaled, model: tiny-rm}}
        ray:
          gateway:
            resources: {{gateway_node: 1}}
            autoscale: {{min_replicas: 1, max_replicas: 2, target_inflight: 48, up_cooldown_s: 0,
                        down_cooldown_s: 3}}
          pools:
            scaled: {{autoscale: {{min_replicas: 1, max_replicas: 2, target_queue: 4, up_cooldown_s: 0,
                                  down_cooldown_s: 3}}}}
        """)
    )
    cmd = rewardfleet_cmd("up", "--ray", cluster.address, "--config", str(tmp / "fleet.yaml"))
    proc = ChildProcess(cmd, tmp / "up.log", env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    running = RayFleet(cluster, proc, tmp / "run", rm)
    try:
        eventually(
            lambda: "ready in" in proc.log() or proc.proc.poll() is not None,
            timeout_s=420, interval_s=0.5, what="the fleet ready",
        )  # fmt: skip
        assert "ready in" in proc.log(), proc.log()
        yield running
    finally:
        proc.stop(timeout_s=120)
        ray.shutdown()
        cluster.shutdown()
        redis.stop()


def test_the_fleet_comes_up_across_nodes_and_answers(fleet: RayFleet) -> None:
    state = fleet.state()
    head = fleet.cluster.head_node.node_id
    gateways = state["ray"]["gateways"]
    replicas = state["ray"]["pools"]["reward_model"]
    assert len(gateways) == 1 and gateways[0]["node_id"] == head  # the only node with gateway_node
    assert len(replicas) == 2 and replicas[0]["node_id"] != replicas[1]["node_id"], replicas
    url = fleet.gateway()
    assert url == gateways[0]["url"]
    pids = set(gateways[0]["pids"]) | {r["pid"] for r in replicas}
    # Ray starts its workers at niceness 15; the fleet's run at 0 (`ray.niceness`), as a host's would.
    assert {p: os.getpriority(os.PRIO_PROCESS, p) for p in pids} == dict.fromkeys(pids, 0)

    async def score() -> list[Any]:
        async with AsyncRewardClient(url) as client:
            return await client.score_many([_sample(i) for i in range(8)])

    results = asyncio.run(score())
    assert all(r.status == "ok" and isinstance(r.score, float) for r in results), results
    cmd = rewardfleet_cmd("status", "--run-dir", str(fleet.run_dir))
    env = {**os.environ, "COLUMNS": "250"}
    status = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert status.returncode == 0 and "2/2 workers healthy" in status.stdout, status.stdout + status.stderr
    assert status.stdout.count("ready") >= 3 and "down" not in status.stdout, status.stdout


@ray.remote(num_cpus=0)
def _trainer_step() -> list[dict[str, Any]]:
    """What a verl reward file does inside a Ray worker of the same cluster: no gateway URL configured."""
    from rewardfleet.services.integrations.verl_reward import compute_score_sync

    return [
        compute_score_sync("openai/gsm8k", "#### 42", "42"),
        compute_score_sync("chat", "It is 4.", None, {"question": "2 + 2?"}, reward_fn="reward_model"),
    ]


def test_a_trainer_in_the_cluster_finds_the_gateway_without_configuration(fleet: RayFleet) -> None:
    gsm8k, rm = ray.get(_trainer_step.remote(), timeout=120)
    assert gsm8k["score"] == 1.0, gsm8k
    assert isinstance(rm["score"], float) and rm["reward_failed"] == 0.0, rm

    async def named() -> Any:
        async with AsyncRewardClient("ray:rewardfleet/rewardfleet") as client:
            assert client.base_url == fleet.gateway()
            return await client.score(_sample(1))

    assert asyncio.run(named()).status == "ok"


def test_verl_reward_loop_on_the_cluster_scores_through_the_fleet_it_finds(fleet: RayFleet) -> None:
    """verl's `RewardLoopManager` in a driver of its own on this cluster (verl_reward_loop_cases.py): its
    config from docs/deploy.md, no gateway address anywhere; its workers are gone with it."""
    if not (ANTLR_FOR_VERL / "antlr4").is_dir():
        pytest.fail(f"no antlr4 4.9 for verl in {ANTLR_FOR_VERL}: run .ci/setup")
    env = {k: v for k, v in os.environ.items() if k != "REWARDFLEET_URL"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ANTLR_FOR_VERL), env.get("PYTHONPATH")) if p)
    env.update(RF_RAY_ADDRESS=fleet.cluster.address, RF_GATEWAY_URL=fleet.gateway(), HF_HUB_OFFLINE="1")
    cases = "tests/fleet/on_ray/verl_reward_loop_cases.py"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", cases, "-q", "-n", "0", "-p", "no:cacheprovider"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0 and re.search(r"^1 passed", proc.stdout, re.M), (
        proc.stdout[-6000:] + proc.stderr
    )
    left = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == "verl-job"]
    assert not left, left


def test_a_pool_scales_up_under_load_and_back_down_with_a_drained_exit(fleet: RayFleet) -> None:
    def replicas() -> list[dict[str, Any]]:
        return list(fleet.state()["ray"]["pools"]["scaled"])

    assert len(replicas()) == 1
    first = replicas()[0]["url"]
    results: list[Any] = []

    async def load_until_the_new_replica_serves() -> str:
        retry = RetryPolicy(max_attempts=10, initial_backoff_s=0.2, max_backoff_s=1.0)
        client = AsyncRewardClient(fleet.gateway(), max_concurrency=32, retry=retry, timeout_s=60)
        async with client:
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline and len(results) < 6000:
                n = len(results)
                batch = [{**_sample(i, "scaled"), "reward_fn": "scaled"} for i in range(n, n + 64)]
                results.extend(await client.score_many(batch))
                added = [r["url"] for r in replicas() if r["url"] != first]
                if added and _served(added[0]) > 0:
                    return str(added[0])
        raise AssertionError(f"no second replica served within the load: {replicas()}")

    added = asyncio.run(load_until_the_new_replica_serves())
    assert all(r.status == "ok" for r in results), [r for r in results if r.status != "ok"][:3]
    pid = next(r["pid"] for r in replicas() if r["url"] == added)
    eventually(lambda: len(replicas()) == 1, timeout_s=60, interval_s=0.5, what="back to one replica")
    assert not alive({pid}) and _refused(added)
    assert "scaling up to 2" in fleet.proc.log() and "scaling down to 1" in fleet.proc.log()
    print(f"scaled up and down over {len(results)} posts")


def test_gateways_scale_up_under_load_and_back_down_draining_with_nothing_lost(fleet: RayFleet) -> None:
    """Posts that each await 1 s, from a client that follows the published gateways (`ray:`): 96 in flight
    (target 48 a gateway) add a second gateway, which then serves its share; 12 in flight keep flowing while
    the second one is scaled away (unpublished, drained with posts sent to its own URL in flight, stopped):
    every post scored, its processes gone."""

    def gateways() -> list[dict[str, Any]]:
        return list(fleet.state()["ray"]["gateways"])

    first = gateways()[0]["url"]
    assert len(gateways()) == 1
    added: dict[str, Any] = {}
    results: list[Any] = []

    def body(i: int, tag: str) -> dict[str, Any]:
        return {**_sample(i, tag), "reward_fn": "wait", "extra_info": {"latency_s": 1.0}}

    async def load(concurrency: int, tag: str, until: Any, most: int, within_s: float) -> None:
        retry = RetryPolicy(max_attempts=20, initial_backoff_s=0.2, max_backoff_s=1.0, max_elapsed_s=120)
        async with AsyncRewardClient(
            "ray:", max_concurrency=concurrency, retry=retry, timeout_s=60
        ) as client:
            deadline = time.monotonic() + within_s
            while not until():
                assert time.monotonic() < deadline and len(results) < most, (
                    f"not within the load: {gateways()}"
                )
                n = len(results)
                results.extend(await client.score_many([body(i, tag) for i in range(n, n + concurrency)]))

    def second_serves() -> bool:
        now = [g for g in gateways() if g["url"] != first]
        if now and _gateway_scored(now[0]["url"]) > 0:
            added.update(now[0])
        return bool(added)

    asyncio.run(load(96, "gw-up", second_serves, 16000, 240))
    assert all(r.status == "ok" for r in results), [r for r in results if r.status != "ok"][:3]
    up = len(results)
    pids = set(added["pids"]) | {d for p in added["pids"] for d in descendants(p)}
    pinned: list[Any] = []

    async def pinned_to_the_second() -> None:
        """Once the second gateway is told to go, posts to its own URL (not `ray:`) that each await 20 s: it
        has left the directory but serves until its drain starts 11 s later; the drain lets them finish."""
        deadline = time.monotonic() + 180
        while not re.search(r"gateways: \d+ in flight, scaling down to 1", fleet.proc.log()):
            assert time.monotonic() < deadline, "the second gateway was not scaled away"
            await asyncio.sleep(0.2)
        async with AsyncRewardClient(added["url"], retry=RetryPolicy(max_attempts=1), timeout_s=60) as client:
            bodies = [{**body(i, "pinned"), "extra_info": {"latency_s": 20.0}} for i in range(6)]
            pinned.extend(await client.score_many(bodies))

    def second_gone() -> bool:
        return len(gateways()) == 1 and not alive(pids)

    async def scale_down() -> None:
        await asyncio.gather(load(12, "gw-down", second_gone, up + 2000, 180), pinned_to_the_second())

    asyncio.run(scale_down())
    bad = [r for r in results + pinned if r.status != "ok"]
    assert not bad, f"{len(bad)} of {len(results) + len(pinned)} posts lost: {bad[:3]}"
    assert len(pinned) == 6
    log_of_second = next(
        text
        for text in (p.read_text() for p in (fleet.run_dir / "logs").glob("gateway-*.log"))
        if f"Uvicorn running on {added['url']}" in text
    )
    drain = re.search(r"SIGTERM: draining \((\d+) requests in flight", log_of_second)
    assert drain and int(drain.group(1)) >= 6, log_of_second[-2000:]  # the pinned posts were in flight
    assert "drained in" in log_of_second, log_of_second[-2000:]
    assert len({r.uid for r in results}) == len(results)
    assert gateways()[0]["url"] == first and _refused(added["url"])
    assert ray.get(ray.get_actor("rewardfleet", namespace=NAMESPACE).gateways.remote(), timeout=10) == [first]
    log = fleet.proc.log()
    assert re.search(r"gateways: \d+ in flight, scaling up to 2", log), log[-3000:]
    assert re.search(r"gateways: \d+ in flight, scaling down to 1", log), log[-3000:]
    print(f"{up} posts while scaling up, {len(results) - up} while scaling down")


def _gateway_scored(url: str) -> float:
    """Posts to `/score` the gateway answered 200."""
    try:
        text = httpx.get(f"{url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(None, 1)[1])
        for line in text.splitlines()
        if line.startswith('rewardfleet_gateway_requests_total{route="/score",status="200"}')
    )


def _served(replica_url: str) -> float:
    """Requests the replica answered 200 (0 while it still starts)."""
    try:
        text = httpx.get(f"{replica_url}/metrics", timeout=5).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(None, 1)[1])
        for line in text.splitlines()
        if line.startswith("rewardfleet_model_server_requests_total{") and 'status="200"' in line
    )


async def _load(url: str, n: int, on_done: Any, tag: str) -> list[Any]:
    """`n` posts, 32 in flight, each retried by the client on 429/503 and connection errors."""
    retry = RetryPolicy(max_attempts=30, initial_backoff_s=0.2, max_backoff_s=2.0, max_elapsed_s=120.0)
    async with AsyncRewardClient(url, max_concurrency=32, retry=retry, timeout_s=60) as client:

        async def one(i: int) -> Any:
            result = await client.score(_sample(i, tag))
            on_done()
            return result

        return list(await asyncio.gather(*(one(i) for i in range(n))))


def test_a_node_lost_mid_load_loses_no_sample_and_its_replica_comes_back_elsewhere(fleet: RayFleet) -> None:
    head = fleet.cluster.head_node.node_id
    replicas = fleet.state()["ray"]["pools"]["reward_model"]
    victim_id = next(r["node_id"] for r in replicas if r["node_id"] != head)
    victim = next(n for n in fleet.cluster.worker_nodes if n.node_id == victim_id)
    done = 0
    mid_load = asyncio.Event()
    killed: list[int] = []

    def count() -> None:
        nonlocal done
        done += 1
        if done == 300:
            mid_load.set()

    async def load_and_kill() -> list[Any]:
        load = asyncio.ensure_future(_load(fleet.gateway(), 2000, count, "killed"))
        await asyncio.wait(
            [load, asyncio.ensure_future(mid_load.wait())], return_when=asyncio.FIRST_COMPLETED
        )
        fleet.cluster.remove_node(victim)  # its raylet and every worker on it die at once
        killed.append(done)
        results = await load
        assert killed[0] < 2000, "the node was removed after the load: nothing was tested"
        return results

    results = asyncio.run(load_and_kill())
    bad = [r for r in results if r.status != "ok"]
    assert not bad, f"{len(bad)} of {len(results)} samples lost: {bad[:3]}"
    assert len({r.uid for r in results}) == 2000
    print(f"node removed after {killed[0]} of 2000; {sum(r.attempts > 1 for r in results)} posts retried")

    def back_elsewhere() -> bool:
        now = fleet.state()["ray"]["pools"]["reward_model"]
        return len(now) == 2 and all(r["node_id"] != victim_id for r in now)

    eventually(back_elsewhere, timeout_s=120, interval_s=0.5, what="both replicas on the remaining nodes")
    moved = fleet.state()["ray"]["pools"]["reward_model"]

    def routed() -> bool:
        workers = ray.get(ray.get_actor("rewardfleet", namespace=NAMESPACE).gateways.remote(), timeout=10)
        return bool(workers) and all(_healthy_in_router(fleet, r["url"]) for r in moved)

    eventually(routed, timeout_s=120, interval_s=0.5, what="the router routing to the moved replica")
    after = asyncio.run(_load(fleet.gateway(), 20, lambda: None, "after"))
    assert all(r.status == "ok" for r in after), after


def _healthy_in_router(fleet: RayFleet, replica_url: str) -> bool:
    router = fleet.state()["ray"]["gateways"][0]["routers"]["reward_model"]
    workers = httpx.get(f"{router}/workers", timeout=5).json()["workers"]
    return any(w["url"].rstrip("/") == replica_url and w.get("is_healthy") for w in workers)


def _refused(url: str) -> bool:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, int(port))) != 0


def test_ctrl_c_leaves_no_actor_process_port_or_placement_group(fleet: RayFleet) -> None:
    state = fleet.state()["ray"]
    replicas = [r for rs in state["pools"].values() for r in rs]
    urls = [g["url"] for g in state["gateways"]] + [r["url"] for r in replicas]
    urls += [u for g in state["gateways"] for u in g["routers"].values()]
    owned = {p for g in state["gateways"] for p in g["pids"]} | {r["pid"] for r in replicas}
    pids = owned | {d for p in owned for d in descendants(p)}  # the gateway's workers too
    assert len(pids) >= 4 and all(not _refused(u) for u in urls)
    started = time.monotonic()
    fleet.proc.signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process group
    assert fleet.proc.proc.wait(timeout=120) == 0, fleet.proc.log()[-3000:]
    assert "fleet stopped." in fleet.proc.log()
    assert not alive(pids), [cmdline(p) for p in alive(pids)]
    assert all(_refused(u) for u in urls)
    actors = ray._private.state.actors()
    assert actors and all(a["State"] == "DEAD" for a in actors.values()), actors
    assert "rewardfleet" not in {a["name"] for a in ray.util.list_named_actors(all_namespaces=True)}
    groups = ray.util.placement_group_table()
    assert groups and all(g["state"] == "REMOVED" for g in groups.values()), groups
    assert not (fleet.run_dir / "fleet.json").exists()
    print(f"stopped in {time.monotonic() - started:.1f} s")


def test_ctrl_c_while_the_cluster_has_no_room_gives_up_and_leaves_nothing(fleet: RayFleet) -> None:
    config = fleet.run_dir.parent / "fleet.yaml"
    text = config.read_text().replace(
        "gateway: {resources: {gateway_node: 1}}", "pools: {reward_model: {resources: {tpu_pod: 1}}}"
    )
    (fleet.run_dir.parent / "no_room.yaml").write_text(text)
    cmd = rewardfleet_cmd(
        "up", "--ray", fleet.cluster.address, "--config", str(fleet.run_dir.parent / "no_room.yaml")
    )
    proc = ChildProcess(cmd, fleet.run_dir.parent / "no_room.log", env={"COLUMNS": "200"})
    try:
        eventually(
            lambda: "reserving" in proc.log(), timeout_s=60, interval_s=0.2, what="the placement asked for"
        )
        proc.signal(signal.SIGINT)
        assert proc.proc.wait(timeout=60) == 0, proc.log()
    finally:
        proc.stop()
    assert "fleet stopped." in proc.log_path.read_text()
    assert all(a["State"] == "DEAD" for a in ray._private.state.actors().values())
    assert all(g["state"] == "REMOVED" for g in ray.util.placement_group_table().values())
