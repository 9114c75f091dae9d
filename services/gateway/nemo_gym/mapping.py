"""A NeMo Gym verify body as a `/score` sample, and a gateway result as the verify answer.

The body is `{responses_create_params, response, ...task fields}` (OpenAI Responses API shapes). Only what the
mapping reads is checked, each problem a pydantic-style error whose `loc` names the body's field
(`["response", "output", 2, "content", 0, "text"]`): the route answers them 422. Everything else of the
body is echoed back untouched, as NeMo Gym's own servers do, except the answer's own keys (`reward`,
`reward_components`, `reward_failed`, `reward_error`): only the gateway sets those.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rewardfleet.services.gateway.nemo_gym.config import NeMoGymServer
from rewardfleet.services.gateway.schemas import ScoreResult

BODY_FIELDS = ("responses_create_params", "response")
# Answer keys the gateway sets; a function's extra key never overwrites them.
RESERVED = frozenset({*BODY_FIELDS, "reward", "reward_components", "reward_failed", "reward_error"})
_INPUT_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


class BodyError(ValueError):
    """The verify body is malformed; `errors` are pydantic-style with `loc` in the body's names."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__("; ".join(str(e["msg"]) for e in errors))
        self.errors = errors


def _error(loc: tuple[str | int, ...], msg: str, kind: str = "value_error") -> BodyError:
    return BodyError([{"type": kind, "loc": loc, "msg": msg}])


def _mapping(value: Any, loc: tuple[str | int, ...]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        if value is None:
            raise _error(loc, "Field required", "missing")
        raise _error(loc, f"must be an object, not {type(value).__name__}", "dict_type")
    return value


def _list(value: Any, loc: tuple[str | int, ...]) -> list[Any]:
    if not isinstance(value, list):
        raise _error(loc, f"must be a list, not {type(value).__name__}", "list_type")
    return value


def _text(value: Any, loc: tuple[str | int, ...]) -> str:
    if not isinstance(value, str):
        raise _error(loc, f"must be a string, not {type(value).__name__}", "string_type")
    return value


def output_text(response: Mapping[str, Any]) -> str:
    """The assistant's text: every `output_text` part of every `message` item, joined (reasoning left out)."""
    parts: list[str] = []
    for i, item in enumerate(_list(response.get("output"), ("response", "output"))):
        item = _mapping(item, ("response", "output", i))
        if item.get("type") != "message":
            continue
        for j, part in enumerate(_list(item.get("content"), ("response", "output", i, "content"))):
            part = _mapping(part, ("response", "output", i, "content", j))
            if part.get("type") == "output_text":
                parts.append(_text(part.get("text"), ("response", "output", i, "content", j, "text")))
    return "".join(parts)


def _content_text(content: Any, loc: tuple[str | int, ...]) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for j, part in enumerate(_list(content, loc)):
        part = _mapping(part, (*loc, j))
        if part.get("type") in ("input_text", "output_text", "text"):
            texts.append(_text(part.get("text"), (*loc, j, "text")))
    return "".join(texts)


def _items_as_messages(items: list[Any], loc: tuple[str | int, ...]) -> list[dict[str, Any]]:
    """Responses API items as chat messages: messages, function calls (an assistant turn's tool calls),
    function call outputs (tool results); reasoning and other items are left out."""
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        item = _mapping(item, (*loc, i))
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = _INPUT_ROLES.get(str(item.get("role")))
            if role is None:
                raise _error((*loc, i, "role"), f"unknown role {str(item.get('role'))[:40]!r}")
            text = _content_text(item.get("content"), (*loc, i, "content"))
            messages.append({"role": role, "content": text})
        elif kind == "function_call":
            call = {
                "id": _text(item.get("call_id"), (*loc, i, "call_id")),
                "type": "function",
                "function": {
                    "name": _text(item.get("name"), (*loc, i, "name")),
                    "arguments": _text(item.get("arguments"), (*loc, i, "arguments")),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _content_text(output, (*loc, i, "output"))
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": _text(item.get("call_id"), (*loc, i, "call_id")),
                    "content": text,
                }
            )
    return messages


def exchange_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The prompt (`responses_create_params.input`, `instructions` as a system message) and the response's
    output as one chat trajectory."""
    params = body["responses_create_params"]
    messages: list[dict[str, Any]] = []
    if isinstance(params.get("instructions"), str) and params["instructions"]:
        messages.append({"role": "system", "content": params["instructions"]})
    raw = params.get("input")
    if isinstance(raw, str):
        messages.append({"role": "user", "content": raw})
    elif raw is not None:
        messages += _items_as_messages(
            _list(raw, ("responses_create_params", "input")), ("responses_create_params", "input")
        )
    messages += _items_as_messages(body["response"]["output"], ("response", "output"))
    return messages


def task_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in BODY_FIELDS}


def score_body(name: str, spec: NeMoGymServer, body: Mapping[str, Any], uid: str) -> dict[str, Any]:
    """The `/score` body for one verify body (BodyError when it is malformed)."""
    _mapping(body.get("responses_create_params"), ("responses_create_params",))
    response = _mapping(body.get("response"), ("response",))
    text = output_text(response)
    tasks = task_fields(body)
    if spec.extra_info == "*":
        extra_info = dict(tasks)
    else:
        extra_info = {k: tasks[k] for k in spec.extra_info if k in tasks}
    sample: dict[str, Any] = {
        "data_source": spec.data_source or f"nemo_gym/{name}",
        "reward_fn": spec.reward_fn,
        "solution_str": text,
        "ground_truth": tasks.get(spec.ground_truth) if spec.ground_truth else None,
        "extra_info": extra_info,
        "uid": uid,
    }
    if spec.response == "messages":
        sample["messages"] = exchange_messages(body)
    return sample


def answer(
    spec: NeMoGymServer, body: Mapping[str, Any], result: ScoreResult, reward: float
) -> dict[str, Any]:
    """The verify answer: the body, then the function's extras (`result_fields`) and `answer_fields`, then
    `reward` and (when the function or composite gave them) `reward_components`; a flagged fallback adds
    `reward_failed`."""
    # a body's own reward keys (forged, or an earlier answer posted again) are never echoed as ours
    out = {k: v for k, v in body.items() if k not in RESERVED or k in BODY_FIELDS}
    wanted = spec.result_fields
    for key, value in result.extra.items():
        if key in RESERVED or (wanted is None and key in body) or (wanted is not None and key not in wanted):
            continue
        out[key] = value
    for key, source in spec.answer_fields.items():
        if key not in RESERVED:
            out[key] = (
                reward if source == "reward" else (None if source is None else result.extra.get(source))
            )
    out["reward"] = reward
    if result.reward_components is not None:
        out["reward_components"] = result.reward_components
    if result.status != "ok":
        out["reward_failed"] = True
        out["reward_error"] = result.error.model_dump() if result.error else {"type": result.status}
    return out
