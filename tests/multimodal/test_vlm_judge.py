"""A VLM judge end to end: a tiny Qwen2-VL (built at test time) served by the CPU model server, behind the
real sglang-router, called by the gateway's built-in `judge` with a sample's image. Plus the server's own
image checks and SGLang's protocol classes on the request and the response."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from bench.harness.processes import free_port
from bench.harness.router_process import RouterProcess
from bench.harness.tiny_models import build_tiny_qwen2_vl
from rewardfleet.router import RouterConfig
from tests.multimodal.images import data_url, png_bytes, png_url
from tests.sglang_conformance import sglang_source as sgl
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import RunningServer, start_server
from tests.support.router import FAST_HEALTH


@dataclass
class Stack:
    server: RunningServer
    router: RouterProcess
    gateway: Gateway


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("vlm")
    router_port = free_port()
    config = {
        "workers": 1,
        "routers": {"judge": f"127.0.0.1:{router_port}"},
        "functions": {
            "judge": {"reward_kwargs": {"generation": {"max_tokens": 40}, "verdict": {"reasoning_chars": 0}}}
        },
    }
    with ExitStack() as cleanup, ThreadPoolExecutor(1) as pool:
        # The gateway starts while the model is built and served (it needs the router only per call).
        gateway_start = pool.submit(start_gateway, tmp, config, None)
        # (runs after the pool has waited for the start, whatever failed meanwhile)
        cleanup.callback(lambda: gateway_start.exception() or gateway_start.result().proc.stop())
        model = build_tiny_qwen2_vl(tmp / "vlm")
        server = start_server(
            model, tmp, "--served-model-name", "vlm", "--max-image-pixels", "40000", name="vlm"
        )
        cleanup.callback(server.process.stop)
        gateway = gateway_start.result()
        cfg = RouterConfig(
            port=router_port, prometheus_port=free_port(), worker_urls=[server.url], policy="round_robin",
            **FAST_HEALTH,
        )  # fmt: skip
        router = RouterProcess(cfg, tmp / "router.log")
        cleanup.callback(router.stop)
        router.start()
        router.wait_ready(timeout_s=30)
        yield Stack(server, router, gateway)


def _chat(url: str, content: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    body = {"model": "vlm", "messages": [{"role": "user", "content": content}], "max_tokens": 6, **extra}
    return httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)


def _image(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def test_vlm_chat_with_images_conforms_to_sglang(stack: Stack) -> None:
    content = [
        _image(png_url(40, 30)),
        {"type": "text", "text": "Is the square red?"},
        _image(png_url(60, 60)),
    ]
    request = {"model": "vlm", "messages": [{"role": "user", "content": content}], "max_tokens": 6}
    sgl.protocol().ChatCompletionRequest.model_validate(request)  # SGLang accepts what the judge sends
    # Through the router, constrained to a verdict: only "Yes" or "No" can come out.
    resp = _chat(stack.router.url, content, regex="(Yes|No)")
    assert resp.status_code == 200, resp.text[:500]
    body = resp.json()
    sgl.protocol().ChatCompletionResponse.model_validate(body)
    assert body["choices"][0]["message"]["content"] in ("Yes", "No")
    # The images are in the prompt: two images of different sizes make more prompt tokens than none.
    text_only = _chat(stack.server.url, [{"type": "text", "text": "Is the square red?"}]).json()
    assert body["usage"]["prompt_tokens"] > text_only["usage"]["prompt_tokens"] + 2


def test_vlm_batches_mixed_requests_like_each_alone(stack: Stack) -> None:
    """Concurrent greedy requests with and without images, constrained differently, batched together, get
    what each gets alone; each row keeps its own grammar and token budget."""
    import concurrent.futures

    cases: list[tuple[list[dict[str, Any]], dict[str, Any]]] = [
        ([_image(png_url(30, 30, (255, 0, 0))), {"type": "text", "text": "a"}], {"regex": "(Yes|No)"}),
        ([_image(png_url(50, 20, (0, 0, 255))), {"type": "text", "text": "bb"}], {"max_tokens": 3}),
        ([{"type": "text", "text": "no image here"}], {"ebnf": 'root ::= "A" | "B"'}),
        ([_image(png_url(20, 60)), _image(png_url(40, 40)), {"type": "text", "text": "two"}], {}),
    ]
    greedy = {"temperature": 0.0}
    alone = [_chat(stack.server.url, c, **greedy, **kw).json() for c, kw in cases]
    with concurrent.futures.ThreadPoolExecutor(len(cases) * 2) as pool:
        futures = [pool.submit(_chat, stack.server.url, c, **greedy, **kw) for c, kw in cases * 2]
        together = [f.result().json() for f in futures]
    text = [b["choices"][0]["message"]["content"] for b in alone]
    assert [b["choices"][0]["message"]["content"] for b in together] == text * 2
    assert [b["usage"] for b in together] == [b["usage"] for b in alone] * 2
    assert text[0] in ("Yes", "No") and text[2] in ("A", "B"), text
    assert alone[1]["usage"]["completion_tokens"] == 3 and alone[3]["usage"]["completion_tokens"] == 6


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("data:image/png;base64,***", "invalid base64"),
        (data_url(b"not an image"), "not an image"),
        (png_url(300, 300), "max_image_pixels"),
        ("http://169.254.169.254/latest/meta-data", "no URL is fetched"),
    ],
)
def test_the_server_refuses_bad_images_naming_the_part(stack: Stack, url: str, words: str) -> None:
    resp = _chat(stack.server.url, [{"type": "text", "text": "q"}, _image(url)])
    assert resp.status_code == 400, resp.text[:300]
    body = resp.json()
    sgl.protocol().ErrorResponse.model_validate(body)
    assert body["param"] == "messages[0].content[1].image_url.url" and words in body["message"], body


def test_what_a_vlm_does_not_serve_is_a_400(stack: Stack) -> None:
    body = {"model": "vlm", "query": "Is it red?", "items": [" Yes"], "label_token_ids": [1, 2]}
    resp = httpx.post(f"{stack.server.url}/v1/score", json=body, timeout=30)
    assert resp.status_code == 400 and "does not serve" in resp.json()["message"], resp.text[:300]


def test_gateway_judge_shows_the_image_to_the_vlm(stack: Stack) -> None:
    sample = {
        "data_source": "chart_qa",
        "reward_fn": "judge",
        "solution_str": "The bar is red.",
        "ground_truth": "red",
        "prompt": [{"role": "user", "content": [{"type": "text", "text": "What colour is the bar?"}]}],
        "images": [png_url(40, 40)],
    }
    resp = httpx.post(f"{stack.gateway.url}/score", json=sample, timeout=120)
    assert resp.status_code == 200, resp.text[:500]
    result = resp.json()
    assert result["status"] == "ok", result["error"]
    assert result["extra"]["judge_verdict"] in ("correct", "incorrect") and result["score"] in (0.0, 1.0)
    without = httpx.post(f"{stack.gateway.url}/score", json={**sample, "images": None}, timeout=120).json()
    # The image reached the model: the judge's prompt was longer by the image's vision tokens.
    assert result["extra"]["usage"]["prompt_tokens"] > without["extra"]["usage"]["prompt_tokens"] + 2
    # The gateway's own limits hold before any judge call: a bad image is a 422 naming it.
    bad = httpx.post(f"{stack.gateway.url}/score", json={**sample, "images": [data_url(png_bytes()[:20])]})
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "images[0]"


async def test_rule_then_judge_and_group_judges_send_the_images(stack: Stack) -> None:
    """Each judge's chat request carries the sample's images: the VLM server decodes them (a good image is
    judged, a non-image is refused with a 400 naming the part, which the judge reports as its failure)."""
    import aiohttp

    from rewardfleet.reward_fns import rule_then_judge
    from rewardfleet.reward_fns.groups import listwise_judge, pairwise_judge

    good, bad = [png_url(24, 24)], [data_url(b"not an image: the server must refuse it")]
    addresses = {"judge": stack.router.address}

    def members(images: list[str]) -> list[dict[str, Any]]:
        return [
            {"uid": i, "group_index": i, "data_source": "d", "solution_str": f"It is {c}.",
             "ground_truth": "red", "extra_info": {}, "prompt": "What colour is the bar?", "images": images}
            for i, c in enumerate(("red", "blue"))
        ]  # fmt: skip

    async with aiohttp.ClientSession() as session:
        for group_fn in (pairwise_judge, listwise_judge):
            kwargs = {"router_addresses": addresses, "http_client": session}
            judged = await group_fn.compute_group_score(members(good), [None, None], **kwargs)
            assert all(m["extra"]["failed_comparisons"] == 0 for m in judged), (group_fn.__name__, judged)
            refused = await group_fn.compute_group_score(members(bad), [None, None], **kwargs)
            assert all(m["extra"]["failed_comparisons"] > 0 for m in refused), (group_fn.__name__, refused)

        async def rule_judge(images: list[str]) -> dict[str, Any]:
            return await rule_then_judge.compute_score(
                "math_dapo", "The answer is 4. Answer: 4", "4", {}, router_addresses=addresses,
                http_client=session, prompt="2+2?", images=images, on_judge_error="rule",
                generation={"max_tokens": 40}, verdict={"reasoning_chars": 0},
            )  # fmt: skip

        judged_one = await rule_judge(good)
        assert judged_one["judge_called"] and "JudgeCallError" not in judged_one["judge_error"], judged_one
        refused_one = await rule_judge(bad)
        assert "JudgeCallError" in refused_one["judge_error"] and "not an image" in refused_one["judge_error"]
