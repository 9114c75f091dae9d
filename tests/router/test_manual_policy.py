"""sglang-router 0.3.2's `--policy manual`: the `X-SMG-Routing-Key` header pins a request to one worker.

Checked with the real binary over two stand-in replicas (each answer names its replica): every request with
one key lands on one replica, keys spread over both, and a judge call (`ask_judge`, reward_fns/judging/
endpoint.py) sends the same key for the same question, so a repeated question is answered by the same replica.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

import httpx

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint, ask_judge
from rewardfleet.reward_fns.judging.seed import ROUTING_KEY_HEADER
from rewardfleet.router.command import build_command
from rewardfleet.router.config import RouterConfig
from tests.support.router import ReplicaFactory, RouterFactory

BODY = {"text": "hi", "sampling_params": {"max_new_tokens": 2}}


def test_command_carries_the_manual_policy_flags() -> None:
    cfg = RouterConfig(policy="manual", assignment_mode="min_group", max_idle_secs=60)
    cmd = build_command(cfg)
    assert cmd[cmd.index("--policy") + 1] == "manual"
    assert cmd[cmd.index("--assignment-mode") + 1] == "min_group"
    assert cmd[cmd.index("--max-idle-secs") + 1] == "60"
    assert "--assignment-mode" not in build_command(RouterConfig(policy="round_robin"))


def test_same_key_same_replica(start_replica: ReplicaFactory, start_router: RouterFactory) -> None:
    a, b = start_replica("judge", "a"), start_replica("judge", "b")
    router = start_router([a.url, b.url], policy="manual")
    served: dict[str, set[str]] = defaultdict(set)
    with httpx.Client(base_url=router.url, timeout=30) as client:
        for _ in range(4):
            for k in range(16):
                resp = client.post("/generate", json=BODY, headers={ROUTING_KEY_HEADER: f"key-{k}"})
                assert resp.status_code == 200, resp.text
                served[f"key-{k}"].add(resp.headers["x-standin-replica"])
    assert all(len(replicas) == 1 for replicas in served.values()), dict(served)
    assert set().union(*served.values()) == {"a", "b"}, "16 keys all went to one replica"


def test_a_judge_question_sticks_to_one_replica(
    start_replica: ReplicaFactory, start_router: RouterFactory
) -> None:
    a, b = start_replica("judge", "a"), start_replica("judge", "b")
    router = start_router([a.url, b.url], policy="manual")
    endpoint = JudgeEndpoint(session=None, address=router.address, max_tokens=8)

    def served() -> dict[str, int]:
        return {r.replica_id: int(r.stats()["total"]) for r in (a, b)}

    for q in range(6):
        before = served()
        messages = [{"role": "user", "content": f"question {q}"}]
        for _ in range(3):
            asyncio.run(ask_judge(endpoint, messages))
        after = served()
        grew = {rid: after[rid] - before[rid] for rid in after}
        assert sorted(grew.values()) == [0, 3], f"question {q} was spread: {grew}"
