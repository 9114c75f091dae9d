"""The whole product on loopback: trainer → gateway → reward function → sglang-router → model servers.

One `rewardfleet up` runs a judge pool and a reward-model pool (two CPU replicas each, tiny models built
here) and the MiniLM encoder pool, each behind a real sglang-router, plus the gateway with a user folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from tests.fleet.procs import cmdline, descendants, wait_gone

USER_FN = '''
import aiohttp

async def compute_score(data_source, solution_str, ground_truth, extra_info, reward_router_address,
                        reward_model_tokenizer):
    """Written the way verl users write a DisRM reward: post text to the router themselves."""
    chat = [{"role": "user", "content": extra_info["question"]},
            {"role": "assistant", "content": solution_str}]
    text = reward_model_tokenizer.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
    async with aiohttp.ClientSession() as session:
        url = f"http://{reward_router_address}/v1/embeddings"
        async with session.post(url, json={"model": "tiny-rm", "input": text}) as resp:
            resp.raise_for_status()
            body = await resp.json()
    return {"score": body["data"][-1]["embedding"][-1], "router": reward_router_address}
'''


@dataclass
class RunningFleet:
    proc: ChildProcess
    state: dict[str, Any]
    rm_path: Path
    run_dir: Path

    @property
    def gateway(self) -> str:
        return str(self.state["gateway"]["url"])

    def score(self, **sample: Any) -> dict[str, Any]:
        resp = httpx.post(f"{self.gateway}/score", json=sample, timeout=60)
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        return body


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningFleet]:
    tmp = tmp_path_factory.mktemp("fleet")
    judge = build_tiny_qwen2(tmp / "judge", "causal", seed=1)
    rm = build_tiny_qwen2(tmp / "rm", "seq_cls", seed=2)
    (tmp / "fns").mkdir()
    (tmp / "fns" / "my_rm.py").write_text(USER_FN)
    fast_router = "{policy: round_robin, health_check_interval_secs: 2, health_check_timeout_secs: 1}"
    server_args = "{torch-num-threads: 1, max-batch-size: 16}"
    (tmp / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:
          judge: {{kind: judge, model_path: {judge}, served_model_name: tiny-judge, replicas: 2,
                  server_args: {{torch-num-threads: 1, max-new-tokens-limit: 16}}, router: {fast_router}}}
          reward_model: {{kind: reward_model, model_path: {rm}, served_model_name: tiny-rm, replicas: 2,
                         server_args: {server_args}, router: {fast_router}}}
          encoder: {{kind: encoder, model_path: "builtin:minilm", served_model_name: minilm,
                    server_args: {server_args}, router: {fast_router}}}
        run_dir: {tmp / "run"}
        ready_timeout_s: 180
        restart_max_backoff_s: 2
        gateway:
          workers: 1
          reward_fns_dirs: [fns]
          functions:
            judge: {{timeout_s: 60,
                     reward_kwargs: {{pool: judge, model: tiny-judge, generation: {{max_tokens: 8}}}}}}
            reward_model: {{reward_kwargs: {{model: tiny-rm}}}}
            similarity: {{reward_kwargs: {{model: minilm}}}}
        """)
    )
    port = free_port()
    cmd = rewardfleet_cmd("up", "--config", str(tmp / "fleet.yaml"), "--port", str(port))
    proc = ChildProcess(cmd, tmp / "up.log", env={"HF_HUB_OFFLINE": "1"})
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=240)
        state_file = tmp / "run" / "fleet.json"  # written once every part is ready
        eventually(state_file.exists, timeout_s=30, interval_s=0.1, what=f"{state_file}")
        state = json.loads(state_file.read_text())
        yield RunningFleet(proc, state, rm, tmp / "run")
    finally:
        proc.stop(timeout_s=60)


def _direct_rm_score(rm_path: Path, question: str, answer: str) -> float:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(rm_path)
    model = AutoModelForSequenceClassification.from_pretrained(rm_path).eval()
    chat = [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    text = tok.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
    with torch.inference_mode():
        return float(model(**tok(text, return_tensors="pt")).logits[0, 0])


def _served(url: str, endpoint: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "rewardfleet_model_server_requests_total" and s.labels.get("endpoint") == endpoint:
                total += s.value if s.labels.get("status") == "200" else 0.0
    return total


QUESTIONS = [(f"What is {i} + {i}?", f"It is {2 * i}.") for i in range(12)]


def test_disrm_through_the_whole_path_equals_a_direct_forward_and_spreads(fleet: RunningFleet) -> None:
    replicas = fleet.state["pools"]["reward_model"]["replicas"]
    before = [_served(u, "/v1/embeddings") for u in replicas]
    for question, answer in QUESTIONS:
        result = fleet.score(
            data_source="chat", reward_fn="reward_model", solution_str=answer, ground_truth=None,
            prompt=[{"role": "user", "content": question}],
        )  # fmt: skip
        assert result["status"] == "ok", result
        assert result["score"] == pytest.approx(_direct_rm_score(fleet.rm_path, question, answer), abs=1e-4)
    after = [_served(u, "/v1/embeddings") for u in replicas]
    spread = [a - b for a, b in zip(after, before, strict=True)]
    assert sum(spread) >= len(QUESTIONS) and all(n >= 3 for n in spread), spread


def test_user_function_calling_reward_router_address_itself(fleet: RunningFleet) -> None:
    question, answer = QUESTIONS[0]
    result = fleet.score(
        data_source="chat", reward_fn="my_rm", solution_str=answer, ground_truth=None,
        extra_info={"question": question},
    )  # fmt: skip
    assert result["status"] == "ok", result
    assert result["extra"]["router"] == fleet.state["pools"]["reward_model"]["router"].removeprefix("http://")
    assert result["score"] == pytest.approx(_direct_rm_score(fleet.rm_path, question, answer), abs=1e-4)


def test_judge_noise_is_a_typed_error_not_a_zero(fleet: RunningFleet) -> None:
    replicas = fleet.state["pools"]["judge"]["replicas"]
    before = sum(_served(u, "/v1/chat/completions") for u in replicas)
    result = fleet.score(data_source="qa", reward_fn="judge", solution_str="4", ground_truth="4",
                         prompt="What is 2 + 2?")  # fmt: skip
    assert result["status"] == "error" and result["score"] is None, result
    assert result["error"]["type"] in {"VerdictParseError", "JudgeTruncatedError"}
    assert sum(_served(u, "/v1/chat/completions") for u in replicas) == before + 1


def test_similarity_through_the_encoder_pool(fleet: RunningFleet) -> None:
    near = fleet.score(data_source="x", reward_fn="similarity", solution_str="A cat sat on the mat.",
                       ground_truth="The cat is sitting on the mat.")  # fmt: skip
    far = fleet.score(data_source="x", reward_fn="similarity", solution_str="Stock prices fell sharply.",
                      ground_truth="The cat is sitting on the mat.")  # fmt: skip
    assert near["status"] == far["status"] == "ok"
    assert near["score"] > far["score"] + 0.2


def test_rule_functions_and_status(fleet: RunningFleet) -> None:
    gsm8k = fleet.score(data_source="openai/gsm8k", solution_str="#### 1,200", ground_truth="1200")
    assert gsm8k["reward_fn"] == "gsm8k" and gsm8k["score"] == 1.0
    cmd = rewardfleet_cmd("status", "--run-dir", str(fleet.run_dir))
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "1/1 workers healthy" in proc.stdout and proc.stdout.count("2/2 workers healthy") == 2, proc.stdout
    assert "down" not in proc.stdout


def _wait_healthy(url: str, timeout_s: float) -> bool:
    with contextlib.suppress(AssertionError):
        return eventually(lambda: httpx.get(f"{url}/health", timeout=2).status_code == 200,
                          timeout_s=timeout_s, interval_s=0.2, retry_on=(httpx.HTTPError,))  # fmt: skip
    return False


def test_a_killed_replica_is_restarted_and_no_request_fails(fleet: RunningFleet) -> None:
    victim_url = fleet.state["pools"]["reward_model"]["replicas"][0]
    port = victim_url.rsplit(":", 1)[1]
    tree = descendants(fleet.proc.pid)
    victims = [p for p in tree if "serve-model" in cmdline(p) and f"--port {port} " in cmdline(p)]
    assert len(victims) == 1, victims
    os.kill(victims[0], signal.SIGKILL)
    for question, answer in QUESTIONS:  # the router retries on the surviving replica
        result = fleet.score(data_source="chat", reward_fn="reward_model", solution_str=answer,
                             ground_truth=None, prompt=[{"role": "user", "content": question}])  # fmt: skip
        assert result["status"] == "ok", result
    # The supervisor starts a new replica on the same port, with a new pid.
    assert _wait_healthy(victim_url, timeout_s=120), "the killed replica was not restarted"
    assert victims[0] not in descendants(fleet.proc.pid)


def test_sigterm_stops_everything_with_no_orphans(fleet: RunningFleet) -> None:
    tree = descendants(fleet.proc.pid)
    assert len(tree) >= 9  # 5 model servers, 3 routers, the gateway (+ their workers)
    fleet.proc.proc.send_signal(signal.SIGTERM)
    assert fleet.proc.proc.wait(timeout=90) == 0, fleet.proc.log()[-3000:]
    left = wait_gone(tree, timeout_s=10)
    assert not left, {p: cmdline(p) for p in left}
    assert "fleet stopped." in fleet.proc.log()
