"""Bad input gets the error envelope with a 4xx, never a 500."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.gateway import Gateway


def _error(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    return resp.json()["error"]


def test_malformed_json(gw: Gateway) -> None:
    err = _error(httpx.post(f"{gw.url}/score", content=b'{"data_source": "d", "solution_str": '), 422)
    assert err["type"] == "ValidationError" and "Invalid JSON" in err["message"]
    assert err["fields"][0]["loc"] == ["body"]


@pytest.mark.parametrize(
    ("body", "loc", "needle"),
    [
        ({"solution_str": "x"}, ["body", "data_source"], "Field required"),
        ({"data_source": "d"}, ["body", "solution_str"], "Field required"),
        ({"data_source": 3, "solution_str": "x"}, ["body", "data_source"], "valid string"),
        ({"data_source": "d", "solution_str": "x", "extra_info": [1]}, ["body", "extra_info"], "object"),
        ({"data_source": "d", "solution_str": "x", "prompt": 5}, ["body", "prompt", "str"], "valid string"),
        ([1, 2], ["body"], "object"),
    ],
)
def test_wrong_types_name_the_field(gw: Gateway, body: object, loc: list, needle: str) -> None:
    err = _error(httpx.post(f"{gw.url}/score", json=body), 422)
    assert any(f["loc"] == loc and needle in f["msg"] for f in err["fields"]), err


def test_json_without_content_type_is_accepted(gw: Gateway) -> None:
    resp = httpx.post(
        f"{gw.url}/score",
        content=b'{"data_source":"d","response":"1","label":"1","reward_fn":"verl_sync"}',
        headers={"content-type": "text/plain"},
    )
    assert resp.status_code == 200 and resp.json()["score"] == 1.0


def test_body_over_limit_by_content_length(gw: Gateway) -> None:
    big = {"data_source": "d", "solution_str": "x" * (70 * 1024)}
    err = _error(httpx.post(f"{gw.url}/score", json=big), 413)
    assert err["type"] == "PayloadTooLarge" and "65536" in err["message"]


def test_body_over_limit_when_streamed(gw: Gateway) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"data_source": "d", "solution_str": "'
        for _ in range(40):
            yield b"x" * 4096
        yield b'"}'

    err = _error(httpx.post(f"{gw.url}/score", content=chunks()), 413)  # chunked: no Content-Length
    assert err["type"] == "PayloadTooLarge"
    # The gateway is fine afterwards.
    assert httpx.get(f"{gw.url}/health").status_code == 200


def test_batch_over_max_samples(gw: Gateway) -> None:
    samples = [{"data_source": "d", "solution_str": "x", "reward_fn": "verl_sync"}] * 51
    err = _error(httpx.post(f"{gw.url}/score/batch", json={"samples": samples}), 413)
    assert err["type"] == "BatchTooLarge" and "50" in err["message"]


def test_batch_with_unknown_function_names_the_sample(gw: Gateway) -> None:
    samples = [
        {"data_source": "d", "solution_str": "x", "reward_fn": "verl_sync"},
        {"data_source": "d", "solution_str": "x", "reward_fn": "nope"},
    ]
    err = _error(httpx.post(f"{gw.url}/score/batch", json={"samples": samples}), 404)
    assert err["message"].startswith("samples[1]: unknown reward_fn 'nope'")


def test_batch_wrong_type_names_the_sample_field(gw: Gateway) -> None:
    samples = [{"data_source": "d", "solution_str": "x"}, {"data_source": "d", "solution_str": 5}]
    err = _error(httpx.post(f"{gw.url}/score/batch", json={"samples": samples}), 422)
    assert err["fields"][0]["loc"] == ["body", "samples", 1, "solution_str"]


def test_unknown_route_and_method(gw: Gateway) -> None:
    assert _error(httpx.get(f"{gw.url}/nope"), 404)["type"] == "HTTPError"
    assert _error(httpx.get(f"{gw.url}/score"), 405)["type"] == "HTTPError"
