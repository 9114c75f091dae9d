"""Labelled reference-answer judgments for measuring a judge (bench/judge_accuracy.py) and for the SmolLM2
accuracy check (tests/model_server/test_smollm2_judge_accuracy.py): right and wrong final answers, short and
in sentences, boxed, with reasoning (right reasoning, and reasoning that ends in a wrong answer), paraphrased
("seven" for 7), with units, and free-text answers. Deterministic: the same list every run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JudgeCase:
    problem: str
    reference: str
    response: str
    correct: bool  # the label: does the response's final answer match the reference?
    kind: str  # what the case exercises (short, sentence, boxed, reasoning, words, units, text...)


_WORDS = {
    0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight",
    9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen", 14: "fourteen", 15: "fifteen",
    16: "sixteen", 17: "seventeen", 18: "eighteen", 19: "nineteen", 20: "twenty",
}  # fmt: skip

# (a, b): "What is a + b?" — the measurement, with right and wrong answers in every form.
_SUMS = [(2, 2), (3, 4), (5, 7), (9, 6), (8, 8), (12, 5)]


def _sum_cases(a: int, b: int, i: int) -> list[JudgeCase]:
    problem = f"What is {a} + {b}?"
    right = a + b
    wrong = right + (1 if i % 2 == 0 else -1)
    ref = str(right)
    forms = [
        ("short", "{x}"),
        ("sentence", "The answer is {x}."),
        ("boxed", f"{a} + {b} = " + "\\boxed{{{x}}}"),
        ("reasoning", f"Start at {a} and count up {b} more. Adding them gives {{x}}, so the sum is {{x}}."),
    ]
    cases = []
    for k, (kind, form) in enumerate(forms):
        cases.append(JudgeCase(problem, ref, form.format(x=right), True, kind))
        cases.append(JudgeCase(problem, ref, form.format(x=wrong), False, kind))
        if k == i % len(forms):
            break
    # One more of each sample: a paraphrase in words, or units, alternating right and wrong.
    if i % 2 == 0:
        cases.append(JudgeCase(problem, ref, f"{a} plus {b} makes {_WORDS[right]}.", True, "words"))
        cases.append(JudgeCase(problem, ref, f"{a} plus {b} makes {_WORDS[wrong]}.", False, "words"))
    else:
        cases.append(JudgeCase(problem, ref, f"{right} apples in total.", True, "units"))
        cases.append(JudgeCase(problem, ref, f"{wrong} apples in total.", False, "units"))
    return cases


_OTHER: list[JudgeCase] = [
    JudgeCase("Solve x + 3 = 10.", "7", "Subtract 3 from both sides: x = 7.", True, "reasoning"),
    JudgeCase("Solve x + 3 = 10.", "7", "x = 13 because 10 + 3 = 13.", False, "reasoning"),
    JudgeCase("What is half of 9?", "4.5", "Half of 9 is 4.5.", True, "sentence"),
    JudgeCase("What is half of 9?", "4.5", "Half of 9 is 4.", False, "sentence"),
    JudgeCase("What is 1/2 + 1/4?", "3/4", "1/2 + 1/4 = 2/4 + 1/4 = 3/4", True, "reasoning"),
    JudgeCase("What is 1/2 + 1/4?", "3/4", "1/2 + 1/4 = 2/6 = 1/3", False, "reasoning"),
    JudgeCase("What is 1/2 + 1/4?", "3/4", "The answer is 0.75.", True, "equivalent"),
    JudgeCase("What is 10 - 15?", "-5", "10 - 15 = -5", True, "short"),
    JudgeCase("What is 10 - 15?", "-5", "10 - 15 = 5", False, "short"),
    JudgeCase("How many minutes are in 2 hours?", "120", "There are 120 minutes in 2 hours.", True, "units"),
    JudgeCase("How many minutes are in 2 hours?", "120", "There are 100 minutes in 2 hours.", False, "units"),
    JudgeCase(
        "A shop sells pens at 3 dollars each. How much do 4 pens cost?",
        "12",
        "Each pen costs 3 dollars, and 4 pens cost 4 times as much: 4 * 3 = 12 dollars.",
        True,
        "reasoning",
    ),
    JudgeCase(
        "A shop sells pens at 3 dollars each. How much do 4 pens cost?",
        "12",
        "Each pen costs 3 dollars, and 4 pens cost 4 + 3 = 7 dollars.",
        False,
        "reasoning",
    ),
    JudgeCase("What is the capital of France?", "Paris", "The capital of France is Paris.", True, "text"),
    JudgeCase(
        "What is the capital of France?", "Paris", "It is Lyon, the largest city in the south.", False, "text"
    ),
    JudgeCase("What is the capital of Japan?", "Tokyo", "Tokyo", True, "text"),
    JudgeCase("What is the capital of Japan?", "Tokyo", "Kyoto", False, "text"),
    JudgeCase(
        "What colour is a clear daytime sky?", "blue", "A clear sky in the daytime is blue.", True, "text"
    ),
    JudgeCase("What colour is a clear daytime sky?", "blue", "It is green.", False, "text"),
    JudgeCase("Who wrote Hamlet?", "William Shakespeare", "Hamlet was written by Shakespeare.", True, "text"),
    JudgeCase("Who wrote Hamlet?", "William Shakespeare", "Charles Dickens wrote it.", False, "text"),
    JudgeCase("What is the chemical symbol for water?", "H2O", "Water is H2O.", True, "text"),
    JudgeCase("What is the chemical symbol for water?", "H2O", "Water is CO2.", False, "text"),
]


def judge_cases() -> list[JudgeCase]:
    cases = [case for i, (a, b) in enumerate(_SUMS) for case in _sum_cases(a, b, i)]
    return cases + _OTHER


def small_subset() -> list[JudgeCase]:
    """Twelve cases, half right, for a short run on the real model (a few seconds a judgment on a CPU)."""
    cases = judge_cases()
    right = [c for c in cases if c.correct][::5][:6]
    wrong = [c for c in cases if not c.correct][::5][:6]
    return right + wrong


ANSWER_MATCH_CASES = (
    Path(__file__).resolve().parents[2] / "tests" / "reward_fns" / "data" / "answer_match_cases.jsonl"
)


def answer_match_cases() -> list[JudgeCase]:
    """The labelled set of issue 41 (data/answer_match_cases.jsonl): short facts, yes/no, equivalent forms,
    number words, chains whose intermediate numbers include the reference, negations, self-corrections,
    hedges, answers posed as a question then rejected, and others' answers reported before one's own pick."""
    cases = []
    for line in ANSWER_MATCH_CASES.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            cases.append(
                JudgeCase(row["problem"], row["reference"], row["response"], row["correct"], row["kind"])
            )
    return cases
