"""Every request our `/pooling` takes is one vLLM 0.33.0's `PoolingRequest` takes, with vLLM's defaults; what
our server refuses by name is a real vLLM field; what vLLM rejects, ours rejects (vllm_standin.py runs vLLM's
classes). The responses to these requests are checked in test_responses.py."""

from __future__ import annotations

from typing import Any, get_args

import httpx
import pytest

from bench.harness.tiny_prm import STEP_TAG
from rewardfleet.services.model_server.routes.pooling import _inputs
from rewardfleet.services.model_server.schemas import PoolingRequest, PoolingTask
from tests.support.model_server import RunningServer

COMPLETION = "PoolingCompletionRequest"
CHAT_REQUEST = "PoolingChatRequest"
CHAT = [
    {"role": "user", "content": "What is 1 + 1?"},
    {"role": "assistant", "content": f"1 + 1 = 2{STEP_TAG}So the answer is 2{STEP_TAG}"},
]
TEXT = f"one plus one{STEP_TAG}is two{STEP_TAG}"

# (body, the vLLM class that takes it): every shape docs/model_server.md lists for /pooling.
ACCEPTED = [
    pytest.param({"input": TEXT}, COMPLETION, id="input-text"),
    pytest.param({"input": [TEXT, "no tag at all"]}, COMPLETION, id="input-texts"),
    pytest.param({"input": [40, 41, 42]}, COMPLETION, id="input-ids"),
    pytest.param({"input": [[40, 41], [42]]}, COMPLETION, id="input-id-lists"),
    pytest.param({"input": TEXT, "add_special_tokens": False}, COMPLETION, id="no-special-tokens"),
    pytest.param({"input": TEXT, "use_activation": False}, COMPLETION, id="raw-logits"),
    pytest.param({"input": TEXT, "task": "token_classify"}, COMPLETION, id="task"),
    pytest.param(
        {
            "input": TEXT,
            "model": "tiny-prm",
            "user": "u1",
            "request_id": "r1",
            "priority": 0,
            "padding": "do_not_pad",
            "truncation_side": "left",
            "encoding_format": "float",
            "embed_dtype": "float32",
            "endianness": "native",
            "use_activation": True,
        },
        COMPLETION,
        id="every-accepted-option",
    ),
    pytest.param({"messages": CHAT}, CHAT_REQUEST, id="messages"),
    pytest.param({"messages": CHAT[:1], "add_generation_prompt": True}, CHAT_REQUEST, id="generation-prompt"),
    pytest.param({"messages": CHAT, "continue_final_message": True}, CHAT_REQUEST, id="continue-final"),
    pytest.param(
        {"messages": CHAT, "chat_template_kwargs": {"flavour": "x"}, "add_special_tokens": True},
        CHAT_REQUEST,
        id="chat-options",
    ),
]


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{url}/pooling", json=body, headers=headers, timeout=60)


def _vllm_parse(vllm_url: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{vllm_url}/parse", json=body, timeout=30)


@pytest.mark.parametrize(("body", "vllm_class"), ACCEPTED)
def test_every_accepted_shape_is_a_vllm_pooling_request(
    body: dict[str, Any], vllm_class: str, vllm_url: str, prm_server: RunningServer
) -> None:
    parsed = _vllm_parse(vllm_url, body)
    assert parsed.status_code == 200, parsed.text
    assert parsed.json()["class"] == vllm_class
    ours = _post(prm_server.url, body)
    assert ours.status_code == 200, ours.text


def _default(fields: dict[str, Any], name: str) -> Any:
    value = fields[name]
    assert value not in ("<required>", "<factory>"), f"{name}: vLLM has no plain default"
    return value


def test_our_defaults_are_vllms(vllm_facts: dict[str, Any]) -> None:
    """What our route gives the runner when a field is left out equals the default of vLLM's field, for each
    of its two request classes (add_special_tokens differs between them), read from the classes."""
    completion = vllm_facts["requests"][COMPLETION]
    chat = vllm_facts["requests"][CHAT_REQUEST]
    (text_input,) = _inputs(PoolingRequest.model_validate({"input": TEXT}))
    assert text_input.add_special_tokens == _default(completion, "add_special_tokens")
    (ids_input,) = _inputs(PoolingRequest.model_validate({"input": [40, 41]}))
    assert ids_input.add_special_tokens == _default(completion, "add_special_tokens")
    (chat_input,) = _inputs(PoolingRequest.model_validate({"messages": CHAT}))
    assert chat_input.add_special_tokens == _default(chat, "add_special_tokens")
    assert chat_input.add_generation_prompt == _default(chat, "add_generation_prompt")
    assert chat_input.continue_final_message == _default(chat, "continue_final_message")
    assert chat_input.chat_template_kwargs == (_default(chat, "chat_template_kwargs") or {})
    # `use_activation` unset: what vLLM's PoolingParams make of it for a PRM's token_classify.
    assert (
        PoolingRequest.model_validate({"input": TEXT}).activation_on
        is (vllm_facts["token_classify_default_use_activation"])
    )
    # Every other field both sides have: the same default (None for add_special_tokens and request_id here
    # means "per class" and "generated", checked above and in test_responses.py).
    ours = {n: f.default for n, f in PoolingRequest.model_fields.items()}
    for name in sorted(ours.keys() - {"add_special_tokens", "request_id", "input", "messages"}):
        vllm_side = completion if name in completion else chat
        assert name in vllm_side, f"{name} is no field of vLLM's pooling requests"
        assert ours[name] == _default(vllm_side, name), name


def test_our_task_names_are_vllms(vllm_facts: dict[str, Any]) -> None:
    """A task vLLM does not know is a type error at `body.task` on both sides; one it knows but a PRM does
    not serve is refused by name (below)."""
    assert set(get_args(PoolingTask)) == set(vllm_facts["pooling_tasks"])


@pytest.mark.parametrize(
    ("body", "explicit", "other"),
    [
        pytest.param({"input": TEXT}, {"add_special_tokens": True}, None, id="completion"),
        pytest.param(
            {"messages": CHAT},
            {"add_special_tokens": False, "add_generation_prompt": False, "continue_final_message": False},
            {"add_generation_prompt": True},
            id="chat",
        ),
    ],
)
def test_a_request_without_options_is_answered_as_with_vllms_defaults(
    body: dict[str, Any],
    explicit: dict[str, Any],
    other: dict[str, Any] | None,
    vllm_facts: dict[str, Any],
    prm_server: RunningServer,
) -> None:
    """On the running server: leaving the options out gives the answer of sending vLLM's defaults (read from
    its classes: `explicit` only names them), and a non-default value is seen (so the comparison can fail)."""
    fields = vllm_facts["requests"][CHAT_REQUEST if "messages" in body else COMPLETION]
    defaults = {name: _default(fields, name) for name in explicit}
    plain = _post(prm_server.url, body).json()
    spelled = _post(prm_server.url, {**body, **defaults}).json()
    assert plain["data"] == spelled["data"] and plain["usage"] == spelled["usage"]
    if other is not None:
        changed = _post(prm_server.url, {**body, **other}).json()
        assert changed["usage"]["prompt_tokens"] != plain["usage"]["prompt_tokens"]


def _check_error(vllm_url: str, resp: httpx.Response) -> dict[str, Any]:
    """Our 400 body, after checking that it is a valid vLLM `ErrorResponse` with the status as its code."""
    assert resp.status_code == 400, resp.text
    checked = httpx.post(f"{vllm_url}/check/error", json=resp.json(), timeout=30)
    assert checked.status_code == 200, checked.text
    error = dict(resp.json()["error"])
    assert error["code"] == 400
    return error


# Fields vLLM takes that this server refuses by name (docs/model_server.md, "Process reward models").
REFUSED = [
    pytest.param({"input": TEXT, "truncate_prompt_tokens": 3}, "truncate_prompt_tokens", id="truncation"),
    pytest.param({"input": TEXT, "padding": "max_length"}, "padding", id="padding"),
    pytest.param({"input": TEXT, "priority": 1}, "priority", id="priority"),
    pytest.param({"messages": CHAT, "chat_template": "{{ messages }}"}, "chat_template", id="chat-template"),
    pytest.param({"input": TEXT, "mm_processor_kwargs": {}}, "mm_processor_kwargs", id="mm-kwargs"),
    pytest.param({"input": TEXT, "dimensions": 4}, "dimensions", id="dimensions"),
    pytest.param({"input": TEXT, "encoding_format": "base64"}, "encoding_format", id="base64"),
    pytest.param({"input": TEXT, "task": "embed"}, "task", id="other-task"),
]


@pytest.mark.parametrize(("body", "field"), REFUSED)
def test_refused_fields_are_real_vllm_fields(
    body: dict[str, Any], field: str, vllm_url: str, vllm_facts: dict[str, Any], prm_server: RunningServer
) -> None:
    parsed = _vllm_parse(vllm_url, body)
    assert parsed.status_code == 200, parsed.text  # vLLM's class takes the value: the refusal is ours
    assert field in vllm_facts["requests"][parsed.json()["class"]]
    error = _check_error(vllm_url, _post(prm_server.url, body))
    assert error["param"] == field
    assert field in error["message"]


# Bodies vLLM's classes reject, with the field the rejection is about.
REJECTED = [
    pytest.param({"input": TEXT, "normalize": True}, "normalize", id="normalize"),
    pytest.param({"input": TEXT, "normalize": None}, "normalize", id="normalize-null"),
    pytest.param({"input": TEXT, "task": "encode"}, "task", id="task-encode"),
    pytest.param({"input": TEXT, "task": "score"}, "task", id="task-score"),
    pytest.param({"input": TEXT, "task": "steps"}, "task", id="task-unknown"),
    pytest.param(
        {"messages": CHAT, "add_generation_prompt": True, "continue_final_message": True},
        "continue_final_message",
        id="generation-prompt-and-continue",
    ),
    pytest.param({}, "input", id="no-input"),
    pytest.param({"input": 5}, "input", id="input-number"),
    pytest.param({"input": [1.5]}, "input", id="input-float-ids"),
    pytest.param({"input": TEXT, "truncate_prompt_tokens": -2}, "truncate_prompt_tokens", id="truncation"),
    pytest.param({"input": TEXT, "priority": "high"}, "priority", id="priority-text"),
    pytest.param({"input": TEXT, "use_activation": "maybe"}, "use_activation", id="activation-text"),
    pytest.param({"input": TEXT, "padding": "sideways"}, "padding", id="padding-unknown"),
]


@pytest.mark.parametrize(("body", "field"), REJECTED)
def test_what_vllm_rejects_ours_rejects_naming_the_same_field(
    body: dict[str, Any], field: str, vllm_url: str, prm_server: RunningServer
) -> None:
    theirs = _vllm_parse(vllm_url, body)
    assert theirs.status_code == 400, theirs.text
    vllm_error = theirs.json()["error"]
    error = _check_error(vllm_url, _post(prm_server.url, body))
    assert field in error["message"]
    if vllm_error["param"] is not None:
        assert field in vllm_error["param"]
        if error["param"] is not None:
            assert error["param"] == vllm_error["param"]


@pytest.mark.parametrize("alias", ["softmax", "activation"])
def test_aliases_vllm_dropped_are_refused_not_ignored(
    alias: str, vllm_url: str, vllm_facts: dict[str, Any], prm_server: RunningServer
) -> None:
    """vLLM 0.33 has no `softmax` / `activation` field any more (older releases took them for
    `use_activation`) and ignores them as unknown fields. A client still sending `softmax: false` for raw
    logits would silently get probabilities, so this server refuses them by name instead."""
    body = {"input": TEXT, alias: False}
    assert _vllm_parse(vllm_url, body).status_code == 200
    assert all(alias not in fields for fields in vllm_facts["requests"].values())
    error = _check_error(vllm_url, _post(prm_server.url, body))
    assert error["param"] == alias and "use_activation" in error["message"]
