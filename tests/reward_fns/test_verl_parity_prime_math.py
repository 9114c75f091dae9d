"""`prime_math` scores exactly as verl 0.9.1's prime_math (its own files, loaded by `verl_reference`) through
verl's `default_compute_score` dispatch for every `numina_*` source, on generated cases that reach each step
of its extraction and of both graders."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rewardfleet.reward_fns import prime_math
from tests.reward_fns import verl_reference
from tests.reward_fns.test_verl_parity import FRAGMENTS, GROUND_TRUTHS

ANSWERS = (
    *GROUND_TRUTHS[:45],
    *(
        "2\\pi",
        "\\pi",
        "6.28",
        "6.283",
        "3.14",
        "\\frac{\\pi}{2}",
        "\\pi/2",
        "1.5708",
        "2\\pi + 1",
        "(\\pi, 1)",
    ),
    *(
        "$5",
        "5",
        "5%",
        "5\\%",
        "0.05",
        "500",
        "101_2",
        "5_{10}",
        "x_1",
        "7 3/4",
        "7+3/4",
        "31/4",
        "2 million",
    ),
    *("2000000", "5 cm", "5 hours", "3 days", "(1, 2)", "(1,2)", "[1, 2)", "Interval.Ropen(1, 2)", "[1,2]"),
    *("Interval(1, 2)", "Point(1, 2)", "\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "[1, 2]", "[[1], [2]]"),
    *("Matrix([[1], [2]])", "1,000", "1000", "1{,}000", "\\text{yes}", "Yes", "x^2+2x+1", "(x+1)^2", "x^{2}"),
    *("2^{10}", "1024", "\\sqrt{8}", "2\\sqrt{2}", "1/3", "2/6", "0.333", "\\infty", "-\\infty", "1e5", ""),
    *("90^\\circ", "90", "\\{1, 2\\}", "1 or 2", "1 and 2", "1, 2", "a", "b", "ab", "abc", "\\frac{1}{0}"),
)
TEMPLATES = (
    "{x}",
    "The answer is {a}.",
    "Step 1: think.\nStep 2: so answer: {a}",
    "So {a} is the answer.",
    "we get {a}",
    "Thus x = {a}. Done",
    "\\fbox{{{a}}}",
    "Step 2: \\boxed{{{a}}}",
    "The answers are {a}",
    "{x} therefore the final answer is $\\boxed{{{a}}}$. {x}",
    "It must be {a}",
    "Answer: {a}\nbecause {x}",
    "{x} = {a}",
    "\\boxed{{{a}}} is the answer. {x}",
)


def _cases(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        truth = rng.choice(ANSWERS)
        answer = truth if rng.random() < 0.35 else rng.choice(ANSWERS)
        noise = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 3)))
        out.append((rng.choice(TEMPLATES).format(a=answer, x=noise), truth))
    return out


CASES = _cases(300, seed=11)


@pytest.fixture(scope="module")
def verl_scores(capsys_module: None = None) -> list[Any]:
    verl_reference.module("prime_math")  # registers what its import of verl.utils needs
    dispatch = verl_reference.default_compute_score()
    return [dispatch("numina_olympiads", text, truth) for text, truth in CASES]


def test_prime_math_matches_verl(verl_scores: list[Any], capsys: pytest.CaptureFixture[str]) -> None:
    mismatches = []
    for (text, truth), expected in zip(CASES, verl_scores, strict=True):
        got = prime_math.compute_score(data_source="numina_olympiads", solution_str=text, ground_truth=truth)
        if got["score"] != expected or type(got["score"]) is not float:
            mismatches.append((text, truth, expected, got))
    capsys.readouterr()
    for mismatch in mismatches:
        print(mismatch)
    assert mismatches == []
    assert 0.2 < sum(verl_scores) / len(verl_scores) < 0.8


@pytest.mark.parametrize("data_source", prime_math.DATA_SOURCES)
def test_every_numina_source_dispatches_to_prime_math(
    data_source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    verl_reference.module("prime_math")
    dispatch = verl_reference.default_compute_score()
    for text, truth in CASES[:12]:
        got = prime_math.compute_score(data_source=data_source, solution_str=text, ground_truth=truth)
        assert got["score"] == dispatch(data_source, text, truth)
    capsys.readouterr()


def test_pi_answers_are_never_executed() -> None:
    # verl eval()s this; we evaluate arithmetic only, so the marker file is never written.
    hostile = "answer: __import__('pathlib').Path('/tmp/rf_prime_math_pwned').touch() or 2\\pi"
    assert (
        prime_math.compute_score(data_source="numina_cn_k12", solution_str=hostile, ground_truth="6.28")[
            "score"
        ]
        == 0.0
    )
    import os

    assert not os.path.exists("/tmp/rf_prime_math_pwned")
