"""What the group judges (`pairwise_judge`, `listwise_judge`) share.

What the group judges (`pairwise_judge`, `listwise_judge`) share: the judge endpoint from their kwargs,
the question and responses of a group, and the guards (an answer a guard catches gets no judge call)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint
from rewardfleet.reward_fns.judging.guards import GuardSettings, check_answer
from rewardfleet.reward_fns.judging.images import image_parts, with_images
from rewardfleet.reward_fns.judging.templates import problem_text
from rewardfleet.services.common.router_http import resolve_address

ENDPOINT_SETTINGS = ("model", "max_tokens", "temperature", "timeout_s", "constrain")


class GroupJudgeConfigError(ValueError):
    """The group judge's kwargs do not allow a judge call (unknown setting, no pool address...)."""


def judge_endpoint(
    router_addresses: Mapping[str, str] | None,
    http_client: aiohttp.ClientSession | None,
    pool: str,
    settings: Mapping[str, Any],
    regex: str,
) -> JudgeEndpoint:
    unknown = sorted(set(settings) - set(ENDPOINT_SETTINGS))
    if unknown:
        raise GroupJudgeConfigError(f"{unknown[0]} is not a group judge setting; known: {ENDPOINT_SETTINGS}")
    try:
        address = resolve_address(pool, router_addresses, None)
    except ValueError as exc:
        raise GroupJudgeConfigError(str(exc)) from exc
    return JudgeEndpoint(
        session=http_client,
        address=address,
        model=str(settings.get("model", "default")),
        max_tokens=int(settings.get("max_tokens", 8)),
        temperature=float(settings.get("temperature", 0.0)),
        timeout_s=float(settings.get("timeout_s", 120.0)),
        regex=regex if settings.get("constrain", True) else None,
    )


_TAG = re.compile(r"<(/?)(response)", re.IGNORECASE)


def neutralise_tags(text: str) -> str:
    """`text` with every `<response...` / `</response...` opener escaped: a response cannot close its own
    tag or forge another one in the judge's prompt (its text is hostile input)."""
    return _TAG.sub(r"&lt;\1\2", text)


def member_texts(samples: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """The question (from the first member's prompt / extra_info) and each member's response, with the
    prompt's tags neutralised in both."""
    first = samples[0] if samples else {}
    question = problem_text(first.get("prompt"), first.get("extra_info")) or "(not given)"
    texts = [neutralise_tags(str(s.get("solution_str") or "")) for s in samples]
    return neutralise_tags(question), texts


def question_messages(samples: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """The judge's one user message: `text` after the question's images (the first member's `images` and
    `image_url` prompt parts: the members of a group share their prompt), as `image_url` parts."""
    first = samples[0] if samples else {}
    return with_images(
        [{"role": "user", "content": text}], image_parts(first.get("images"), first.get("prompt"))
    )


def guarded_members(samples: list[dict[str, Any]], guards: Any) -> tuple[GuardSettings, dict[int, str]]:
    """The guard settings and {member index: guard tripped} for the members a guard catches."""
    settings = GuardSettings.coerce(guards)
    caught = {}
    for i, s in enumerate(samples):
        name = check_answer(str(s.get("solution_str") or ""), settings)
        if name is not None:
            caught[i] = name
    return settings, caught
