"""Instruction following (IFEval, IFEvalG, IFBench): each verifiable instruction of the task checked against
the response, strict and loose, with all-or-nothing or per-instruction credit.

The task is NeMo Gym's instruction_following / ifbench row: `instruction_id_list` (ids such as
`"keywords:forbidden_words"`), `kwargs` (one object per id, nulls ignored), `prompt`, and optionally
`grading_mode` (`"binary"` | `"fraction"`, which then overrides `credit`). They are read from `ground_truth`
(an object, or its JSON text; empty or blank text means none) or else from `extra_info` (where the gateway's
NeMo Gym mapping puts the task's fields).

- strict: the response as it is. loose (IFEval's): the instruction counts as followed when any of 8 variants
  follows it — the response, without its first line, without its last line, without both, each also with
  every `*` removed. An empty (blank) response follows nothing.
- `credit="all"` (NeMo Gym's "binary", IFEval's prompt-level): 1.0 when every instruction is followed;
  `credit="fraction"` (NeMo Gym's "fraction", instruction-level): the share followed.

Returns `score`, `follow_instruction_list` and `follow_all_instructions` (NeMo Gym's fields, for the chosen
strictness), both lists (`strict_follow_list`, `loose_follow_list`), the prompt-level flags, and
`reward_components`: per instruction group (the id's part before `:`), the share of that group's instructions
followed.

Errors (typed, for the sample; never a silent 0): an unknown instruction id (`UnknownInstruction`), one that
needs data no package ships (`UnsupportedInstruction`), missing or mistyped kwargs (`InstructionKwargsError`
naming `kwargs[i].<field>`), more than `max_instructions` instructions. A response over `max_response_chars`
scores 0 (`reason: "response_too_long"`) without being read: it is the policy's output, not the task's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from rewardfleet.reward_fns._instructions import (  # noqa: F401 - importing them registers their checkers
    ifbench,
    ifbench_custom,
    ifeval,
    ifevalg,
)
from rewardfleet.reward_fns._instructions.spec import (
    REGISTRY,
    UNSUPPORTED,
    InstructionError,
    InstructionKwargsError,
    UnknownInstruction,
    UnsupportedInstruction,
)

__all__ = ["InstructionError", "InstructionKwargsError", "UnknownInstruction", "UnsupportedInstruction"]

GRADING_MODES = {"binary": "all", "fraction": "fraction"}


def loose_variants(response: str) -> list[str]:
    """IFEval's loose variants: first / last / both lines removed, each with and without asterisks."""
    lines = response.split("\n")
    trimmed = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return [*trimmed, *(t.replace("*", "") for t in trimmed)]


def _task(ground_truth: Any, extra_info: Mapping[str, Any] | None) -> dict[str, Any]:
    task: dict[str, Any] = dict(extra_info or {})
    if isinstance(ground_truth, str) and not ground_truth.strip():
        ground_truth = None  # a verl row without a reference carries "": the task is in extra_info
    if isinstance(ground_truth, str):
        try:
            ground_truth = json.loads(ground_truth)
        except ValueError:
            raise InstructionKwargsError("ground_truth is text but not a JSON object of the task") from None
    if isinstance(ground_truth, Mapping):
        task.update(ground_truth)
    elif ground_truth is not None:
        raise InstructionKwargsError(
            f"ground_truth must be the task object or null, got {type(ground_truth).__name__}"
        )
    return task


def _instructions(task: Mapping[str, Any], max_instructions: int) -> tuple[list[str], list[Any]]:
    ids, kwargs = task.get("instruction_id_list"), task.get("kwargs")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise InstructionKwargsError("instruction_id_list must be a list of instruction id strings")
    if len(ids) > max_instructions:
        raise InstructionKwargsError(
            f"instruction_id_list has {len(ids)} instructions; at most {max_instructions}"
        )
    if kwargs is None:
        kwargs = [None] * len(ids)
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        raise InstructionKwargsError("kwargs must be a list with one object (or null) per instruction id")
    return ids, kwargs


def _credit(follows: list[bool], credit: str) -> float:
    if credit == "all":
        return float(bool(follows) and all(follows))
    return sum(follows) / len(follows) if follows else 0.0


def _components(ids: list[str], follows: list[bool]) -> dict[str, float]:
    groups: dict[str, list[bool]] = {}
    for instruction_id, followed in zip(ids, follows, strict=True):
        groups.setdefault(instruction_id.split(":", 1)[0][:64], []).append(followed)
    return {group: sum(f) / len(f) for group, f in sorted(groups.items())[:32]}


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    *,
    strictness: Literal["strict", "loose"] = "strict",
    credit: Literal["all", "fraction"] = "all",
    max_instructions: int = 64,
    max_response_chars: int = 200_000,
) -> dict[str, Any]:
    if strictness not in ("strict", "loose"):
        raise ValueError(f"strictness must be 'strict' or 'loose', got {strictness!r}")
    if credit not in ("all", "fraction"):
        raise ValueError(f"credit must be 'all' or 'fraction', got {credit!r}")
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    task = _task(ground_truth, extra_info)
    ids, raw_kwargs = _instructions(task, max_instructions)
    prompt = task.get("prompt") or ""
    if not isinstance(prompt, str):
        raise InstructionKwargsError("prompt must be a string")
    mode = task.get("grading_mode")
    if mode is not None:
        if mode not in GRADING_MODES:
            raise InstructionKwargsError(
                f"grading_mode must be one of {sorted(GRADING_MODES)}, got {str(mode)[:32]!r}"
            )
        credit = GRADING_MODES[mode]  # type: ignore[assignment]

    checks = []
    for i, (instruction_id, raw) in enumerate(zip(ids, raw_kwargs, strict=True)):
        spec = REGISTRY.get(instruction_id)
        if spec is None:
            if instruction_id in UNSUPPORTED:
                raise UnsupportedInstruction(
                    f"instruction_id_list[{i}] {instruction_id!r}: {UNSUPPORTED[instruction_id]}"
                )
            raise UnknownInstruction(
                f"instruction_id_list[{i}] {instruction_id[:64]!r} is not a known instruction"
            )
        checks.append((spec, spec.kwargs(raw, f"kwargs[{i}]"), i))

    too_long = len(solution_str) > max_response_chars
    strict_list: list[bool] = []
    loose_list: list[bool] = []
    variants = [] if too_long else [v for v in loose_variants(solution_str) if v.strip()]
    for spec, kwargs, i in checks:
        try:
            strict = not too_long and bool(solution_str.strip()) and spec.check(solution_str, kwargs, prompt)
            loose = any(spec.check(v, kwargs, prompt) for v in variants)
        except InstructionKwargsError as exc:
            raise InstructionKwargsError(f"kwargs[{i}]: {exc}") from None
        strict_list.append(bool(strict))
        loose_list.append(bool(loose or strict))
    chosen = strict_list if strictness == "strict" else loose_list
    result: dict[str, Any] = {
        "score": _credit(chosen, credit),
        "follow_all_instructions": bool(chosen) and all(chosen),
        "follow_instruction_list": chosen,
        "strict_follow_list": strict_list,
        "loose_follow_list": loose_list,
        "prompt_level_strict": bool(strict_list) and all(strict_list),
        "prompt_level_loose": bool(loose_list) and all(loose_list),
        "reward_components": _components(ids, chosen),
    }
    if too_long:
        result["reason"] = "response_too_long"
    return result
