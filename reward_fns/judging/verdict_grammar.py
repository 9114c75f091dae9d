"""The regex a judge's output is constrained to, ending in a verdict line.

The regex a judge's output is constrained to (SGLang's `regex` sampling parameter): it always ends in a
verdict line that `_verdicts.parse_verdict` reads, so a constrained judge cannot wander off the format.

The output may start with a bounded stretch of reasoning (when the template asks for it), and the verdict
line must always fit in `max_tokens`. A byte-level tokenizer needs at most one token per UTF-8 byte, so:

- reasoning in ASCII (one byte a character) may be up to `room` characters;
- reasoning with other characters (quoting a French or Chinese response, say) may be up to `room // 4`
  characters (at most four bytes each).

The regex is the union of the two, so ASCII reasoning keeps its full length and non-ASCII text is never
forbidden. Reasoning may not hold `{` or `}` where a JSON object in it would outrank the final verdict line in
the parser's order of trust, nor control characters other than tab and newline.
"""

from __future__ import annotations

import math

from rewardfleet.reward_fns.judging.templates import JudgeTemplate

# Tokens kept free for the verdict line and the end-of-sequence token after the reasoning.
VERDICT_TOKEN_ROOM = 24

# The verdict line each built-in template asks for; `rubric` is built from the scale.
_LINES = {
    "correctness": r"Verdict: (correct|incorrect)",
    "correctness_yes_no": r"(Yes|No)",
    "pairwise": r"Verdict: \[\[(A|B|C)\]\]",
    "step_critique": r"\\boxed\{(-1|0|[1-9][0-9]{0,3})\}",
}
# Templates whose prompt asks for a short explanation before the verdict.
_REASONS = {"correctness", "rubric", "pairwise", "step_critique"}


def scale_line(scale_min: float, scale_max: float) -> str:
    """`Score: <n>` for each integer n of an integer scale, else any decimal (the parser checks range)."""
    scale_min, scale_max = float(scale_min), float(scale_max)  # YAML gives ints
    if scale_min.is_integer() and scale_max.is_integer() and 0 <= scale_max - scale_min <= 100:
        values = range(math.floor(scale_min), math.floor(scale_max) + 1)
        return "Score: (" + "|".join(str(v) for v in sorted(values, key=lambda v: -len(str(v)))) + ")"
    return r"Score: -?[0-9]{1,4}(\.[0-9]{1,3})?"


def verdict_regex(
    template: JudgeTemplate,
    *,
    scale_min: float,
    scale_max: float,
    max_tokens: int,
    reasoning_chars: int,
    line: str | None = None,
) -> str | None:
    """The whole-output regex for `template`, or None when there is nothing to constrain to (a custom template
    without a `verdict_regex`)."""
    if line is None:
        line = scale_line(scale_min, scale_max) if template.name == "rubric" else _LINES.get(template.name)
    if line is None:
        return None
    room = min(reasoning_chars, max_tokens - VERDICT_TOKEN_ROOM)
    if template.name not in _REASONS or room <= 0:
        return line
    # `\boxed{}` is read last-wins whatever precedes it, so step critiques may reason in LaTeX.
    step = template.verdict_kind == "step_index"
    ascii_only = r"[\t\n\x20-\x7e]" if step else r"[\t\n\x20-\x7a|~]"
    any_text = r"[^\x00-\x08\x0b-\x1f\x7f]" if step else r"[^\x00-\x08\x0b-\x1f\x7f{}]"
    reasoning = rf"{ascii_only}{{0,{room}}}"
    if room >= 4:
        reasoning = rf"(?:{reasoning}|{any_text}{{0,{room // 4}}})"
    return rf"(?:{reasoning}\n)?{line}"
