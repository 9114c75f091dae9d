"""The authoring API of environments: what a drop-in environment module imports.

An environment is a class: a `Task` model (how a session starts), `@tool` methods (what the agent may call;
their JSON Schema comes from their signatures), `verify` (the `Verdict` of a finished episode) and `close`.
The gateway (its `environments` feature package) keeps the sessions, serves the protocols and enforces
`SessionLimits`; this package imports only `services/common` and `services/sandbox`. See docs/environments.md.

    environment.py  `Environment`, the base class; `NoTask`, `NoSettings`
    tools.py        `@tool`, `ToolSpec`, `ToolDefinition`: a tool's schema from its signature, its call
    session.py      `Session`, what a call sees; `SandboxHandle`, the sandbox as an environment calls it
    verdict.py      `Verdict`, the reward of a finished episode
    limits.py       `SessionLimits`
    errors.py       `ToolError`, `SandboxUnavailable`
"""

from rewardfleet.services.environments.environment import Environment, NoSettings, NoTask
from rewardfleet.services.environments.errors import SandboxUnavailable, ToolError
from rewardfleet.services.environments.limits import SessionLimits
from rewardfleet.services.environments.session import SandboxHandle, SandboxOpener, Session
from rewardfleet.services.environments.tools import RESERVED_TOOL_NAMES, ToolDefinition, ToolSpec, tool
from rewardfleet.services.environments.verdict import Verdict

__all__ = [
    "RESERVED_TOOL_NAMES",
    "Environment",
    "NoSettings",
    "NoTask",
    "SandboxHandle",
    "SandboxOpener",
    "SandboxUnavailable",
    "Session",
    "SessionLimits",
    "ToolDefinition",
    "ToolError",
    "ToolSpec",
    "Verdict",
    "tool",
]
