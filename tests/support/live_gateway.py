"""A live gateway (real uvicorn, real reward-function loading) over the integration tests' reward functions,
which a test may stop and start again on the same port."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd

FUNCTIONS = {
    # verl-style files, unchanged verl contract
    "exact.py": """
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            answer = solution_str.replace("<|im_end|>", "").strip()
            correct = answer == str(ground_truth).strip()
            return {"score": 1.0 if correct else 0.0, "acc": correct, "pred": answer}
    """,
    # a formula that gives different completions different scores (TRL's logged mean is checked against it)
    "charsum.py": """
        def compute_score(data_source, solution_str, ground_truth=None, extra_info=None):
            return sum(ord(c) for c in solution_str) % 101 / 100
    """,
    "paced.py": """
        import asyncio

        async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            await asyncio.sleep(0.02)  # its own work (the behaviour)
            return float(solution_str == str(ground_truth))
    """,
    # a verl multi-turn reward: the answer after "####" in the decoded trajectory; the agent loop's tool
    # rewards (extra_info, verl's ToolAgentLoop) as turn scores
    "multi_turn.py": """
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            answer = solution_str.rsplit("####", 1)[-1].strip()
            return {
                "score": float(answer == ground_truth),
                "turn_scores": list(extra_info.get("tool_rewards") or []),
                "num_turns": extra_info.get("num_turns"),
                "extra_info_keys": sorted(extra_info),
            }
    """,
    "boom.py": """
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            raise ValueError("boom: " + solution_str)
    """,
    "slow.py": """
        import asyncio

        async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            await asyncio.sleep(30)  # past the client's timeout (the behaviour)
            return 1.0
    """,
    "fallback.py": """
        async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            raise KeyError("missing")
    """,
}

CONFIG = """
functions:
  slow: {timeout_s: 0.5}
  fallback: {on_error_score: -1.0}
default_reward_fn: exact
"""


@dataclass
class LiveGateway:
    url: str
    port: int
    cmd: list[str]
    tmp: Path
    child: ChildProcess = field(init=False)

    def start(self) -> None:
        self.child = ChildProcess(self.cmd, self.tmp / f"gateway-{len(list(self.tmp.glob('*.log')))}.log")
        self.child.wait_http(self.url + "/ready", timeout_s=90)

    def stop(self) -> None:
        self.child.stop()


def start_live_gateway(tmp: Path) -> LiveGateway:
    fns = tmp / "fns"
    fns.mkdir()
    for name, source in FUNCTIONS.items():
        (fns / name).write_text(textwrap.dedent(source))
    config = tmp / "gateway.yaml"
    config.write_text(CONFIG)
    port = free_port()
    # Exactly as a user starts it: the app factory mounts the OpenRLHF/slime router itself.
    cmd = rewardfleet_cmd(
        "gateway", "--port", str(port), "--config", str(config), "--reward-fns", str(fns), "--workers", "1"
    )
    gateway = LiveGateway(url=f"http://127.0.0.1:{port}", port=port, cmd=cmd, tmp=tmp)
    gateway.start()
    return gateway
