"""Tool-use trajectories: a reward per assistant turn for valid tool calls, plus the final answer's check.

Needs the sample's `messages` (OpenAI chat format, docs/trajectories.md). The declared tools are
`extra_info["tools"]` in OpenAI's tools format, else the `tools` keyword (config `reward_kwargs`).

A tool call is **valid** when its name is a declared tool and its `arguments` (JSON text or the parsed
object) validate against the tool's `parameters` schema (`jsonschema`; remote `$ref`s are never fetched). A
call that is not valid is the policy's mistake: it scores 0, its reason kept in `invalid_calls`.

`turn_scores`, one per assistant turn, in order:

- a turn with tool calls: the fraction of its calls that are valid;
- the last assistant turn, when it makes no tool call (the final answer): the answer's score;
- any other turn without tool calls (talk between calls): 1.0, nothing to check.

The answer check: `answer_fn` (config only; default `exact_match`, one of `ANSWER_FNS`) on the final turn's
text as its `solution_str`, with `answer_kwargs`. A trajectory that ends on a tool call has no answer: 0.

`score` = `answer_weight` × answer score + (1 − `answer_weight`) × mean of the tool-call turns' scores;
with no tool-call turn it is the answer score alone. Default `answer_weight` 0.5.

Hostile input: a schema over `max_schema_nodes` / `max_schema_depth` or one the library cannot evaluate is a
`ToolSchemaError`; arguments over `max_arguments_chars` or too deep make that call invalid without parsing;
anything still slow is stopped by `timeout_s` (details: docs/architecture.md, "Notes moved from module
docstrings").
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema
from jsonschema.validators import validator_for

ANSWER_FNS = frozenset(
    {"exact_match", "regex_match", "gsm8k", "math", "math_dapo", "math_verify", "prime_math", "search_r1"}
)
MAX_REASONS = 16


class ToolSchemaError(ValueError):
    """A declared tool or its `parameters` schema is unusable (malformed, too large, too deep, cyclic)."""


def _shape(value: Any, max_nodes: int, max_depth: int) -> tuple[int, int]:
    """(values, depth) of a JSON value, counting stops once a bound is passed."""
    nodes, deepest = 0, 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        deepest = max(deepest, depth)
        if nodes > max_nodes or deepest > max_depth:
            break
        if isinstance(node, Mapping):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)
    return nodes, deepest


def declared_tools(tools: Any, max_nodes: int, max_depth: int) -> dict[str, Any]:
    """name -> a validator of its arguments; `ToolSchemaError` naming the tool when one is unusable."""
    if tools is None:
        return {}
    if not isinstance(tools, list):
        raise ToolSchemaError(f"tools must be a list in OpenAI's tools format, got {type(tools).__name__}")
    validators: dict[str, Any] = {}
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not isinstance(name, str):
            raise ToolSchemaError(f"tools[{i}] has no function.name")
        schema = function.get("parameters", {"type": "object"})  # type: ignore[union-attr]
        if not isinstance(schema, (Mapping, bool)):
            raise ToolSchemaError(f"tools[{i}] ({name}): parameters must be a JSON schema object")
        nodes, depth = _shape(schema, max_nodes, max_depth)
        if nodes > max_nodes or depth > max_depth:
            raise ToolSchemaError(
                f"tools[{i}] ({name}): parameters schema is over max_schema_nodes={max_nodes} or "
                f"max_schema_depth={max_depth}"
            )
        cls = validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except (jsonschema.SchemaError, RecursionError) as exc:
            message = getattr(exc, "message", type(exc).__name__)
            raise ToolSchemaError(f"tools[{i}] ({name}): invalid parameters schema: {message}") from None
        validators[name] = cls(schema)
    return validators


def _arguments(raw: Any, max_chars: int, max_depth: int) -> tuple[dict[str, Any] | None, str]:
    """The call's arguments object, or None and why not."""
    if isinstance(raw, str):
        if len(raw) > max_chars:
            return None, f"arguments over max_arguments_chars={max_chars}"
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError):
            return None, "arguments are not valid JSON"
    if not isinstance(raw, dict):
        return None, "arguments are not a JSON object"
    if _shape(raw, max_chars, max_depth)[1] > max_depth:
        return None, f"arguments nested deeper than max_schema_depth={max_depth}"
    return raw, ""


def check_call(call: Any, validators: Mapping[str, Any], max_chars: int, max_depth: int) -> str:
    """ "" for a valid call, else the reason it is not."""
    function = call.get("function") if isinstance(call, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    validator = validators.get(name) if isinstance(name, str) else None
    if validator is None:
        return f"tool {str(name)[:64]!r} is not declared"
    arguments, why = _arguments(function.get("arguments"), max_chars, max_depth)  # type: ignore[union-attr]
    if arguments is None:
        return f"{name}: {why}"
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except RecursionError:
        raise ToolSchemaError(f"tool {name!r}: its schema recurses without end") from None
    if error is not None:
        return f"{name}: {error.message[:200]}"
    return ""


def turn_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    return ""


def answer_score(
    answer_fn: str, data_source: str, text: str, ground_truth: Any, extra_info: Any, kwargs: Mapping[str, Any]
) -> float:
    """The named built-in's score of the final answer."""
    if answer_fn not in ANSWER_FNS:
        raise ValueError(f"answer_fn {answer_fn!r} is not one of {sorted(ANSWER_FNS)}")
    module = importlib.import_module(f"{__package__}.{answer_fn}")
    value = module.compute_score(data_source, text, ground_truth, extra_info, **kwargs)
    if isinstance(value, Mapping):
        value = value["score"]
    elif isinstance(value, tuple):
        value = value[0]
    if not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise ValueError(f"answer_fn {answer_fn!r} returned {value!r}, not a finite score")
    return float(value)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    messages: list[dict[str, Any]] | None = None,
    *,
    tools: list[dict[str, Any]] | None = None,
    answer_fn: str = "exact_match",
    answer_kwargs: dict[str, Any] | None = None,
    answer_weight: float = 0.5,
    max_schema_nodes: int = 2000,
    max_schema_depth: int = 32,
    max_arguments_chars: int = 100_000,
) -> dict[str, Any]:
    """Score a tool-use trajectory (module docstring)."""
    if not messages:
        raise ValueError("tool_use scores a trajectory: the sample needs `messages`")
    if not 0.0 <= answer_weight <= 1.0:
        raise ValueError(f"answer_weight must be in [0, 1], got {answer_weight}")
    declared = (extra_info or {}).get("tools", tools)
    validators = declared_tools(declared, max_schema_nodes, max_schema_depth)
    turns = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant"]
    final = turns[-1] if turns and not turns[-1].get("tool_calls") else None
    turn_scores: list[float] = []
    call_turn_scores: list[float] = []
    calls = valid = 0
    reasons: list[str] = []
    for turn in turns:
        turn_calls = turn.get("tool_calls") or []
        if not isinstance(turn_calls, Sequence) or isinstance(turn_calls, str) or not turn_calls:
            turn_scores.append(math.nan if turn is final else 1.0)  # the final one: filled in below
            continue
        results = [check_call(c, validators, max_arguments_chars, max_schema_depth) for c in turn_calls]
        calls += len(results)
        valid += results.count("")
        reasons.extend(r for r in results if r)
        turn_scores.append(results.count("") / len(results))
        call_turn_scores.append(turn_scores[-1])
    answered = final is not None
    answer = 0.0
    if final is not None:
        answer = answer_score(
            answer_fn, data_source, turn_text(final), ground_truth, extra_info, answer_kwargs or {}
        )
        turn_scores[-1] = answer
    tool_part = math.fsum(call_turn_scores) / len(call_turn_scores) if call_turn_scores else None
    score = answer if tool_part is None else answer_weight * answer + (1.0 - answer_weight) * tool_part
    return {
        "score": score,
        "turn_scores": turn_scores,
        "answer_score": answer,
        "answered": answered,
        "tool_calls": calls,
        "valid_tool_calls": valid,
        "invalid_calls": reasons[:MAX_REASONS],
    }
