"""Rubric rewards: each criterion judged yes/no by the `judge` pool; the reward is their weighted sum.

The rubric is the sample's `extra_info.rubric` (a list of `{text, weight, kind?, name?}`), else the rubric
named by `extra_info.rubric_name` or reward_kwargs `rubric_name` in the reward_kwargs `rubric_set` file, else
(a sample with a reference answer and no rubric, as judge probes send) one essential criterion "the final
answer is the reference". Limits, formula and rubric sets: `_rubric_spec.py`; prompt, grammar and why rubric
text cannot instruct the judge: `_rubric_prompt.py`; docs/rubric.md.

Each judge call carries `criteria_per_call` criteria (1 by default; 0 = all in one call), answered under
SGLang's `regex` as one `N: yes|no` line per criterion; calls of one sample run concurrently (at most
`max_concurrent_calls`). Guards (`guards.py`) run first: a guarded answer gets `guards.score` without a call.

The reward_kwargs stay flat keywords, declared from three groups (`judging/keywords.py`): the server's
`RubricContext`, the judge call's `RubricCall` and the rubric's `RubricKwargs` (checked into
`RubricSettings`).

Returns {"score", "reward_components": {name: 1.0 met | 0.0 not}, "rubric_verdicts": {name: "yes"|"no"},
"rubric_reasons": {name: reason} (with `reasons: true`, else {}), "rubric_source", "judge_calls",
"judge_pool", "usage", "guard"}. A malformed or oversized rubric raises `RubricInputError` naming the field;
an unreadable judge answer `RubricParseError`; a failed call `JudgeCallError`: never a silent 0.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import aiohttp

from rewardfleet.reward_fns._rubric_prompt import (
    RubricParseError,
    parse_rubric_reply,
    rubric_messages,
    rubric_regex,
)
from rewardfleet.reward_fns._rubric_spec import (
    Criterion,
    RubricInputError,
    RubricLimits,
    load_rubric_set,
    parse_rubric,
    reference_rubric,
    rubric_score,
)
from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint, ask_judge, total_usage
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.guards import GuardSettings, GuardSettingsError, check_answer
from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.templates import as_text, problem_text
from rewardfleet.services.common.router_http import resolve_address

DATA_SOURCES: tuple[str, ...] = ()
__all__ = [
    "RubricCall",
    "RubricContext",
    "RubricInputError",
    "RubricKwargs",
    "RubricParseError",
    "RubricSettings",
    "compute_score",
    "startup_check",
]

# Tokens of one verdict line without a reason ("12: yes\n"), with room to spare.
_LINE_TOKENS = 8


@dataclass(frozen=True)
class RubricContext:
    """What the server passes with each call: the routers, the shared HTTP session, the sample's prompt."""

    router_addresses: Mapping[str, str] | None = None
    reward_router_address: str | None = None
    http_client: aiohttp.ClientSession | None = None
    prompt: Any = None


@dataclass(frozen=True)
class RubricCall:
    """How each judge call is made: the pool and model asked, the call's timeout and temperature."""

    pool: str = "judge"
    model: str = "default"
    timeout_s: float = 120.0
    temperature: float = 0.0


@dataclass(frozen=True)
class _RubricOptions:
    """What the rubric's reward_kwargs as given and its checked settings have in common."""

    criteria_per_call: int = 1
    max_concurrent_calls: int = 8
    reasons: bool = False
    reason_chars: int = 120
    essential_gate: bool = True
    rubric_set: str | None = None
    rubric_name: str | None = None


@dataclass(frozen=True)
class RubricKwargs(_RubricOptions):
    """The rubric's reward_kwargs as given (flat, as in YAML); `RubricSettings.build` checks them together."""

    max_criteria: int = RubricLimits.max_criteria
    max_criterion_chars: int = RubricLimits.max_criterion_chars
    guards: GuardSettings | Mapping[str, Any] | bool | None = None


# The flat keywords of compute_score: what the server passes, the judge call's, then the rubric's.
KEYWORDS = Keywords(RubricContext, RubricCall, RubricKwargs)


@dataclass(frozen=True)
class RubricSettings(_RubricOptions):
    """One `rubric` configuration's settings (reward_kwargs), checked together."""

    limits: RubricLimits = field(default_factory=RubricLimits)
    guards: GuardSettings = field(default_factory=GuardSettings)

    @classmethod
    def build(cls, kwargs: Mapping[str, Any]) -> RubricSettings:
        unknown = set(kwargs) - {f.name for f in fields(RubricKwargs)}
        if unknown:
            raise JudgeConfigError(f"unknown rubric setting(s) {sorted(unknown)}")
        ints = {
            k: kwargs[k] for k in ("criteria_per_call", "max_concurrent_calls", "reason_chars") if k in kwargs
        }
        for key, value in ints.items():
            least = 0 if key == "criteria_per_call" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise JudgeConfigError(f"{key} must be an integer >= {least}")
        limits = RubricLimits(
            max_criteria=int(kwargs.get("max_criteria", RubricLimits.max_criteria)),
            max_criterion_chars=int(kwargs.get("max_criterion_chars", RubricLimits.max_criterion_chars)),
        )
        try:
            guards = GuardSettings.coerce(kwargs.get("guards"))
        except GuardSettingsError as exc:
            raise JudgeConfigError(str(exc)) from exc
        settings = cls(
            **ints,
            reasons=bool(kwargs.get("reasons", False)),
            essential_gate=bool(kwargs.get("essential_gate", True)),
            rubric_set=kwargs.get("rubric_set"),
            rubric_name=kwargs.get("rubric_name"),
            limits=limits,
            guards=guards,
        )
        if settings.rubric_name is not None and settings.rubric_set is None:
            raise JudgeConfigError("rubric_name needs rubric_set (the file of named rubrics)")
        if settings.rubric_set is not None:
            named = _rubric_set(settings.rubric_set, limits)
            if settings.rubric_name is not None and settings.rubric_name not in named:
                raise JudgeConfigError(
                    f"rubric_name {settings.rubric_name!r} is not in {settings.rubric_set}"
                )
        return settings


@functools.lru_cache(maxsize=16)
def _rubric_set_cached(path: str, mtime_ns: int, limits: RubricLimits) -> dict[str, list[Criterion]]:
    return load_rubric_set(path, limits)


def _rubric_set(path: str, limits: RubricLimits) -> dict[str, list[Criterion]]:
    try:
        return _rubric_set_cached(path, Path(path).stat().st_mtime_ns, limits)
    except OSError as exc:
        raise JudgeConfigError(f"rubric_set {path!r} cannot be read: {exc}") from exc


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """Check the rubric settings (and the rubric set file, if named) once at start-up, naming a misspelt or
    mistyped key."""
    KEYWORDS.check(reward_kwargs)
    _, _, given = KEYWORDS.read(reward_kwargs)
    RubricSettings.build(vars(given))


def sample_rubric(
    settings: RubricSettings, extra_info: Mapping[str, Any] | None, reference: str | None
) -> tuple[list[Criterion], str]:
    """(criteria, where they came from) for one sample."""
    info = extra_info or {}
    if "rubric" in info:
        return parse_rubric(info["rubric"], "extra_info.rubric", settings.limits), "sample"
    name = info.get("rubric_name", settings.rubric_name)
    if name is not None:
        if settings.rubric_set is None:
            raise RubricInputError("extra_info.rubric_name", "this function has no rubric_set")
        named = _rubric_set(settings.rubric_set, settings.limits)
        if not isinstance(name, str) or name not in named:
            raise RubricInputError("extra_info.rubric_name", "names no rubric of the rubric_set")
        return named[name], f"set:{name}"
    if reference:
        return reference_rubric(reference), "reference"
    raise RubricInputError(
        "extra_info.rubric", "the sample has no rubric, no rubric_name and no ground_truth"
    )


def _chunks(criteria: Sequence[Criterion], per_call: int) -> list[list[Criterion]]:
    size = per_call or len(criteria)
    return [list(criteria[i : i + size]) for i in range(0, len(criteria), size)]


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """Score `solution_str` against its rubric; see the module docstring. The keywords are those of
    `RubricContext`, `RubricCall` and `RubricKwargs` (`inspect.signature` lists them)."""
    context, call, given = KEYWORDS.read(reward_kwargs)
    return await score_rubric(
        solution_str, ground_truth, extra_info, context, call, RubricSettings.build(vars(given))
    )


async def score_rubric(
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None,
    context: RubricContext,
    call: RubricCall,
    settings: RubricSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read and checked."""
    pool = call.pool
    reference = as_text(ground_truth)
    criteria, source = sample_rubric(settings, extra_info, reference)
    try:
        address = resolve_address(pool, context.router_addresses, context.reward_router_address)
    except ValueError as exc:
        raise JudgeConfigError(str(exc)) from exc
    names = [c.name for c in criteria]
    tripped = check_answer(solution_str, settings.guards)
    if tripped is not None:
        unmet = [False] * len(names)
        return _result(settings.guards.score, names, unmet, [""] * len(names), source, 0, pool, {}, tripped)
    question = problem_text(context.prompt, extra_info)
    gate = asyncio.Semaphore(settings.max_concurrent_calls)

    async def judge_chunk(chunk: list[Criterion]) -> tuple[list[tuple[bool, str]], Any]:
        per_line = _LINE_TOKENS + (settings.reason_chars if settings.reasons else 0)
        endpoint = JudgeEndpoint(
            session=context.http_client, address=address, model=call.model,
            max_tokens=per_line * len(chunk) + 8, temperature=call.temperature, timeout_s=call.timeout_s,
            regex=rubric_regex(len(chunk), reasons=settings.reasons, reason_chars=settings.reason_chars),
        )  # fmt: skip
        messages = rubric_messages(
            solution_str, chunk, question=question, reference=reference, reasons=settings.reasons
        )
        async with gate:
            reply = await ask_judge(endpoint, messages)
        return parse_rubric_reply(reply.text, len(chunk)), reply

    chunks = _chunks(criteria, settings.criteria_per_call)
    answers = await asyncio.gather(*(judge_chunk(c) for c in chunks))
    verdicts = [v for judged, _ in answers for v in judged]
    met = [m for m, _ in verdicts]
    said = [r for _, r in verdicts]
    score = rubric_score(criteria, met, essential_gate=settings.essential_gate)
    usage = total_usage([reply for _, reply in answers])
    return _result(score, names, met, said, source, len(chunks), pool, usage, "", settings.reasons)


def _result(
    score: float,
    names: list[str],
    met: list[bool],
    reasons: list[str],
    source: str,
    calls: int,
    pool: str,
    usage: Mapping[str, int],
    guard: str,
    with_reasons: bool = False,
) -> dict[str, Any]:
    return {
        "score": float(score),
        # Per-criterion verdicts: `reward_components` (NeMo Gym's name) until the gateway carries the field.
        "reward_components": {n: 1.0 if m else 0.0 for n, m in zip(names, met, strict=True)},
        "rubric_verdicts": {
            n: ("guard" if guard else "yes" if m else "no") for n, m in zip(names, met, strict=True)
        },
        "rubric_reasons": dict(zip(names, reasons, strict=True)) if with_reasons else {},
        "rubric_source": source,
        "judge_calls": calls,
        "judge_pool": pool,
        "usage": dict(usage),
        "guard": guard,
    }
