"""Every answer of our `/pooling` is vLLM 0.33.0's `PoolingResponse`: it validates as one and is exactly
what vLLM's classes give for those values (no field missing, none extra, same defaults), with vLLM's ids and
model name; our error bodies are its `ErrorResponse` (test_requests.py). vllm_standin.py runs vLLM's
classes."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests.support.model_server import RunningServer
from tests.support.vllm import SERVED_NAME
from tests.vllm_conformance.test_requests import ACCEPTED

VLLM_ID = re.compile(r"pooling-[0-9a-f]{16}")


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
    resp = httpx.post(f"{url}/pooling", json=body, headers=headers, timeout=60)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


@pytest.mark.parametrize(("body", "vllm_class"), ACCEPTED)
def test_every_answer_is_a_vllm_pooling_response(
    body: dict[str, Any], vllm_class: str, vllm_url: str, prm_server: RunningServer
) -> None:
    ours = _post(prm_server.url, body)
    checked = httpx.post(f"{vllm_url}/check/response", json=ours, timeout=30)
    assert checked.status_code == 200, checked.text
    assert ours == checked.json()["rebuilt"]
    # The shape vLLM gives the same request: one data entry per input, one row per step tag, its ids.
    theirs = _post(vllm_url, body)
    assert [len(d["data"]) for d in ours["data"]] == [len(d["data"]) for d in theirs["data"]]
    assert (ours["object"], theirs["object"]) == ("list", "list")
    assert {d["object"] for d in ours["data"]} == {d["object"] for d in theirs["data"]} == {"pooling"}
    assert ours["model"] == theirs["model"] == SERVED_NAME
    if "request_id" in body:
        assert ours["id"] == theirs["id"] == f"pooling-{body['request_id']}"
    else:
        assert VLLM_ID.fullmatch(ours["id"]) and VLLM_ID.fullmatch(theirs["id"])


def test_response_id_and_model_as_vllm_names_them(vllm_url: str, prm_server: RunningServer) -> None:
    """`pooling-` + the `X-Request-Id` header, else the body's `request_id`; the served model's name whatever
    the request's `model` says (vLLM 0.33 answers /pooling for any `model`, as its own name)."""
    body = {"input": "x<extra_0>", "request_id": "from-body", "model": "some-other-name"}
    for url in (prm_server.url, vllm_url):
        assert _post(url, body)["id"] == "pooling-from-body"
        assert _post(url, body, headers={"X-Request-Id": "from-header"})["id"] == "pooling-from-header"
        assert _post(url, body)["model"] == SERVED_NAME


def test_a_response_vllm_would_not_give_is_caught(vllm_url: str, prm_server: RunningServer) -> None:
    """The check above can fail: vLLM's rebuild of an answer with a field missing or one too many differs."""
    ours = _post(prm_server.url, {"input": "x<extra_0>"})
    missing = {**ours, "usage": {k: v for k, v in ours["usage"].items() if k != "completion_tokens_details"}}
    extra = {**ours, "steps": 1}
    for body in (missing, extra):
        checked = httpx.post(f"{vllm_url}/check/response", json=body, timeout=30)
        assert checked.status_code == 200 and checked.json()["rebuilt"] != body
    bad = httpx.post(f"{vllm_url}/check/response", json={**ours, "data": [{"data": [[0.5]]}]}, timeout=30)
    assert bad.status_code == 422
