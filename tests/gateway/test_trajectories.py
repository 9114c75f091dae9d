"""Trajectories through a real gateway (issue 26): `messages` on samples, their 422s, step/turn scores and
their aggregate, the `tool_use` built-in."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.support.gateway import Gateway

ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "a + b",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    },
}
MUL = {**ADD, "function": {**ADD["function"], "name": "mul", "description": "a * b"}}


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def three_turns(final: str = "5 * 4 = 20\n#### 20") -> list[dict[str, Any]]:
    """user → assistant calls add (valid) → tool → assistant calls mul (valid) and add with a string
    argument (invalid) → two tool results → assistant answers."""
    return [
        {"role": "system", "content": "You can call tools."},
        {"role": "user", "content": "What is (2 + 3) * 4?"},
        {"role": "assistant", "content": "", "tool_calls": [call("c1", "add", '{"a": 2, "b": 3}')]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c2", "mul", '{"a": 5, "b": 4}'), call("c3", "add", '{"a": "5"}')],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "20"},
        {"role": "tool", "tool_call_id": "c3", "content": "error: b is required"},
        {"role": "assistant", "content": [{"type": "text", "text": final}]},
    ]


def _ok(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["status"] == "ok", body
    return body


def test_three_turn_tool_trajectory(gw: Gateway) -> None:
    body = _ok(
        gw.score(
            data_source="tools/arith",
            reward_fn="tool_use",
            messages=three_turns(),
            ground_truth="20",
            extra_info={"tools": [ADD, MUL]},
        )
    )
    # turns: add ok (1.0); mul ok + add invalid (0.5); the answer, checked by gsm8k (1.0)
    assert body["turn_scores"] == [1.0, 0.5, 1.0]
    assert body["score"] == pytest.approx(0.5 * 1.0 + 0.5 * (1.0 + 0.5) / 2)
    assert body["step_scores"] is None and "turn_scores" not in body["extra"]
    extra = body["extra"]
    assert (extra["tool_calls"], extra["valid_tool_calls"], extra["answered"]) == (3, 2, True)
    assert extra["invalid_calls"] == ["add: 'b' is a required property"]
    wrong = _ok(
        gw.score(
            data_source="tools/arith",
            reward_fn="tool_use",
            messages=three_turns("#### 21"),
            ground_truth="20",
            extra_info={"tools": [ADD, MUL]},
        )
    )
    assert wrong["turn_scores"] == [1.0, 0.5, 0.0] and wrong["score"] == pytest.approx(0.375)


def test_tool_use_ends_on_a_call_and_undeclared_tools(gw: Gateway) -> None:
    cut = three_turns()[:5]  # ends on the second call: no answer
    body = _ok(
        gw.score(
            data_source="d",
            reward_fn="tool_use",
            messages=cut,
            ground_truth="20",
            extra_info={"tools": [ADD]},
        )
    )
    assert body["turn_scores"] == [1.0, 0.0]  # mul is not declared here, the string argument is invalid
    assert body["extra"]["answered"] is False and body["score"] == pytest.approx(0.5 * 0.0 + 0.5 * 0.5)
    assert "tool 'mul' is not declared" in body["extra"]["invalid_calls"]


@pytest.mark.parametrize(
    "parameters",
    [
        {"$ref": "#"},  # a cycle that never consumes the instance
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(1100)}},  # too large
        {"type": "nonsense"},  # not a schema
    ],
)
def test_tool_use_hostile_schema_is_a_typed_error(gw: Gateway, parameters: dict[str, Any]) -> None:
    tool = {"type": "function", "function": {"name": "add", "parameters": parameters}}
    resp = gw.score(
        data_source="d",
        reward_fn="tool_use",
        messages=three_turns(),
        ground_truth="20",
        extra_info={"tools": [tool]},
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["error"] is not None, json.dumps(body)
    assert (body["status"], body["score"], body["error"]["type"]) == ("error", None, "ToolSchemaError")


def test_tool_use_backtracking_pattern_ends_at_the_timeout(gw: Gateway) -> None:
    """A sample's schema whose `pattern` backtracks catastrophically holds one worker until `timeout_s` (5 s
    here), then the worker is replaced and the gateway scores the next trajectory as usual."""
    evil = {
        "type": "function",
        "function": {
            "name": "add",
            "parameters": {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(a+)+$"}}},
        },
    }
    messages = three_turns()
    messages[2] = {"role": "assistant", "tool_calls": [call("c1", "add", json.dumps({"a": "a" * 40 + "!"}))]}
    resp = gw.score(
        data_source="d",
        reward_fn="tool_use",
        messages=messages,
        ground_truth="20",
        extra_info={"tools": [evil, MUL]},
    )
    body = resp.json()
    assert (body["status"], body["error"]["type"]) == ("timeout", "Timeout"), body
    after = _ok(
        gw.score(
            data_source="d",
            reward_fn="tool_use",
            messages=three_turns(),
            ground_truth="20",
            extra_info={"tools": [ADD, MUL]},
        )
    )
    assert after["turn_scores"] == [1.0, 0.5, 1.0]


def test_function_receives_messages_and_verl_functions_get_the_last_turn(gw: Gateway) -> None:
    messages = three_turns()
    body = _ok(gw.score(data_source="d", reward_fn="trajectory_echo", messages=messages, uid="t1"))
    assert body["score"] == len(messages)
    assert body["extra"]["roles"] == [m["role"] for m in messages]
    assert body["extra"]["solution_str"] == "5 * 4 = 20\n#### 20"  # the last assistant turn's text
    assert body["extra"]["first_tool_call"] is None  # messages[1] is the user turn: no tool_calls key
    # same uid and final answer (so the same solution_str), another trajectory: not answered from the cache
    direct = messages[:2] + messages[-1:]  # no tool calls this time
    shorter = _ok(gw.score(data_source="d", reward_fn="trajectory_echo", messages=direct, uid="t1"))
    assert (shorter["score"], shorter["cached"]) == (3.0, False)
    # a verl function (no `messages` parameter) scores the rendered answer; an explicit solution_str wins
    last = [{"role": "user", "content": "?"}, {"role": "assistant", "content": " 42 "}]
    assert (
        _ok(gw.score(data_source="d", reward_fn="verl_sync", messages=last, ground_truth="42"))["score"] == 1
    )
    both = gw.score(
        data_source="d", reward_fn="verl_sync", messages=last, solution_str="41", ground_truth="42"
    )
    assert _ok(both)["score"] == 0.0


BAD_MESSAGES = [
    (
        [
            {"role": "user", "content": [{"type": ["text"], "text": "q"}]},
            {"role": "assistant", "content": "a"},
        ],
        ["messages", 0, "content"],
        "content[0].type \"['text']\" is not a supported content part",
    ),
    (
        [{"role": "user", "content": "q"}, {"role": "robot", "content": "a"}],
        ["messages", 1, "role"],
        "Input should be",
    ),
    (
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [call("c1", "add", "{}")]},
            {"role": "tool", "tool_call_id": "c9", "content": "5"},
        ],
        ["messages", 2, "tool_call_id"],
        "messages[2].tool_call_id 'c9' matches no earlier tool call",
    ),
    (
        [
            {"role": "user", "content": "q"},
            {"role": "tool", "content": "5"},
            {"role": "assistant", "content": "a"},
        ],
        ["messages", 1, "role"],
        "messages[1] is a tool result with no earlier tool call",
    ),
    (
        [{"role": "user", "content": 5}, {"role": "assistant", "content": "a"}],
        ["messages", 0, "content"],
        "int",
    ),
    (
        [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "x"}}]}],
        ["messages", 0, "content"],
        "content[0].type 'input_audio' is not a supported content part",
    ),
    (
        [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}],
        ["messages", 0, "content"],
        "content[0].image_url.url must be a string",
    ),
    (
        [{"role": "user", "content": "q", "tool_calls": []}, {"role": "assistant", "content": "a"}],
        ["messages", 0, "tool_calls"],
        "only an assistant turn makes tool calls",
    ),
    ([{"role": "user", "content": "q"}], ["messages"], "no assistant turn"),
    ([], ["messages"], "at least one message"),
]


@pytest.mark.parametrize(("messages", "loc", "message"), BAD_MESSAGES)
def test_bad_messages_422_naming_the_field(
    gw: Gateway, messages: list[Any], loc: list[Any], message: str
) -> None:
    resp = gw.score(data_source="d", reward_fn="trajectory_echo", messages=messages)
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["type"] == "ValidationError"
    [field] = error["fields"]
    assert field["loc"] == ["body", *loc] and message in field["msg"], field
    # in a batch, under the sample's index
    batch = httpx.post(
        f"{gw.url}/score/batch",
        json={
            "samples": [{"data_source": "d", "solution_str": "x"}, {"data_source": "d", "messages": messages}]
        },
        timeout=30,
    )
    assert batch.status_code == 422 and batch.json()["error"]["fields"][0]["loc"][:4] == [
        "body",
        "samples",
        1,
        loc[0],
    ]


def test_neither_solution_nor_messages_is_missing_solution_str(gw: Gateway) -> None:
    resp = gw.score(data_source="d", reward_fn="verl_sync")
    assert resp.status_code == 422
    assert resp.json()["error"]["fields"] == [{"loc": ["body", "solution_str"], "msg": "Field required"}]


def test_messages_are_bounded(gw: Gateway) -> None:
    many = [{"role": "user", "content": "q"}] * 256 + [{"role": "assistant", "content": "a"}]
    resp = gw.score(data_source="d", reward_fn="trajectory_echo", messages=many)
    assert resp.status_code == 413, resp.text
    assert resp.json()["error"]["type"] == "FieldTooLarge" and "max_messages is 256" in resp.text
    deep: Any = "x"
    for _ in range(20):
        deep = {"k": deep}
    nested = [{"role": "user", "content": "q", "metadata": deep}, {"role": "assistant", "content": "a"}]
    resp = gw.score(data_source="d", reward_fn="trajectory_echo", messages=nested)
    assert resp.status_code == 422 and resp.json()["error"]["type"] == "TooDeep", resp.text


@pytest.mark.parametrize(
    ("fn", "extra_info", "score", "steps", "turns"),
    [
        ("steps_only", {"step_scores": [1, 1, 0, 1]}, 0.5, [1.0, 1.0, 0.0, 1.0], None),  # first_error: 2/4
        ("steps_only", {"step_scores": [1, 1]}, 1.0, [1.0, 1.0], None),
        ("steps_product", {"step_scores": [0.5, 0.5], "turn_scores": [0.1]}, 0.25, [0.5, 0.5], [0.1]),
        ("steps_product", {"turn_scores": [0.5, 0.8]}, 0.4, None, [0.5, 0.8]),  # no steps: the turns
        ("steps_product", {"step_scores": [0.5], "score": 0.9}, 0.9, [0.5], None),  # its own score wins
    ],
)
def test_step_and_turn_scores_and_their_aggregate(
    gw: Gateway, fn: str, extra_info: dict[str, Any], score: float, steps: Any, turns: Any
) -> None:
    body = _ok(gw.score(data_source="d", reward_fn=fn, solution_str="s", extra_info=extra_info))
    assert body["score"] == pytest.approx(score)
    assert (body["step_scores"], body["turn_scores"]) == (steps, turns)
    assert "step_scores" not in body["extra"] and "turn_scores" not in body["extra"]


@pytest.mark.parametrize(
    ("extra_info", "error_type", "text"),
    [
        ({"step_scores": []}, "EmptyScores", "no scores to aggregate"),
        ({"nan_step": True}, "InvalidReturn", "step_scores[1] is nan"),
        ({"long_steps": True}, "InvalidReturn", "over the limit of 4096"),
        ({"step_scores": [1, "1"]}, "InvalidReturn", "step_scores[1] must be a number"),
    ],
)
def test_bad_step_scores_are_typed_errors(
    gw: Gateway, extra_info: dict[str, Any], error_type: str, text: str
) -> None:
    resp = gw.score(data_source="d", reward_fn="steps_only", solution_str="s", extra_info=extra_info)
    body = resp.json()
    assert (body["status"], body["score"], body["error"]["type"]) == ("error", None, error_type), body
    assert text in body["error"]["message"]


def test_verl_agent_loop_tool_calls_with_parsed_arguments(gw: Gateway) -> None:
    """verl's ToolAgentLoop keeps a call's arguments parsed (`OpenAIFunctionCallSchema.arguments: dict`) and
    leaves `id`/`tool_call_id` out when its parser found none: accepted as is."""
    messages = [
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3}}}],
        },
        {"role": "tool", "content": "5"},
        {"role": "assistant", "content": "#### 5"},
    ]
    body = _ok(
        gw.score(
            data_source="d",
            reward_fn="tool_use",
            messages=messages,
            ground_truth="5",
            extra_info={"tools": [ADD]},
        )
    )
    assert (body["turn_scores"], body["score"]) == ([1.0, 1.0], 1.0)
    assert json.dumps(body)  # plain JSON all the way
