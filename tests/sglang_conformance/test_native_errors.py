"""Error bodies on SGLang's native routes (/generate, /classify, /encode), CPU model server and stand-in,
against what SGLang 0.5.23's http_server.py builds for the same fault (read with `ast`) and, for the
`/generate` schema gate, the exact text its own contract decoder (`sglang.api.v1.api_types`, imported from
the wheel) produces."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sglang_conformance import sglang_source as sgl
from tests.support.model_server import RunningServer

BACKENDS = ("cpu", "standin")


@pytest.fixture(scope="module")
def urls(cpu_servers: dict[str, RunningServer], standins: dict[str, str]) -> dict[str, dict[str, str]]:
    return {"cpu": {kind: s.url for kind, s in cpu_servers.items()}, "standin": standins}


def assert_validation_error(resp: httpx.Response) -> None:
    """SGLang's RequestValidationError handler: its `ErrorResponse` class, type/code from its source."""
    assert resp.status_code == 400, resp.text
    body = resp.json()
    cls = sgl.protocol().ErrorResponse
    cls.model_validate(body)
    assert set(body) == set(cls.model_fields), body
    expected = sgl.validation_error_fields()
    assert (body["type"], body["code"], body["object"]) == (expected["type"], expected["code"], "error")
    assert isinstance(body["message"], str) and body["message"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("kind", "path"), [("reward", "/classify"), ("encoder", "/encode"), ("judge", "/generate")]
)
def test_wrong_field_type_is_error_response(
    urls: dict[str, dict[str, str]], backend: str, kind: str, path: str
) -> None:
    # `text` is `Optional[Union[List[str], str]]`-typed in SGLang's request dataclasses: an int fails FastAPI.
    resp = httpx.post(urls[backend][kind] + path, json={"text": 5}, timeout=60)
    assert_validation_error(resp)
    assert "text" in resp.json()["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_body_not_json_is_error_response(urls: dict[str, dict[str, str]], backend: str) -> None:
    resp = httpx.post(
        urls[backend]["reward"] + "/classify",
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert_validation_error(resp)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "sampling_params",
    [
        {"max_new_tokens": "x"},
        {"max_new_tokens": 4.0},
        {"temperature": "hot"},
        [{"max_new_tokens": 4, "top_p": True}],
    ],
)
def test_generate_schema_violation_is_contract_text(
    urls: dict[str, dict[str, str]], backend: str, sampling_params: Any
) -> None:
    assert sgl.generate_contract_body() == "{'error': contract_error}"
    body = {"text": "hello", "sampling_params": sampling_params}
    expected = sgl.generate_contract_error(body)
    assert expected is not None, "SGLang's contract gate admits this body; the case tests nothing"
    resp = httpx.post(urls[backend]["judge"] + "/generate", json=body, timeout=60)
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": expected}


@pytest.mark.parametrize("backend", BACKENDS)
def test_unknown_path_is_error_response_with_status_type(
    urls: dict[str, dict[str, str]], backend: str
) -> None:
    assert sgl.http_exception_type_is_status_code()
    resp = httpx.post(urls[backend]["reward"] + "/no_such_route", json={}, timeout=60)
    assert resp.status_code == 404, resp.text
    body = resp.json()
    sgl.protocol().ErrorResponse.model_validate(body)
    assert set(body) == set(sgl.protocol().ErrorResponse.model_fields)
    assert (body["type"], body["code"]) == ("404", 404)


@pytest.mark.parametrize("backend", BACKENDS)
def test_generate_without_input_is_handler_value_error(urls: dict[str, dict[str, str]], backend: str) -> None:
    # Passes validation and the contract gate; SGLang's tokenizer manager raises ValueError (no text, no ids),
    # which `_create_error_response` answers as {"error": {"message"}}.
    body = {"sampling_params": {"max_new_tokens": 4}}
    assert sgl.generate_contract_error(body) is None
    resp = httpx.post(urls[backend]["judge"] + "/generate", json=body, timeout=60)
    assert resp.status_code == 400, resp.text
    got = resp.json()
    assert set(got) == set(sgl.native_error_shape()) and set(got["error"]) == set(
        sgl.native_error_shape()["error"]
    )
    assert isinstance(got["error"]["message"], str) and got["error"]["message"]
