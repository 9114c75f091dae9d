"""Input limits checked on every sample before any work starts, each answered with an error naming the field.

    max_body_bytes         413 PayloadTooLarge   (services/common/body_limits.py, before the body is parsed)
    max_batch_samples      413 BatchTooLarge     (routes/score.py)
    max_solution_chars     413 FieldTooLarge     solution_str
    max_ground_truth_chars 413 FieldTooLarge     ground_truth (a string; or the JSON text of any other value)
    max_prompt_chars       413 FieldTooLarge     prompt (`prompt_chars`: the text, or the sum of the
                                                 messages' string `content`; token estimates count the same)
    max_extra_info_depth   422 TooDeep           extra_info nested deeper than this (a flat dict is depth 1)

Lengths are in characters (Python `len`), not bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from rewardfleet.services.gateway.errors import FieldTooLarge, TooDeep
from rewardfleet.services.gateway.schemas import ScoreRequest


def nesting_depth(value: Any, limit: int) -> int:
    """Depth of nested dicts/lists (a scalar is 0, `{}` is 1), counted no further than `limit + 1`."""
    if not isinstance(value, dict | list):
        return 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return deepest


def prompt_chars(prompt: Any) -> int:
    """Length of a prompt: the text, or the sum of the chat messages' string `content`."""
    if isinstance(prompt, str):
        return len(prompt)
    total = 0
    if isinstance(prompt, list):
        for message in prompt:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str):
                total += len(content)
    return total


@dataclass(frozen=True)
class SampleLimits:
    max_solution_chars: int
    max_ground_truth_chars: int
    max_prompt_chars: int
    max_extra_info_depth: int

    def check(self, sample: ScoreRequest) -> None:
        if len(sample.solution_str) > self.max_solution_chars:
            raise FieldTooLarge(
                f"solution_str has {len(sample.solution_str)} characters; "
                f"max_solution_chars is {self.max_solution_chars}",
                field="solution_str",
            )
        gt = sample.ground_truth
        if gt is not None:
            size = len(gt) if isinstance(gt, str) else len(json.dumps(gt, default=repr))
            if size > self.max_ground_truth_chars:
                raise FieldTooLarge(
                    f"ground_truth has {size} characters; max_ground_truth_chars is "
                    f"{self.max_ground_truth_chars}",
                    field="ground_truth",
                )
        if sample.prompt is not None:
            size = prompt_chars(sample.prompt)
            if size > self.max_prompt_chars:
                raise FieldTooLarge(
                    f"prompt has {size} characters; max_prompt_chars is {self.max_prompt_chars}",
                    field="prompt",
                )
        if sample.extra_info:
            depth = nesting_depth(sample.extra_info, self.max_extra_info_depth)
            if depth > self.max_extra_info_depth:
                raise TooDeep(
                    f"extra_info is nested more than max_extra_info_depth={self.max_extra_info_depth} deep",
                    field="extra_info",
                )
