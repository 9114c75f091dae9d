"""Reading request bodies the way SGLang's request classes do: text or token-id inputs, chat messages,
score items, and the serde-style type check of `sampling_params`."""

from __future__ import annotations

from typing import Any

from tests.sglang_standin.errors import ContractError, StandinError, TypeInvalid
from tests.sglang_standin.outputs import token_ids

_SAMPLING_INT_FIELDS = ("max_new_tokens", "top_k", "n")
_SAMPLING_FLOAT_FIELDS = ("temperature", "top_p", "min_p")


def check_sampling_contract(params: Any) -> None:
    """The serde-style type check SGLang 0.5.23 runs on `sampling_params` fields (api/v1/api_types.py)."""
    for item in params if isinstance(params, list) else [params]:
        if not isinstance(item, dict):
            continue  # FastAPI's own validation refuses these first
        for key, value in item.items():
            bad_number = not isinstance(value, int | float) or isinstance(value, bool)
            if key in _SAMPLING_INT_FIELDS and value is not None and (bad_number or isinstance(value, float)):
                raise ContractError(f"invalid type: {_serde_unexpected(value)}, expected i64")
            if key in _SAMPLING_FLOAT_FIELDS and value is not None and bad_number:
                raise ContractError(f"invalid type: {_serde_unexpected(value)}, expected f64")


def _serde_unexpected(value: Any) -> str:
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"


def texts_of(value: Any, field_name: str) -> list[str]:
    """Strings of an `input`/`text` field that may be a string, a list of strings, or token ids."""
    if isinstance(value, str):
        if not value.strip():
            raise StandinError(400, "Input cannot be empty or whitespace only")
        return [value]
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return list(value)
        if all(isinstance(v, int) for v in value):
            return [" ".join(str(v) for v in value)]
        if all(isinstance(v, list) for v in value):
            return [" ".join(str(t) for t in v) for v in value]
    if value == []:
        raise StandinError(400, f"'{field_name}' must not be empty")
    raise TypeInvalid(f"'{field_name}' must be a string, list of strings or token ids")


def message_text(message: Any) -> str:
    if not isinstance(message, dict):
        raise StandinError(400, "each message must be an object")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def score_ids(value: Any, field_name: str) -> list[int]:
    """A query/item as token ids: ids as given; text gets SGLang's special tokens (a BOS, id 1) first."""
    if isinstance(value, str):
        return [1, *token_ids(value)]
    if isinstance(value, list) and all(isinstance(t, int) for t in value):
        return list(value)
    raise StandinError(400, f"'{field_name}' must be text or a list of token ids")
