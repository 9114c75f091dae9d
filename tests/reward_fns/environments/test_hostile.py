"""What an agent controls cannot break the ported environments nor buy a reward: tool arguments that are
huge, deep, of the wrong type or out of range are refused naming the field (the gateway's 422) or are the
tool's own ToolError, and leave the session as it was; a verify body's claims are never read as the truth.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from rewardfleet.reward_fns.environments import _calendar_grading
from rewardfleet.reward_fns.environments.blackjack import Blackjack
from rewardfleet.reward_fns.environments.calendar_scheduling import CalendarScheduling
from rewardfleet.reward_fns.environments.circle_click import CircleClick
from rewardfleet.reward_fns.environments.example_mcp_weather import McpWeather
from rewardfleet.reward_fns.environments.example_multi_step import MultiStep
from rewardfleet.reward_fns.environments.example_single_tool_call import SingleToolCall
from rewardfleet.reward_fns.environments.example_tool_call_multireward import ToolCallMultiReward
from rewardfleet.reward_fns.environments.grl_sokoban import GrlSokoban
from rewardfleet.reward_fns.environments.math_advanced_calculations import MathAdvancedCalculations
from rewardfleet.reward_fns.environments.openenv_echo import OpenEnvEcho
from rewardfleet.services.environments import Environment, Session, ToolError
from tests.reward_fns.environments.replay import ToolFailure, call, open_session

SOKOBAN_TASK = {"seed": 84810, "dim_room": [5, 5]}  # the first recorded task: its board is known
MULTI_STEP_TASK = {"expected_synonym_values": [711, 407], "minefield_label_value": 299}
MATH_TASK = {"ground_truth": "[17.2]"}
CIRCLE_TASK = {"circles": [{"x": 100, "y": 100, "radius": 10, "color": "red"}], "target_color": "red"}


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


# (environment, task, tool, arguments, the field the refusal names)
REFUSED = [
    (SingleToolCall, {}, "get_weather", {"city": "x" * 100_000}, ("city",)),
    (SingleToolCall, {}, "get_weather", {"city": 5}, ("city",)),
    (SingleToolCall, {}, "get_weather", {"city": {"$ne": ""}}, ("city",)),
    (SingleToolCall, {}, "get_weather", {}, ("city",)),
    (SingleToolCall, {}, "get_weather", {"city": "Paris", "reward": 1}, ("reward",)),
    (MultiStep, MULTI_STEP_TASK, "get_synonym_value", {"synonym": ["Warm"]}, ("synonym",)),
    (
        MultiStep,
        MULTI_STEP_TASK,
        "extract_synonym_values",
        {"synonym_values": "711,407"},
        ("synonym_values",),
    ),
    (
        MultiStep,
        MULTI_STEP_TASK,
        "extract_synonym_values",
        {"synonym_values": deep(5000)},
        ("synonym_values", 0),
    ),
    (
        MultiStep,
        MULTI_STEP_TASK,
        "extract_synonym_values",
        {"synonym_values": [1] * 100_000},
        ("synonym_values",),
    ),
    (MultiStep, MULTI_STEP_TASK, "extract_synonym_values", {"synonym_values": [1.5]}, ("synonym_values", 0)),
    (Blackjack, {"deck": ["10", "6", "9", "7"]}, "step", {"action": 7}, ("action",)),
    (Blackjack, {"deck": ["10", "6", "9", "7"]}, "step", {}, ()),
    (Blackjack, {"deck": ["10", "6", "9", "7"]}, "step", {"action": "hit", "response": {"output": []}}, ()),
    (
        Blackjack,
        {"deck": ["10", "6", "9", "7"]},
        "step",
        {"action": "<action>hit</action>" * 10_000},
        ("action",),
    ),
    (GrlSokoban, SOKOBAN_TASK, "step", {"response": {"output": "Up"}}, ("response", "output")),
    (
        GrlSokoban,
        SOKOBAN_TASK,
        "step",
        {"response": {"output": [{"type": "message"}] * 1000}},
        ("response", "output"),
    ),
    (GrlSokoban, SOKOBAN_TASK, "step", {"response": deep(3000)}, ("response",)),
    (GrlSokoban, SOKOBAN_TASK, "observe", {"peek": True}, ("peek",)),
    (MathAdvancedCalculations, MATH_TASK, "add", {"a": "1e999", "b": 1}, ("a",)),
    (MathAdvancedCalculations, MATH_TASK, "add", {"a": 1}, ("b",)),
    (MathAdvancedCalculations, MATH_TASK, "log", {"a": 2, "base": [2]}, ("base",)),
    (CircleClick, CIRCLE_TASK, "click", {"x": deep(100), "y": 1}, ("x",)),
    (CircleClick, CIRCLE_TASK, "click", {"x": list(range(100)), "y": 1}, ("x",)),
    (CircleClick, CIRCLE_TASK, "click", {"x": "9" * 10_000, "y": 1}, ("x",)),
    (ToolCallMultiReward, {}, "get_weather", {"city": None}, ("city",)),
    (McpWeather, {}, "get_weather", {"city": "Paris" * 1000}, ("city",)),
]


@pytest.mark.parametrize(("env_class", "task", "tool", "arguments", "loc"), REFUSED)
async def test_bad_arguments_are_refused_naming_the_field_and_change_nothing(
    env_class: type[Environment],
    task: dict[str, Any],
    tool: str,
    arguments: dict[str, Any],
    loc: tuple[Any, ...],
) -> None:
    env = env_class()
    session = await open_session(env, task)
    before = copy.deepcopy(session.state)
    with pytest.raises(ValidationError) as refused:
        env.tool_definitions[tool].parse(arguments)
    assert refused.value.errors()[0]["loc"][: len(loc)] == loc
    assert isinstance(await call(env, session, tool, arguments), ToolFailure)
    assert session.state == before


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("divide", {"a": 1, "b": 0}),
        ("power", {"a": 10, "b": 400}),
        ("log", {"a": -1, "base": 2}),
        ("log", {"a": 0, "base": 2}),
    ],
)
async def test_calculations_without_a_finite_result_are_tool_errors(
    tool: str, arguments: dict[str, Any]
) -> None:
    env = MathAdvancedCalculations()
    session = await open_session(env, MATH_TASK)
    with pytest.raises(ToolError, match="result"):
        await env.tool_definitions[tool].invoke(env, session, env.tool_definitions[tool].parse(arguments))
    assert session.state["solutions"] == []


# Moves that parse but cannot be played: the tool's own error, the board or hand untouched.
UNPLAYABLE = [
    (GrlSokoban, SOKOBAN_TASK, {"action": "<action>5</action> diagonally"}, "no move found"),
    (GrlSokoban, SOKOBAN_TASK, {"action": "north"}, "no move found"),
    (GrlSokoban, SOKOBAN_TASK, {"action": "\x00" * 60_000}, "no move found"),
]


@pytest.mark.parametrize(("env_class", "task", "arguments", "message"), UNPLAYABLE)
async def test_unplayable_moves_are_tool_errors_and_change_nothing(
    env_class: type[Environment], task: dict[str, Any], arguments: dict[str, Any], message: str
) -> None:
    env = env_class()
    session = await open_session(env, task)
    before = copy.deepcopy(session.state)
    with pytest.raises(ToolError, match=message) as failed:
        await env.tool_definitions["step"].invoke(env, session, env.tool_definitions["step"].parse(arguments))
    assert len(failed.value.message) < 400  # the agent's text is quoted, not echoed whole
    assert session.state == before


async def step(env: Environment, session: Session, action: str) -> dict[str, Any]:
    output = await call(env, session, "step", {"action": action})
    assert not isinstance(output, ToolFailure), output
    return output


async def test_a_finished_episode_takes_no_more_moves_and_keeps_its_reward() -> None:
    env = Blackjack()
    session = await open_session(env, {"deck": ["10", "Q", "9", "8"]})  # dealer stands on 17
    assert (await step(env, session, "<action>stand</action>"))["info"]["result"] == "win"
    finished = copy.deepcopy(session.state)
    for action in ("<action>hit</action>", "<action>stand</action>"):
        assert isinstance(await call(env, session, "step", {"action": action}), ToolFailure)
    assert session.state == finished
    assert (await env.verify(session, {})).reward == 1.0

    sokoban = GrlSokoban()
    board = await open_session(sokoban, SOKOBAN_TASK)
    for move in ("Up", "Right", "Up", "Left"):  # box up a row, then pushed left onto the target
        await step(sokoban, board, move)
    assert board.state["terminated"] and isinstance(
        await call(sokoban, board, "step", {"action": "Up"}), ToolFailure
    )


FORGED_VERIFY = {
    "reward": 1.0,
    "expected_synonym_values": [1, 2],
    "exp_cal_state": {},
    "terminated": True,
    "info": {"result": "win"},
    "response": {
        "output": [
            {
                "type": "function_call",
                "name": "extract_synonym_values",
                "arguments": '{"synonym_values": [1, 2]}',
            },
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "[]"}]},
        ]
    },
}


async def test_a_verify_body_cannot_claim_the_reward() -> None:
    multi = MultiStep()
    session = await open_session(multi, MULTI_STEP_TASK)
    assert (
        await multi.verify(session, FORGED_VERIFY)
    ).reward == 0.0  # no extract call made: nothing extracted
    await call(multi, session, "extract_synonym_values", {"synonym_values": [711, 407]})
    assert (await multi.verify(session, FORGED_VERIFY)).reward == 1.0

    calendar = CalendarScheduling()
    expected = {
        "0": {"event_id": 0, "duration": 60, "constraint": None, "min_time": "10:00", "max_time": "16:00"}
    }
    session = await open_session(calendar, {"exp_cal_state": expected})
    verdict = await calendar.verify(
        session, FORGED_VERIFY
    )  # upstream would read its empty exp_cal_state: 1.0
    assert (verdict.reward, verdict.extras["reason"]) == (0.0, "no_json_list")

    calculator = MathAdvancedCalculations()
    session = await open_session(calculator, MATH_TASK)
    claimed = {
        "response": {
            "output": [{"type": "function_call_output", "call_id": "c", "output": '{"solution": 17.2}'}]
        }
    }
    assert (await calculator.verify(session, claimed)).reward == 0.0  # NeMo Gym would read 17.2 from the body
    await call(calculator, session, "add", {"a": 6, "b": 10})
    assert (await calculator.verify(session, {})).reward == 1.0

    clicker = CircleClick()
    session = await open_session(clicker, CIRCLE_TASK)
    assert (await clicker.verify(session, {"hit": True, "reward": 1.0})).reward == 0.0
    for x in (500, 100):  # only the first click counts
        await call(clicker, session, "click", {"x": x, "y": 100})
    assert (await clicker.verify(session, {})).extras == {"clicked_x": 500, "clicked_y": 100, "hit": False}

    multi_reward = ToolCallMultiReward()
    session = await open_session(
        multi_reward, {"expected_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}
    )
    forged = {"expected_call": {"name": "get_weather", "arguments": {}}, **FORGED_VERIFY}
    assert (await multi_reward.verify(session, forged)).reward_components["correctness"] == 0.0

    for env, task in ((Blackjack(), {"deck": ["10", "6", "9", "7"]}), (GrlSokoban(), SOKOBAN_TASK)):
        session = await open_session(env, task)
        verdict = await env.verify(session, FORGED_VERIFY)
        assert (verdict.reward, verdict.extras["terminated"], verdict.extras["info"]) == (0.0, False, {})


async def test_step_ignores_what_the_agent_adds_to_its_body() -> None:
    env = Blackjack()
    session = await open_session(env, {"deck": ["10", "6", "9", "7", "5"]})
    result = await call(
        env, session, "step", {"action": "<action>hit</action>", "reward": 100, "terminated": True}
    )
    assert (result["reward"], result["terminated"], session.state["player"]) == (0.0, False, ["10", "6", "5"])


def test_a_pathological_answer_times_out_the_search_instead_of_holding_the_worker() -> None:
    answer = "[" + "{}" * 40 + "x"  # NeMo Gym's pattern backtracks exponentially on this
    expected = {
        "0": {"event_id": 0, "duration": 60, "constraint": None, "min_time": "10:00", "max_time": "16:00"}
    }
    assert _calendar_grading.grade(answer, expected) == (0.0, "json_list_search_timed_out")


@pytest.mark.parametrize(
    ("task", "loc"),
    [
        ({"seed": 1, "dim_room": [16, 16]}, ("dim_room", 0)),
        ({"seed": 1, "num_boxes": 4}, ("num_boxes",)),
        ({"seed": 1, "search_depth": 10**6}, ("search_depth",)),
        ({"seed": -1}, ("seed",)),
        ({"seed": 2**40}, ("seed",)),
    ],
)
def test_a_sokoban_task_too_costly_to_deal_is_refused_naming_the_field(
    task: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as refused:
        GrlSokoban.Task.model_validate(task)
    assert refused.value.errors()[0]["loc"] == loc


async def test_the_echo_tools_take_one_bounded_string() -> None:
    env = OpenEnvEcho()
    session = await open_session(env, {})
    for arguments in ({"message": ["hi"]}, {"message": "x" * 200_000}, {"message": "hi", "length": 99}, {}):
        assert isinstance(await call(env, session, "echo_with_length", arguments), ToolFailure)
    answer = await call(env, session, "echo_with_length", {"message": "é😀"})
    assert answer["result"]["data"] == {"message": "é😀", "length": 2}
    assert answer["result"]["content"][0]["text"] == '{"message":"é😀","length":2}'


async def test_a_room_too_small_to_deal_is_the_tasks_error() -> None:
    with pytest.raises(ToolError, match=r"dim_room \[4, 4\] with 2 box"):  # the gateway's 422 for a task
        await open_session(GrlSokoban(), {"seed": 3, "dim_room": [4, 4], "num_boxes": 2})


@pytest.mark.parametrize(
    ("body", "loc"),
    [
        ({}, ("response",)),
        ({"response": {"output": "text"}}, ("response", "output")),
        ({"response": {"output": [1, 2]}}, ("response", "output", 0)),
        ({"response": {"output": [{}] * 20_000}}, ("response", "output")),
    ],
)
async def test_a_verify_body_without_a_readable_response_is_refused_naming_the_field(
    body: dict[str, Any], loc: tuple[Any, ...]
) -> None:
    expected = {
        "0": {"event_id": 0, "duration": 60, "constraint": None, "min_time": "10:00", "max_time": "16:00"}
    }
    for env, task in (
        (CalendarScheduling(), {"exp_cal_state": expected}),
        (McpWeather(), {}),
        (ToolCallMultiReward(), {}),
    ):
        session = await open_session(env, task)
        with pytest.raises(ValidationError) as refused:
            await env.verify(session, body)
        assert refused.value.errors()[0]["loc"] == loc


async def test_a_call_whose_name_is_not_text_matches_nothing() -> None:
    env = ToolCallMultiReward()
    session = await open_session(env, {"expected_call": {"name": "get_weather", "arguments": {}}})
    body = {"response": {"output": [{"type": "function_call", "name": ["get_weather"], "arguments": "{}"}]}}
    verdict = await env.verify(session, body)
    assert verdict.reward_components == {"correctness": 0.0, "schema_valid": 1.0, "format": 1.0}
