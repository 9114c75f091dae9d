"""Parity with NeMo Gym's recorded rollouts: every row of each ported server's `example_rollouts.jsonl`
(NeMo Gym at `nemo_gym_mirror.COMMIT`), replayed in process against our environment of that name: each tool
answer as recorded, then the same reward and recorded extras (replay.py). docs/environments.md reports the
counts ('Parity with NeMo Gym's recorded rollouts').
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rewardfleet.reward_fns.environments.blackjack import Blackjack
from rewardfleet.reward_fns.environments.calendar_scheduling import CalendarScheduling
from rewardfleet.reward_fns.environments.circle_click import CircleClick
from rewardfleet.reward_fns.environments.example_mcp_weather import McpWeather
from rewardfleet.reward_fns.environments.example_multi_step import MultiStep, SynonymValue
from rewardfleet.reward_fns.environments.example_single_tool_call import SingleToolCall
from rewardfleet.reward_fns.environments.example_tool_call_multireward import ToolCallMultiReward
from rewardfleet.reward_fns.environments.grl_sokoban import GrlSokoban
from rewardfleet.reward_fns.environments.math_advanced_calculations import MathAdvancedCalculations
from rewardfleet.services.environments import Environment, Session, tool
from tests.reward_fns.environments import nemo_gym_mirror
from tests.reward_fns.environments.replay import (
    Replay,
    blackjack_deck,
    replay_gymnasium_row,
    replay_tool_row,
)

Row = dict[str, Any]


def by_input(server: str) -> Callable[[Row], Row]:
    """The task a row came from, found by its prompt (the rows of these servers keep no task fields)."""
    tasks = nemo_gym_mirror.jsonl(server, "example.jsonl")

    def find(row: Row) -> Row:
        wanted = [(m["role"], m["content"]) for m in row["responses_create_params"]["input"]]
        for task in tasks:
            if [(m["role"], m["content"]) for m in task["responses_create_params"]["input"]] == wanted:
                return task
        raise LookupError(f"no task of {server} has this row's input")

    return find


def by_task_index(server: str) -> Callable[[Row], Row]:
    tasks = nemo_gym_mirror.jsonl(server, "example.jsonl")
    return lambda row: tasks[row["_ng_task_index"]]


_ALTERNATE_OPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b + 1.2,
    ast.Sub: lambda a, b: a - b - 3,
    ast.Mult: lambda a, b: 1.1 * a * b,
    ast.Div: lambda a, b: 0.5 * a / b,
    ast.Pow: lambda a, b: a ** (b + 2),
}
_ALTERNATE_CALLS: dict[str, Callable[..., float]] = {
    "sin": math.cos,
    "cos": math.sin,
    "log": lambda a, base: math.log(a, abs(base + 1.5)),
}


def alternate_value(node: ast.AST) -> float:
    """An arithmetic expression's value in math_advanced_calculations' alternate universe (its README's
    calculators: `+` adds 1.2, `sin` is cos, `pi` is e, ...), evaluated here independently of the port."""
    if isinstance(node, ast.Expression):
        return alternate_value(node.body)
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == "pi":
        return math.e
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return alternate_value(node.operand)  # negate gives its number back
    if isinstance(node, ast.BinOp):
        return _ALTERNATE_OPS[type(node.op)](alternate_value(node.left), alternate_value(node.right))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _ALTERNATE_CALLS[node.func.id](*(alternate_value(arg) for arg in node.args))
    raise ValueError(f"not an expression of the task: {ast.dump(node)}")


def by_alternate_expression(_server: str) -> Callable[[Row], Row]:
    """The rows of math_advanced_calculations come from tasks example.jsonl does not hold, and keep no
    `ground_truth`: it is their prompt's expression, evaluated in the alternate universe."""

    def task(row: Row) -> Row:
        prompt = row["responses_create_params"]["input"][-1]["content"]
        found = re.fullmatch(r"Get me the value for (.+) using only the given tools\.", prompt)
        if found is None:
            raise LookupError(f"not a one-value prompt: {prompt!r}")
        return {"ground_truth": [alternate_value(ast.parse(found.group(1), mode="eval"))]}

    return task


@dataclass(frozen=True)
class Port:
    server: str
    env: type[Environment]
    task_of: Callable[[str], Callable[[Row], Row]] | None  # None: the row itself is the task
    verify_keys: tuple[str, ...] = ()
    gymnasium: bool = False
    output_view: Callable[[Any], Any] = lambda output: output  # what of our answer the row recorded


PORTS = [
    Port("example_single_tool_call", SingleToolCall, None),
    Port(
        "example_multi_step",
        MultiStep,
        by_input,
        (
            "parsed_synonym_values",
            "accuracy",
            "set_overlap",
            "original_term_minefield_hit",
            "order_instruction_following_failure",
        ),
    ),
    Port("calendar", CalendarScheduling, by_input),
    Port("blackjack", Blackjack, lambda _server: lambda row: {"deck": blackjack_deck(row)}, gymnasium=True),
    Port("grl_sokoban", GrlSokoban, by_task_index, gymnasium=True),
    Port(
        "example_tool_call_multireward",
        ToolCallMultiReward,
        by_task_index,
        ("correctness", "schema_valid", "format", "predicted_calls"),
    ),
    # Its rows come from a Claude Code run over MCP, which recorded the answer's `weather` text alone.
    Port(
        "example_mcp_weather",
        McpWeather,
        None,
        ("expected_weather", "tool_call_seen", "final_response_mentions_weather"),
        output_view=lambda output: output["weather"],
    ),
    Port("math_advanced_calculations", MathAdvancedCalculations, by_alternate_expression),
    Port("circle_click", CircleClick, by_task_index, ("clicked_x", "clicked_y", "hit")),
]


async def replay_row(port: Port, index: int) -> Replay:
    row = nemo_gym_mirror.jsonl(port.server, "example_rollouts.jsonl")[index]
    task = row if port.task_of is None else port.task_of(port.server)(row)
    if port.gymnasium:
        return await replay_gymnasium_row(port.env(), row, task)
    return await replay_tool_row(port.env(), row, task, port.verify_keys, port.output_view)


def _cases() -> list[Any]:
    cases = []
    for port in PORTS:
        try:
            count = len(nemo_gym_mirror.jsonl(port.server, "example_rollouts.jsonl"))
        except nemo_gym_mirror.MirrorMissing as missing:
            cases.append(pytest.param(port, -1, id=port.server, marks=pytest.mark.skip(reason=str(missing))))
            continue
        cases.extend(pytest.param(port, i, id=f"{port.server}-{i}") for i in range(count))
    return cases


@pytest.mark.parametrize(("port", "index"), _cases())
async def test_recorded_row_replays_equal(port: Port, index: int) -> None:
    replay = await replay_row(port, index)
    assert replay.mismatches == []


class _OffByOne(MultiStep):
    name = "example_multi_step"

    @tool
    async def get_synonym_value(self, session: Session, synonym: str) -> SynonymValue:
        return SynonymValue(synonym_value=sum(map(ord, synonym)) + 1)


async def test_the_replay_notices_a_different_answer_and_a_different_reward() -> None:
    try:
        row = nemo_gym_mirror.jsonl("example_multi_step", "example_rollouts.jsonl")[0]
        task = by_input("example_multi_step")(row)
        sokoban_row = nemo_gym_mirror.jsonl("grl_sokoban", "example_rollouts.jsonl")[1]
    except nemo_gym_mirror.MirrorMissing as missing:
        pytest.skip(str(missing))
    wrong_answer = await replay_tool_row(_OffByOne(), row, task, PORTS[1].verify_keys)
    assert [m.split(":")[0] for m in wrong_answer.mismatches] == [
        "get_synonym_value#1 output",
        "get_synonym_value#2 output",
    ]
    wrong_board = await replay_gymnasium_row(GrlSokoban(), sokoban_row, {"seed": 1, "dim_room": [6, 6]})
    assert wrong_board.mismatches[0].startswith("first observation")
    assert any(m.startswith("step #1 observation") for m in wrong_board.mismatches)
    winning_row = nemo_gym_mirror.jsonl("grl_sokoban", "example_rollouts.jsonl")[0]
    unsolved = await replay_gymnasium_row(GrlSokoban(), winning_row, {"seed": 1, "dim_room": [5, 5]})
    assert any(m.startswith("reward") for m in unsolved.mismatches)
