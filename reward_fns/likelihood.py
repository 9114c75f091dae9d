"""Verifier-free reward (RLPR / VeriFree): how likely a model finds the reference after the reasoning.

The response's final answer is cut out (`cut_answer`: from the last `\\boxed{`, `<answer>`, "answer is",
"Answer:" or `####` on; with none of them the whole response is reasoning), and the reference is scored in its
place: the chat `[user: question]` rendered by the pool's tokenizer (`reward_model_tokenizer`), then the
reasoning, then the answer's lead-in (`\\boxed{` when the response boxed its answer, else `answer_prefix`),
then the reference's tokens. One SGLang `/generate` call with `max_new_tokens: 0`, `return_logprob: true`
and `logprob_start_len` = the prefix length - 1 returns `meta_info.input_token_logprobs` (one
`[logprob, id, text]` per token from that start, the first logprob None); the reference's token
probabilities p_i give the reward:

- `aggregate: mean_prob` (RLPR, the default): mean of p_i;
- `aggregate: geometric_mean`: exp(mean log p_i) (the sequence probability per token, VeriFree's view).

`debias: baseline` subtracts the same reference's score with no reasoning (the question alone), clipped to
[0, 1] (RLPR's reward debiasing): reasoning that does not make the reference more likely earns nothing.
RLPR's other filter (drop prompts whose rewards have a low standard deviation) is a batch-level choice of the
trainer, not a per-sample reward, and is not done here.

Returns {"score", "likelihood_prob", "likelihood_baseline" (None without debias), "likelihood_tokens",
"likelihood_cut", "usage"}. A missing tokenizer or question raises `LikelihoodConfigError`; a failed call
`LikelihoodCallError`: never a silent 0.

The reward_kwargs stay flat keywords, declared from two groups (`judging/keywords.py`): the server's
`LikelihoodContext` and `LikelihoodSettings`.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.guards import GuardSettings, check_answer
from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.templates import as_text, problem_text
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()
AGGREGATES = ("mean_prob", "geometric_mean")
DEBIAS = ("none", "baseline")

_MARKERS = re.compile(r"<answer>|\b(?:the\s+)?(?:final\s+)?answer\s*(?:is|:)\s*:?|####", re.IGNORECASE)


class LikelihoodCallError(RemoteCallError):
    """The pool's router or server did not answer `/generate` with usable prompt logprobs."""


class LikelihoodConfigError(ValueError):
    """The settings or the sample do not allow this reward (no tokenizer, no reference, unknown option)."""


@dataclass(frozen=True)
class LikelihoodContext:
    """What the server passes with each call: the routers, the shared HTTP session, the pool's tokenizer
    and the sample's prompt."""

    router_addresses: Mapping[str, str] | None = None
    reward_router_address: str | None = None
    http_client: aiohttp.ClientSession | None = None
    reward_model_tokenizer: Any = None
    prompt: Any = None


@dataclass(frozen=True)
class LikelihoodSettings:
    """The reward_kwargs: the pool asked, how token probabilities make the score (`aggregate`, `debias`),
    the answer's lead-in when the response has none, the reference's bound, the call's timeout, the guards."""

    pool: str = "judge"
    aggregate: str = "mean_prob"
    debias: str = "none"
    answer_prefix: str = "The answer is "
    max_reference_tokens: int = 256
    timeout_s: float = 120.0
    guards: GuardSettings | Mapping[str, Any] | bool | None = None


# The flat keywords of compute_score: what the server passes, then the reward's settings.
KEYWORDS = Keywords(LikelihoodContext, LikelihoodSettings)


def cut_answer(response: str) -> tuple[str, str, str]:
    """(reasoning, the answer's lead-in to put before the reference, how the answer was found)."""
    boxed = response.rfind("\\boxed{")
    found = list(_MARKERS.finditer(response))
    marker = found[-1] if found else None
    if boxed >= 0 and (marker is None or boxed > marker.start()):
        return response[:boxed], "\\boxed{", "boxed"
    if marker is not None:
        lead = "<answer>" if marker.group(0).lower() == "<answer>" else marker.group(0).rstrip() + " "
        return response[: marker.start()], lead, "marker"
    return response, "", "none"


def _ids(tokenizer: Any, text: str) -> list[int]:
    return [int(t) for t in tokenizer.encode(text, add_special_tokens=False)] if text else []


def _prefix_ids(tokenizer: Any, question: str, reasoning: str, lead: str) -> list[int]:
    chat = tokenizer.apply_chat_template(
        [{"role": "user", "content": question}], tokenize=False, add_generation_prompt=True
    )
    return _ids(tokenizer, chat) + _ids(tokenizer, reasoning) + _ids(tokenizer, lead)


async def reference_logprobs(
    session: aiohttp.ClientSession | None,
    address: str,
    prefix: list[int],
    reference: list[int],
    timeout_s: float,
) -> tuple[list[float], int]:
    """log p of each reference token after `prefix`, and the prompt tokens charged."""
    payload = {
        "input_ids": prefix + reference,
        "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
        "return_logprob": True,
        "logprob_start_len": len(prefix) - 1,
    }
    body = await post_json(
        session, address, "/generate", payload, timeout_s=timeout_s, error_cls=LikelihoodCallError
    )
    try:
        entries = body["meta_info"]["input_token_logprobs"]
        values = [float(e[0]) for e in entries[1:]]
        ids = [int(e[1]) for e in entries[1:]]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _bad(address, body, "no meta_info.input_token_logprobs [[logprob, id, text], ...]") from exc
    if ids != reference:
        raise _bad(address, body, f"scored tokens {ids[:8]} are not the reference's {reference[:8]}")
    return values, int(body["meta_info"].get("prompt_tokens", len(prefix) + len(reference)))


def _bad(address: str, body: Any, what: str) -> LikelihoodCallError:
    url = f"{address}/generate"
    return LikelihoodCallError(
        f"unusable answer from {url}: {what}: {str(body)[:300]}", url=url, kind="bad_response"
    )


def combine(logprobs: Sequence[float], how: str) -> float:
    """`mean_prob`: mean of the token probabilities; `geometric_mean`: exp of the mean logprob."""
    if how == "geometric_mean":
        return math.exp(sum(logprobs) / len(logprobs))
    return sum(math.exp(lp) for lp in logprobs) / len(logprobs)


def _check(how: str, debias: str) -> None:
    if how not in AGGREGATES:
        raise LikelihoodConfigError(f"aggregate must be one of {list(AGGREGATES)}, not {how!r}")
    if debias not in DEBIAS:
        raise LikelihoodConfigError(f"debias must be one of {list(DEBIAS)}, not {debias!r}")


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the reward_kwargs once at start-up: a misspelt or mistyped key, `aggregate` and `debias`."""
    KEYWORDS.check(reward_kwargs)
    _, settings = KEYWORDS.read(reward_kwargs)
    _check(settings.aggregate, settings.debias)


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """Score `solution_str` by the reference's likelihood after its reasoning (see the module docstring).
    The keywords are those of `LikelihoodContext` and `LikelihoodSettings` (`inspect.signature` lists
    them)."""
    context, settings = KEYWORDS.read(reward_kwargs)
    return await score_likelihood(solution_str, ground_truth, extra_info, context, settings)


async def score_likelihood(
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None,
    context: LikelihoodContext,
    settings: LikelihoodSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read."""
    how, debias, http_client = settings.aggregate, settings.debias, context.http_client
    _check(how, debias)
    tokenizer = context.reward_model_tokenizer
    if tokenizer is None:
        raise LikelihoodConfigError("likelihood needs the pool's tokenizer (reward_model_tokenizer)")
    reference = as_text(ground_truth)
    if not reference:
        raise LikelihoodConfigError("likelihood needs a reference answer (ground_truth)")
    question = problem_text(context.prompt, extra_info)
    if not question:
        raise LikelihoodConfigError("likelihood needs the question (extra_info.question or the prompt)")
    try:
        address = resolve_address(settings.pool, context.router_addresses, context.reward_router_address)
    except ValueError as exc:
        raise LikelihoodConfigError(str(exc)) from exc
    guards = GuardSettings.coerce(settings.guards)
    tripped = check_answer(solution_str, guards)
    if tripped is not None:
        return _result(guards.score, None, None, 0, "guard", {}, tripped)
    reasoning, lead, cut = cut_answer(solution_str)
    if lead == "":
        lead = settings.answer_prefix
    prefix, ref_ids = await asyncio.to_thread(
        lambda: (_prefix_ids(tokenizer, question, reasoning, lead), _ids(tokenizer, reference))
    )
    if len(ref_ids) > settings.max_reference_tokens:
        raise LikelihoodConfigError(f"the reference is {len(ref_ids)} tokens, over max_reference_tokens")
    calls = [reference_logprobs(http_client, address, prefix, ref_ids, settings.timeout_s)]
    if debias == "baseline":
        bare = await asyncio.to_thread(_prefix_ids, tokenizer, question, "", lead)
        calls.append(reference_logprobs(http_client, address, bare, ref_ids, settings.timeout_s))
    answers = await asyncio.gather(*calls)
    prob = combine(answers[0][0], how)
    baseline = combine(answers[1][0], how) if len(answers) > 1 else None
    score = prob if baseline is None else min(1.0, max(0.0, prob - baseline))
    tokens = sum(t for _, t in answers)
    usage = {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}
    return _result(score, prob, baseline, len(ref_ids), cut, usage, "")


def _result(
    score: float,
    prob: float | None,
    baseline: float | None,
    tokens: int,
    cut: str,
    usage: Mapping[str, int],
    guard: str,
) -> dict[str, Any]:
    return {
        "score": float(score),
        "likelihood_prob": prob,
        "likelihood_baseline": baseline,
        "likelihood_tokens": tokens,
        "likelihood_cut": cut,
        "usage": dict(usage),
        "guard": guard,
    }
