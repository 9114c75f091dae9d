"""`@tool`: an environment's async method offered to the agent, its input schema read from its signature.

The arguments after `session` become a pydantic model (extra keys forbidden, as NeMo Gym's tool schemas say
`additionalProperties: false`), whose JSON Schema is what every protocol lists; one argument annotated with a
`BaseModel` subclass is taken as the whole body instead. The docstring's first line is the description.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, create_model
from pydantic_core import to_jsonable_python

# Names the protocols use for themselves: a tool may not take them (NeMo Gym's routes and MCP mount).
RESERVED_TOOL_NAMES = frozenset({"seed_session", "verify", "aggregate_metrics", "mcp", "close", "state"})

_TOOL_MARK = "__rewardfleet_tool__"

F = TypeVar("F", bound=Callable[..., Coroutine[Any, Any, Any]])


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the protocols list it: MCP `tools/list`, NeMo Gym / OpenAI function tools, OpenEnv schema."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolDefinition:
    """A tool of one environment class: its spec, its argument model and how to call it."""

    name: str
    description: str
    arguments: type[BaseModel]
    whole_body: bool
    method_name: str
    field_names: tuple[str, ...] = ()  # the arguments model's fields, passed by name (not whole_body)

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.arguments.model_json_schema())

    def parse(self, arguments: Mapping[str, Any]) -> BaseModel:
        """The arguments validated, or a `pydantic.ValidationError` with each bad field's `loc`."""
        return self.arguments.model_validate(arguments)

    async def invoke(self, environment: object, session: object, parsed: BaseModel) -> Any:
        """Calls the tool with parsed arguments; its return value made JSON-able (a model becomes a dict)."""
        method = getattr(environment, self.method_name)
        if self.whole_body:
            result = await method(session, parsed)
        else:
            result = await method(session, **{name: getattr(parsed, name) for name in self.field_names})
        return to_jsonable_python(result)


def tool(fn: F) -> F:
    """Marks an environment's `async def name(self, session, ...)` method as a tool of that name."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"@tool {fn.__qualname__} must be an async def")
    setattr(fn, _TOOL_MARK, True)
    return fn


def is_tool(value: object) -> bool:
    return callable(value) and getattr(value, _TOOL_MARK, False) is True


def define_tool(owner: type, method_name: str, fn: Callable[..., Any]) -> ToolDefinition:
    """The definition of a `@tool` method of `owner`; TypeError naming the tool if unusable."""
    where = f"tool {owner.__name__}.{method_name}"
    if method_name in RESERVED_TOOL_NAMES or method_name.startswith("_"):
        reserved = ", ".join(sorted(RESERVED_TOOL_NAMES))
        raise TypeError(f"{where}: the name is reserved ({reserved}, or starting with _)")
    params = list(inspect.signature(fn).parameters.values())
    if len(params) < 2 or params[1].name != "session":
        raise TypeError(f"{where}: the signature must start (self, session, ...)")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise TypeError(f"{where}: its annotations cannot be resolved: {exc}") from exc
    inputs = params[2:]
    for param in inputs:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise TypeError(f"{where}: argument {param.name!r} must be a plain or keyword-only argument")
        if param.name not in hints:
            raise TypeError(f"{where}: argument {param.name!r} needs a type annotation (its schema)")
    description = (inspect.getdoc(fn) or "").strip().split("\n", 1)[0].strip()
    if len(inputs) == 1 and _is_model(hints[inputs[0].name]):
        model: type[BaseModel] = hints[inputs[0].name]
        return ToolDefinition(method_name, description, model, whole_body=True, method_name=method_name)
    fields: dict[str, Any] = {
        p.name: (hints[p.name], ... if p.default is inspect.Parameter.empty else p.default) for p in inputs
    }
    model = create_model(
        f"{owner.__name__}_{method_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return ToolDefinition(
        method_name,
        description,
        model,
        whole_body=False,
        method_name=method_name,
        field_names=tuple(model.model_fields),
    )


def _is_model(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
