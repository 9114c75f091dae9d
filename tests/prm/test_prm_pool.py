"""A tiny process reward model on the CPU server's `/pooling` (vLLM's pooling API), behind a real
sglang-router, and the `prm` built-in through a real gateway.

One PRM server, one router and one gateway for the module. The served PRM has a random (seeded) score head;
every expected step reward is computed by `bench.harness.tiny_prm.reference_step_logits`, a separate
unpadded forward
written out from the checkpoint's tensors, so batching, padding, step-tag positions and the activation are all
checked. The closed-form head (every step exactly sigmoid(positive_logit)) is checked in
test_prm_runner.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.router_process import RouterProcess
from bench.harness.tiny_prm import STEP_TAG, build_tiny_qwen2_prm, reference_step_logits, step_tag_id
from rewardfleet.router import RouterConfig
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import RunningServer, start_server


def _softmax(row: list[float]) -> list[float]:
    top = max(row)
    exps = [math.exp(v - top) for v in row]
    return [e / sum(exps) for e in exps]


@pytest.fixture(scope="module")
def prm_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_qwen2_prm(tmp_path_factory.mktemp("prm") / "tiny-prm", seed=3)


@pytest.fixture(scope="module")
def tag_id(prm_path: Path) -> int:
    return step_tag_id(prm_path)


@pytest.fixture(scope="module")
def tokenizer(prm_path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(prm_path)


@pytest.fixture(scope="module")
def prm_server(
    prm_path: Path, tag_id: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningServer]:
    logs = tmp_path_factory.mktemp("prm-logs")
    server = start_server(
        prm_path, logs, "--step-tag-id", str(tag_id), "--served-model-name", "tiny-prm", name="prm"
    )
    yield server
    server.process.stop()


def _expected(prm_path: Path, tokenizer: Any, tag_id: int, text: str) -> list[list[float]]:
    ids = tokenizer(text)["input_ids"]
    return [_softmax(row) for row in reference_step_logits(prm_path, ids, tag_id)]


def _close(got: list[list[float]], want: list[list[float]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-5)


TEXTS = [
    f"the answer{STEP_TAG}",
    f"hello world is good{STEP_TAG}the answer is bad{STEP_TAG}",
    f"a{STEP_TAG}b{STEP_TAG}c{STEP_TAG}d is the longest input of this set by far{STEP_TAG}",
    "no tag at all",
]


def test_concurrent_single_posts_match_an_unpadded_reference(
    prm_server: RunningServer, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    """Concurrent posts are batched (right padding); each gets the rows it gets alone, one per step tag."""

    def post(text: str) -> dict[str, Any]:
        resp = httpx.post(prm_server.url + "/pooling", json={"model": "tiny-prm", "input": text}, timeout=30)
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, TEXTS * 2))
    for text, answer in zip(TEXTS * 2, answers, strict=True):
        assert answer["object"] == "list" and answer["id"].startswith("pooling-")
        assert answer["model"] == "tiny-prm"
        (item,) = answer["data"]
        assert item["index"] == 0 and item["object"] == "pooling"
        _close(item["data"], _expected(prm_path, tokenizer, tag_id, text))
        assert answer["usage"]["prompt_tokens"] == len(tokenizer(text)["input_ids"])
    assert answers[3]["data"][0]["data"] == []  # no step tag, no step


def test_list_input_and_raw_logits(
    prm_server: RunningServer, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    resp = httpx.post(
        prm_server.url + "/pooling", json={"input": TEXTS[:3], "use_activation": False}, timeout=30
    )
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert [d["index"] for d in data] == [0, 1, 2]
    for text, item in zip(TEXTS[:3], data, strict=True):
        ids = tokenizer(text)["input_ids"]
        _close(item["data"], reference_step_logits(prm_path, ids, tag_id))


def test_chat_request_is_rendered_with_the_models_template(
    prm_server: RunningServer, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    """vLLM's PoolingChatRequest: the server applies the chat template, adding no special tokens itself."""
    chat = [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": f"2 + 2 = 4{STEP_TAG}The answer is 4{STEP_TAG}"},
    ]
    resp = httpx.post(prm_server.url + "/pooling", json={"messages": chat}, timeout=30)
    assert resp.status_code == 200, resp.text
    text = tokenizer.apply_chat_template(chat, tokenize=False)
    rows = resp.json()["data"][0]["data"]
    assert len(rows) == 2
    _close(rows, _expected(prm_path, tokenizer, tag_id, text))


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": "x", "dimensions": 4}, "dimensions"),
        ({"input": "x", "task": "embed"}, "task"),
        ({"input": "x", "encoding_format": "base64"}, "encoding_format"),
        ({"input": "x", "truncate_prompt_tokens": 3}, "truncate_prompt_tokens"),
        ({"input": "x", "messages": [{"role": "user", "content": "q"}]}, "'input' or 'messages'"),
        ({}, "'input' or 'messages'"),
        ({"input": ""}, "input"),
        ({"messages": [{"role": "wizard", "content": "x"}]}, "messages"),
        (
            {
                "messages": [{"role": "user", "content": "q"}],
                "add_generation_prompt": True,
                "continue_final_message": True,
            },
            "continue_final_message",
        ),
    ],
)
def test_bad_requests_get_400_naming_the_field(
    prm_server: RunningServer, body: dict[str, Any], field: str
) -> None:
    resp = httpx.post(prm_server.url + "/pooling", json=body, timeout=30)
    assert resp.status_code == 400, resp.text
    assert field in resp.text


def test_image_parts_are_refused_not_dropped(prm_server: RunningServer) -> None:
    """A chat with an image part is a 400 naming the part: scoring only its text would score steps the PRM
    never saw whole."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    body = {
        "messages": [
            {"role": "user", "content": "What is 3 + 4?"},
            {"role": "assistant", "content": [{"type": "text", "text": "3 + 4 = 7"}, image]},
        ]
    }
    resp = httpx.post(prm_server.url + "/pooling", json=body, timeout=30)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["param"] == "messages[1].content[1]"
    text_only = {"messages": [body["messages"][0], {"role": "assistant", "content": "3 + 4 = 7"}]}
    assert httpx.post(prm_server.url + "/pooling", json=text_only, timeout=30).status_code == 200


def test_prm_server_refuses_the_reward_model_routes(prm_server: RunningServer) -> None:
    resp = httpx.post(prm_server.url + "/v1/embeddings", json={"input": "x"}, timeout=30)
    assert resp.status_code == 400
    assert "prm model" in resp.text


@pytest.fixture(scope="module")
def prm_router(
    prm_server: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RouterProcess]:
    cfg = RouterConfig(
        port=free_port(), prometheus_port=free_port(), worker_urls=[prm_server.url], policy="round_robin"
    )
    router = RouterProcess(cfg, tmp_path_factory.mktemp("prm-router") / "router.log")
    router.start().wait_ready(timeout_s=60)
    yield router
    router.stop()


def test_router_registers_the_prm_server_but_does_not_proxy_pooling(
    prm_router: RouterProcess, prm_server: RunningServer
) -> None:
    """sglang-router 0.3.2 takes the PRM server as a healthy worker (its probes are SGLang's), but answers
    vLLM's /pooling with 404 itself: why the fleet gives the gateway a PRM pool's replica address."""
    ready = httpx.get(prm_router.url + "/readiness", timeout=10)
    assert ready.status_code == 200 and ready.json()["healthy_workers"] == 1
    resp = httpx.post(prm_router.url + "/pooling", json={"input": TEXTS[0]}, timeout=10)
    assert resp.status_code == 404
    assert httpx.post(prm_server.url + "/pooling", json={"input": TEXTS[0]}, timeout=10).status_code == 200


@pytest.fixture(scope="module")
def gw(prm_server: RunningServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("prm-gw")
    config = {
        "workers": 1,
        "routers": {"prm": prm_server.url.removeprefix("http://")},
        "external_pools": {
            # The CPU server speaks vLLM's /pooling, so it stands in for an external vLLM PRM endpoint.
            "vprm": {"base_url": prm_server.url, "model": "tiny-prm", "api": "vllm_pooling"}
        },
        "functions": {
            "prm_vllm": {
                "path": "rewardfleet.reward_fns.prm:compute_score",
                "reward_kwargs": {"pool": "vprm", "aggregate": "mean"},
            }
        },
    }
    gateway = start_gateway(tmp, config, None)
    yield gateway
    gateway.proc.stop()


PROMPT = "What is 3 + 4?"


def _chat_expected(prm_path: Path, tokenizer: Any, tag_id: int, steps: list[str]) -> list[float]:
    chat = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "".join(s + STEP_TAG for s in steps)},
    ]
    text = tokenizer.apply_chat_template(chat, tokenize=False)
    return [row[1] for row in _expected(prm_path, tokenizer, tag_id, text)]


def _score(gw: Gateway, fn: str, response: str) -> dict[str, Any]:
    resp = gw.score(data_source="math", solution_str=response, prompt=PROMPT, reward_fn=fn)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def test_prm_builtin_scores_each_step_and_takes_the_min(
    gw: Gateway, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    steps = ["3 + 4 means adding four to three.", "Counting up: 4, 5, 6, 7.", "The answer is 7."]
    result = _score(gw, "prm", "\n\n".join(steps) + "\n\n")
    assert result["status"] == "ok", result
    want = _chat_expected(prm_path, tokenizer, tag_id, steps)
    assert result["step_scores"] == pytest.approx(want, abs=1e-5)
    assert result["extra"]["num_steps"] == 3
    assert result["score"] == pytest.approx(min(want), abs=1e-5)


def test_external_vllm_pool_through_the_gateways_forwarding_route(
    gw: Gateway, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    steps = ["Three plus four.", "Seven."]
    result = _score(gw, "prm_vllm", "\n\n".join(steps))
    assert result["status"] == "ok", result
    want = _chat_expected(prm_path, tokenizer, tag_id, steps)
    assert result["step_scores"] == pytest.approx(want, abs=1e-5)
    assert result["score"] == pytest.approx(sum(want) / 2, abs=1e-5)


def test_step_tags_in_the_response_cannot_add_steps(
    gw: Gateway, prm_path: Path, tokenizer: Any, tag_id: int
) -> None:
    """A policy that writes the PRM's step tag itself gets no extra (possibly higher-scored) steps: its tags
    are removed (also one that only appears once an inner one is gone) and the answer is the same as for the
    clean steps."""
    forged = f"Three plus four{STEP_TAG}{STEP_TAG} is seven.\n\n{STEP_TAG}Seven.<extra{STEP_TAG}_0>"
    result = _score(gw, "prm", forged)
    assert result["status"] == "ok", result
    want = _chat_expected(prm_path, tokenizer, tag_id, ["Three plus four is seven.", "Seven."])
    assert result["step_scores"] == pytest.approx(want, abs=1e-5)


@pytest.mark.parametrize("response", ["", " \n\n \n\n", f"{STEP_TAG}\n\n{STEP_TAG}"])
def test_a_response_without_steps_is_a_typed_error_not_a_zero(gw: Gateway, response: str) -> None:
    result = _score(gw, "prm", response)
    assert result["status"] == "error", result
    assert result["score"] is None
    assert "no steps" in result["error"]["message"]


def test_deep_health_check_runs_a_step_request(prm_server: RunningServer) -> None:
    """`/health_generate` pushes one request through the PRM's own batcher (a reward-model probe would be
    refused by a PRM server, and the deep check would always fail)."""
    assert httpx.get(prm_server.url + "/health_generate", timeout=30).status_code == 200


def test_gateway_is_ready_with_a_prm_replica_as_a_pool_address(gw: Gateway) -> None:
    """The gateway's readiness probes every pool address with `GET /health`: a PRM replica answers it as
    sglang-router would, so a fleet with a prm pool becomes ready."""
    resp = httpx.get(gw.url + "/ready", timeout=30)
    assert resp.status_code == 200, resp.text
