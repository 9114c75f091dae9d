"""Prompt templates for LLM judges (GenRM), and the sample fields they are filled with.

A template is a system prompt, a user prompt with `{placeholders}`, and the kind of verdict it asks for (which
picks the parser in `_verdicts`). Built-in templates, selected by name with reward_kwargs `template=...`:

- "correctness": is the response's final answer equivalent to the reference? → `Verdict: correct|incorrect`.
- "correctness_yes_no": the same question answered with one word, Yes or No — the template of the probability
  mode, which reads P(Yes) / P(No) instead of generating (it also works generatively).
- "rubric": a 1–10 quality score against a rubric (the sample's or a default one) → `Score: <n>`.
- "pairwise": response A vs response B (the reference response) → `Verdict: [[A]]|[[B]]|[[C]]` (C = tie).
- "step_critique": FAPO's GenRM task: the index of the earliest wrong step, -1 if none → `\\boxed{index}`.

Placeholders: `{problem}`, `{response}`, `{reference}`, `{rubric}`, `{response_a}`, `{response_b}`, `{steps}`.
Values are substituted once, so braces inside a response are never interpreted.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardfleet.reward_fns.judging.verdicts import VERDICT_KINDS, VerdictKind

Message = dict[str, str]
FIELDS = ("problem", "response", "reference", "rubric", "response_a", "response_b", "steps")

DEFAULT_RUBRIC = (
    "- Correctness: the final answer and every claim are right.\n"
    "- Reasoning: the steps are valid, complete and lead to the answer.\n"
    "- Clarity: the response is well organised and no longer than needed."
)


class TemplateError(ValueError):
    """A template name is unknown, or a template needs a field the sample does not have."""


@dataclass(frozen=True)
class JudgeTemplate:
    name: str
    verdict_kind: VerdictKind
    user: str
    system: str | None = None

    def fields(self) -> set[str]:
        """The placeholders of the user prompt; raises `TemplateError` for a malformed or unknown one."""
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(self.user) if name is not None}
        except ValueError as exc:
            raise TemplateError(f"template {self.name!r} does not parse: {exc}") from exc
        unknown = sorted(names - set(FIELDS))
        if unknown:
            raise TemplateError(f"template {self.name!r} has unknown placeholders {unknown}; known: {FIELDS}")
        return names

    def render(self, values: Mapping[str, str], system_prompt: str | None = None) -> list[Message]:
        """Chat messages for the judge; `system_prompt` (if given) replaces the template's own."""
        missing = sorted(name for name in self.fields() if values.get(name) is None)
        if missing:
            raise TemplateError(f"template {self.name!r} needs {missing}, which this sample does not provide")
        try:
            user = self.user.format_map({name: values[name] for name in self.fields()})
        except (ValueError, IndexError, KeyError) as exc:
            raise TemplateError(f"template {self.name!r} does not render: {exc}") from exc
        system = system_prompt if system_prompt is not None else self.system
        messages: list[Message] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": user})
        return messages


_GRADER_SYSTEM = "You are a careful, impartial grader. Follow the output format exactly."

TEMPLATES: dict[str, JudgeTemplate] = {
    "correctness": JudgeTemplate(
        name="correctness",
        verdict_kind="binary",
        system=_GRADER_SYSTEM,
        user=(
            "Decide whether a response to a problem reaches the same final answer as the reference answer. "
            "Judge only the final answer: equivalent forms (e.g. 0.5 and 1/2, reordered sets, different "
            "units written out) count as the same; missing, multiple or hedged answers count as "
            "incorrect.\n\n"
            "[Problem]\n{problem}\n\n[Reference answer]\n{reference}\n\n[Response]\n{response}\n\n"
            "Explain briefly, then end with exactly one line: `Verdict: correct` or `Verdict: incorrect`."
        ),
    ),
    "correctness_yes_no": JudgeTemplate(
        name="correctness_yes_no",
        verdict_kind="binary",
        system=_GRADER_SYSTEM,
        user=(
            "[Problem]\n{problem}\n\n[Reference answer]\n{reference}\n\n[Response]\n{response}\n\n"
            "Is the final answer of the response equivalent to the reference answer? "
            "Answer with a single word: Yes or No."
        ),
    ),
    "rubric": JudgeTemplate(
        name="rubric",
        verdict_kind="scale",
        system=_GRADER_SYSTEM,
        user=(
            "Rate the response to the problem below on a scale of 1 to 10 using the rubric. "
            "1 means irrelevant or wrong, 5 partially correct or poorly reasoned, 10 fully correct, "
            "well reasoned and clear.\n\n[Rubric]\n{rubric}\n\n[Problem]\n{problem}\n\n"
            "[Reference answer (may be empty)]\n{reference}\n\n[Response]\n{response}\n\n"
            "Give a short justification, then end with exactly one line: `Score: <integer 1-10>`."
        ),
    ),
    "pairwise": JudgeTemplate(
        name="pairwise",
        verdict_kind="pairwise",
        system=_GRADER_SYSTEM,
        user=(
            "Compare two responses to the problem below and decide which one is better: more correct first, "
            "then more helpful and clearer. Do not let the order or the length of the responses sway you.\n\n"
            "[Problem]\n{problem}\n\n[Response A]\n{response_a}\n\n[Response B]\n{response_b}\n\n"
            "Explain briefly, then end with exactly one line: `Verdict: [[A]]` if A is better, "
            "`Verdict: [[B]]` if B is better, or `Verdict: [[C]]` for a tie."
        ),
    ),
    "step_critique": JudgeTemplate(
        name="step_critique",
        verdict_kind="step_index",
        user=(
            "The following is a math problem with its ground truth answer, and an AI solution split into "
            "numbered steps.\n\n[Math Problem]\n{problem}\n\n[Ground Truth]\n{reference}\n\n"
            "[AI Solution]\n{steps}\n\n"
            "Review and critique the solution step by step. If a step contains an error, give the index of "
            "the earliest such step; if no step is wrong, give -1. "
            "Reason step by step and put your final answer (the index) in \\boxed{{}}."
        ),
    ),
}


def get_template(
    name: str | None,
    *,
    user_template: str | None = None,
    verdict_kind: str | None = None,
) -> JudgeTemplate:
    """A built-in template by name, or a custom one from `user_template` (+ `verdict_kind`, default the named
    template's kind, else "binary")."""
    base = None
    if name is not None:
        base = TEMPLATES.get(name)
        if base is None:
            raise TemplateError(f"unknown judge template {name!r}; built-in templates: {sorted(TEMPLATES)}")
    if verdict_kind is not None and verdict_kind not in VERDICT_KINDS:
        raise TemplateError(f"unknown verdict_kind {verdict_kind!r}; expected one of {VERDICT_KINDS}")
    if user_template is None:
        if base is None:
            raise TemplateError("give a template name or a user_template")
        if verdict_kind is not None and verdict_kind != base.verdict_kind:
            raise TemplateError(
                f"template {base.name!r} asks for a {base.verdict_kind} verdict, not {verdict_kind}"
            )
        return base
    kind: VerdictKind = verdict_kind or (base.verdict_kind if base else "binary")
    custom = JudgeTemplate(
        name="custom", verdict_kind=kind, user=user_template, system=base.system if base else None
    )
    custom.fields()  # fail at configuration time, not on the first sample
    return custom


# --- sample fields ------------------------------------------------------------------------------------------


def chat_messages(prompt: Any, extra_info: Mapping[str, Any] | None) -> list[dict[str, Any]] | None:
    """The sample's prompt as chat messages: the gateway's `prompt` (a string or messages), else
    `extra_info["raw_prompt"]`/`["prompt"]`, else `extra_info["question"]`/`["problem"]` as one user turn."""
    return chat_messages_from(prompt, extra_info)[0]


def chat_messages_from(
    prompt: Any, extra_info: Mapping[str, Any] | None
) -> tuple[list[dict[str, Any]] | None, str]:
    """`chat_messages` and where they came from: "prompt", "extra_info.<key>", or "" when none was found
    (a bare question lacks the instructions a trainer's own prompt carries, so callers report the source)."""
    candidates: list[tuple[str, Any]] = [("prompt", prompt)]
    if extra_info:
        keys = ("raw_prompt", "prompt", "question", "problem")
        candidates += [(f"extra_info.{key}", extra_info.get(key)) for key in keys]
    for source, candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return [{"role": "user", "content": candidate}], source
        if (
            isinstance(candidate, Sequence)
            and not isinstance(candidate, str)
            and candidate
            and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in candidate)
        ):
            return [dict(m) for m in candidate], source
    return None, ""


def problem_text(prompt: Any, extra_info: Mapping[str, Any] | None) -> str | None:
    """The problem statement for a judge: `extra_info["question"]`/`["problem"]` if present (the bare problem,
    as FAPO uses), else the content of the last user turn of the prompt."""
    if extra_info:
        for key in ("question", "problem"):
            value = extra_info.get(key)
            if isinstance(value, str) and value.strip():
                return value
    messages = chat_messages(prompt, extra_info)
    if not messages:
        return None
    users = [m for m in messages if m.get("role") == "user"] or messages
    content = users[-1].get("content")
    if isinstance(content, list):  # multimodal content parts: keep the text parts
        content = "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return str(content) if content is not None else None


def as_text(value: Any) -> str | None:
    """A ground truth or reference as text (lists are joined, numbers printed); None if absent."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return ", ".join(str(v) for v in value)
    return str(value)


def number_steps(solution: str) -> str:
    """The solution split into steps at blank lines, each prefixed `Step i:` (0-based, as FAPO counts)."""
    parts = [p.strip() for p in re.split(r"\n\s*\n", solution.strip()) if p.strip()]
    return "\n\n".join(f"Step {i}: {part}" for i, part in enumerate(parts or [solution.strip()]))
