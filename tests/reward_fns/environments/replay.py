"""Replaying one of NeMo Gym's recorded rollouts against one of our environments, in process or over HTTP.

A row is replayed as NeMo Gym's agent played it: the session is seeded from the row's task, every
`function_call` of `response.output` goes, in order, to the tool of its name (Gymnasium rows: every model
turn goes to `step`), each answer is compared with what the row recorded (JSON compared as values, so
formatting does not count; text exactly), and `verify` gets the row (its recorded results left out) as its
body. `Replay.mismatches` lists every difference; an empty list is a reproduced row.

`InProcess` drives an environment with a `Session` built directly: each tool call goes through the tool's
definition as the gateway calls it (arguments validated, output made JSON-able), and a call that raises
leaves the state as it was, as the gateway saves nothing of such a call. `OverNeMoGym` drives a gateway's
`/nemo_gym/<server>/` routes with the session cookie, as NeMo Gym's agents do.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from pydantic import ValidationError

from rewardfleet.services.environments import Environment, Session, ToolError, Verdict

# What a NeMo Gym verify answer adds to its body: never sent back in ours.
RESULT_KEYS = ("reward", "reward_components", "_ng_task_index", "_ng_rollout_index", "agent_ref")


@dataclass(frozen=True)
class ToolFailure:
    """A call that did not return: a ToolError's message, or the invalid arguments' error."""

    message: str


class Driver(Protocol):
    async def seed(self, task: dict[str, Any]) -> None: ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any: ...  # the output, or a ToolFailure

    async def verify(self, body: dict[str, Any]) -> Verdict: ...


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


@dataclass
class InProcess:
    env: Environment
    session: Session | None = None

    async def seed(self, task: dict[str, Any]) -> None:
        self.session = await open_session(self.env, task)

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        assert self.session is not None
        return await call(self.env, self.session, tool, arguments)

    async def verify(self, body: dict[str, Any]) -> Verdict:
        assert self.session is not None
        return await self.env.verify(self.session, body)


@dataclass
class OverNeMoGym:
    """One rollout through `<url>/nemo_gym/<server>/...`; the client keeps the session cookie."""

    client: httpx.AsyncClient
    server: str

    async def _post(self, route: str, body: dict[str, Any]) -> httpx.Response:
        return await self.client.post(f"/nemo_gym/{self.server}/{route}", json=body)

    async def seed(self, task: dict[str, Any]) -> None:
        (await self._post("seed_session", task)).raise_for_status()

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        answer = await self._post(tool, arguments)
        if answer.status_code in (400, 422):
            return ToolFailure(answer.text)
        answer.raise_for_status()
        return answer.json()

    async def verify(self, body: dict[str, Any]) -> Verdict:
        answer = await self._post("verify", body)
        answer.raise_for_status()
        result = answer.json()
        return Verdict(result.pop("reward"), result.pop("reward_components", {}), result)


@dataclass
class Replay:
    tool_calls: int = 0
    mismatches: list[str] = field(default_factory=list)
    verdict: Verdict | None = None

    def expect(self, what: str, ours: Any, recorded: Any) -> None:
        if ours != recorded:
            self.mismatches.append(f"{what}: ours {ours!r} != recorded {recorded!r}")


def _recorded_output(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def verify_body(row: dict[str, Any], task: dict[str, Any], recorded_keys: tuple[str, ...]) -> dict[str, Any]:
    """What NeMo Gym's agent posts to verify: the task's fields and the rollout, not the recorded results."""
    left_out = {*RESULT_KEYS, *recorded_keys}
    return {k: v for k, v in {**task, **row}.items() if k not in left_out}


async def replay_tool_row(
    driver: Driver,
    row: dict[str, Any],
    task: dict[str, Any],
    verify_keys: tuple[str, ...],
    output_view: Callable[[Any], Any] = lambda output: output,
) -> Replay:
    """A simple-agent row: its function calls to our tools, then verify.

    `output_view` is what of our answer the row recorded (all of it, unless the port says otherwise)."""
    replay = Replay()
    await driver.seed(task)
    recorded = {
        item["call_id"]: item["output"]
        for item in row["response"]["output"]
        if item["type"] == "function_call_output"
    }
    for item in row["response"]["output"]:
        if item["type"] != "function_call":
            continue
        output = await driver.call(item["name"], json.loads(item["arguments"]))
        replay.tool_calls += 1
        if isinstance(output, ToolFailure):
            replay.mismatches.append(f"{item['name']} failed: {output.message}")
            continue
        replay.expect(
            f"{item['name']}#{replay.tool_calls} output",
            output_view(output),
            _recorded_output(recorded[item["call_id"]]),
        )
    replay.verdict = await driver.verify(verify_body(row, task, verify_keys))
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


GYMNASIUM_KEYS = ("terminated", "truncated", "info")


async def replay_gymnasium_row(driver: Driver, row: dict[str, Any], task: dict[str, Any]) -> Replay:
    """A gymnasium-agent row: the first observation, each model turn to `step` with its next observation,
    then the summed reward, `terminated`, `truncated` and `info` from verify."""
    replay = Replay()
    await driver.seed(task)
    first = await driver.call("observe", {})
    replay.expect(
        "first observation", first["observation"], row["responses_create_params"]["input"][-1]["content"]
    )
    for items, observation in model_turns(row["response"]["output"]):
        result = await driver.call("step", {"response": {"output": items}})
        replay.tool_calls += 1
        if isinstance(result, ToolFailure):
            replay.mismatches.append(f"step #{replay.tool_calls} failed: {result.message}")
            break
        if observation is not None:  # none after the last turn: the agent records no final observation
            replay.expect(f"step #{replay.tool_calls} observation", result["observation"], observation)
    replay.verdict = await driver.verify(verify_body(row, task, GYMNASIUM_KEYS))
    _compare_verdict(replay, row, GYMNASIUM_KEYS)
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


def _cards(text: str) -> list[str]:
    found = _CARDS.search(text)
    assert found is not None, text
    return found.group(1).split(", ")


def blackjack_deck(row: dict[str, Any]) -> list[str]:
    """The cards of a recorded hand in the order NeMo Gym dealt them (the player's two, the dealer's two,
    the player's hits, the dealer's draws), read from its observations and its final `info`.

    NeMo Gym draws them from an unseeded generator, so the row is the only record of them. A hand that ends
    in a bust never shows the dealer's hole card, nor uses it: "2" stands in for it.
    """
    first = row["responses_create_params"]["input"][-1]["content"]
    player = _cards(first)
    dealer_up = first.split("Dealer shows: ")[1].split("\n")[0]
    info = row["info"]
    final_player = _cards(info["player"])
    assert final_player[:2] == player, (final_player, player)
    dealer = _cards(info["dealer"]) if "dealer" in info else [dealer_up, "2"]
    assert dealer[0] == dealer_up, (dealer, dealer_up)
    return [*player, *dealer[:2], *final_player[2:], *dealer[2:]]
