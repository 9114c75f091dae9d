"""Turn a judge model's free text into a verdict with a score in [0, 1] — or raise `VerdictParseError`.

Judges are asked for one format (see `_judge_templates`), but they drift, so every parser accepts all the
common shapes. Formats are tried in a fixed order of trust, and within a format the *last* usable occurrence
wins (judges reason first and conclude last):

1. a JSON object (bare or in a ```json fence) with a known key (`score`, `verdict`, `winner`, ...);
2. `\\boxed{...}`;
3. a labelled line: `Score: 7`, `Rating: [[7]]`, `Verdict: incorrect`, `Winner: B`, `[[A]]`;
4. the end of the text: a final number (`... so 8/10`), or a last line that is only a verdict word.

Reasoning inside `<think>...</think>` is dropped first; an unclosed `<think>` means the judge ran out of
tokens before concluding, which is an error, not a verdict. Nothing here ever guesses 0: what cannot be
read raises.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

VerdictKind = Literal["binary", "scale", "pairwise", "step_index"]
VERDICT_KINDS: tuple[VerdictKind, ...] = ("binary", "scale", "pairwise", "step_index")


class VerdictParseError(ValueError):
    """The judge's text holds no verdict of the expected kind (or only an out-of-range one)."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(f"{message}; judge said: {_excerpt(text)!r}")
        self.text = text


@dataclass(frozen=True)
class Verdict:
    """A parsed verdict. `score` is normalised to [0, 1]; `value` is what the judge stated (7, "correct", "A",
    -1); `source` names the format that matched ("json", "boxed", "label", "final")."""

    score: float
    value: float | int | str
    source: str


# --- text helpers ------------------------------------------------------------------------------------------

_THINK_CLOSE = "</think>"
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_OUT_OF = re.compile(rf"({_NUMBER})\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_FINAL_NUMBER = re.compile(rf"({_NUMBER})(?:\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?))?", re.IGNORECASE)
_TEXT_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\{([^{}]*)\}")


def _excerpt(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"...{text[-limit:]}"


def strip_reasoning(text: str) -> str:
    """The part of `text` after the last `</think>`; raises if a `<think>` block is never closed."""
    if _THINK_CLOSE in text:
        return text.rsplit(_THINK_CLOSE, 1)[1]
    if "<think>" in text:
        raise VerdictParseError("the judge's reasoning (<think>) never ended: it ran out of tokens", text)
    return text


def boxed_contents(text: str) -> list[str]:
    """Contents of every `\\boxed{...}` (and `\\fbox{...}`) in order, with nested braces kept balanced."""
    found: list[str] = []
    for match in re.finditer(r"\\(?:boxed|fbox)\s*\{", text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    found.append(text[start:i])
                    break
    return found


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object embedded in `text` that decodes, in order (a fenced block or a bare `{...}`)."""
    decoder = json.JSONDecoder()
    objects: list[dict[str, Any]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            objects.append(obj)
        pos = text.find("{", end)
    return objects


def _clean_word(raw: str) -> str:
    raw = _TEXT_WRAPPER.sub(r"\1", raw)
    return re.sub(r"[^a-z0-9+\-. ]", " ", raw.lower()).strip(" .")


def _last_line(text: str) -> str:
    for line in reversed(text.strip().splitlines()):
        if line.strip():
            return line.strip()
    return ""


# --- per-kind interpretation of one candidate ------------------------------------------------------------

_TRUE_WORDS = {"correct", "yes", "true", "right", "pass", "accept", "accepted", "valid", "1", "equivalent"}
_FALSE_WORDS = {
    "incorrect", "no", "false", "wrong", "fail", "reject", "rejected", "invalid", "0",
    "not correct", "not equivalent", "inequivalent",
}  # fmt: skip


def _binary_value(raw: Any) -> tuple[float, str] | None:
    if isinstance(raw, bool):
        return (1.0 if raw else 0.0), str(raw).lower()
    if isinstance(raw, int | float):
        return (float(raw), str(raw)) if raw in (0, 1) else None
    if not isinstance(raw, str):
        return None
    word = _clean_word(raw)
    if word in _TRUE_WORDS:
        return 1.0, word
    if word in _FALSE_WORDS:
        return 0.0, word
    return None


def _number(raw: Any, over: float | None = None) -> float | None:
    """A number from a JSON value or a string like "7", "**7**", "[[7]]", "\\text{7}". A fraction "7/10" or
    "7 out of 10" counts as 7 only when its denominator is `over` (the top of the scale); other fractions are
    ambiguous and rejected."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    if not isinstance(raw, str):
        return None
    cleaned = _TEXT_WRAPPER.sub(r"\1", raw).strip().strip("*[]() .")
    fraction = _OUT_OF.fullmatch(cleaned)
    if fraction:
        return float(fraction.group(1)) if over is not None and float(fraction.group(2)) == over else None
    return float(cleaned) if re.fullmatch(_NUMBER, cleaned) else None


def _pairwise_value(raw: Any) -> tuple[float, str] | None:
    if not isinstance(raw, str):
        return None
    word = _clean_word(raw)
    word = re.sub(r"^(?:response|assistant|answer|output|model|candidate)\s+", "", word)
    if word in {"a", "[[a]]"}:
        return 1.0, "A"
    if word in {"b", "[[b]]"}:
        return 0.0, "B"
    if word in {"tie", "a tie", "draw", "equal", "both", "c", "same"}:
        return 0.5, "tie"
    return None


# --- format scanners --------------------------------------------------------------------------------

_SCALE_KEYS = ("score", "rating", "grade", "overall_score", "final_score")
_BINARY_KEYS = (
    "verdict",
    "judgment",
    "judgement",
    "decision",
    "correct",
    "is_correct",
    "correctness",
    "label",
)
_PAIRWISE_KEYS = ("winner", "verdict", "preferred", "better", "choice", "preference")
_STEP_KEYS = ("error_step", "first_error_step", "step", "index", "earliest_error")

_SCALE_LABEL = re.compile(
    rf"(?:score|rating|grade)\s*(?:\*\*)?\s*[:=]\s*(?:\*\*)?\s*\[*\s*({_NUMBER}(?:\s*(?:/|out\s+of)\s*\d+)?)",
    re.IGNORECASE,
)
_DOUBLE_BRACKET = re.compile(r"\[\[\s*([^\[\]]{1,20}?)\s*\]\]")
_BINARY_LABEL = re.compile(
    r"(?:verdict|judge?ment|decision|conclusion|final\s+answer|correctness|grade)\s*(?:\*\*)?\s*[:=]\s*"
    r"(?:\*\*)?\s*\[*\s*(not\s+[a-z]+|[a-z]+)",
    re.IGNORECASE,
)
_PAIRWISE_LABEL = re.compile(
    r"(?:verdict|winner|better(?:\s+response)?|preferred(?:\s+response)?|preference|choice|final\s+answer)"
    r"\s*(?:\*\*)?\s*[:=]\s*(?:\*\*)?\s*\[*\s*(?:(?:response|assistant|answer|output)\s+)?"
    r"(?:a\s+)?(tie|draw|[AB])\b",
    re.IGNORECASE,
)
_STEP_LABEL = re.compile(
    r"(?:error\s+step|first\s+error|earliest\s+error)\s*[:=]\s*([-+]?\d+)", re.IGNORECASE
)


@dataclass(frozen=True)
class _Spec:
    keys: tuple[str, ...]
    labels: tuple[re.Pattern[str], ...]
    interpret: Callable[[Any], tuple[float, Any] | None]
    final: Callable[[str], Iterable[Any]]


def _final_numbers(text: str) -> list[str]:
    matches = list(_FINAL_NUMBER.finditer(text))
    return [m.group(0) for m in matches[-1:]]


def _final_word(text: str) -> list[str]:
    return [_last_line(text).strip("*#_`>:- ")]


def _final_letter(text: str) -> list[str]:
    match = re.search(r"(?:\b|\[\[)(A|B|tie)(?:\]\])?\W*$", text.strip(), re.IGNORECASE)
    return [match.group(1)] if match else []


def _first(objects: list[dict[str, Any]], keys: tuple[str, ...]) -> list[Any]:
    values: list[Any] = []
    for obj in objects:
        lowered = {str(k).lower(): v for k, v in obj.items()}
        for key in keys:
            if key in lowered:
                values.append(lowered[key])
                break
    return values


def _scan(text: str, spec: _Spec) -> tuple[Verdict | None, list[str]]:
    """The verdict of the most trusted format that holds a usable one, and the unusable candidates seen."""
    # Several label patterns may match: order their hits by position so that "last" means last in the text.
    labelled = sorted((m.start(), m.group(1)) for pattern in spec.labels for m in pattern.finditer(text))
    sources: list[tuple[str, list[Any]]] = [
        ("json", _first(json_objects(text), spec.keys)),
        ("boxed", boxed_contents(text)),
        ("label", [value for _, value in labelled]),
        ("final", list(spec.final(text))),
    ]
    rejected: list[str] = []
    for source, candidates in sources:
        for candidate in reversed(candidates):
            parsed = spec.interpret(candidate)
            if parsed is not None:
                return Verdict(score=parsed[0], value=parsed[1], source=source), rejected
            rejected.append(f"{source}: {str(candidate)[:40]!r}")
    return None, rejected


def parse_verdict(
    text: str,
    kind: VerdictKind,
    *,
    scale_min: float = 1.0,
    scale_max: float = 10.0,
) -> Verdict:
    """Parse `text` as a verdict of `kind`:

    - "binary": correct/incorrect (yes/no, true/false, 1/0) → 1.0 / 0.0.
    - "scale": a number in [scale_min, scale_max] → (x - min) / (max - min).
    - "pairwise": A / B / tie → 1.0 / 0.0 / 0.5 (the score of response A).
    - "step_index": the index of the earliest wrong step, -1 for none (FAPO's GenRM) → 1.0 if -1 else 0.0.
    """
    if kind not in VERDICT_KINDS:
        raise ValueError(f"unknown verdict kind {kind!r}; expected one of {VERDICT_KINDS}")
    if scale_max <= scale_min:
        raise ValueError(f"scale_max ({scale_max}) must exceed scale_min ({scale_min})")
    body = strip_reasoning(text)
    if not body.strip():
        raise VerdictParseError("the judge returned no text after its reasoning", text)
    spec = _specs(scale_min, scale_max)[kind]
    verdict, rejected = _scan(body, spec)
    if verdict is None:
        seen = f" (unusable candidates: {', '.join(rejected[:4])})" if rejected else ""
        raise VerdictParseError(f"no {kind} verdict found{seen}", text)
    return verdict


def _specs(low: float, high: float) -> dict[VerdictKind, _Spec]:
    def scale(raw: Any) -> tuple[float, Any] | None:
        value = _number(raw, over=high)
        if value is None or not low <= value <= high:
            return None
        shown: float | int = int(value) if value.is_integer() else value
        return (value - low) / (high - low), shown

    def step(raw: Any) -> tuple[float, Any] | None:
        value = _number(raw)
        if value is None or not value.is_integer() or value < -1:
            return None
        return (1.0 if value == -1 else 0.0), int(value)

    return {
        "binary": _Spec(_BINARY_KEYS, (_BINARY_LABEL, _DOUBLE_BRACKET), _binary_value, _final_word),
        "scale": _Spec(_SCALE_KEYS, (_SCALE_LABEL, _DOUBLE_BRACKET), scale, _final_numbers),
        "pairwise": _Spec(_PAIRWISE_KEYS, (_PAIRWISE_LABEL, _DOUBLE_BRACKET), _pairwise_value, _final_letter),
        "step_index": _Spec(_STEP_KEYS, (_STEP_LABEL,), step, _final_numbers),
    }
