"""The authoring API: tool schemas from signatures, the Verdict's checks, SessionLimits, a Session driven
directly (as an environment's own tests do), and the counter built-in over it."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from rewardfleet.reward_fns.environments.example_session_state_mgmt import SessionCounter
from rewardfleet.services.environments import (
    Environment,
    SandboxUnavailable,
    Session,
    SessionLimits,
    ToolError,
    Verdict,
    tool,
)


class Move(BaseModel):
    row: int = Field(ge=0, le=2)
    col: int = Field(ge=0, le=2)


class Board(Environment):
    name = "board"

    @tool
    async def place(self, session: Session, move: Move) -> Move:
        """Places a mark.

        Everything after the first line is for humans reading the code.
        """
        if session.state.get(f"{move.row},{move.col}"):
            raise ToolError("occupied")
        session.state[f"{move.row},{move.col}"] = True
        return move

    @tool
    async def look(
        self,
        session: Session,
        row: Annotated[int, Field(description="which row")],
        verbose: bool = False,
    ) -> list[Any]:
        return [row, verbose]

    async def helper(self) -> None:
        """Not a tool: not marked."""


def test_tool_schema_comes_from_the_signature() -> None:
    specs = {spec.name: spec for spec in Board.tool_specs()}
    assert set(specs) == {"place", "look"}
    assert specs["place"].description == "Places a mark."
    assert specs["look"].description == ""
    look = specs["look"].input_schema
    assert look["type"] == "object"
    assert look["required"] == ["row"]
    assert look["properties"]["row"] == {"description": "which row", "title": "Row", "type": "integer"}
    assert look["properties"]["verbose"]["default"] is False
    assert look["additionalProperties"] is False
    # One BaseModel argument is the whole body: its own schema, its own constraints.
    place = specs["place"].input_schema
    assert set(place["properties"]) == {"row", "col"}
    assert place["properties"]["row"]["maximum"] == 2


def test_arguments_are_validated_with_the_field_named() -> None:
    look = Board.tool_definitions["look"]
    with pytest.raises(ValidationError) as caught:
        look.parse({"row": "not a number"})
    assert caught.value.errors()[0]["loc"] == ("row",)
    with pytest.raises(ValidationError) as caught:
        look.parse({"row": 1, "extra": 1})
    assert caught.value.errors()[0]["loc"] == ("extra",)
    with pytest.raises(ValidationError) as caught:
        Board.tool_definitions["place"].parse({"row": 3, "col": 0})
    assert caught.value.errors()[0]["loc"] == ("row",)


async def test_invoke_returns_json_and_tool_error_is_the_tools_own() -> None:
    env, session = Board(), Session(id="s1", tenant="t", env="board")
    place = Board.tool_definitions["place"]
    assert await place.invoke(env, session, place.parse({"row": 1, "col": 2})) == {"row": 1, "col": 2}
    assert session.state == {"1,2": True}
    with pytest.raises(ToolError, match="occupied"):
        await place.invoke(env, session, place.parse({"row": 1, "col": 2}))
    look = Board.tool_definitions["look"]
    assert await look.invoke(env, session, look.parse({"row": 2})) == [2, False]


def test_bad_tools_are_refused_when_the_class_is_made() -> None:
    with pytest.raises(TypeError, match="async def"):

        class Sync(Environment):
            @tool  # type: ignore[type-var]
            def poke(self, session: Session) -> None: ...

    with pytest.raises(TypeError, match="reserved"):

        class Reserved(Environment):
            @tool
            async def seed_session(self, session: Session) -> None: ...

    with pytest.raises(TypeError, match="type annotation"):

        class Untyped(Environment):
            @tool
            async def poke(self, session, count) -> None: ...  # type: ignore[no-untyped-def]

    with pytest.raises(TypeError, match=r"\(self, session"):

        class NoSession(Environment):
            @tool
            async def poke(self, count: int) -> None: ...

    with pytest.raises(TypeError, match="Task"):

        class BadTask(Environment):
            Task = dict  # type: ignore[assignment]


def test_a_subclass_inherits_tools_and_may_unmark_one() -> None:
    class Quiet(Board):
        name = "quiet"

        async def look(self, session: Session, row: int, verbose: bool = False) -> list[Any]:
            return []

    assert set(Quiet.tool_definitions) == {"place"}
    assert set(Board.tool_definitions) == {"place", "look"}


def test_verdict_refuses_what_is_not_a_finite_number() -> None:
    assert Verdict(1).reward == 1.0
    assert Verdict(0.5, {"a": 1}).reward_components == {"a": 1.0}
    with pytest.raises(ValueError, match="finite"):
        Verdict(float("nan"))
    with pytest.raises(TypeError, match=r"reward_components\.a"):
        Verdict(1.0, {"a": "1"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="number"):
        Verdict(True)


def test_session_limits_are_positive() -> None:
    assert SessionLimits().state_bytes > 0
    with pytest.raises(ValueError, match="tool_calls"):
        SessionLimits(tool_calls=0)


async def test_a_session_without_a_sandbox_says_so_and_an_opener_is_called_once() -> None:
    with pytest.raises(SandboxUnavailable):
        await Session(id="s", tenant="t", env="e").sandbox()
    opened: list[str] = []

    class Box:
        id = "box-1"

    async def opener(session: Session) -> Any:
        opened.append(session.id)
        return Box()

    session = Session(id="s2", tenant="t", env="e", sandbox_opener=opener)
    first, second = await session.sandbox(), await session.sandbox()
    assert first is second and opened == ["s2"]


async def test_the_counter_builtin_driven_directly() -> None:
    env, session = SessionCounter(), Session(id="c", tenant="t", env=SessionCounter.name)
    await env.seed(
        session, SessionCounter.Task.model_validate({"initial_count": 3, "responses_create_params": {}})
    )
    inc = SessionCounter.tool_definitions["increment_counter"]
    assert await inc.invoke(env, session, inc.parse({"count": 4})) == {"success": True}
    get = SessionCounter.tool_definitions["get_counter_value"]
    assert await get.invoke(env, session, get.parse({})) == {"count": 7}
    assert (await env.verify(session, {"expected_count": 7})).reward == 1.0
    assert (await env.verify(session, {"expected_count": 8})).reward == 0.0
    with pytest.raises(ValidationError):
        await env.verify(session, {})
