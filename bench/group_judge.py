"""Group judging: a group of 8 posted to a real gateway whose judge pool is a stand-in answering after
U(1 s, 4 s) (bench/harness/preference_judge.py). Per mode: judge calls per group, and the group's
wall time (first post to last answer) ÷ the longest single judge call of that group — 1.0 is the best
possible (every comparison of the group overlaps); swiss runs its rounds one after another, so it is about
its number of rounds.

    .venv/bin/python -m bench.group_judge [--size 8] [--rounds 2]

Each mode runs `--rounds` groups, one row each: the first group of `bradley_terry` pays choix's (scipy's)
import in the gateway, which is deferred until a group asks for it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from bench.common import gateway
from bench.harness.processes import ChildProcess, free_port

PAIRWISE = "rewardfleet.reward_fns.groups.pairwise_judge:compute_group_score"
MODES: dict[str, dict[str, Any]] = {
    "all_pairs": {"path": PAIRWISE, "kwargs": {"mode": "all_pairs"}},
    "all_pairs_noswap": {"path": PAIRWISE, "kwargs": {"mode": "all_pairs", "swap": False}},
    "all_pairs_bt": {"path": PAIRWISE, "kwargs": {"aggregate": "bradley_terry"}},
    "circular": {"path": PAIRWISE, "kwargs": {"mode": "circular"}},
    "swiss": {"path": PAIRWISE, "kwargs": {"mode": "swiss"}},
    "listwise": {"path": "rewardfleet.reward_fns.groups.listwise_judge:compute_group_score"},
}


def _group(url: str, fn: str, size: int) -> tuple[float, list[dict[str, Any]]]:
    posts = [
        {
            "data_source": "bench/group_judge",
            "reward_fn": "exact_match",
            "solution_str": f"answer quality={(i * 5) % size}",
            "ground_truth": "x",
            "prompt": "Which is best?",
            "group_id": f"{fn}-{time.monotonic_ns()}",
            "group_size": size,
            "group_index": i,
            "group_fn": fn,
        }
        for i in range(size)
    ]
    for body in posts:
        body["group_id"] = posts[0]["group_id"]
    with httpx.Client(timeout=120) as client, ThreadPoolExecutor(size) as ex:
        start = time.monotonic()
        answers = list(ex.map(lambda b: client.post(f"{url}/score", json=b).json(), posts))
        return time.monotonic() - start, answers


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2, help="groups per mode (the first pays imports)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        port = free_port()
        judge_cmd = [sys.executable, "-m", "bench.harness.preference_judge", "--port", str(port),
                     "--latency-min-s", "1", "--latency-max-s", "4"]  # fmt: skip
        judge = ChildProcess(judge_cmd, tmp / "judge.log")
        try:
            judge.wait_http(f"http://127.0.0.1:{port}/health")
            functions = {k: {**v, "timeout_s": 100.0} for k, v in MODES.items()}
            config = {
                "routers": {"judge": f"127.0.0.1:{port}"},
                "groups": {"timeout_s": 120.0, "functions": functions},
            }
            with gateway(tmp, config) as url:
                print(f"group of {args.size}, judge latency U(1 s, 4 s)")
                print(
                    f"{'mode':<18}{'judge calls':>12}{'wall s':>9}{'longest call s':>16}{'wall/longest':>14}"
                )
                for name in [m for m in MODES for _ in range(args.rounds)]:
                    seen = len(httpx.get(f"http://127.0.0.1:{port}/standin/log").json())
                    wall_s, answers = _group(url, name, args.size)
                    bad = [a for a in answers if a.get("status") != "ok"]
                    if bad:
                        raise SystemExit(f"{name}: {json.dumps(bad[0])[:500]}")
                    calls = httpx.get(f"http://127.0.0.1:{port}/standin/log").json()[seen:]
                    longest = max(c["end"] - c["start"] for c in calls)
                    print(
                        f"{name:<18}{len(calls):>12}{wall_s:>9.2f}{longest:>16.2f}{wall_s / longest:>14.2f}"
                    )
        finally:
            judge.stop()


if __name__ == "__main__":
    main()
