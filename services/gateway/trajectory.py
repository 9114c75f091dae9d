"""A sample's `messages`: a trajectory in OpenAI's chat format, checked before any work starts.

Shape (docs/trajectories.md): a list of messages, each with a `role` of `system`, `user`, `assistant` or
`tool`. `content` is a string or a list of content parts (`{"type": "text", "text": ...}`; see
`CONTENT_PARTS`, the one place a new part type is added). An assistant turn may carry `tool_calls`
(`[{"id", "type": "function", "function": {"name", "arguments"}}]`, `arguments` being JSON text as OpenAI
sends it, or the parsed object as verl's agent loop keeps it) and may then have no content. A `tool` result
answers an earlier call: its `tool_call_id`, when given, must be the `id` of a call made before it (verl
leaves both out when its parser found no id; such a result only needs some earlier call).

Checked here, each a 422 naming the field (`messages.3.tool_call_id`): an unknown role, content that is not
text where text is required (system, user, tool), `tool_calls` outside an assistant turn, `tool_call_id`
outside a tool result, a tool result with no earlier call or with an id no earlier call has. Whether a call's
name or arguments are right is *not* checked here: that is the policy's output, scored by the function (the
`tool_use` built-in), never refused.

`solution_str` rendered from a trajectory (when the sample sends none): the text of the last assistant turn
(text parts joined with no separator; a turn with only tool calls renders as ""). A trajectory with no
assistant turn has nothing to score: 422 on `messages`, unless the sample also sends `solution_str`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, TypeAdapter, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

Role = Literal["system", "user", "assistant", "tool"]


def _invalid(kind: str, message: str) -> PydanticCustomError:
    # the text goes in as context, never as the template: a client's braces are not format fields
    return PydanticCustomError(kind, "{message}", {"message": message})


def _text_part(part: Mapping[str, Any], where: str) -> None:
    if not isinstance(part.get("text"), str):
        raise _invalid("content_part", f"{where}.text must be a string")


def _image_url_part(part: Mapping[str, Any], where: str) -> None:
    # the shape only; the image itself (size, pixels, allowed host) is checked with the sample's other images
    # by limits/input_limits.py (services/common/images.py), as the prompt's image parts are
    image_url = part.get("image_url")
    url = image_url.get("url") if isinstance(image_url, Mapping) else None
    if not isinstance(url, str):
        raise _invalid("content_part", f"{where}.image_url.url must be a string (a data: or https URL)")


# The content-part types a message may hold, by their "type", each with its check (raising
# PydanticCustomError naming `where`); a new part type is added here, and nowhere else.
CONTENT_PARTS: dict[str, Callable[[Mapping[str, Any], str], None]] = {
    "text": _text_part,
    "image_url": _image_url_part,
}


def check_content(value: Any) -> Any:
    """`content` is None, a string, or a list of known content parts; returned unchanged."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _invalid(
            "content_type", f"content must be a string or a list of content parts, got {type(value).__name__}"
        )
    for i, part in enumerate(value):
        where = f"content[{i}]"
        if not isinstance(part, Mapping):
            raise _invalid("content_part", f"{where} must be an object")
        kind = part.get("type")
        check = CONTENT_PARTS.get(kind) if isinstance(kind, str) else None  # a list is unhashable: no 500
        if check is None:
            known = sorted(CONTENT_PARTS)
            shown = str(kind)[:64]
            raise _invalid("content_part", f"{where}.type {shown!r} is not a supported content part {known}")
        check(part, where)
    return value


Content = Annotated[Any, BeforeValidator(check_content)]


def content_text(content: Any) -> str:
    """The text of a checked `content`: the string, or its text parts joined; None is ""."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p.get("type") == "text")


class ToolCallFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    arguments: str | dict[str, Any]


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str | None = None
    type: Literal["function"] = "function"
    function: ToolCallFunction


def _field_error(loc: tuple[str | int, ...], message: str, value: Any) -> ValidationError:
    """A validation error at `loc` (relative to the model being validated: pydantic prefixes the rest)."""
    return ValidationError.from_exception_data(
        "trajectory",
        [InitErrorDetails(type=_invalid("trajectory", message), loc=loc, input=value)],
    )


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Role
    content: Content = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _role_rules(self) -> ChatMessage:
        if self.role != "assistant":
            if self.content is None:
                raise _field_error(("content",), f"a {self.role} message needs text content", None)
            if self.tool_calls is not None:
                raise _field_error(("tool_calls",), "only an assistant turn makes tool calls", None)
        if self.role != "tool" and self.tool_call_id is not None:
            raise _field_error(("tool_call_id",), "only a tool result has a tool_call_id", self.tool_call_id)
        return self


def check_trajectory(messages: list[ChatMessage]) -> None:
    """The rules across messages (module docstring); raises a ValidationError located in the list (the
    `messages` field's validator: pydantic puts `messages` and what encloses it in front)."""
    if not messages:
        raise _field_error((), "a trajectory needs at least one message", messages)
    call_ids: set[str] = set()
    calls_made = False
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            calls_made = True
            call_ids.update(c.id for c in message.tool_calls if c.id is not None)
        elif message.role == "tool":
            if not calls_made:
                raise _field_error(
                    (i, "role"), f"messages[{i}] is a tool result with no earlier tool call", None
                )
            if message.tool_call_id is not None and message.tool_call_id not in call_ids:
                raise _field_error(
                    (i, "tool_call_id"),
                    f"messages[{i}].tool_call_id {message.tool_call_id[:64]!r} matches no earlier tool call",
                    message.tool_call_id,
                )


_MESSAGES: TypeAdapter[list[ChatMessage]] = TypeAdapter(list[ChatMessage])


def validated_messages(value: list[Any] | None) -> list[dict[str, Any]] | None:
    """A sample's `messages` checked (each message's shape, then the rules across them) and returned as the
    plain dicts every consumer uses (functions, limits, the cache digest), None fields left out. Errors are
    located under `messages` (pydantic prefixes the rest of the path)."""
    if value is None:
        return None
    messages = _MESSAGES.validate_python(value)
    check_trajectory(messages)
    return [m.model_dump(exclude_none=True) for m in messages]


def rendered_solution(messages: list[dict[str, Any]]) -> str:
    """`solution_str` for verl-style functions: the last assistant turn's text (module docstring)."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            return content_text(message.get("content"))
    raise _field_error(
        ("messages",),
        "the trajectory has no assistant turn, so there is no response to score; send solution_str too",
        None,
    )
