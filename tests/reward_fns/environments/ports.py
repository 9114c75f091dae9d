"""The ported NeMo Gym servers and how each recorded row's task is found (the rows of most servers keep
no task fields: they are joined to the server's `example.jsonl`, or rebuilt from the row as said below)."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from rewardfleet.reward_fns.environments.workplace_assistant import WorkplaceAssistant
from rewardfleet.services.environments import Environment
from tests.reward_fns.environments import nemo_gym_mirror, workplace_data
from tests.reward_fns.environments.replay import blackjack_deck
from tests.reward_fns.environments.workplace_tasks import ground_truth_of

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
    settings: Callable[[], dict[str, Any]] | None = None  # the environment's settings (read at test time)

    def make(self) -> Environment:
        """Our environment, made with its settings (MirrorMissing when they need NeMo Gym's files)."""
        if self.settings is None:
            return self.env()
        return self.env(self.env.Settings.model_validate(self.settings()))


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
    # Its rows were recorded with configs/openenv_echo.yaml (OpenEnv's MCP echo environment).
    Port("openenv", OpenEnvEcho, None),
    # Its tables are the environment's data folder: NeMo Gym's csv_data, extracted at test time.
    Port(
        "workplace_assistant",
        WorkplaceAssistant,
        lambda _server: ground_truth_of(workplace_data.data_dir()),
        settings=lambda: {"data_dir": str(workplace_data.data_dir())},
    ),
]


def rows(port: Port) -> list[tuple[Row, Row]]:
    """(recorded row, its task) of every row of the port's example rollouts."""
    recorded = nemo_gym_mirror.jsonl(port.server, "example_rollouts.jsonl")
    task_of = (lambda row: row) if port.task_of is None else port.task_of(port.server)
    return [(row, task_of(row)) for row in recorded]
