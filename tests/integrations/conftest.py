"""A live gateway (real uvicorn, real reward-function loading) with test functions, shared per module."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support import ChildProcess, free_port, rewardfleet_cmd

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


def _start_gateway(tmp: Path) -> LiveGateway:
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


@pytest.fixture(scope="module")
def live_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """A gateway this module may kill and restart."""
    gateway = _start_gateway(tmp_path_factory.mktemp("gateway"))
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def trainer_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    """One gateway for every trainer's own client code (TRL, verl, OpenRLHF, slime): started once."""
    gateway = _start_gateway(tmp_path_factory.mktemp("trainer-gateway"))
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 causal LM checkpoint with its ChatML tokenizer: the trainers' policy and tokenizer."""
    from tests.tiny_models import build_tiny_qwen2

    return Path(build_tiny_qwen2(tmp_path_factory.mktemp("policy") / "qwen2", kind="causal"))
