"""`Environment`: the base class of a drop-in environment (its seed, tools, verify and close)."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from rewardfleet.services.environments.limits import SessionLimits
from rewardfleet.services.environments.session import Session
from rewardfleet.services.environments.tools import ToolDefinition, ToolSpec, define_tool, is_tool
from rewardfleet.services.environments.verdict import Verdict


class NoTask(BaseModel):
    """The task of an environment that needs none: any seed body is accepted and ignored."""


class NoSettings(BaseModel):
    """The settings of an environment that takes none: any key is refused."""

    model_config = ConfigDict(extra="forbid")


class Environment:
    """Subclass it, name it, declare its `Task` and its `@tool` methods; the gateway does the rest.

    One instance serves every session of every tenant in a gateway process, so it keeps nothing per session
    on `self`: all of a session lives in `session.state` (saved in the fleet's state store, which is what lets
    any process or replica serve any call). `Task` validates the seed body (NeMo Gym `seed_session`, OpenEnv
    `reset`); unknown keys are ignored unless `Task` forbids them, since NeMo Gym agents send the whole row.
    `Settings` is the environment's own configuration (`environments.settings.<name>`: a data folder, say),
    validated at start-up and given to the constructor; the instance keeps it as `self.settings`.
    """

    name: ClassVar[str] = ""
    Task: ClassVar[type[BaseModel]] = NoTask
    Settings: ClassVar[type[BaseModel]] = NoSettings
    limits: ClassVar[SessionLimits] = SessionLimits()
    tool_definitions: ClassVar[dict[str, ToolDefinition]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not (isinstance(cls.Task, type) and issubclass(cls.Task, BaseModel)):
            raise TypeError(f"{cls.__name__}.Task must be a pydantic BaseModel subclass")
        if not (isinstance(cls.Settings, type) and issubclass(cls.Settings, BaseModel)):
            raise TypeError(f"{cls.__name__}.Settings must be a pydantic BaseModel subclass")
        if not isinstance(cls.limits, SessionLimits):
            raise TypeError(f"{cls.__name__}.limits must be a SessionLimits")
        definitions: dict[str, ToolDefinition] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                if is_tool(value):
                    definitions[attr] = define_tool(cls, attr, value)
                elif attr in definitions:  # overridden by a plain method: no longer a tool
                    del definitions[attr]
        cls.tool_definitions = definitions

    def __init__(self, settings: BaseModel | None = None) -> None:
        """`settings`: an instance of `Settings` (None: `Settings()`, its defaults)."""
        self.settings = settings if settings is not None else type(self).Settings()

    @classmethod
    def tool_specs(cls) -> list[ToolSpec]:
        return [definition.spec for definition in cls.tool_definitions.values()]

    def sandbox_spec(self, task: Any) -> Any | None:
        """The `SandboxSpec` of a session's sandbox (`rewardfleet.services.sandbox`); None: no sandbox.

        `task` is an instance of `Task` (typed `Any` here so a subclass may annotate its own `Task`).
        """
        return None

    async def seed(self, session: Session, task: Any) -> None:
        """Fills `session.state` from `task` (an instance of `Task`); the default keeps the state empty."""

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        """Scores the session; `body` is the caller's verify body (NeMo Gym: the row and the response)."""
        raise NotImplementedError(f"environment {self.name!r} does not define verify")

    async def close(self, session: Session) -> None:
        """Frees what `seed` or the tools made outside `session.state`; the default has nothing to free."""
