"""PRM: a process reward model scores each reasoning step of the response; the score aggregates them.

The response is split into steps (by `step_separator`, "\\n\\n" by default: blank lines), the steps are
joined with the PRM's step tag, one tag after each step (Qwen2.5-Math-PRM's format: `<extra_0>` after every
step), and the chat `prompt messages + {"role": "assistant", "content": tagged steps}` goes to the PRM pool
as vLLM's pooling API takes it: `POST /pooling {"model", "messages"}` (a `PoolingChatRequest`; the server
renders it with the PRM's own chat template). The answer holds, per step tag, the label probabilities; the
step reward is the probability of `positive_label` (1 for Qwen2.5-Math-PRM; 0 for a Math-Shepherd-style PRM
served with `returned_token_ids` [good, bad]).

The response is the policy's text and may try to forge steps: every step tag it contains is removed before
the tags are placed, and the PRM must answer exactly one reward per step, or the sample fails with a typed
error (never a partial or default score).

The pool must be one that speaks `/pooling`: a fleet `kind: prm` pool (the fleet gives the gateway its
replica's address, since sglang-router 0.3.2 does not proxy `/pooling`) or an external vLLM endpoint of that
kind. There is no fallback to the default router, which would be another model's.

The reward_kwargs stay flat keywords, declared from two groups (`judging/keywords.py`): the server's
`PrmContext` and `PrmSettings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.steps import AGGREGATES, DEFAULT_MAX_STEPS, split_steps
from rewardfleet.reward_fns.judging.steps import aggregate as aggregate_scores
from rewardfleet.reward_fns.judging.templates import chat_messages_from
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()

QWEN_PRM_STEP_TAG = "<extra_0>"


class PrmCallError(RemoteCallError):
    """The PRM pool did not answer with one usable step reward per step (see `RemoteCallError.kind`)."""


class PrmInputError(ValueError):
    """The sample or the function's settings do not allow building the PRM's input."""


@dataclass(frozen=True)
class PrmContext:
    """What the server passes with each call: the pools' addresses (no default router: see above), the
    shared HTTP session, the sample's prompt."""

    router_addresses: Mapping[str, str] | None = None
    http_client: aiohttp.ClientSession | None = None
    prompt: Any = None


@dataclass(frozen=True)
class PrmSettings:
    """The reward_kwargs: the PRM pool and model asked, the steps (`step_tag` after each, split by
    `step_separator`, at most `max_steps`), how step rewards are read (`positive_label`) and aggregated,
    the optional system prompt, the call's timeout."""

    pool: str = "prm"
    model: str | None = None
    step_tag: str = QWEN_PRM_STEP_TAG
    step_separator: str = "\n\n"
    aggregate: str = "min"
    max_steps: int = DEFAULT_MAX_STEPS
    positive_label: int = 1
    system_prompt: str | None = None
    timeout_s: float = 60.0


# The flat keywords of compute_score: what the server passes, then the PRM's settings.
KEYWORDS = Keywords(PrmContext, PrmSettings)


def remove_tag(text: str, step_tag: str) -> str:
    """`text` without `step_tag`, removed until none is left (removing one may join the halves of another)."""
    while step_tag in text:
        text = text.replace(step_tag, "")
    return text


def tagged_chat(
    steps: Sequence[str], messages: Sequence[Mapping[str, Any]], step_tag: str, system_prompt: str | None
) -> list[dict[str, Any]]:
    """The PRM's chat: the prompt (with `system_prompt` first when given), then the steps, each followed by
    `step_tag`. Any `step_tag` inside the texts is removed first, so only the tags placed here count."""
    chat = [{"role": "system", "content": system_prompt}] if system_prompt else []
    for m in messages:
        content = m.get("content")
        text = content if isinstance(content, str) else str(content or "")
        chat.append({"role": str(m.get("role")), "content": remove_tag(text, step_tag)})
    clean = [remove_tag(s, step_tag).strip() for s in steps]
    clean = [s for s in clean if s]
    chat.append({"role": "assistant", "content": "".join(s + step_tag for s in clean)})
    return chat


def step_rewards(body: Any, expected_steps: int, positive_label: int, url: str) -> list[float]:
    """The probability of `positive_label` at each step tag of vLLM's `PoolingResponse`, one per step."""

    def bad(why: str) -> PrmCallError:
        return PrmCallError(
            f"unusable answer from {url}: {why}: {str(body)[:300]}", url=url, kind="bad_response"
        )

    try:
        rows = body["data"][0]["data"]
    except (KeyError, IndexError, TypeError) as exc:
        raise bad("expected data[0].data (vLLM's PoolingResponse)") from exc
    if not isinstance(rows, list) or len(rows) != expected_steps:
        got = len(rows) if isinstance(rows, list) else type(rows).__name__
        raise bad(f"expected {expected_steps} step rows (one per step tag), got {got}")
    scores: list[float] = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) <= positive_label:
            raise bad(f"step {i}: expected a list of at least {positive_label + 1} label probabilities")
        try:
            value = float(row[positive_label])
        except (TypeError, ValueError) as exc:
            raise bad(f"step {i}: not a number") from exc
        if not math.isfinite(value):
            raise bad(f"step {i}: non-finite reward {value}")
        scores.append(value)
    return scores


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """`{"score": aggregate of the step rewards, "step_scores": [...], "num_steps", "prompt_source"}`.
    `ground_truth` is not used: the PRM judges the steps themselves.

    Steps are split by `step_separator` (reward_fns/judging/steps.py's rule `separator:<SEP>`; more than
    `max_steps` is a TooManySteps error). `aggregate`: one of _steps.AGGREGATES, min by default (the
    weakest step, the usual PRM reading; mean, last, product, first_error...). `model`, when given, is sent
    as the request's `model` (vLLM checks it against its served name; left out, the server's own model).
    `system_prompt` goes first when given (Qwen2.5-Math-PRM's card uses "Please reason step by step, and
    put your final answer within \\boxed{}."). The keywords are those of `PrmContext` and `PrmSettings`
    (`inspect.signature` lists them).
    """
    context, settings = KEYWORDS.read(reward_kwargs)
    return await score_steps(solution_str, extra_info, context, settings)


async def score_steps(
    solution_str: str, extra_info: dict[str, Any] | None, context: PrmContext, settings: PrmSettings
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read."""
    aggregate, step_tag, step_separator = settings.aggregate, settings.step_tag, settings.step_separator
    positive_label = settings.positive_label
    if aggregate not in AGGREGATES:
        raise PrmInputError(f"aggregate must be one of {list(AGGREGATES)}, not {aggregate!r}")
    if not step_tag or not step_separator:
        raise PrmInputError("step_tag and step_separator must not be empty")
    if positive_label < 0:
        raise PrmInputError(f"positive_label must be >= 0, not {positive_label}")
    messages, prompt_source = chat_messages_from(context.prompt, extra_info)
    if messages is None:
        raise PrmInputError(
            "no prompt for this sample: send `prompt` (text or chat messages) or extra_info['raw_prompt']"
        )
    pieces = split_steps(solution_str, f"separator:{step_separator}", settings.max_steps)
    steps = [s for s in pieces if remove_tag(s, step_tag).strip()]
    if not steps:
        raise PrmInputError("the response has no steps to score (it is empty or only step tags)")
    try:
        address = resolve_address(settings.pool, context.router_addresses, None)
    except ValueError as exc:
        raise PrmInputError(f"{exc}; a PRM pool must be configured by name (`pool`)") from exc
    chat = tagged_chat(steps, messages, step_tag, settings.system_prompt)
    request: dict[str, Any] = {"messages": chat}
    if settings.model is not None:
        request["model"] = settings.model
    body = await post_json(
        context.http_client,
        address,
        "/pooling",
        request,
        timeout_s=settings.timeout_s,
        error_cls=PrmCallError,
    )
    scores = step_rewards(body, len(steps), positive_label, f"{address}/pooling")
    return {
        "score": aggregate_scores(scores, aggregate),
        "step_scores": scores,
        "num_steps": len(scores),
        "prompt_source": prompt_source,
    }
