"""A tiny Qwen2 reward model behind the real server: every pooling endpoint, batching-independent scores."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.support.model_server import RunningServer

TEXTS = [
    "hello world",
    "The answer is 42.",
    "x",
    "a much longer response that goes on and on about many things " * 6,
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4<|im_end|>\n",
    "héllo wörld ✓",
    "the the the the",
    "Numbers: 3.14159 2.71828 1.41421",
] * 4  # 32 texts of very different lengths


def direct_scores(model_path: Path, texts: list[str]) -> list[float]:
    """The reference: one `model(**inputs)` call per text, no padding at all."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForSequenceClassification.from_pretrained(model_path).eval()
    out = []
    with torch.inference_mode():
        for t in texts:
            out.append(float(model(**tok(t, return_tensors="pt")).logits[0, 0]))
    return out


def test_health_was_503_until_warmed_up_then_200(rm_server: RunningServer) -> None:
    assert 503 in rm_server.health_seen and rm_server.health_seen[-1] == 200
    with rm_server.client() as c:
        assert c.get("/health").status_code == 200
        assert c.get("/health_generate").status_code == 200


def test_concurrent_single_posts_match_direct_forwards(
    rm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    expected = direct_scores(tiny_models["qwen2_rm"], TEXTS)

    async def post_all() -> list[float]:
        async with httpx.AsyncClient(base_url=rm_server.url, timeout=30) as c:
            rs = await asyncio.gather(*(c.post("/classify", json={"text": t}) for t in TEXTS))
        assert all(r.status_code == 200 for r in rs), [r.text for r in rs if r.status_code != 200]
        return [r.json()["embedding"][0] for r in rs]

    got = asyncio.run(post_all())
    assert got == pytest.approx(expected, abs=1e-4)
    # The requests really were batched together (else this test proves nothing about padding).
    with rm_server.client() as c:
        metrics = c.get("/metrics").text
    sizes = [
        line for line in metrics.splitlines() if line.startswith("rewardfleet_model_server_batch_size_sum")
    ]
    counts = [
        line for line in metrics.splitlines() if line.startswith("rewardfleet_model_server_batch_size_count")
    ]
    assert float(sizes[0].split()[-1]) / float(counts[0].split()[-1]) > 1.5


def test_list_input_equals_single_inputs(rm_server: RunningServer, tiny_models: dict[str, Path]) -> None:
    expected = direct_scores(tiny_models["qwen2_rm"], TEXTS[:8])
    with rm_server.client() as c:
        batch = c.post("/classify", json={"text": TEXTS[:8]}).json()
        encode = c.post("/encode", json={"text": TEXTS[0]}).json()
    assert isinstance(batch, list) and len(batch) == 8
    assert [b["embedding"][0] for b in batch] == pytest.approx(expected, abs=1e-4)
    assert encode["embedding"] == pytest.approx([expected[0]], abs=1e-4)
    meta = batch[0]["meta_info"]
    assert set(meta) >= {"id", "finish_reason", "prompt_tokens", "e2e_latency"} and meta["prompt_tokens"] > 0


def test_input_ids_give_the_same_score_as_text(
    rm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(tiny_models["qwen2_rm"])(TEXTS[1])["input_ids"]
    with rm_server.client() as c:
        by_ids = c.post("/classify", json={"input_ids": ids}).json()
        by_text = c.post("/classify", json={"text": TEXTS[1]}).json()
        many = c.post("/classify", json={"input_ids": [ids, ids[:3]]}).json()
    assert by_ids["embedding"] == pytest.approx(by_text["embedding"], abs=1e-5)
    assert by_ids["meta_info"]["prompt_tokens"] == len(ids)
    assert len(many) == 2 and many[0]["embedding"] == pytest.approx(by_ids["embedding"], abs=1e-5)


def test_v1_embeddings_is_the_score_verl_reads(
    rm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    expected = direct_scores(tiny_models["qwen2_rm"], TEXTS[:3])
    with rm_server.client() as c:
        r = c.post("/v1/embeddings", json={"model": "tiny-rm", "input": TEXTS[:3]})
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list" and body["model"] == "tiny-rm"
    assert [d["index"] for d in body["data"]] == [0, 1, 2] and body["data"][0]["object"] == "embedding"
    assert [d["embedding"][-1] for d in body["data"]] == pytest.approx(expected, abs=1e-4)
    assert (
        body["usage"]["prompt_tokens"] > 0 and body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"]
    )


def test_v1_classify_shape(rm_server: RunningServer) -> None:
    with rm_server.client() as c:
        body = c.post("/v1/classify", json={"model": "tiny-rm", "input": ["good", "bad"]}).json()
    assert body["id"].startswith("classify-") and body["object"] == "list" and body["model"] == "tiny-rm"
    assert body["data"] == [
        {"index": 0, "label": "LABEL_0", "probs": [1.0], "num_classes": 1},
        {"index": 1, "label": "LABEL_0", "probs": [1.0], "num_classes": 1},
    ]


def test_v1_rerank_sorts_pairs_by_score(rm_server: RunningServer, tiny_models: dict[str, Path]) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    docs = ["Paris", "Berlin is big", "no idea", "the capital of France is Paris"]
    tok = AutoTokenizer.from_pretrained(tiny_models["qwen2_rm"])
    model = AutoModelForSequenceClassification.from_pretrained(tiny_models["qwen2_rm"]).eval()
    with torch.inference_mode():
        expected = [
            float(model(**tok("capital of France?", d, return_tensors="pt")).logits[0, 0]) for d in docs
        ]
    with rm_server.client() as c:
        ranked = c.post("/v1/rerank", json={"query": "capital of France?", "documents": docs}).json()
        top = c.post(
            "/v1/rerank",
            json={"query": "capital of France?", "documents": docs, "top_n": 2, "return_documents": False},
        ).json()
    assert [x["index"] for x in ranked] == sorted(range(4), key=lambda i: -expected[i])
    assert [x["score"] for x in ranked] == pytest.approx(sorted(expected, reverse=True), abs=1e-4)
    assert ranked[0]["document"] == docs[ranked[0]["index"]]
    assert len(top) == 2 and "document" not in top[0]


def test_info_routes_for_registration(rm_server: RunningServer) -> None:
    with rm_server.client() as c:
        info = c.get("/model_info").json()
        assert c.get("/get_model_info").json() == info
        server_info = c.get("/server_info").json()
        assert c.get("/get_server_info").json()["model_path"] == server_info["model_path"]
        models = c.get("/v1/models").json()
        load = c.get("/get_load").json()
        assert c.get("/v1/models/tiny-rm").json()["id"] == "tiny-rm"
        assert c.get("/v1/models/other").status_code == 404
    assert info["is_generation"] is False and info["architectures"] == ["Qwen2ForSequenceClassification"]
    assert info["model_type"] == "qwen2" and info["model_path"].endswith("qwen2-rm")
    assert server_info["served_model_name"] == "tiny-rm" and server_info["dp_size"] == 1
    assert server_info["rewardfleet"]["max_batch_size"] == 32 and "version" in server_info
    assert models["object"] == "list" and models["data"][0]["id"] == "tiny-rm"
    assert models["data"][0]["max_model_len"] == 512
    assert load == [
        {"dp_rank": 0, "num_reqs": 0, "num_waiting_reqs": 0, "num_running_reqs": 0, "num_tokens": 0}
    ]
    with rm_server.client() as c:
        assert c.get("/ready").status_code == 200


def test_metrics_exposition(rm_server: RunningServer) -> None:
    with rm_server.client() as c:
        c.post("/classify", json={"text": "count me"})
        c.post("/classify", json={"text": ""})
        text = c.get("/metrics").text
    for name in (
        "rewardfleet_model_server_requests_total",
        "rewardfleet_model_server_request_duration_seconds_bucket",
        "rewardfleet_model_server_batch_size_bucket",
        "rewardfleet_model_server_queue_wait_seconds_bucket",
        "rewardfleet_model_server_forward_seconds_bucket",
        "rewardfleet_model_server_queue_length",
        "rewardfleet_model_server_running_requests",
        "rewardfleet_model_server_ready 1.0",
        # SGLang's names for the same load (/get_load's numbers), read by the autoscaling rules of deploy/k8s
        "sglang:num_queue_reqs 0.0",
        "sglang:num_running_reqs 0.0",
    ):
        assert name in text, name
    assert 'rewardfleet_model_server_requests_total{endpoint="/classify",status="400"}' in text
    assert 'rewardfleet_model_server_queue_length{operation="score"} 0.0' in text


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/classify", {"text": ""}, "text must not be empty"),
        ("/classify", {"text": ["ok", "  "]}, "text[1] must not be empty"),
        ("/classify", {}, "exactly one of 'text' or 'input_ids'"),
        ("/classify", {"input_ids": [1, 999999]}, "outside the vocabulary"),
        ("/classify", {"text": "ab " * 700}, "longer than the model's context length (512 tokens)"),
        ("/encode", {"input_ids": []}, "input_ids must not be empty"),
        ("/generate", {"text": "hi"}, "needs a generation model"),
    ],
)
def test_bad_native_input_is_400_with_native_shape(
    rm_server: RunningServer, path: str, body: dict, needle: str
) -> None:
    with rm_server.client() as c:
        r = c.post(path, json=body)
    assert r.status_code == 400, r.text
    assert set(r.json()) == {"error"} and needle in r.json()["error"]["message"]


def test_wrongly_typed_native_field_is_400_error_response(rm_server: RunningServer) -> None:
    # A type fault SGLang's FastAPI validation catches: its ErrorResponse, even on a native route
    # (checked against SGLang's source in tests/sglang_conformance/test_native_errors.py).
    with rm_server.client() as c:
        r = c.post("/classify", json={"text": 5})
    assert r.status_code == 400, r.text
    body = r.json()
    assert set(body) == {"object", "message", "type", "param", "code"}
    assert (body["type"], body["code"]) == ("Bad Request", 400) and "text" in body["message"]


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/v1/embeddings", {"input": ""}, "input must not be empty"),
        ("/v1/embeddings", {"input": []}, "input must not be empty"),
        ("/v1/embeddings", {"input": [1, "a"]}, "input"),
        ("/v1/embeddings", {"input": "x", "dimensions": 8}, "dimensions=8 is not supported"),
        ("/v1/classify", {"input": "ab " * 700}, "context length"),
        ("/v1/rerank", {"query": "", "documents": ["a"]}, "query must not be empty"),
        (
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}]},
            "needs a generation model",
        ),
        ("/v1/score", {"query": "a", "items": ["b"], "label_token_ids": [1]}, "needs a generation model"),
    ],
)
def test_bad_openai_input_is_400_with_openai_shape(
    rm_server: RunningServer, path: str, body: dict, needle: str
) -> None:
    with rm_server.client() as c:
        r = c.post(path, json=body)
    assert r.status_code == 400, r.text
    err = r.json()
    assert set(err) == {"object", "message", "type", "param", "code"}
    assert err["object"] == "error" and err["code"] == 400 and needle in err["message"]


def test_malformed_json_is_400(rm_server: RunningServer) -> None:
    with rm_server.client() as c:
        r = c.post("/v1/embeddings", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["object"] == "error"


def test_score_pools_last_real_token_even_when_it_is_the_pad_id(
    rm_server: RunningServer, tiny_models: dict[str, Path]
) -> None:
    """SGLang pools at each sequence's true last token. A chat template may end with the pad token itself
    (`<|im_end|>` as pad); pooling "the rightmost non-pad token" (HF) then scores the wrong one."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = tiny_models["qwen2_rm"]
    pad = AutoTokenizer.from_pretrained(path).pad_token_id
    model = AutoModelForSequenceClassification.from_pretrained(path).eval()
    ends_in_pad, short = [11, 12, 13, pad], [11, 12, 13]
    with torch.inference_mode():
        hidden = model.base_model(input_ids=torch.tensor([ends_in_pad])).last_hidden_state
        expected = model.score(hidden[0, -1]).item()
        hf_head = model(input_ids=torch.tensor([ends_in_pad])).logits[0, 0].item()
    with rm_server.client() as c:
        # Batched with a shorter input, so right padding (with that same id) is in play too.
        got = c.post("/classify", json={"input_ids": [ends_in_pad, short]}).json()
    assert got[0]["embedding"][0] == pytest.approx(expected, abs=1e-4)
    assert abs(hf_head - expected) > 1e-4  # the HF head's pooling would have been wrong here
