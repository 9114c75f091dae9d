"""Guards before a judge (reward_fns/judging/guards.py): the "master keys" of "One Token to Fool
LLM-as-a-Judge" and their disguises trip a guard; legitimate short answers never do."""

from __future__ import annotations

import pytest

from rewardfleet.reward_fns.judging.guards import (
    DEFAULT_MAX_ANSWER_CHARS,
    GuardSettings,
    GuardSettingsError,
    check_answer,
)

EMPTY = [
    "", " ", "   ", "\n\t", ":", ".", ",", "...", "—", "**", "```\n```", "$$", r"$\boxed{}$", r"\(\)",
    "<think>\n</think>", "-", "\u200b", "\u200b\u200c\u2060\ufeff", "\u00ad:", "\u3000", "：", "。", "¿?",
]  # fmt: skip
OPENERS = [
    "Thought process:", "Let's solve this problem step by step.", "Let’s solve this problem step by step.",
    "Solution", "Solution:", "**Solution:**", "解", "解：", "思路", "かいせつ", "Respuesta", "Réponse :",
    "Lösung", "Решение:", "풀이", "Answer:", "The answer is", "Step 1:", "Let's think step by step.",
    "Thought process: Let's solve this problem step by step.", "Ｔｈｏｕｇｈｔ ｐｒｏｃｅｓｓ：",
    "Thought\u200b process:", "<think>Let us think step by step</think>",
]  # fmt: skip
LEGITIMATE = [
    "4", "-1/2", "0", "∅", "∞", "No", "Yes", "x = 3", "Paris", r"\boxed{4}", r"$\frac{1}{2}$", "解：x=2",
    "The answer is 4.", "Solution: x = 2", "Thought process: 2 + 2 = 4, so the answer is 4.", "π", "3.14",
    "A", "(a)", "[1, 2]", "<", "42 km", "答案是4",
]  # fmt: skip


@pytest.mark.parametrize("answer", EMPTY)
def test_content_free_answers_trip_the_empty_guard(answer: str) -> None:
    assert check_answer(answer) == "empty"


@pytest.mark.parametrize("answer", OPENERS)
def test_reasoning_openers_alone_trip_their_guard(answer: str) -> None:
    assert check_answer(answer) == "reasoning_opener"


@pytest.mark.parametrize("answer", LEGITIMATE)
def test_legitimate_short_answers_pass(answer: str) -> None:
    assert check_answer(answer) is None


def test_too_long_is_checked_first_and_can_be_turned_off() -> None:
    long = "4" * (DEFAULT_MAX_ANSWER_CHARS + 1)
    assert check_answer(long) == "too_long"
    assert check_answer("4" * DEFAULT_MAX_ANSWER_CHARS) is None
    assert check_answer(long, GuardSettings(max_answer_chars=None)) is None
    assert check_answer("12345", GuardSettings(max_answer_chars=4)) == "too_long"


def test_each_guard_can_be_turned_off() -> None:
    assert check_answer(":", GuardSettings(empty=False)) is None
    assert check_answer("Solution", GuardSettings(reasoning_opener=False)) is None
    assert check_answer(":", GuardSettings(enabled=False)) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, GuardSettings()),
        (True, GuardSettings()),
        (False, GuardSettings(enabled=False)),
        ({"max_answer_chars": 100, "empty": False}, GuardSettings(max_answer_chars=100, empty=False)),
        ({"max_answer_chars": None}, GuardSettings(max_answer_chars=None)),
    ],
)
def test_settings_from_reward_kwargs(value: object, expected: GuardSettings) -> None:
    assert GuardSettings.coerce(value) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ({"max_answer_char": 10}, "guards.max_answer_char is not a guard setting"),
        ({"max_answer_chars": 0}, "guards.max_answer_chars must be a positive integer"),
        ({"max_answer_chars": "10"}, "guards.max_answer_chars must be a positive integer"),
        ({"empty": "yes"}, "guards.empty must be true or false"),
        ("on", "guards must be a mapping or a bool"),
    ],
)
def test_bad_settings_name_the_field(value: object, needle: str) -> None:
    with pytest.raises(GuardSettingsError, match=needle):
        GuardSettings.coerce(value)  # type: ignore[arg-type]
