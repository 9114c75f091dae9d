"""MATH (Hendrycks): the last `\\boxed{}` answer, normalised and compared as verl's `math` reward does.

Scores 1.0 when the last boxed answer equals `ground_truth` after verl's string normalisation
(`strip_string`), else 0.0. Extraction, in verl's order:

- if the text contains `\\boxed ` (with a space) anywhere, the answer is what follows the *last*
  `\\boxed ` up to the next `$`;
- otherwise the last `\\boxed` (or, failing that, `\\fbox`) through its balanced closing brace; an
  `\\fbox{…}` or a `\\boxed` not followed by `{` is never accepted (verl scores it 0).

Normalisation drops newlines, `\\!`, `\\left`/`\\right`, degree marks, `\\$`, a trailing
`\\text{ unit}`, `\\%`, spaces; maps `tfrac`/`dfrac` to `frac`, `\\frac12` to `\\frac{1}{2}`,
`\\sqrt2` to `\\sqrt{2}`, `a/b` (integers) to `\\frac{a}{b}`, `0.5` to `\\frac{1}{2}`, a leading `.`
to `0.`, and drops a short `x =` prefix. When normalisation hits malformed input (two
`\\text{ ` units, a dangling `\\sqrt` or `\\frac`) both sides are compared raw, as verl does.
Deviation from verl, on invalid input only: non-string arguments raise `TypeError`.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.reward_fns.judging.answers import balanced_braces_end, require_str

DATA_SOURCES: tuple[str, ...] = (
    "lighteval/MATH",
    "DigitalLearningGmbH/MATH-lighteval",
    "HuggingFaceH4/MATH-500",
)


class _Malformed(Exception):
    """Normalisation cannot proceed; compare the raw strings instead."""


def last_boxed(text: str) -> str | None:
    """The last boxed expression, including its `\\boxed`/`\\fbox` prefix, as verl extracts it."""
    if "\\boxed " in text:
        return "\\boxed " + text.split("\\boxed ")[-1].split("$")[0]
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    end = balanced_braces_end(text, start)
    return None if end is None else text[start : end + 1]


def unbox(boxed: str) -> str | None:
    """The content of a `last_boxed` result, or None when it is not a well-formed `\\boxed`."""
    if boxed.startswith("\\boxed "):
        return boxed[len("\\boxed ") :]
    if boxed.startswith("\\boxed{") and boxed.endswith("}"):
        return boxed[len("\\boxed{") : -1]
    return None


def _drop_units(text: str) -> str:
    parts = text.split("\\text{ ")
    if len(parts) > 2:
        raise _Malformed("several \\text{ units")
    return parts[0]


def _brace_sqrt(text: str) -> str:
    parts = text.split("\\sqrt")
    out = [parts[0]]
    for part in parts[1:]:
        if not part:
            raise _Malformed("dangling \\sqrt")
        out.append("\\sqrt" + (part if part[0] == "{" else "{" + part[0] + "}" + part[1:]))
    return "".join(out)


def _brace_fracs(text: str) -> str:
    parts = text.split("\\frac")
    out = [parts[0]]
    for part in parts[1:]:
        if not part:
            raise _Malformed("dangling \\frac")
        if part[0] == "{":
            out.append("\\frac" + part)
            continue
        if len(part) < 2:
            return text  # `\frac` + one character: verl gives up and keeps the whole string
        numerator, second, rest = part[0], part[1], part[2:]
        if second == "{":
            out.append("\\frac{" + numerator + "}{" + rest)
        else:
            out.append("\\frac{" + numerator + "}{" + second + "}" + rest)
    return "".join(out)


def _slash_to_frac(text: str) -> str:
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        numerator, denominator = int(parts[0]), int(parts[1])
    except ValueError:
        return text
    if text != f"{numerator}/{denominator}":
        return text
    return "\\frac{" + str(numerator) + "}{" + str(denominator) + "}"


def normalize(text: str) -> str:
    """verl's `strip_string`; raises `_Malformed` where verl's raises."""
    for old, new in (
        ("\n", ""),
        ("\\!", ""),
        ("\\\\", "\\"),
        ("tfrac", "frac"),
        ("dfrac", "frac"),
        ("\\left", ""),
        ("\\right", ""),
        ("^{\\circ}", ""),
        ("^\\circ", ""),
        ("\\$", ""),
    ):
        text = text.replace(old, new)
    text = _drop_units(text)
    text = text.replace("\\\\%", "").replace("\\%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        text = sides[1]
    text = _brace_sqrt(text)
    text = text.replace(" ", "")
    text = _brace_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _slash_to_frac(text)


def is_equiv(answer: str, ground_truth: str) -> bool:
    """Equal after normalisation, or equal raw when either side cannot be normalised."""
    try:
        return normalize(answer) == normalize(ground_truth)
    except _Malformed:
        return answer == ground_truth


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
) -> float:
    """1.0 when the last boxed answer is equivalent to `ground_truth`, else 0.0."""
    truth = require_str("ground_truth", ground_truth)
    boxed = last_boxed(require_str("solution_str", solution_str))
    if boxed is None:
        return 0.0
    answer = unbox(boxed)
    if answer is None:
        return 0.0
    return 1.0 if is_equiv(answer, truth) else 0.0
