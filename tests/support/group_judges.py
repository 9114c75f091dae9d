"""A real gateway process whose `judge` pools are preference stand-ins
(bench/harness/preference_judge.py) on 127.0.0.1, and the group functions it serves."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.harness.processes import ChildProcess, free_port
from tests.support.gateway import Gateway

PAIRWISE = "rewardfleet.reward_fns.groups.pairwise_judge:compute_group_score"
LISTWISE = "rewardfleet.reward_fns.groups.listwise_judge:compute_group_score"


@dataclass
class Judge:
    proc: ChildProcess
    address: str

    def log(self) -> list[dict[str, Any]]:
        return list(httpx.get(f"http://{self.address}/standin/log", timeout=10).json())


def start_judge(tmp: Path, name: str, *args: str) -> Judge:
    port = free_port()
    cmd = [sys.executable, "-m", "bench.harness.preference_judge", "--port", str(port), *args]
    proc = ChildProcess(cmd, tmp / f"{name}.log")
    proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=60)
    return Judge(proc, f"127.0.0.1:{port}")


@dataclass
class GroupJudgeFleet:
    gateway: Gateway
    judge: Judge
    biased: Judge

    def group(self, group_fn: str, gid: str, texts: list[str], **fields: Any) -> list[dict[str, Any]]:
        """Post every member at once (one request each, as a trainer does) and return the answers."""
        posts = [
            {
                "data_source": "test/group_judge",
                "reward_fn": "exact_match",
                "solution_str": text,
                "ground_truth": "x",
                "prompt": "Which number is biggest?",
                "group_id": gid,
                "group_size": fields.get("group_size", len(texts)),
                "group_index": i,
                "group_fn": group_fn,
            }
            for i, text in enumerate(texts)
        ]
        with ThreadPoolExecutor(len(posts)) as ex:
            answers = list(ex.map(self.post, posts))
        return answers

    def post(self, body: dict[str, Any]) -> dict[str, Any]:
        resp = httpx.post(f"{self.gateway.url}/score", json=body, timeout=60)
        assert resp.status_code == 200, resp.text
        return dict(resp.json())


def group_functions(pool_of_biased: str = "judge_biased") -> dict[str, Any]:
    return {
        "pairwise_judge": {"kwargs": {"max_tokens": 4}},
        "pj_circular": {"path": PAIRWISE, "kwargs": {"mode": "circular"}},
        "pj_swiss": {"path": PAIRWISE, "kwargs": {"mode": "swiss"}},
        "pj_bt": {"path": PAIRWISE, "kwargs": {"aggregate": "bradley_terry"}},
        "pj_noswap": {"path": PAIRWISE, "kwargs": {"swap": False}},
        "pj_biased": {"path": PAIRWISE, "kwargs": {"pool": pool_of_biased}},
        "pj_bad_mode": {"path": PAIRWISE, "kwargs": {"mode": "knockout"}},
        "listwise_judge": {"kwargs": {"max_tokens": 40}},
        "lw_shuffles": {"path": LISTWISE, "kwargs": {"shuffles": 3, "seed": 7}},
    }
