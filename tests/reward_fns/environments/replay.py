"""Replaying one of NeMo Gym's recorded rollouts against one of our environments, in process.

A row is replayed as NeMo Gym's agent played it: the session is seeded from the row's task, every
`function_call` of `response.output` goes, in order, to the tool of its name (Gymnasium rows: every model
turn goes to `step`), each answer is compared with what the row recorded (JSON compared as values, so
formatting does not count; text exactly), and `verify` gets the row as its body. `Replay.mismatches` lists
every difference; an empty list is a reproduced row.

Tool calls go through the tool's definition as the gateway calls them (arguments validated, output made
JSON-able); a call that raises leaves the state as it was, as the gateway saves nothing of such a call.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from rewardfleet.services.environments import Environment, Session, ToolError, Verdict


@dataclass
class Replay:
    tool_calls: int = 0
    mismatches: list[str] = field(default_factory=list)
    verdict: Verdict | None = None

    def expect(self, what: str, ours: Any, recorded: Any) -> None:
        if ours != recorded:
            self.mismatches.append(f"{what}: ours {ours!r} != recorded {recorded!r}")


@dataclass(frozen=True)
class ToolFailure:
    """A call that did not return: a ToolError's message, or the invalid arguments' error."""

    message: str


async def call(env: Environment, session: Session, name: str, arguments: dict[str, Any]) -> Any:
    """One tool call as the gateway makes it: its output, or a ToolFailure; the state restored on failure."""
    definition = env.tool_definitions[name]
    saved = copy.deepcopy(session.state)
    try:
        parsed = definition.parse(arguments)
        output = await definition.invoke(env, session, parsed)
    except (ToolError, ValidationError) as exc:
        session.state = saved
        return ToolFailure(str(exc))
    except BaseException:
        session.state = saved
        raise
    session.tool_calls += 1
    return output


async def open_session(env: Environment, task: dict[str, Any]) -> Session:
    session = Session(id="replay", tenant="parity", env=env.name)
    await env.seed(session, env.Task.model_validate(task))
    return session


def _recorded_output(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def replay_tool_row(
    env: Environment,
    row: dict[str, Any],
    task: dict[str, Any],
    verify_keys: tuple[str, ...],
    output_view: Callable[[Any], Any] = lambda output: output,
) -> Replay:
    """A simple-agent row: its function calls to our tools, then verify with the row as the body.

    `output_view` is what of our answer the row recorded (all of it, unless the port says otherwise)."""
    replay = Replay()
    session = await open_session(env, task)
    recorded = {
        item["call_id"]: item["output"]
        for item in row["response"]["output"]
        if item["type"] == "function_call_output"
    }
    for item in row["response"]["output"]:
        if item["type"] != "function_call":
            continue
        output = await call(env, session, item["name"], json.loads(item["arguments"]))
        replay.tool_calls += 1
        if isinstance(output, ToolFailure):
            replay.mismatches.append(f"{item['name']} failed: {output.message}")
            continue
        replay.expect(
            f"{item['name']}#{replay.tool_calls} output",
            output_view(output),
            _recorded_output(recorded[item["call_id"]]),
        )
    replay.verdict = await env.verify(session, {**task, **row})
    _compare_verdict(replay, row, verify_keys)
    return replay


def model_turns(output: list[dict[str, Any]]) -> list[tuple[list[dict[str, Any]], str | None]]:
    """A Gymnasium row's output split into (the model's items of one turn, the observation that followed)."""
    turns: list[tuple[list[dict[str, Any]], str | None]] = []
    pending: list[dict[str, Any]] = []
    for item in output:
        if item.get("type") == "message" and item.get("role") == "user":
            turns.append((pending, item["content"]))
            pending = []
        else:
            pending.append(item)
    if pending:
        turns.append((pending, None))
    return turns


async def replay_gymnasium_row(env: Environment, row: dict[str, Any], task: dict[str, Any]) -> Replay:
    """A gymnasium-agent row: the first observation, each model turn to `step` with its next observation,
    then the summed reward, `terminated`, `truncated` and `info` from verify."""
    replay = Replay()
    session = await open_session(env, task)
    first = await call(env, session, "observe", {})
    replay.expect(
        "first observation", first["observation"], row["responses_create_params"]["input"][-1]["content"]
    )
    for items, observation in model_turns(row["response"]["output"]):
        result = await call(env, session, "step", {"response": {"output": items}})
        replay.tool_calls += 1
        if isinstance(result, ToolFailure):
            replay.mismatches.append(f"step #{replay.tool_calls} failed: {result.message}")
            break
        if observation is not None:  # none after the last turn: the agent records no final observation
            replay.expect(f"step #{replay.tool_calls} observation", result["observation"], observation)
    replay.verdict = await env.verify(session, row)
    _compare_verdict(replay, row, ("terminated", "truncated", "info"))
    return replay


def _compare_verdict(replay: Replay, row: dict[str, Any], keys: tuple[str, ...]) -> None:
    verdict = replay.verdict
    assert verdict is not None
    replay.expect("reward", verdict.reward, row["reward"])
    if "reward_components" in row:
        replay.expect("reward_components", verdict.reward_components, row["reward_components"])
    for key in keys:
        replay.expect(key, verdict.extras.get(key), row[key])


_CARDS = re.compile(r"\[([^\]]*)\]")


def blackjack_deck(row: dict[str, Any]) -> list[str]:
    """The cards of a recorded hand in the order NeMo Gym dealt them (the player's two, the dealer's two,
    the player's hits, the dealer's draws), read from its observations and its final `info`.

    NeMo Gym draws them from an unseeded generator, so the row is the only record of them. A hand that ends
    in a bust never shows the dealer's hole card, nor uses it: "2" stands in for it.
    """
    first = row["responses_create_params"]["input"][-1]["content"]
    player = _CARDS.search(first).group(1).split(", ")  # type: ignore[union-attr]
    dealer_up = first.split("Dealer shows: ")[1].split("\n")[0]
    info = row["info"]
    final_player = _CARDS.search(info["player"]).group(1).split(", ")  # type: ignore[union-attr]
    assert final_player[:2] == player, (final_player, player)
    dealer = _CARDS.search(info["dealer"]).group(1).split(", ") if "dealer" in info else [dealer_up, "2"]  # type: ignore[union-attr]
    assert dealer[0] == dealer_up, (dealer, dealer_up)
    return [*player, *dealer[:2], *final_player[2:], *dealer[2:]]
