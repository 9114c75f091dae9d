"""Our built-ins that claim verl data sources score exactly as verl's own functions.

verl's files are loaded from the installed `verl` wheel (see `verl_reference`); the test skips, naming
the install command, only when verl is not installed.
"""

from __future__ import annotations

import fnmatch
import random
from typing import Any

import pytest

from rewardfleet.reward_fns import gsm8k, math_dapo
from rewardfleet.reward_fns import math as math_fn
from tests.reward_fns import verl_reference

BUILTINS = (gsm8k, math_fn, math_dapo)

# Fragments that exercise every branch of the three extractors/normalisers.
FRAGMENTS = (
    *("\\boxed{", "\\boxed ", "\\boxed", "\\fbox{", "{", "}", "}}", "$", "\\$", "####", "#### ", "Answer:"),
    *("answer :", "ANSWER:", "Final Answer: ", " ", "  ", "\n", "1,000", "12,345.6", "-3", ".5", "0.5", "42"),
    *("7", "18", "\\frac", "\\dfrac", "\\tfrac", "\\frac12", "\\frac{1}{2}", "1/2", "-1/2", "03/4", "\\sqrt"),
    *("\\sqrt2", "\\sqrt{3}", "\\left(", "\\right)", "(1,2)", "\\text{ cm}", "\\text{ }", "\\text{", "\\%"),
    *("10\\%", "%", "^\\circ", "^{\\circ}", "x=", "k = ", "x = 5", "a=b=c", "\\!", "\\\\", "=", ",", "."),
    *(" .", "{.", "a ", "an ", "the ", "dollars", "cm", "\\mbox{and}", "\\text{and}", ",\\text{and}"),
    *("\\overline{", "\\textbf{", "\\text{m}", "\\text{}", "\\pi", "x", "y", "²", "٣", "[INVALID]", "\\ "),
    *("\\;", ",\\!", "{,}", '"', "\\dots", "\\ldots", "^2", "\\infty", "-", "\\mathrm{th}", "\\text{\ns}"),
)
GROUND_TRUTHS = (
    *("42", "1000", "-3", "18", "0.5", "\\frac{1}{2}", "\\frac12", "1/2", "\\dfrac{3}{4}", "3/4"),
    *("\\sqrt{2}",),
    *("\\sqrt2", "10\\%", "10", "90^\\circ", "90", "(1,2)", "\\left( 1, 2 \\right)", "x=5", "5", "\\pi"),
    *("2\\pi", "\\text{(A)}", "A", "1,000", "12345.6", ".5", "", " ", "5 \\text{ cm}", "\\$18", "\\infty"),
    *("[INVALID]", "\\boxed{7}", "k = 2", "a=b=c", "\\{1,2\\}", "\\text{Monday}", "Monday", "٣", "x^2+1"),
)


def _random_text(rng: random.Random, max_fragments: int) -> str:
    return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, max_fragments)))


def _templated_cases() -> list[tuple[str, str]]:
    """Right, wrong, missing and repeated answers written the ways models write them."""
    cases = []
    for truth in GROUND_TRUTHS:
        for answer in (truth, truth.replace("frac", "dfrac"), truth.replace(" ", ""), "0", f"{truth}.", "-1"):
            cases += [
                (f"The total is {answer}.\n#### {answer}", truth),
                (f"#### 1\nso actually\n#### {answer}", truth),
                (f"We get $\\boxed{{{answer}}}$.", truth),
                (f"\\boxed{{1}} then \\boxed{{{answer}}}", truth),
                (f"\\boxed {answer}$ done", truth),
                (f"Reasoning...\nAnswer: {answer}", truth),
                (f"Answer: 1\nAnswer: ${answer}$", truth),
                (f"answer: \\boxed{{{answer}}}", truth),
                (f"{'x' * 400}\nAnswer: {answer}", truth),
                (f"Answer: {answer}{' filler' * 60}", truth),
                (f"{answer}", truth),
            ]
    return cases


def _random_cases(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        text = _random_text(rng, 14)
        truth = rng.choice(GROUND_TRUTHS) if rng.random() < 0.7 else _random_text(rng, 4)
        cases.append((text, truth))
    return cases


# A small alphabet so that answers and ground truths often collide after normalisation.
ATOMS = (
    *("1", "2", "0", ".", "5", "/", "\\frac", "\\dfrac", "\\sqrt", "{", "}", " ", "x", "=", "\\text{ ", "cm"),
    *("\\%", "\\left(", "\\right)", "-", ",", "\\!", "\\\\", "^\\circ", "$", "\\$", "a ", "\n"),
)
VARIANTS = (
    lambda a: a,
    lambda a: a.replace("\\frac", "\\dfrac"),
    lambda a: a.replace("\\dfrac", "\\tfrac"),
    lambda a: " ".join(a),
    lambda a: f"\\left({a}\\right)",
    lambda a: f"{a}\\text{{ cm}}",
    lambda a: f"x = {a}",
    lambda a: f"{a}^\\circ",
    lambda a: f"{a}\\%",
    lambda a: f"${a}$",
    lambda a: a.replace(",", ""),
    lambda a: a.replace("0.", "."),
)


TEMPLATES = ("\\boxed{{{}}}", "$\\boxed{{{}}}$", "Answer: {}", "#### {}", "\\boxed {}$", "{}")


def _collision_cases(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        answer = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 5)))
        truth = rng.choice(VARIANTS)(answer) if rng.random() < 0.7 else rng.choice(ATOMS)
        if rng.random() < 0.5:
            answer, truth = truth, answer
        template = rng.choice(TEMPLATES)
        cases.append((template.format(answer), truth))
    # Values that reach the rarest normalisation branches.
    for answer, truth in (
        ("0.5", "\\frac{1}{2}"),
        ("0.5", "1/2"),
        (".5", "\\frac12"),
        ("\\frac1", "\\frac1"),
        ("\\frac1", "\\frac{1}"),
        ("\\frac1}", "\\frac{1}}"),
        ("\\frac", "\\frac"),
        ("\\sqrt", "\\sqrt{}"),
        ("1\\text{ m}\\text{ s}", "1"),
        ("1 \\text{ m}", "1"),
        ("03/4", "\\frac{3}{4}"),
        ("+3/4", "\\frac{3}{4}"),
        ("-3/4", "\\frac{-3}{4}"),
        ("1_0/2", "\\frac{10}{2}"),
        ("k=1", "1"),
        ("abc=1", "1"),
    ):
        for template in ("\\boxed{{{}}}", "\\boxed {}", "Answer: {}"):
            cases += [(template.format(answer), truth), (template.format(truth), answer)]
    return cases


CASES = _templated_cases() + _random_cases(3000, seed=20260101) + _collision_cases(3000, seed=7)


@pytest.fixture(scope="module")
def verl() -> dict[str, Any]:
    return {
        "gsm8k": verl_reference.module("gsm8k"),
        "math_reward": verl_reference.module("math_reward"),
        "math_dapo": verl_reference.module("math_dapo"),
        "default_compute_score": verl_reference.default_compute_score(),
    }


def _as_verl_returns(value: Any) -> Any:
    """verl's `default_compute_score` turns a bare number into a float; dicts pass unchanged."""
    return value if isinstance(value, dict) else float(value)


def test_enough_cases_and_installed_verl_version(verl: dict[str, Any]) -> None:
    assert len(CASES) > 3000
    assert verl_reference.installed_version() == verl_reference.VERL_VERSION


def test_gsm8k_matches_verl(verl: dict[str, Any]) -> None:
    mismatches = []
    for text, truth in CASES:
        for kwargs in ({}, {"method": "flexible"}, {"method": "flexible", "format_score": 0.1, "score": 2.0}):
            expected = float(verl["gsm8k"].compute_score(text, truth, **kwargs))
            got = gsm8k.compute_score(data_source="", solution_str=text, ground_truth=truth, **kwargs)
            if got != expected or type(got) is not float:
                mismatches.append((text, truth, kwargs, expected, got))
    assert mismatches == []


def test_math_matches_verl(verl: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    mismatches = []
    for text, truth in CASES:
        expected = verl["math_reward"].compute_score(text, truth)
        got = math_fn.compute_score(data_source="lighteval/MATH", solution_str=text, ground_truth=truth)
        if got != expected or type(got) is not float:
            mismatches.append((text, truth, expected, got))
    capsys.readouterr()  # verl prints the exceptions it swallows
    assert mismatches == []


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"strict_box_verify": True}, {"strict_box_verify": True, "pause_tokens_index": [0, 1, 2, 150]}],
)
def test_math_dapo_matches_verl(verl: dict[str, Any], kwargs: dict[str, Any]) -> None:
    mismatches = []
    for text, truth in CASES:
        expected = verl["math_dapo"].compute_score(text, truth, **kwargs)
        got = math_dapo.compute_score(data_source="", solution_str=text, ground_truth=truth, **kwargs)
        same_types = type(got["acc"]) is type(expected["acc"]) and type(got["score"]) is float
        if got != expected or not same_types:
            mismatches.append((text, truth, expected, got))
    assert mismatches == []


def test_math_dapo_without_boxed_fallback_is_verl_0_8() -> None:
    # verl 0.8 ends at the Minerva check: no `Answer:` line means pred "[INVALID]" and -1.
    got = math_dapo.compute_score(
        data_source="math_dapo", solution_str="so \\boxed{7}", ground_truth="7", boxed_fallback=False
    )
    assert got == {"score": -1.0, "acc": False, "pred": "[INVALID]"}


# Names verl routes to gsm8k / math_reward / math_dapo, names it routes elsewhere, and names it rejects.
DISPATCH_NAMES = (
    *("openai/gsm8k", "lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500"),
    *("math_dapo", "math", "math_dapo_reasoning", "aime", "aime2024", "aime_2025", "aimeX", "aime*"),
)
UNCLAIMED_NAMES = (
    *("gsm8k", "openai/GSM8K", "MATH", "lighteval/math", "AIME2024", "xaime", "math_dapo2", "math-dapo"),
    *("numina_cn_k12", "hiyouga/geometry3k", "searchR1_nq", "codecontests", "unknown", ""),
)


def _claimants(data_source: str) -> list[Any]:
    return [m for m in BUILTINS if any(fnmatch.fnmatchcase(data_source, p) for p in m.DATA_SOURCES)]


@pytest.mark.parametrize("data_source", DISPATCH_NAMES)
def test_dispatch_table_matches_verl(verl: dict[str, Any], data_source: str) -> None:
    claimants = _claimants(data_source)
    assert len(claimants) == 1, f"{data_source!r} claimed by {claimants}"
    for text, truth in CASES[:: len(CASES) // 300]:
        expected = verl["default_compute_score"](data_source, text, truth)
        got = claimants[0].compute_score(data_source=data_source, solution_str=text, ground_truth=truth)
        assert _as_verl_returns(got) == expected, (text, truth)


@pytest.mark.parametrize("data_source", UNCLAIMED_NAMES)
def test_names_verl_does_not_route_to_these_are_unclaimed(data_source: str) -> None:
    assert _claimants(data_source) == []


@pytest.mark.parametrize("data_source", ["gsm8k", "MATH", "AIME2024", "xaime", "unknown", ""])
def test_verl_rejects_the_names_we_leave_unclaimed(verl: dict[str, Any], data_source: str) -> None:
    with pytest.raises(NotImplementedError):
        verl["default_compute_score"](data_source, "x", "y")
