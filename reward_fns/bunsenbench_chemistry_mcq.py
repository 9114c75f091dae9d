"""BunsenBench chemistry multiple choice, as NeMo Gym's `bunsenbench_chemistry_mcq` server grades it.

The options are `extra_info["options"]` (single-key `{letter: text}` dicts; entries with a null text left
out), else `extra_info["choices"]` (strings lettered A, B, ... or dicts with a letter / label / key / id and
a text / content / value / choice; at most 26). The gold letter is `ground_truth` (NeMo Gym's
`expected_answer`) unwrapped, or the option it names.

The answer is read from candidates, the latest in the response first: `<answer>` / `<choice>` /
`<response>` / `<final_answer>` tags (a `<choice>` inside a `<choices>` list does not count), `\\boxed{}`
(braces balanced), `Answer: ...` lines, `the answer is ...` / `I choose ...` phrases; then the last and the
first non-empty line. A candidate names an option by its letter (`B`, `(B)`, `B.`, `Option B`) or by the
option's text (compared after HTML unescaping, NFKC, ASCII sub/superscripts and dashes, spacing), directly
or once unwrapped of quotes, brackets, `\\boxed{}`, `\\text{}`.

Returns `{"score", "extracted_answer" (the letter or None), "expected_answer" (the gold letter),
"no_answer", "error_mode", "bunsen_id", "source", "bct_field", "bct_subfield"}` (the last four from the task,
else its `metadata`). `error_mode`: correct, wrong_answer, refusal, early_termination (an unclosed
`<think>`), malformed_choice, format_violation. NeMo Gym also reads the response's status (incomplete:
early_termination) and refusal parts (refusal) for an unanswered rollout; the function sees the response's
text only, so it classifies such a rollout from its text (the reward is the same).
"""

from __future__ import annotations

import html
import re
import unicodedata
from typing import Any

from rewardfleet.reward_fns._task_text import TaskFieldError, too_long
from rewardfleet.reward_fns.judging.answers import require_str

__all__ = ["compute_score", "error_mode", "extract_letter", "gold_letter"]

_QUOTE = "(?:'|\u2019)?"
_REFUSAL = re.compile(
    r"(?i)(?:"
    rf"i\s*{_QUOTE}\s*m\s+sorry[, ]+(?:but\s+)?i\s+(?:can{_QUOTE}t|cannot|am\s+unable|won{_QUOTE}t)"
    rf"|i\s+(?:can{_QUOTE}t|cannot)\s+(?:help|assist|comply|provide|answer|do\s+that|continue)"
    r"|i\s+am\s+(?:not\s+able|unable)\s+to\s+(?:help|assist|comply|provide|answer)"
    rf"|i\s+won{_QUOTE}t\s+be\s+able\s+to\s+(?:help|assist|provide|answer)"
    r"|as\s+an\s+ai(?:\s+language)?\s+model[, ]+i"
    r"|i\s+(?:must|have\s+to|will\s+have\s+to)\s+(?:decline|refuse)"
    r"|i\s+do\s+not\s+feel\s+comfortable"
    r")"
)
_TAGGED = re.compile(
    r"<\s*(answer|choice|response|final_answer|final-answer)\b[^>]*>\s*(.*?)\s*<\s*/\s*\1\s*>", re.I | re.S
)
_CHOICES_LIST = re.compile(r"<\s*choices\b[^>]*>.*?<\s*/\s*choices\s*>", re.I | re.S)
_CHOICE_TAG = re.compile(r"<\s*choice\b[^>]*>\s*(.*?)\s*<\s*/\s*choice\s*>", re.I | re.S)
_THINK_OPEN, _THINK_CLOSE = re.compile(r"<\s*think\b[^>]*>", re.I), re.compile(r"<\s*/\s*think\s*>", re.I)
_BOXED_OPEN = re.compile(r"\\boxed\s*\{")
_PHRASES = (
    re.compile(r"(?im)^\s*(?:(?:[-*\u2022]|\d+[.)])\s*)?(?:\*\*)?answer(?:\*\*)?\s*:\s*(.+?)\s*$"),
    re.compile(r"(?is)(?:\*\*)?answer(?:\*\*)?\s*:\s*(.+?)(?=$|[\r\n])"),
    re.compile(
        r"(?is)(?:the\s+(?:correct\s+)?answer\s+is|my\s+answer\s+is|i\s+(?:choose|select))\s+(.+?)(?:\n|$)"
    ),
)
_BOXED_WHOLE = re.compile(r"\\boxed\{\s*(.*?)\s*\}", re.S)
_TEXT_WHOLE = re.compile(r"\\(?:text|mathrm|operatorname)\{\s*(.*?)\s*\}", re.S)
_OPTION_WORD = re.compile(r"(?i)(?:option|choice)\s+([A-Z])\s*[\)\].:]?")
_LEADING_LETTER = re.compile(r"(?i)^([A-Z])[\)\].:](?:\s|$)")
_LONE_LETTER = re.compile(r"[^A-Za-z]*([A-Za-z])[^A-Za-z]*")
_WRAP = " \t\r\n`*_\"'"
_ASCII = str.maketrans(
    {**{chr(0x2080 + i): str(i) for i in range(10)}, **{c: str(i) for i, c in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")},
     "⁺": "+", "⁻": "-", "₊": "+", "₋": "-", "＋": "+", "−": "-", "–": "-", "—": "-", "‒": "-", "‑": "-",
     "×": "x", "✕": "x", "·": ".", "∙": ".", "⋅": ".", "•": ".", "µ": "u", "μ": "u", "⁄": "/", "∕": "/"}
)  # fmt: skip
_METADATA_KEYS = ("bunsen_id", "source", "bct_field", "bct_subfield")
MAX_OPTIONS = 1_000
MAX_OPTION_CHARS = 100_000

Options = list[dict[str, str]]


def _chem(value: Any) -> str:
    text = unicodedata.normalize("NFKC", html.unescape(str(value))).translate(_ASCII)
    return " ".join("".join(ch for ch in text if unicodedata.category(ch) != "Cf").split())


def _letter(candidate: str, allowed: set[str]) -> str | None:
    if len(candidate) == 1 and candidate.isalpha():
        return candidate.upper() if candidate.upper() in allowed else None
    for pattern, whole in ((_OPTION_WORD, True), (_LEADING_LETTER, False), (_LONE_LETTER, True)):
        m = pattern.fullmatch(candidate) if whole else pattern.match(candidate)
        if m is not None and m.group(1).upper() in allowed:
            return m.group(1).upper()
    return None


def _by_text(candidate: str, options: Options, allowed: set[str]) -> str | None:
    wanted = _chem(candidate)
    for entry in options:
        for letter, text in entry.items():
            if letter.upper() in allowed and _chem(text) == wanted:
                return letter.upper()
    return None


def _unwrap(candidate: str) -> str:
    candidate = candidate.strip(_WRAP)
    if (boxed := _BOXED_WHOLE.fullmatch(candidate)) is not None:
        candidate = boxed.group(1).strip()
    while (wrapped := _TEXT_WHOLE.fullmatch(candidate)) is not None:
        candidate = wrapped.group(1).strip()
    while len(candidate) >= 2 and candidate[0] in "([{\"'<" and candidate[-1] in ")]}\"'>":
        candidate = candidate[1:-1].strip(_WRAP)
    return candidate.strip(_WRAP + ".;,")


def _named(candidate: str, options: Options, allowed: set[str]) -> str | None:
    """The letter a candidate names (by letter or option text, as it is or unwrapped), or None."""
    for text in (candidate.strip(), _unwrap(candidate.strip())):
        if not text:
            return None
        if (found := _letter(text, allowed) or _by_text(text, options, allowed)) is not None:
            return found
    return None


def _inside(position: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in spans)


def _boxed(text: str) -> list[tuple[int, str]]:
    found, at = [], 0
    while (m := _BOXED_OPEN.search(text, at)) is not None:
        depth, pos = 1, m.end()
        while pos < len(text) and depth:
            if text[pos] == "\\":
                pos += 2
                continue
            depth += {"{": 1, "}": -1}.get(text[pos], 0)
            pos += 1
        if depth:
            break
        found.append((m.start(), text[m.end() : pos - 1]))
        at = pos
    return found


def _candidates(text: str) -> list[tuple[int, str]]:
    lists = [m.span() for m in _CHOICES_LIST.finditer(text)]
    out = [
        (m.start(), m.group(2))
        for m in _TAGGED.finditer(text)
        if not (m.group(1).lower() == "choice" and _inside(m.start(), lists))
    ]
    out += _boxed(text)
    out += [(m.start(), m.group(1)) for pattern in _PHRASES for m in pattern.finditer(text)]
    return out


def extract_letter(text: str, options: Options, allowed: set[str]) -> str | None:
    """The option letter the (stripped, non-empty) response answers, or None."""
    for _, candidate in sorted(_candidates(text), reverse=True):
        if (found := _named(candidate, options, allowed)) is not None:
            return found
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines[-1:] + lines[:1]:
        if (found := _named(line, options, allowed)) is not None:
            return found
    return None


def _allowed(options: Options) -> set[str]:
    return {k.upper() for entry in options for k in entry if len(k) == 1 and k.isalpha()}


def gold_letter(expected: str, options: Options) -> str:
    unwrapped = _unwrap(expected).upper()
    if len(unwrapped) == 1 and unwrapped.isalpha():
        return unwrapped
    return _named(expected, options, _allowed(options)) or unwrapped


def error_mode(text: str, predicted: str | None, gold: str) -> str:
    if predicted is not None:
        return "correct" if predicted == gold else "wrong_answer"
    if len(_THINK_OPEN.findall(text)) > len(_THINK_CLOSE.findall(text)):
        return "early_termination"
    if _REFUSAL.search(text):
        return "refusal"
    lists = [m.span() for m in _CHOICES_LIST.finditer(text)]
    if any(not _inside(m.start(), lists) for m in _CHOICE_TAG.finditer(text)):
        return "malformed_choice"
    return "format_violation"


def _options(info: dict[str, Any]) -> Options:
    raw, choices = info.get("options"), info.get("choices")
    if raw:
        if not isinstance(raw, list) or len(raw) > MAX_OPTIONS:
            raise TaskFieldError(f"extra_info.options must be a list of at most {MAX_OPTIONS} entries")
        options = []
        for entry in raw:
            if not isinstance(entry, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in entry.items()
            ):
                raise TaskFieldError("extra_info.options entries must map letters to texts (or null)")
            options.append({k: v for k, v in entry.items() if v is not None})
    else:
        if choices is not None and not isinstance(choices, list):
            raise TaskFieldError("extra_info.choices must be a list")
        options = []
        for index, choice in enumerate((choices or [])[:26]):
            fallback = chr(ord("A") + index)
            if isinstance(choice, str):
                options.append({fallback: choice})
            elif isinstance(choice, dict):
                letter = next(
                    (choice[k] for k in ("letter", "label", "key", "id") if choice.get(k)), fallback
                )
                text = next(
                    (choice[k] for k in ("text", "content", "value", "choice") if choice.get(k)), None
                )
                if isinstance(letter, str) and isinstance(text, str) and len(letter.strip()) == 1:
                    options.append({letter.strip().upper(): text})
            else:
                raise TaskFieldError("extra_info.choices entries must be strings or objects")
    if sum(len(k) + len(v) for entry in options for k, v in entry.items()) > MAX_OPTION_CHARS:
        raise TaskFieldError(f"extra_info.options hold over {MAX_OPTION_CHARS} characters")
    return options


def compute_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None
) -> dict[str, Any]:
    text = require_str("solution_str", solution_str)
    if ground_truth is not None and not isinstance(ground_truth, str):
        raise TaskFieldError("ground_truth (expected_answer) must be a string")
    info = extra_info or {}
    options = _options(info)
    gold = gold_letter(ground_truth or "", options)
    allowed = _allowed(options) | ({gold} if len(gold) == 1 and gold.isalpha() else set())
    metadata = info.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise TaskFieldError("extra_info.metadata must be an object")
    labels = {k: info[k] if info.get(k) is not None else metadata.get(k) for k in _METADATA_KEYS}
    if (over := too_long(text)) is not None:
        return {**over, "extracted_answer": None, "expected_answer": gold, "no_answer": True,
                "error_mode": "format_violation", **labels}  # fmt: skip
    predicted = extract_letter(text.strip(), options, allowed) if text.strip() else None
    return {
        "score": 1.0 if predicted is not None and predicted == gold else 0.0,
        "extracted_answer": predicted,
        "expected_answer": gold,
        "no_answer": predicted is None,
        "error_mode": error_mode(text, predicted, gold),
        **labels,
    }
