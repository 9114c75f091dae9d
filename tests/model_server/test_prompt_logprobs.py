"""Prompt logprobs on the CPU model server (`/generate` with `return_logprob`, `logprob_start_len` and
`max_new_tokens: 0`), checked against the tiny model's own logits (torch) and SGLang 0.5.23's own code, and
the `likelihood` built-in through a real sglang-router against the same reference computation."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.router_process import RouterProcess
from bench.harness.tiny_models import build_tiny_qwen2
from rewardfleet.reward_fns import likelihood
from rewardfleet.router import RouterConfig
from tests.sglang_conformance import sglang_source as sgl
from tests.support.model_server import RunningServer, start_server


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RunningServer, RouterProcess]]:
    root = tmp_path_factory.mktemp("prompt-logprobs")
    path = build_tiny_qwen2(root / "lm", kind="causal")
    server = start_server(path, root, "--served-model-name", "lm", name="lm")
    cfg = RouterConfig(
        port=free_port(), prometheus_port=free_port(), worker_urls=[server.url], policy="round_robin",
        health_check_interval_secs=2, health_check_timeout_secs=2,
    )  # fmt: skip
    router = RouterProcess(cfg, root / "router.log")
    try:
        router.start().wait_ready(timeout_s=60)
        yield path, server, router
    finally:
        router.stop()
        server.process.stop()


@pytest.fixture(scope="module")
def reference_model(tiny: tuple[Path, RunningServer, RouterProcess]) -> tuple[Any, Any]:
    import transformers

    path = tiny[0]
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()
    return model, transformers.AutoTokenizer.from_pretrained(path)


def torch_logprobs(model: Any, ids: list[int]) -> list[float]:
    """log P(ids[i] | ids[:i]) for i >= 1, from the model's own logits."""
    import torch

    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    lp = torch.log_softmax(logits, dim=-1)
    return [float(lp[i - 1, ids[i]]) for i in range(1, len(ids))]


IDS = [5, 17, 42, 8, 99, 3, 64, 7]


@pytest.mark.parametrize("start", [0, 1, 3, 7])
def test_input_token_logprobs_equal_the_models_own(
    tiny: tuple[Path, RunningServer, RouterProcess], reference_model: tuple[Any, Any], start: int
) -> None:
    body = {"input_ids": IDS, "sampling_params": {"max_new_tokens": 0}, "return_logprob": True,
            "logprob_start_len": start}  # fmt: skip
    assert sgl.generate_contract_error(body) is None  # SGLang's own gate accepts the request
    resp = httpx.post(tiny[1].url + "/generate", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["text"] == "" and out["output_ids"] == []
    entries = out["meta_info"]["input_token_logprobs"]
    assert [e[1] for e in entries] == IDS[start:]
    assert entries[0][0] is None and all(e[2] is None for e in entries)
    expected = torch_logprobs(reference_model[0], IDS)[start:]
    assert [e[0] for e in entries[1:]] == pytest.approx(expected, abs=1e-4)
    assert out["meta_info"]["output_token_logprobs"] == [] and out["meta_info"]["completion_tokens"] == 0


def test_a_batch_and_the_edges(
    tiny: tuple[Path, RunningServer, RouterProcess], reference_model: tuple[Any, Any]
) -> None:
    url = tiny[1].url + "/generate"
    rows = [IDS, IDS[:3]]
    body = {"input_ids": rows, "sampling_params": {"max_new_tokens": 0}, "return_logprob": True,
            "logprob_start_len": 1, "return_text_in_logprobs": True}  # fmt: skip
    out = httpx.post(url, json=body, timeout=60).json()
    for row, answer in zip(rows, out, strict=True):
        entries = answer["meta_info"]["input_token_logprobs"]
        assert [e[0] for e in entries[1:]] == pytest.approx(
            torch_logprobs(reference_model[0], row)[1:], abs=1e-4
        )
        assert [e[2] for e in entries] == [reference_model[1].decode([t]) for t in row[1:]]
    # -1 (the default) asks for no prompt logprobs; a start past the prompt is a 400 naming the field.
    none = httpx.post(url, json={**body, "input_ids": IDS, "logprob_start_len": -1}, timeout=60).json()
    assert none["meta_info"]["input_token_logprobs"] == []
    past = httpx.post(url, json={**body, "input_ids": IDS, "logprob_start_len": 9}, timeout=60)
    assert past.status_code == 400 and "logprob_start_len" in past.text
    gen = httpx.post(
        url, json={"input_ids": IDS, "sampling_params": {"max_new_tokens": 2}, "return_logprob": True}
    )
    assert gen.status_code == 400 and "max_new_tokens" in gen.text  # output logprobs are not served here


def test_the_shapes_are_sglangs() -> None:
    """The fields are GenerateReqInput's; meta_info carries the keys tokenizer_manager sets, entries are
    (logprob, id, text) and the first logprob is None, as SGLang's scheduler writes them."""
    fields = set()
    for node in ast.walk(sgl.source("srt/managers/io_struct.py")):
        if isinstance(node, ast.ClassDef) and node.name == "GenerateReqInput":
            fields = {
                s.target.id
                for s in node.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
    assert {"return_logprob", "logprob_start_len", "top_logprobs_num", "return_text_in_logprobs"} <= fields
    fn = next(
        n for n in ast.walk(sgl.source(sgl.TOKENIZER_MANAGER))
        if isinstance(n, ast.FunctionDef) and n.name == "add_logprob_to_meta_info"
    )  # fmt: skip
    keys = {
        t.slice.value for n in ast.walk(fn) if isinstance(n, ast.Assign) for t in n.targets
        if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
    }  # fmt: skip
    assert {"input_token_logprobs", "output_token_logprobs", "output_token_logprobs_length"} <= keys
    processor = ast.unparse(sgl.source("srt/managers/scheduler_components/logprob_result_processor.py"))
    assert "[None] + input_token_logprobs[:-1]" in processor
    detok = ast.unparse(
        next(
            n for n in ast.walk(sgl.source(sgl.TOKENIZER_MANAGER))
            if isinstance(n, ast.FunctionDef) and n.name == "detokenize_logprob_tokens"
        )
    )  # fmt: skip
    assert "(logprob, token_id, None)" in detok


@pytest.mark.parametrize(
    ("how", "debias"), [("mean_prob", "none"), ("geometric_mean", "none"), ("mean_prob", "baseline")]
)
async def test_the_likelihood_reward_equals_the_reference_computation(
    tiny: tuple[Path, RunningServer, RouterProcess], reference_model: tuple[Any, Any], how: str, debias: str
) -> None:
    model, tok = reference_model
    question, response, answer = "What is 2 + 2?", "Two and two make four. The answer is 5", "4"
    async with aiohttp.ClientSession() as session:
        result = await likelihood.compute_score(
            "x", response, answer, {"question": question}, router_addresses={"judge": tiny[2].address},
            http_client=session, reward_model_tokenizer=tok, aggregate=how, debias=debias,
        )  # fmt: skip

    def expected_for(reasoning: str) -> float:
        chat = tok.apply_chat_template(
            [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
        )
        enc = lambda t: tok.encode(t, add_special_tokens=False) if t else []  # noqa: E731
        prefix = enc(chat) + enc(reasoning) + enc("The answer is ")
        ref = enc(answer)
        lps = torch_logprobs(model, prefix + ref)[len(prefix) - 1 :]
        if how == "geometric_mean":
            return math.exp(sum(lps) / len(lps))
        return sum(math.exp(x) for x in lps) / len(lps)

    prob = expected_for("Two and two make four. ")  # the final answer ("5") is cut out
    assert result["likelihood_cut"] == "marker"
    assert result["likelihood_prob"] == pytest.approx(prob, rel=1e-4)
    if debias == "baseline":
        base = expected_for("")
        assert result["likelihood_baseline"] == pytest.approx(base, rel=1e-4)
        assert result["score"] == pytest.approx(min(1.0, max(0.0, prob - base)), abs=1e-6)
    else:
        assert result["score"] == pytest.approx(prob, rel=1e-4)


def test_cut_answer() -> None:
    assert likelihood.cut_answer("so x = 2, \\boxed{2}") == ("so x = 2, ", "\\boxed{", "boxed")
    assert likelihood.cut_answer("think <answer>2</answer>") == ("think ", "<answer>", "marker")
    assert likelihood.cut_answer("Thus the answer is 2.") == ("Thus ", "the answer is ", "marker")
    assert likelihood.cut_answer("just 2") == ("just 2", "", "none")
