"""Probability mode: `/v1/score` straight to the pool's model servers (the router does not proxy it).

A small aiohttp server that records the request stands in for shape checks; the SGLang stand-in (which also
serves `/v1/score`) for failover and the single-BOS check. The tokenizers are real tiny Qwen2 / Llama ones.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from aiohttp import web
from transformers import AutoTokenizer

from bench.harness.processes import free_port, running
from bench.harness.tiny_models import build_tiny_llama, build_tiny_qwen2
from rewardfleet.reward_fns import judge

EXTRA = {"question": "What is 6*7?"}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return AutoTokenizer.from_pretrained(build_tiny_qwen2(tmp_path_factory.mktemp("tok"), kind="causal"))


@pytest.fixture
async def score_server() -> AsyncIterator[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    requests: list[dict[str, Any]] = []
    answer: dict[str, Any] = {"body": {"scores": [[0.3, 0.1]], "object": "scoring"}, "status": 200}

    async def score(request: web.Request) -> web.Response:
        requests.append(await request.json())
        return web.json_response(answer["body"], status=answer["status"])

    app = web.Application()
    app.router.add_post("/v1/score", score)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"127.0.0.1:{port}", requests, answer
    await runner.cleanup()


async def test_probability_mode_normalises_label_probabilities(score_server: Any, tokenizer: Any) -> None:
    address, requests, _ = score_server
    result = await judge.compute_score(
        "x", "42", "42", EXTRA,
        reward_router_address="127.0.0.1:1",  # never used: /v1/score goes to the server directly
        reward_model_tokenizer=tokenizer, method="probability",
        probability={"score_server_address": address, "label_tokens": ("Y", "N")},
    )  # fmt: skip
    assert result["score"] == pytest.approx(0.75)
    assert result["judge_verdict"] == "p_yes=0.3 p_no=0.1" and result["judge_verdict_source"] == "probability"
    assert result["judge_template"] == "correctness_yes_no"
    (sent,) = requests
    assert sent["label_token_ids"] == [
        tokenizer.convert_tokens_to_ids("Y"),
        tokenizer.convert_tokens_to_ids("N"),
    ]
    assert sent["apply_softmax"] is True and len(sent["items"]) == 1
    # query + item is the judge chat with the assistant turn opened, as token ids: the next token answers.
    assert all(isinstance(t, int) for t in sent["query"] + sent["items"][0])
    assert tokenizer.decode(sent["items"][0]) == "<|im_start|>assistant\n"
    query = tokenizer.decode(sent["query"])
    assert query.startswith("<|im_start|>system\n") and query.endswith("Yes or No.<|im_end|>\n")


async def test_probability_mode_errors(score_server: Any, tokenizer: Any) -> None:
    address, _, answer = score_server
    base = {"reward_router_address": "h:1", "reward_model_tokenizer": tokenizer, "method": "probability"}
    with pytest.raises(judge.JudgeConfigError, match="score_server_address"):
        await judge.compute_score("x", "42", "42", EXTRA, **base)
    with pytest.raises(judge.JudgeConfigError, match=r"label 'Yes' is 3 tokens"):
        await judge.compute_score(
            "x", "42", "42", EXTRA, **base, probability={"score_server_address": address}
        )
    with pytest.raises(judge.JudgeConfigError, match="binary"):
        await judge.compute_score(
            "x", "42", "42", EXTRA, **base, probability={"score_server_address": address}, template="rubric"
        )
    labels = {"probability": {"score_server_address": address, "label_tokens": ("Y", "N")}}
    answer["body"] = {"scores": [[0.0, 0.0]]}
    with pytest.raises(judge.JudgeCallError, match="both zero"):
        await judge.compute_score("x", "42", "42", EXTRA, **base, **labels)
    answer["body"] = {"object": "error", "message": "scoring not supported"}
    answer["status"] = 400
    with pytest.raises(judge.JudgeCallError, match="scoring not supported") as info:
        await judge.compute_score("x", "42", "42", EXTRA, **base, **labels)
    assert info.value.status == 400


async def test_router_does_not_proxy_v1_score(tmp_path: Any) -> None:
    """Why probability mode needs `score_server_address`: sglang-router answers 404 for /v1/score."""
    from bench.harness.router_process import RouterProcess
    from rewardfleet.router import RouterConfig

    cfg = RouterConfig(port=free_port(), prometheus_port=free_port(), worker_urls=[])
    with RouterProcess(cfg, tmp_path / "router.log") as proc:
        proc.wait_ready(timeout_s=30, min_healthy_workers=0)
        with pytest.raises(judge.JudgeCallError) as info:
            await judge.compute_score(
                "x", "42", "42", EXTRA, reward_router_address="h:1", method="probability",
                reward_model_tokenizer=_tokenizer_stub(),
                probability={"score_server_address": proc.address, "label_tokens": ("Y", "N")},
            )  # fmt: skip
    assert info.value.status == 404


def _tokenizer_stub() -> Any:
    class Tok:
        def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
            return [ord(c) for c in text]

        def apply_chat_template(self, messages: list[dict[str, str]], **kw: Any) -> str:
            return "chat" + ("|assistant:" if kw.get("add_generation_prompt") else "")

    return Tok()


@pytest.fixture(scope="module")
def llama_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return AutoTokenizer.from_pretrained(build_tiny_llama(tmp_path_factory.mktemp("llama"), kind="causal"))


def test_fails_over_across_the_pool_and_sends_one_bos(tmp_path: Any, llama_tokenizer: Any) -> None:
    """A dead server in `score_server_address` is skipped; the chat goes as ids with the template's one BOS
    (text would be tokenised by SGLang with special tokens: a Llama-style template then gets two)."""
    dead = f"127.0.0.1:{free_port()}"
    port = free_port()
    cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", "judge"]
    with running(cmd, tmp_path / "standin.log") as proc:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=30)
        live = f"127.0.0.1:{port}"
        for addresses in ([dead, live], f"{live}, {dead}"):
            result = asyncio.run(
                judge.compute_score(
                    "x", "42", "42", EXTRA, reward_router_address="h:1", method="probability",
                    reward_model_tokenizer=llama_tokenizer,
                    probability={"score_server_address": addresses, "label_tokens": ("Y", "N")},
                )
            )  # fmt: skip
            assert 0.0 <= result["score"] <= 1.0 and result["judge_verdict_source"] == "probability"
        stats = httpx.get(f"http://127.0.0.1:{port}/standin/stats", timeout=5).json()
    assert stats["served"]["/v1/score"] == 2
    sent = stats["last_body"]["/v1/score"]
    bos = llama_tokenizer.bos_token_id
    assert (sent["query"] + sent["items"][0]).count(bos) == 1 and sent["query"][0] == bos
    with pytest.raises(judge.JudgeCallError, match="failed on all 2 model servers"):
        asyncio.run(
            judge.compute_score(
                "x", "42", "42", EXTRA, reward_router_address="h:1", method="probability",
                reward_model_tokenizer=llama_tokenizer,
                probability={"score_server_address": [dead, dead], "label_tokens": ("Y", "N")},
            )
        )  # fmt: skip
