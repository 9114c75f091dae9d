"""The rule step of `rule_then_judge`: its settings (`RuleGate`) and running the built-in rule function.

Where the rule runs: `math_dapo`, `math` and `gsm8k` are pure-Python string checks, so they run in a
worker thread (`asyncio.to_thread`) off the event loop. `math_verify` times itself out with `signal.alarm`,
which works only in the main thread (elsewhere verl got silent 0 scores), so it runs on the calling thread —
the event loop, about 10 ms per check — and if that is not the main thread this raises `RuleCheckError`.
With `rule_kwargs={"parsing_timeout_s": None, "verify_timeout_s": None}` it sets no alarm and goes to a
thread too (then only the gateway's per-function timeout bounds it). Other rules run on the calling thread.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardfleet.reward_fns.judging.errors import JudgeConfigError

BUILTINS = "rewardfleet.reward_fns"  # the package of the rule functions (this one is its judging/)

THREAD_SAFE_RULES = frozenset({"math_dapo", "math", "gsm8k"})

ON_JUDGE_ERROR = ("raise", "rule")


@dataclass(frozen=True)
class RuleGate:
    """Which rule decides (`rule`, called with `rule_kwargs`), which samples reach the judge (a right answer
    of a split not in `skip_judge_splits`), what a flaw costs (`flaw_penalty`), and what a judge failure does
    (`on_judge_error`: "raise", or "rule" to keep the rule's score and report the error)."""

    rule: str = "math_dapo"
    rule_kwargs: Mapping[str, Any] | None = None
    flaw_penalty: float = 1.0
    skip_judge_splits: Sequence[str] = ("test",)
    on_judge_error: str = "raise"

    def __post_init__(self) -> None:
        if self.on_judge_error not in ON_JUDGE_ERROR:
            raise JudgeConfigError(f"on_judge_error must be 'raise' or 'rule', not {self.on_judge_error!r}")

    def asks_judge(self, correct: bool, extra_info: Mapping[str, Any] | None) -> bool:
        split = (extra_info or {}).get("split")
        return correct and (split is None or split not in self.skip_judge_splits)


class RuleCheckError(RuntimeError):
    """The rule function cannot run here or returned something that is not a score."""


def rule_is_thread_safe(rule: str, rule_kwargs: Mapping[str, Any]) -> bool:
    if rule in THREAD_SAFE_RULES:
        return True
    # math_verify sets no signal.alarm when both of its timeouts are disabled.
    return rule == "math_verify" and all(
        key in rule_kwargs and rule_kwargs[key] is None for key in ("parsing_timeout_s", "verify_timeout_s")
    )


async def run_rule(
    gate: RuleGate, data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None
) -> tuple[float, bool, str]:
    """(score, correct, pred) from `rewardfleet.reward_fns.<rule>.compute_score`."""
    rule, rule_kwargs = gate.rule, gate.rule_kwargs or {}
    try:
        module = importlib.import_module(f"{BUILTINS}.{rule}")
    except ImportError as exc:
        raise RuleCheckError(f"no built-in rule function {BUILTINS}.{rule}: {exc}") from exc
    fn = getattr(module, "compute_score", None)
    if fn is None or asyncio.iscoroutinefunction(fn):
        raise RuleCheckError(f"{BUILTINS}.{rule} has no synchronous compute_score")
    kwargs = dict(data_source=data_source, solution_str=solution_str, ground_truth=ground_truth)
    if rule_is_thread_safe(rule, rule_kwargs):
        result = await asyncio.to_thread(fn, extra_info=extra_info, **kwargs, **rule_kwargs)
    elif threading.current_thread() is threading.main_thread():
        result = fn(extra_info=extra_info, **kwargs, **rule_kwargs)
    else:
        raise RuleCheckError(
            f"rule {rule!r} may use signal.alarm (math-verify), which fails outside the main thread; run the "
            "event loop in the main thread, or for math_verify pass rule_kwargs parsing_timeout_s=None and "
            "verify_timeout_s=None"
        )
    if isinstance(result, Mapping):
        if "score" not in result:
            raise RuleCheckError(f"rewardfleet.reward_fns.{rule} returned a dict without 'score'")
        score = float(result["score"])
        correct = bool(result["acc"]) if "acc" in result else score > 0
        pred = result.get("pred")
        return score, correct, "" if pred is None else str(pred)
    if isinstance(result, bool | int | float):
        return float(result), float(result) > 0, ""
    raise RuleCheckError(f"rewardfleet.reward_fns.{rule} returned {type(result).__name__}, not a score")
