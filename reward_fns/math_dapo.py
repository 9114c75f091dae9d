"""DAPO math: `Answer: …` (Minerva style) compared after normalisation, scored ±1 as verl's `math_dapo`.

Returns `{"score": 1.0 | -1.0, "acc": bool, "pred": str | None}`, equal to verl 0.9's
`math_dapo.compute_score` (which `default_compute_score` uses for `math_dapo`, `math`,
`math_dapo_reasoning` and every name starting with `aime`). Only the last 300 characters count.

1. The last `Answer: <rest of line>` (case-insensitive) is normalised (units, `\\text{}`, `$…$`,
   `\\boxed{}`, `\\frac12`, thousands commas, … removed or rewritten) and compared with the
   normalised `ground_truth`.
2. With no `Answer:` line, verl 0.9 falls back to the last `\\boxed{…}` in the final 100 characters,
   compared **raw** (un-normalised) with `ground_truth`. verl 0.8 had no such fallback; pass
   `boxed_fallback=False` to get its behaviour (`pred` is then `"[INVALID]"`, score -1).
3. `strict_box_verify=True` uses only the raw boxed comparison (`pause_tokens_index`, a list of 4 ints,
   moves its 100-character window as verl's does).

Deviation from verl, on invalid input only: non-string arguments raise `TypeError`.
"""

from __future__ import annotations

import re
from typing import Any

from rewardfleet.reward_fns.judging.answers import last_braced_command, require_str

DATA_SOURCES: tuple[str, ...] = ("math_dapo", "math", "math_dapo_reasoning", "aime*")

TAIL_CHARS = 300
BOX_WINDOW_CHARS = 100
INVALID = "[INVALID]"
_ANSWER_LINE = re.compile(r"(?i)Answer\s*:\s*([^\n]+)")

# Applied in this order; the order matters (e.g. "an " goes before " ").
_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    ("\\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
)
_DELETIONS: tuple[str, ...] = (
    *("square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units", "\\ldots"),
    *("sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm", "gm", "pounds"),
    *("meters", "meals", "edges", "students", "childrentickets", "multiples"),
    *("\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}", "\\text{}"),
    *("\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots"),
)
_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r".*?\$(.*?)\$.*"), r"$\1$"),  # keep only the first $…$ span
    (re.compile(r"\\text\{(.*?)\}"), r"\1"),
    (re.compile(r"\\textbf\{(.*?)\}"), r"\1"),
    (re.compile(r"\\overline\{(.*?)\}"), r"\1"),
    (re.compile(r"\\boxed\{(.*)\}"), r"\1"),
    (re.compile(r"frac([^{])(.)"), r"frac{\1}{\2}"),
    (re.compile(r"sqrt([^{])"), r"sqrt{\1}"),
)


def normalize_final_answer(answer: str) -> str:
    """verl's Minerva normalisation of a final answer."""
    answer = answer.split("=")[-1]
    for old, new in _REPLACEMENTS:
        answer = answer.replace(old, new)
    for junk in _DELETIONS:
        answer = answer.replace(junk, "")
    for pattern, replacement in _REWRITES:
        answer = pattern.sub(replacement, answer)
    answer = answer.replace("$", "")
    if answer.replace(",", "").isdigit():
        answer = answer.replace(",", "")
    return answer.strip()


def _boxed_content(text: str, pause_tokens_index: list[int] | None) -> str | None:
    if pause_tokens_index is not None:
        if len(pause_tokens_index) != 4:
            raise ValueError(f"pause_tokens_index must hold 4 indices, got {len(pause_tokens_index)}")
        window = text[pause_tokens_index[-1] - BOX_WINDOW_CHARS :]
    else:
        window = text[-BOX_WINDOW_CHARS:]
    boxed = last_braced_command(window, "\\boxed{")
    return None if boxed is None else boxed[len("\\boxed{") : -1]


def _judge(
    text: str, truth: str, strict_box_verify: bool, pause_tokens_index: list[int] | None, boxed_fallback: bool
) -> tuple[bool, str | None]:
    if strict_box_verify:
        boxed = _boxed_content(text, pause_tokens_index)
        return boxed == truth, boxed
    lines = _ANSWER_LINE.findall(text)
    pred = normalize_final_answer(lines[-1] if lines else INVALID)
    correct = pred == normalize_final_answer(truth)
    if pred != INVALID or not boxed_fallback:
        return correct, pred
    boxed = _boxed_content(text, pause_tokens_index)
    if boxed is not None:
        return boxed == truth, boxed
    return correct, pred


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict[str, Any] | None = None,
    *,
    strict_box_verify: bool = False,
    pause_tokens_index: list[int] | None = None,
    boxed_fallback: bool = True,
) -> dict[str, Any]:
    """`{"score": ±1.0, "acc": bool, "pred": the normalised prediction or the raw boxed content}`."""
    text = require_str("solution_str", solution_str)[-TAIL_CHARS:]
    truth = require_str("ground_truth", ground_truth)
    correct, pred = _judge(text, truth, strict_box_verify, pause_tokens_index, boxed_fallback)
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": pred}
