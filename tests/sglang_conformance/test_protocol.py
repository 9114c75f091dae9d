"""Every route the fleet uses, answered by the CPU model server and by the SGLang stand-in, checked against
SGLang 0.5.23's own code: its pydantic response classes (`model_validate`, and no field they do not declare)
where they import, and the field sets its http_server.py / tokenizer_manager.py build, read with `ast`, where
they do not (see sglang_source.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sglang_conformance import sglang_source as sgl
from tests.support.model_server import RunningServer

Backends = tuple[dict[str, RunningServer], dict[str, str]]


@pytest.fixture(scope="module")
def urls(cpu_servers: dict[str, RunningServer], standins: dict[str, str]) -> dict[str, dict[str, str]]:
    return {
        "cpu": {kind: s.url for kind, s in cpu_servers.items()},
        "standin": standins,
    }


BACKENDS = ("cpu", "standin")


def conforms(cls_name: str, body: Any, item_cls: str | None = None) -> Any:
    """Validate with SGLang's class; refuse fields the class does not declare (pydantic would drop them)."""
    cls = getattr(sgl.protocol(), cls_name)
    obj = cls.model_validate(body)
    extra = set(body) - set(cls.model_fields)
    assert not extra, f"{cls_name} has no fields {sorted(extra)}"
    if item_cls is not None:
        item = getattr(sgl.protocol(), item_cls)
        for row in body["data"] if "data" in body else body["choices"]:
            assert not set(row) - set(item.model_fields), (
                f"{item_cls} has no fields {set(row) - set(item.model_fields)}"
            )
    return obj


def post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=60)


@pytest.mark.parametrize("backend", BACKENDS)
def test_v1_embeddings(urls: dict[str, dict[str, str]], backend: str) -> None:
    for kind in ("reward", "encoder"):
        resp = post(urls[backend][kind], "/v1/embeddings", {"model": "m", "input": ["a b", "c"]})
        assert resp.status_code == 200, resp.text
        obj = conforms("EmbeddingResponse", resp.json(), "EmbeddingObject")
        assert [d.index for d in obj.data] == [0, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_v1_classify(urls: dict[str, dict[str, str]], backend: str) -> None:
    resp = post(urls[backend]["reward"], "/v1/classify", {"model": "m", "input": ["a", "b"]})
    assert resp.status_code == 200, resp.text
    obj = conforms("ClassifyResponse", resp.json(), "ClassifyData")
    assert obj.data[0].probs == [1.0]  # softmax over one logit


@pytest.mark.parametrize("backend", BACKENDS)
def test_v1_chat_and_completions(urls: dict[str, dict[str, str]], backend: str) -> None:
    url = urls[backend]["judge"]
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    resp = post(url, "/v1/chat/completions", chat)
    assert resp.status_code == 200, resp.text
    conforms("ChatCompletionResponse", resp.json(), "ChatCompletionResponseChoice")
    resp = post(url, "/v1/completions", {"model": "m", "prompt": "hi", "max_tokens": 4})
    assert resp.status_code == 200, resp.text
    conforms("CompletionResponse", resp.json(), "CompletionResponseChoice")


@pytest.mark.parametrize("backend", BACKENDS)
def test_v1_score_text_and_token_ids(urls: dict[str, dict[str, str]], backend: str) -> None:
    url = urls[backend]["judge"]
    for query, items in (("Is it right?", ["yes", "no"]), ([5, 6, 7], [[8], [9, 10]])):
        body = {"query": query, "items": items, "label_token_ids": [3, 4], "apply_softmax": True}
        sgl.protocol().ScoringRequest.model_validate(body)  # what we send is what SGLang accepts
        resp = post(url, "/v1/score", body)
        assert resp.status_code == 200, resp.text
        obj = conforms("ScoringResponse", resp.json())
        assert len(obj.scores) == 2 and all(sum(row) == pytest.approx(1.0) for row in obj.scores)


@pytest.mark.parametrize("backend", BACKENDS)
def test_generate_meta_info_has_sglang_fields(urls: dict[str, dict[str, str]], backend: str) -> None:
    common, generation = sgl.meta_info_keys()
    resp = post(urls[backend]["judge"], "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 3}})
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert {"text", "output_ids", "meta_info"} <= set(out)
    missing = (common | generation) - set(out["meta_info"])
    assert not missing, f"/generate meta_info lacks {sorted(missing)}"
    assert out["meta_info"]["finish_reason"]["type"] in ("stop", "length")


@pytest.mark.parametrize("backend", BACKENDS)
def test_classify_and_encode_meta_info(urls: dict[str, dict[str, str]], backend: str) -> None:
    common, _ = sgl.meta_info_keys()
    for kind, path in (("reward", "/classify"), ("encoder", "/encode")):
        resp = post(urls[backend][kind], path, {"text": ["a", "b"]})
        assert resp.status_code == 200, resp.text
        for out in resp.json():
            assert set(out) >= {"embedding", "meta_info"}
            missing = common - set(out["meta_info"])
            assert not missing, f"{path} meta_info lacks {sorted(missing)}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_model_info_and_server_info(urls: dict[str, dict[str, str]], backend: str) -> None:
    for kind, url in urls[backend].items():
        info = httpx.get(url + "/model_info", timeout=10).json()
        missing = sgl.model_info_keys() - set(info)
        assert not missing, f"{backend} {kind} /model_info lacks {sorted(missing)}"
        assert info["is_generation"] is (kind == "judge")
        server = httpx.get(url + "/server_info", timeout=10).json()
        # Every server arg we report is one SGLang's ServerArgs has, under the same name.
        unknown = set(server) - sgl.server_args_fields() - sgl.SERVER_INFO_EXTRA_KEYS
        assert not unknown, f"{backend} {kind} /server_info has fields SGLang does not: {sorted(unknown)}"
        assert {"model_path", "served_model_name", "tp_size", "dp_size", "version"} <= set(server)
        models = httpx.get(url + "/v1/models", timeout=10).json()
        conforms("ModelList", models, "ModelCard")


@pytest.mark.parametrize("backend", BACKENDS)
def test_error_bodies(urls: dict[str, dict[str, str]], backend: str) -> None:
    # /v1/*: SGLang's ErrorResponse.
    resp = post(urls[backend]["reward"], "/v1/embeddings", {"model": "m", "input": ""})
    assert resp.status_code == 400, resp.text
    conforms("ErrorResponse", resp.json())
    # A native route's ValueError (here: empty input): `_create_error_response`'s {"error": {"message"}}.
    resp = post(urls[backend]["reward"], "/classify", {"text": ""})
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert set(body) == set(sgl.native_error_shape()) and set(body["error"]) == set(
        sgl.native_error_shape()["error"]
    )
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_ready_route(urls: dict[str, dict[str, str]], backend: str) -> None:
    assert "/ready" in sgl.routes()
    for url in urls[backend].values():
        assert httpx.get(url + "/ready", timeout=10).status_code == 200


def test_sglang_serves_no_get_load() -> None:
    """power_of_two polls /get_load, which SGLang 0.5.23 does not serve (it has /v1/loads)."""
    routes = sgl.routes()
    assert "/get_load" not in routes
    assert "/v1/loads" in sgl.v1_loads_routes()
