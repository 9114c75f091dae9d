"""Settings objects for the judges' reward_kwargs, grouped by concern.

Settings objects for the judges' reward_kwargs, grouped by concern (as httpx groups `Timeout` and
`Limits`): how each generation is asked (`GenerationSettings`), how the verdict is asked for and read
(`VerdictSettings`), and probability mode's servers and labels (`ProbabilitySettings`). Guards have their
own (`guards.GuardSettings`).

Each is accepted as the object itself or, from YAML, as a mapping of its fields:

    reward_kwargs: {template: rubric, generation: {max_tokens: 512}, verdict: {scale_max: 5}}

A key that is not a field, or a value of the wrong type, raises `JudgeSettingsError` naming it
(`verdict.scale_mx is not a setting of verdict; known: [...]`); the judges' `startup_check` runs the same
conversion, so a misspelt setting stops the gateway at start-up, as a misspelt top-level reward_kwarg does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeVar


class JudgeSettingsError(ValueError):
    """A settings group names an unknown setting or holds a value of the wrong type."""


@dataclass(frozen=True)
class GenerationSettings:
    """How each judge generation is asked. `use_generate`: render the chat with the judge's tokenizer and
    post SGLang's `/generate` with token ids instead of `/v1/chat/completions`."""

    max_tokens: int = 1024
    temperature: float = 0.0
    use_generate: bool = False
    # Send a sampling seed derived from the messages asked (`judging/seed.py`): `seed` on the chat route,
    # `sampling_params.sampling_seed` on /generate; False for a backend that refuses the field. `seed_uid`
    # mixes the sample's uid in (identical answers of a group then draw apart; a re-score or `--repeat`,
    # which send their own uids, then draw anew).
    sampling_seed: bool = True
    seed_uid: bool = False


@dataclass(frozen=True)
class VerdictSettings:
    """What the judge is asked and how its answer is constrained and read (see `_judge_templates`,
    `_verdict_grammar`, `_verdicts`)."""

    user_template: str | None = None
    verdict_kind: str | None = None
    system_prompt: str | None = None
    rubric: str | None = None
    scale_min: float = 1.0
    scale_max: float = 10.0
    pairwise_both_orders: bool = False
    constrain: bool = True  # send SGLang's `regex` so the answer must end in the verdict line
    line: str | None = None  # the verdict line's regex, for a custom template
    reasoning_chars: int = 400


@dataclass(frozen=True)
class ProbabilitySettings:
    """Probability mode: `/v1/score` on the judge pool's model servers (the router does not proxy it),
    one `host:port`, a list, or a comma-separated string; the two label tokens are [positive, negative]."""

    score_server_address: str | Sequence[str] = ""
    label_tokens: Sequence[str] = ("Yes", "No")


S = TypeVar("S")

# Field types a mapping's values are checked against, by the type of the field's default.
_NUMBER = (int, float)


def settings_from(cls: type[S], value: S | Mapping[str, Any] | None, name: str, base: S | None = None) -> S:
    """`value` as a `cls`: the object itself, None (`base`, or the defaults), or a mapping of fields laid
    over `base`. Raises `JudgeSettingsError` naming `name.<key>` for an unknown key or a wrong type."""
    if isinstance(value, cls):
        return value
    start = base if base is not None else cls()
    if value is None:
        return start
    if not isinstance(value, Mapping):
        raise JudgeSettingsError(f"{name} must be a mapping of settings, not {type(value).__name__}")
    known = {f.name: getattr(start, f.name) for f in fields(cls)}  # type: ignore[arg-type]
    for key, item in value.items():
        if key not in known:
            raise JudgeSettingsError(f"{name}.{key} is not a setting of {name}; known: {sorted(known)}")
        _check_type(f"{name}.{key}", known[key], item)
    return replace(start, **dict(value))  # type: ignore[type-var]


def _check_type(where: str, default: Any, value: Any) -> None:
    if value is None:
        if default is not None:
            raise JudgeSettingsError(f"{where} may not be null")
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, _NUMBER) and not isinstance(value, bool)
    elif isinstance(default, str) and where.endswith("score_server_address"):
        ok = isinstance(value, str) or (
            isinstance(value, Sequence) and all(isinstance(v, str) for v in value)
        )
    elif isinstance(default, str) or default is None:
        ok = isinstance(value, str)
    elif isinstance(default, Sequence):
        ok = isinstance(value, Sequence) and not isinstance(value, str)
    else:
        ok = True
    if not ok:
        raise JudgeSettingsError(f"{where}: {value!r} is not a valid value (default {default!r})")
