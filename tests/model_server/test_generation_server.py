"""A tiny Qwen2 causal LM (GenRM judge) behind the real server: /generate, chat, completions, /v1/score."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from bench.harness.waiting import eventually_async
from tests.support.model_server import RunningServer

PROMPTS = ["hi", "The judge says", "x y z", "a longer prompt about grading answers " * 4]


def hf_greedy(model_path: Path, prompt: str, max_new_tokens: int) -> list[int]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    with torch.inference_mode():
        inputs = tok(prompt, return_tensors="pt")
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            min_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
        )
    return out[0, inputs["input_ids"].shape[1] :].tolist()


def test_concurrent_greedy_generation_matches_hf_generate(
    lm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    budgets = [3, 7, 5, 9]
    expected = [hf_greedy(tiny_models["qwen2_lm"], p, n) for p, n in zip(PROMPTS, budgets, strict=True)]

    async def post_all() -> list[dict]:
        async with httpx.AsyncClient(base_url=lm_server.url, timeout=60) as c:
            rs = await asyncio.gather(
                *(
                    c.post(
                        "/generate",
                        json={
                            "text": p,
                            "sampling_params": {"max_new_tokens": n, "temperature": 0, "ignore_eos": True},
                        },
                    )
                    for p, n in zip(PROMPTS, budgets, strict=True)
                )
            )
        assert all(r.status_code == 200 for r in rs), [r.text for r in rs]
        return [r.json() for r in rs]

    outs = asyncio.run(post_all())
    assert [o["output_ids"] for o in outs] == expected  # per-request max_new_tokens, left padding right
    for o, n in zip(outs, budgets, strict=True):
        assert o["meta_info"]["finish_reason"] == {"type": "length", "length": n}
        assert o["meta_info"]["completion_tokens"] == n and o["meta_info"]["prompt_tokens"] > 0


def test_generate_with_input_ids_and_text_agree(
    lm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2_lm"])
    sp = {"max_new_tokens": 6, "temperature": 0, "ignore_eos": True}
    with lm_server.client() as c:
        a = c.post("/generate", json={"text": "The judge says", "sampling_params": sp}).json()
        b = c.post(
            "/generate", json={"input_ids": tok("The judge says")["input_ids"], "sampling_params": sp}
        ).json()
        many = c.post("/generate", json={"text": ["The judge says", "hi"], "sampling_params": sp}).json()
    assert a["output_ids"] == b["output_ids"] and a["text"] == b["text"] == tok.decode(a["output_ids"])
    assert isinstance(many, list) and many[0]["output_ids"] == a["output_ids"]


def test_stop_string_trims_text_and_reports_match(
    lm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2_lm"])
    sp = {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}
    with lm_server.client() as c:
        free = c.post("/generate", json={"text": "hi", "sampling_params": sp}).json()
        full_text = str(tok.decode(free["output_ids"]))
        stop = full_text[3:5]  # a string the greedy continuation is known to produce
        assert stop.strip(), full_text
        stopped = c.post("/generate", json={"text": "hi", "sampling_params": {**sp, "stop": [stop]}}).json()
    assert stopped["meta_info"]["finish_reason"] == {"type": "stop", "matched": stop}
    assert stopped["text"] == full_text[: full_text.find(stop)]
    assert len(stopped["output_ids"]) < len(free["output_ids"])


def test_stop_token_id_finishes_with_matched_token(lm_server: RunningServer) -> None:
    sp = {"max_new_tokens": 12, "temperature": 0, "ignore_eos": True}
    with lm_server.client() as c:
        free = c.post("/generate", json={"text": "hi", "sampling_params": sp}).json()
        target = free["output_ids"][2]
        r = c.post(
            "/generate", json={"text": "hi", "sampling_params": {**sp, "stop_token_ids": [target]}}
        ).json()
    first = free["output_ids"].index(target)
    assert r["output_ids"] == free["output_ids"][: first + 1]
    assert r["meta_info"]["finish_reason"] == {"type": "stop", "matched": target}


def test_seeded_sampling_is_reproducible(lm_server: RunningServer) -> None:
    sp = {
        "max_new_tokens": 8,
        "temperature": 1.0,
        "top_p": 0.9,
        "top_k": 50,
        "sampling_seed": 7,
        "ignore_eos": True,
    }
    with lm_server.client() as c:
        a = c.post("/generate", json={"text": "hi", "sampling_params": sp}).json()
        b = c.post("/generate", json={"text": "hi", "sampling_params": sp}).json()
    assert a["output_ids"] == b["output_ids"] and len(a["output_ids"]) == 8


def test_chat_completions_uses_the_chat_template(
    lm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2_lm"])
    messages = [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": "Is 2+2=4?"}]
    prompt_ids = tok(
        tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True),
        add_special_tokens=False,
    )["input_ids"]
    with lm_server.client() as c:
        direct = c.post(
            "/generate",
            json={"input_ids": prompt_ids, "sampling_params": {"max_new_tokens": 5, "temperature": 0}},
        ).json()
        r = c.post(
            "/v1/chat/completions",
            json={"model": "tiny-judge", "messages": messages, "max_tokens": 5, "temperature": 0},
        )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "tiny-judge"
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"] == direct["text"]
    assert choice["finish_reason"] in ("stop", "length") and "matched_stop" in choice
    assert body["usage"]["prompt_tokens"] == len(prompt_ids)
    assert body["usage"]["total_tokens"] == len(prompt_ids) + body["usage"]["completion_tokens"]


def test_completions_with_matched_stop(lm_server: RunningServer) -> None:
    with lm_server.client() as c:
        free = c.post(
            "/v1/completions", json={"prompt": "hi", "max_tokens": 10, "temperature": 0, "ignore_eos": True}
        ).json()
        text = free["choices"][0]["text"]
        stop = text[2:4]
        r = c.post(
            "/v1/completions",
            json={
                "prompt": ["hi", "yo"],
                "max_tokens": 10,
                "temperature": 0,
                "ignore_eos": True,
                "stop": stop,
            },
        ).json()
    assert r["object"] == "text_completion" and len(r["choices"]) == 2
    first = r["choices"][0]
    assert first["finish_reason"] == "stop" and first["matched_stop"] == stop
    assert first["text"] == text[: text.find(stop)]
    assert free["choices"][0]["finish_reason"] == "length" and free["choices"][0]["matched_stop"] is None


def test_v1_score_gives_label_token_probabilities(
    lm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2_lm"])
    model = AutoModelForCausalLM.from_pretrained(tiny_models["qwen2_lm"]).eval()
    labels = [tok.convert_tokens_to_ids("y"), tok.convert_tokens_to_ids("n")]
    query, items = "Is the answer right? ", ["Yes.", "No, it is wrong", "x"]
    with torch.inference_mode():
        expected = []
        for item in items:
            logits = model(**tok(query + item, return_tensors="pt")).logits[0, -1]
            expected.append(torch.softmax(logits, -1)[labels].tolist())
    with lm_server.client() as c:
        raw = c.post("/v1/score", json={"query": query, "items": items, "label_token_ids": labels}).json()
        soft = c.post(
            "/v1/score",
            json={"query": query, "items": items, "label_token_ids": labels, "apply_softmax": True},
        ).json()
    assert raw["object"] == "scoring" and len(raw["scores"]) == 3
    for got, want in zip(raw["scores"], expected, strict=True):
        assert got == pytest.approx(want, abs=1e-5)
    for got, want in zip(soft["scores"], expected, strict=True):
        assert got == pytest.approx([w / sum(want) for w in want], abs=1e-4)


def test_generation_server_registration_info(lm_server: RunningServer) -> None:
    with lm_server.client() as c:
        info = c.get("/model_info").json()
        assert c.get("/health_generate").status_code == 200
    assert info["is_generation"] is True and info["architectures"] == ["Qwen2ForCausalLM"]


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/generate", {"text": ""}, "text must not be empty"),
        # SGLang refuses only max_new_tokens < 0 (0 is a prefill, tests/model_server/test_prompt_logprobs.py).
        ("/generate", {"text": "hi", "sampling_params": {"max_new_tokens": -1}}, "max_new_tokens"),
        (
            "/generate",
            {"text": "hi", "sampling_params": {"max_new_tokens": 65}},
            "exceeds this server's limit",
        ),
        ("/generate", {"text": "hi", "sampling_params": {"temperature": -1}}, "temperature"),
        ("/generate", {"text": "hi", "sampling_params": {"top_k": 0}}, "top_k"),
        ("/generate", {"text": "hi", "stream": True}, "stream"),
        (
            "/generate",
            {"text": "ab " * 240, "sampling_params": {"max_new_tokens": 60}},
            "maximum context length",
        ),
        ("/classify", {"text": "hi"}, "needs a reward, encoder or clip model"),
    ],
)
def test_bad_generation_input_is_400(lm_server: RunningServer, path: str, body: dict, needle: str) -> None:
    with lm_server.client() as c:
        r = c.post(path, json=body)
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n=1"),
        ({"messages": [{"role": "wizard", "content": "hi"}]}, "role"),
        (
            {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1000},
            "exceeds this server's limit",
        ),
    ],
)
def test_bad_chat_input_is_400_openai_shape(lm_server: RunningServer, body: dict, needle: str) -> None:
    with lm_server.client() as c:
        r = c.post("/v1/chat/completions", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["object"] == "error" and needle in r.json()["message"]


def test_score_rejects_out_of_vocab_labels(lm_server: RunningServer) -> None:
    with lm_server.client() as c:
        r = c.post("/v1/score", json={"query": "q", "items": ["a"], "label_token_ids": [10**6]})
    assert r.status_code == 400 and "outside the vocabulary" in r.json()["message"]


def test_client_that_disconnects_while_queued_is_dropped(lm_server: RunningServer) -> None:
    """A request whose client leaves while it waits behind a long batch is cancelled (counted as 499)."""
    sp = {"max_new_tokens": 64, "temperature": 0, "ignore_eos": True}

    def count_499(metrics: str) -> float:
        prefix = 'rewardfleet_model_server_requests_total{endpoint="/generate",status="499"}'
        lines = [line for line in metrics.splitlines() if line.startswith(prefix)]
        return float(lines[0].split()[-1]) if lines else 0.0

    with lm_server.client() as c:
        before = count_499(c.get("/metrics").text)

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=lm_server.url, timeout=60) as c:
            # Occupy the forward thread with a batch of long generations...
            running = asyncio.ensure_future(
                c.post("/generate", json={"text": ["ab " * 150] * 64, "sampling_params": sp})
            )

            async def batch_running() -> bool:
                return bool((await c.get("/get_load")).json()[0]["num_running_reqs"] >= 1)

            await eventually_async(batch_running, timeout_s=60, what="the long batch running", retry_on=())
            # ...and give up on a request queued behind it.
            with pytest.raises(httpx.TimeoutException):
                await c.post("/generate", json={"text": "bye", "sampling_params": sp}, timeout=0.1)
            assert (await running).status_code == 200

    asyncio.run(scenario())
    with lm_server.client() as c:
        assert (
            c.post("/generate", json={"text": "ok", "sampling_params": {"max_new_tokens": 1}}).status_code
            == 200
        )
        after = count_499(c.get("/metrics").text)
    assert after == before + 1
