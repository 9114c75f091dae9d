"""What NeMo Gym's judge servers share, for the built-ins that reproduce them.

The built-ins (`equivalence_llm_judge`, `xstest`, `aalcr`, ...) share the message a judge reads from, the
endpoint of a pool, NeMo Gym's record of a judge call, and reading a verdict label only where the policy
could not have written it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.services.common.router_http import resolve_address

__all__ = ["endpoint", "evaluation", "first_label", "last_message", "shows_label", "templated_chat"]


def last_message(messages: Sequence[Mapping[str, Any]], role: str) -> str | None:
    """The text of the last message of `role`, or None."""
    for message in reversed(messages):
        if message.get("role") == role and isinstance(message.get("content"), str):
            return str(message["content"])
    return None


def templated_chat(system: str | None, user: str, values: Mapping[str, str]) -> list[dict[str, Any]]:
    """The judge's messages: an optional system message and the user message, each template filled in."""
    chat = [{"role": "system", "content": system.format_map(values)}] if system else []
    chat.append({"role": "user", "content": user.format_map(values)})
    return chat


def endpoint(
    pool: str,
    router_addresses: Mapping[str, str] | None,
    reward_router_address: str | None,
    session: aiohttp.ClientSession | None,
    **settings: Any,
) -> JudgeEndpoint:
    """The pool's judge endpoint (model, max_tokens, temperature, timeout_s in `settings`), unseeded: the
    request is NeMo Gym's, which sends no seed."""
    try:
        address = resolve_address(pool, router_addresses, reward_router_address)
    except ValueError as exc:
        raise JudgeConfigError(str(exc)) from exc
    return JudgeEndpoint(session=session, address=address, sampling_seed=False, **settings)


def evaluation(chat: list[dict[str, Any]], text: str, label: str | None) -> dict[str, Any]:
    """One judge call in NeMo Gym's `JudgeEvaluation` shape: the request's input, the judge's output."""
    sent = [{"role": m["role"], "content": m["content"], "type": "message"} for m in chat]
    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    return {
        "responses_create_params": {"input": sent},
        "response": {"output": [said]},
        "verdict_label": label,
    }


def shows_label(shown: str, labels: Sequence[str]) -> bool:
    """Whether what the judge was shown of the policy's answer holds a verdict label: then no verdict is read
    from the judge's reply (it may quote the label back), and the answer scores as an unreadable verdict."""
    return any(label and label in shown for label in labels)


def first_label(text: str, labels: Sequence[str]) -> str | None:
    """The label of `labels` that occurs first in `text`, or None."""
    found = [(pos, label) for label in labels if (pos := text.find(label)) >= 0]
    return min(found)[1] if found else None
