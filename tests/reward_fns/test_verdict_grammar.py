"""The verdict regexes the judge sends: everything they accept, the free-text parser reads."""

from __future__ import annotations

import re

import pytest

from rewardfleet.reward_fns.judging.templates import TEMPLATES, get_template
from rewardfleet.reward_fns.judging.verdict_grammar import VERDICT_TOKEN_ROOM, verdict_regex
from rewardfleet.reward_fns.judging.verdicts import parse_verdict

ANSWERS = {
    "correctness": ["Verdict: correct", "Verdict: incorrect"],
    "correctness_yes_no": ["Yes", "No"],
    "rubric": ["Score: 1", "Score: 7", "Score: 10"],
    "pairwise": ["Verdict: [[A]]", "Verdict: [[B]]", "Verdict: [[C]]"],
    "step_critique": [r"\boxed{-1}", r"\boxed{0}", r"\boxed{3}"],
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_accepted_answer_parses(name: str) -> None:
    tmpl = get_template(name)
    regex = verdict_regex(tmpl, scale_min=1, scale_max=10, max_tokens=256, reasoning_chars=100)
    assert regex is not None
    reasoning = "Short check: 2 + 2 = 4 (the response says 4).\n" if name != "correctness_yes_no" else ""
    for answer in ANSWERS[name]:
        text = reasoning + answer
        assert re.fullmatch(regex, text), (regex, text)
        parse_verdict(text, tmpl.verdict_kind, scale_min=1, scale_max=10)  # raises if it cannot read it
    for wrong in ("Verdict: maybe", "Score: 11", "Verdict: [[D]]", r"\boxed{x}", "maybe"):
        assert not re.fullmatch(regex, reasoning + wrong)


def test_reasoning_is_bounded_and_braces_are_refused() -> None:
    tmpl = get_template("correctness")
    regex = verdict_regex(tmpl, scale_min=1, scale_max=10, max_tokens=64, reasoning_chars=400)
    assert regex is not None
    room = 64 - VERDICT_TOKEN_ROOM
    assert re.fullmatch(regex, "x" * room + "\nVerdict: correct")
    assert not re.fullmatch(regex, "x" * (room + 1) + "\nVerdict: correct")  # never past max_tokens
    assert not re.fullmatch(regex, '{"verdict": "incorrect"}\nVerdict: correct')  # JSON would outrank it
    assert not re.fullmatch(regex, "ok\x01\nVerdict: correct")  # no control characters


def test_non_ascii_reasoning_is_allowed_within_a_quarter_of_the_room() -> None:
    """A non-ASCII character is up to 4 UTF-8 bytes, so up to 4 byte-level tokens: with any in the reasoning,
    room // 4 characters still fit in max_tokens."""
    tmpl = get_template("correctness")
    regex = verdict_regex(tmpl, scale_min=1, scale_max=10, max_tokens=64, reasoning_chars=400)
    assert regex is not None
    quarter = (64 - VERDICT_TOKEN_ROOM) // 4
    for text in ("naïve café", "答案是四", "Réponse 4✓"):
        assert len(text) <= quarter
        assert re.fullmatch(regex, f"{text}\nVerdict: correct"), text
        parse_verdict(f"{text}\nVerdict: correct", "binary")
    assert not re.fullmatch(regex, "é" * (quarter + 1) + "\nVerdict: correct")
    assert not re.fullmatch(regex, "x" * quarter + "é\nVerdict: correct")
    assert not re.fullmatch(regex, "日本{x}\nVerdict: correct")
    step = verdict_regex(
        get_template("step_critique"), scale_min=1, scale_max=10, max_tokens=64, reasoning_chars=400
    )
    assert step is not None and re.fullmatch(step, "Étape {2}\n\\boxed{2}")


def test_no_room_means_the_verdict_alone_and_custom_templates_need_a_line() -> None:
    tmpl = get_template("correctness")
    assert verdict_regex(tmpl, scale_min=1, scale_max=10, max_tokens=10, reasoning_chars=400) == (
        "Verdict: (correct|incorrect)"
    )
    custom = get_template(None, user_template="Is {response} right?", verdict_kind="binary")
    assert verdict_regex(custom, scale_min=1, scale_max=10, max_tokens=64, reasoning_chars=10) is None
    assert verdict_regex(
        custom, scale_min=1, scale_max=10, max_tokens=10, reasoning_chars=10, line="(OK|BAD)"
    )
