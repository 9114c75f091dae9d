"""Verdict parsing on canned judge outputs: every format a judge drifts into, and the ones that must raise."""

from __future__ import annotations

import pytest

from rewardfleet.reward_fns.judging.verdicts import (
    Verdict,
    VerdictParseError,
    boxed_contents,
    json_objects,
    parse_verdict,
    strip_reasoning,
)

BINARY_CASES = [
    # (judge text, expected score, expected value, expected source)
    ("The final answers match.\nVerdict: correct", 1.0, "correct", "label"),
    ("The answer 12 differs from 13.\nVerdict: incorrect", 0.0, "incorrect", "label"),
    ("Verdict: **Incorrect**", 0.0, "incorrect", "label"),
    ("Judgment: not correct, the sign is flipped.", 0.0, "not correct", "label"),
    ("\\boxed{correct}", 1.0, "correct", "boxed"),
    ("So the response is \\boxed{\\text{incorrect}}.", 0.0, "incorrect", "boxed"),
    ("The student wrote \\boxed{42}; the reference is 42.\nVerdict: correct", 1.0, "correct", "label"),
    ('```json\n{"verdict": "incorrect", "reason": "off by one"}\n```', 0.0, "incorrect", "json"),
    ('{"correct": true}', 1.0, "true", "json"),
    ('{"is_correct": 0}', 0.0, "0", "json"),
    ("After checking each step, the answer is right.\n\nYes", 1.0, "yes", "final"),
    ("Both are equal.\n**Correct**", 1.0, "correct", "final"),
    ("Nope.\nNO.", 0.0, "no", "final"),
    ("[[correct]]", 1.0, "correct", "label"),
    ("<think>Hmm, verdict: incorrect? No wait.</think>\nVerdict: correct", 1.0, "correct", "label"),
    ("Verdict: incorrect\n...actually re-checking.\nVerdict: correct", 1.0, "correct", "label"),
]


@pytest.mark.parametrize(("text", "score", "value", "source"), BINARY_CASES)
def test_binary_verdicts(text: str, score: float, value: str, source: str) -> None:
    assert parse_verdict(text, "binary") == Verdict(score=score, value=value, source=source)


SCALE_CASES = [
    ("Score: 7", 7, "label"),
    ("The response is thorough.\nScore: 10", 10, "label"),
    ("Score: 1", 1, "label"),
    ("**Score:** 8/10", 8, "label"),
    ("Rating: [[6]]", 6, "label"),
    ("[[9]]", 9, "label"),
    ("\\boxed{4}", 4, "boxed"),
    ('{"score": 5, "explanation": "ok"}', 5, "json"),
    ('Here is my grade:\n```json\n{"rating": 3}\n```', 3, "json"),
    ("I would give this 7 out of 10.", 7, "final"),
    ("Overall a solid answer.\n\n8", 8, "final"),
    ("Score: 7.5", 7.5, "label"),
    ("The solution quotes \\boxed{42} as its answer. Score: 6", 6, "label"),
    ("<think>score: 2? maybe 9</think>Score: 9", 9, "label"),
]


@pytest.mark.parametrize(("text", "value", "source"), SCALE_CASES)
def test_scale_verdicts_normalised_to_unit_interval(text: str, value: float, source: str) -> None:
    verdict = parse_verdict(text, "scale", scale_min=1, scale_max=10)
    assert verdict.value == value
    assert verdict.source == source
    assert verdict.score == pytest.approx((value - 1) / 9)


def test_scale_bounds_map_to_zero_and_one() -> None:
    assert parse_verdict("Score: 1", "scale").score == 0.0
    assert parse_verdict("Score: 10", "scale").score == 1.0
    assert parse_verdict("Score: 3", "scale", scale_min=0, scale_max=5).score == pytest.approx(0.6)


PAIRWISE_CASES = [
    ("Verdict: [[A]]", 1.0, "A"),
    ("[[B]]", 0.0, "B"),
    ("[[C]]", 0.5, "tie"),
    ("Winner: B", 0.0, "B"),
    ("Better response: Response A", 1.0, "A"),
    ("Verdict: a tie", 0.5, "tie"),
    ("\\boxed{B}", 0.0, "B"),
    ('{"winner": "A"}', 1.0, "A"),
    ("Assistant A is more concise, but B is correct. Therefore the better one is B", 0.0, "B"),
    ("Both fail equally.\nFinal answer: tie", 0.5, "tie"),
]


@pytest.mark.parametrize(("text", "score", "value"), PAIRWISE_CASES)
def test_pairwise_verdicts(text: str, score: float, value: str) -> None:
    verdict = parse_verdict(text, "pairwise")
    assert (verdict.score, verdict.value) == (score, value)


STEP_CASES = [
    ("Step 3 divides by zero. \\boxed{3}", 0.0, 3),
    ("Every step checks out. \\boxed{-1}", 1.0, -1),
    ("Step 0 is already wrong.\n\\boxed{0}", 0.0, 0),
    ('{"error_step": -1}', 1.0, -1),
    ("Earliest error: 2", 0.0, 2),
]


@pytest.mark.parametrize(("text", "score", "value"), STEP_CASES)
def test_step_index_verdicts(text: str, score: float, value: int) -> None:
    verdict = parse_verdict(text, "step_index")
    assert (verdict.score, verdict.value) == (score, value)


UNPARSEABLE = [
    ("binary", ""),
    ("binary", "   \n "),
    ("binary", "I am not sure what to say about this solution."),
    ("binary", "The answer could be correct or incorrect depending on interpretation, hard to say"),
    ("binary", "<think>let me check step 1, step 2 ... the answer looks"),  # ran out of tokens
    ("binary", "\\boxed{42}"),
    ("scale", "Score: 11"),  # out of range
    ("scale", "Score: 0"),
    ("scale", "This is a decent answer."),
    ("scale", "Score: 4/5"),  # a fraction over another scale is ambiguous
    ("scale", '{"score": "high"}'),
    ("pairwise", "Both responses have merits."),
    ("pairwise", "Verdict: [[D]]"),
    ("step_index", "\\boxed{-2}"),
    ("step_index", "\\boxed{1.5}"),
    ("step_index", "no idea"),
    ("scale", "\u0000\u0001garbage\ufffd"),
]


@pytest.mark.parametrize(("kind", "text"), UNPARSEABLE)
def test_unparseable_verdicts_raise_instead_of_scoring_zero(kind: str, text: str) -> None:
    with pytest.raises(VerdictParseError) as info:
        parse_verdict(text, kind)  # type: ignore[arg-type]
    assert info.value.text == text


def test_parse_error_message_names_the_rejected_candidates() -> None:
    with pytest.raises(VerdictParseError, match=r"unusable candidates: .*'11'"):
        parse_verdict("Score: 11", "scale")


def test_unknown_kind_and_bad_scale_are_programming_errors() -> None:
    with pytest.raises(ValueError, match="unknown verdict kind"):
        parse_verdict("Score: 1", "stars")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must exceed"):
        parse_verdict("Score: 1", "scale", scale_min=5, scale_max=5)


def test_boxed_contents_keeps_nested_braces() -> None:
    assert boxed_contents(r"a \boxed{\frac{1}{2}} b \fbox{x} \boxed{unterminated") == [r"\frac{1}{2}", "x"]


def test_json_objects_skips_non_json_braces() -> None:
    text = 'set {1, 2} then {"score": 3} and \\boxed{4} then {"winner": "B"}'
    assert json_objects(text) == [{"score": 3}, {"winner": "B"}]


def test_strip_reasoning_keeps_text_after_last_think_close() -> None:
    assert strip_reasoning("<think>a</think> mid <think>b</think> end") == " end"
    assert strip_reasoning("no reasoning") == "no reasoning"
