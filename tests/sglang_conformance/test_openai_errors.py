"""Error bodies on the stand-in's /v1/* routes against SGLang 0.5.23's source: a body FastAPI refuses gets the
RequestValidationError handler's `ErrorResponse` (`"type": "Bad Request"`), while a request the OpenAI
serving layer refuses gets `create_error_response`'s (`"type": "BadRequestError"`, its default `err_type`)."""

from __future__ import annotations

import httpx
import pytest

from tests.sglang_conformance import sglang_source as sgl
from tests.sglang_conformance.test_native_errors import assert_validation_error


def test_sglang_uses_two_types_for_a_400_on_v1() -> None:
    # The two facts the stand-in copies, as SGLang's own source states them.
    assert sgl.serving_error_default_type() == "BadRequestError"
    assert sgl.validation_error_fields() == {"type": "Bad Request", "code": 400}


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"{not json", "JSON"), (b"[1]", "object"), (b'{"input": 5}', "input")],
    ids=["not-json", "not-an-object", "wrong-field-type"],
)
def test_body_refused_by_validation_is_bad_request(
    standins: dict[str, str], content: bytes, needle: str
) -> None:
    resp = httpx.post(
        standins["encoder"] + "/v1/embeddings",
        content=content,
        headers={"content-type": "application/json"},
        timeout=30,
    )
    assert_validation_error(resp)
    assert needle in resp.json()["message"]


def assert_serving_error(resp: httpx.Response) -> dict[str, object]:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    sgl.protocol().ErrorResponse.model_validate(body)
    assert (body["object"], body["type"], body["code"]) == ("error", sgl.serving_error_default_type(), 400)
    return dict(body)


def test_request_refused_by_the_serving_layer_is_bad_request_error(standins: dict[str, str]) -> None:
    resp = httpx.post(standins["encoder"] + "/v1/embeddings", json={"input": "   "}, timeout=30)
    body = assert_serving_error(resp)
    # The same words as SGLang's OpenAIServingEmbedding._validate_request.
    assert body["message"] in sgl.validate_request_messages(sgl.SERVING_EMBEDDING)


def test_route_of_another_model_kind_is_bad_request_error(standins: dict[str, str]) -> None:
    # SGLang: the tokenizer manager's ValueError, caught by the serving handler's
    # `create_error_response(str(e))`.
    chat = {"model": "x", "messages": [{"role": "user", "content": "hi"}]}
    assert_serving_error(httpx.post(standins["encoder"] + "/v1/chat/completions", json=chat, timeout=30))
    assert_serving_error(httpx.post(standins["judge"] + "/v1/embeddings", json={"input": "hi"}, timeout=30))
