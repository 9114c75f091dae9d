"""Structured output: the response parsed and validated against the task's JSON Schema.

The response parsed as JSON (or YAML, TOML, CSV) and validated against the task's JSON Schema, as NeMo Gym's
`structured_outputs` server grades it.

`ground_truth` is the schema: a JSON text (NeMo Gym's `schema_str`) or an object. Task fields in
`extra_info`: `schema_type` ("json" default, "yaml", "toml", "csv"; "xml" is refused: no XML parser is
bundled), `response_mode` ("text" default; "tool_call": the payload is the one function call of the
trajectory's last assistant turn, `tool_name` and `tool_payload_key` as NeMo Gym reads them). Claims no
data source.

Grading: the schema is made strict first (every object with `properties` requires all of them and allows no
other key), then the parsed response is validated with `jsonschema` under the schema's own `$schema` dialect,
else Draft 2020-12 (what OpenAPI 3.1 uses). The response is parsed as it is: a JSON answer wrapped in a
markdown fence does not parse, as in NeMo Gym.

Returns `{"score": 1.0 | 0.0, "error_type": None or why, "error_message": ...}`; the error types are
NeMo Gym's (`empty_response`, `parse_error`, `validation_error`, `missing_tool_call`, ...).

Hostile input: the schema comes with the sample. One over `max_schema_nodes` values or nested deeper than
`max_schema_depth`, one that is not valid JSON Schema, or that recurses without end, is a typed error for
the sample (`SchemaRefused`), never a score. A response over `max_response_chars`, or a parsed value
nested deeper than `max_schema_depth` scores 0 with its reason. A `pattern` written to backtrack
catastrophically is stopped by the function's `timeout_s` (the worker process is killed and replaced).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import tomllib
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing.exceptions
import yaml
from jsonschema.validators import validator_for

from rewardfleet.reward_fns.judging.answers import require_str
from rewardfleet.reward_fns.tool_use import _shape

__all__ = ["SchemaRefused", "compute_score"]

SCHEMA_TYPES = ("json", "yaml", "toml", "csv")
_MESSAGE_CHARS = 200


class SchemaRefused(ValueError):
    """The task's schema is unusable: not JSON, too large or deep, invalid, or recursing without end."""


def _strict(schema: Any) -> None:
    """Every object schema with `properties` requires all of them and allows nothing else (in place)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "properties" in node and isinstance(node["properties"], Mapping):
                node["required"] = list(node["properties"])
                node["additionalProperties"] = False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _validator(raw: Any, max_nodes: int, max_depth: int) -> Any:
    if isinstance(raw, str):
        if len(raw) > max_nodes * 64:
            raise SchemaRefused(f"the schema text is over {max_nodes * 64} characters")
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise SchemaRefused(f"the schema is not JSON: {str(exc)[:_MESSAGE_CHARS]}") from None
    if not isinstance(raw, (Mapping, bool)):
        raise SchemaRefused(f"the schema must be a JSON object, not {type(raw).__name__}")
    nodes, depth = _shape(raw, max_nodes, max_depth)
    if nodes > max_nodes or depth > max_depth:
        raise SchemaRefused(
            f"the schema is over max_schema_nodes={max_nodes} or max_schema_depth={max_depth}"
        )
    schema = copy.deepcopy(raw)
    _strict(schema)
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except (jsonschema.SchemaError, RecursionError) as exc:
        message = exc.message if isinstance(exc, jsonschema.SchemaError) else "it recurses without end"
        raise SchemaRefused(f"invalid JSON Schema: {message[:_MESSAGE_CHARS]}") from None
    return cls(schema)


def _coerce_csv(rows: list[dict[str, Any]], schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """CSV cells are text: each becomes its column's schema type when it reads as one."""
    items = schema.get("items", schema) if isinstance(schema, Mapping) else {}
    props = items.get("properties", {}) if isinstance(items, Mapping) else {}
    return [{k: _cell(v, (props.get(k) or {}).get("type", "string")) for k, v in row.items()} for row in rows]


def _cell(value: Any, kind: Any) -> Any:
    if isinstance(kind, list):
        if value in (None, "") and "null" in kind:
            return None
        for one in kind:
            if one != "null":
                got = _cell(value, one)
                if one == "string" or not isinstance(got, str):
                    return got
        return value
    if not isinstance(value, str) or value == "":
        return value
    try:
        if kind == "integer":
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value.lower() in ("true", "1", "false", "0"):
        return value.lower() in ("true", "1")
    return value


def _parse(kind: str, text: str) -> Any:
    if kind == "json":
        return json.loads(text)
    if kind == "yaml":
        return yaml.safe_load(text)
    if kind == "toml":
        return tomllib.loads(text)
    return list(csv.DictReader(io.StringIO(text)))


def _tool_payload(messages: Any, info: Mapping[str, Any]) -> tuple[Any, str | None, str | None]:
    """(payload, error_type, error_message) of the last assistant turn's single tool call."""
    turns = [m for m in messages or [] if isinstance(m, Mapping) and m.get("role") == "assistant"]
    calls = list(turns[-1].get("tool_calls") or []) if turns else []
    if not calls:
        return None, "missing_tool_call", "No function_call item found in assistant response"
    names = [str((c.get("function") or {}).get("name")) for c in calls if isinstance(c, Mapping)]
    if len(calls) > 1:
        return None, "multiple_tool_calls", f"Expected exactly one function_call, got: {', '.join(names)}"
    tool_name = info.get("tool_name")
    if tool_name and names[0] != tool_name:
        return None, "wrong_tool_name", f"Expected tool '{tool_name}', got: {names[0]}"
    arguments = (calls[0].get("function") or {}).get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            return None, "tool_arguments_parse_error", f"{type(exc).__name__}: {str(exc)[:_MESSAGE_CHARS]}"
    elif not isinstance(arguments, Mapping):
        return None, "tool_arguments_parse_error", f"Unsupported arguments type: {type(arguments).__name__}"
    key = info.get("tool_payload_key")
    if key:
        if not isinstance(arguments, Mapping) or key not in arguments:
            return None, "missing_tool_payload_key", f"Missing tool payload key: {key}"
        return arguments[key], None, None
    return arguments, None, None


def _result(score: float, error_type: str | None = None, message: str | None = None) -> dict[str, Any]:
    return {"score": score, "error_type": error_type, "error_message": message}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    messages: list[dict[str, Any]] | None = None,
    max_schema_nodes: int = 5000,
    max_schema_depth: int = 32,
    max_response_chars: int = 1_000_000,
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    info = extra_info or {}
    schema_raw = ground_truth if ground_truth is not None else info.get("schema_str")
    kind = str(info.get("schema_type") or "json").lower()
    if kind not in SCHEMA_TYPES:
        raise SchemaRefused(
            f"extra_info['schema_type'] must be one of {', '.join(SCHEMA_TYPES)}, got {kind!r}"
        )
    validator = _validator(schema_raw, max_schema_nodes, max_schema_depth)
    if info.get("response_mode") == "tool_call":
        payload, error_type, message = _tool_payload(messages, info)
        if error_type is not None:
            return _result(0.0, error_type, message)
    else:
        if len(text) > max_response_chars:
            return _result(0.0, "response_too_long", f"over max_response_chars={max_response_chars}")
        if not text.strip():
            return _result(0.0, "empty_response", "No assistant response text")
        try:
            payload = _parse(kind, text)
        except (ValueError, yaml.YAMLError, csv.Error, RecursionError) as exc:
            return _result(0.0, "parse_error", f"{type(exc).__name__}: {str(exc)[:_MESSAGE_CHARS]}")
        if kind == "csv":
            payload = _coerce_csv(payload, validator.schema)
    if _shape(payload, max_response_chars, max_schema_depth)[1] > max_schema_depth:
        return _result(0.0, "validation_error", f"the value is nested deeper than {max_schema_depth}")
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(payload))
    except RecursionError:
        raise SchemaRefused("the schema recurses without end") from None
    except referencing.exceptions.Unresolvable as exc:  # an unresolvable $ref: the task's schema
        raise SchemaRefused(f"the schema's $ref does not resolve: {str(exc)[:_MESSAGE_CHARS]}") from None
    if error is not None:
        return _result(0.0, "validation_error", f"ValidationError: {error.message[:_MESSAGE_CHARS]}")
    return _result(1.0)
