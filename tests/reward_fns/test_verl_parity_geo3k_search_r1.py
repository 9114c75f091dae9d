"""`geo3k` and `search_r1` score exactly as verl 0.9.1's geo3k and search_r1_like_qa_em (verl's own files,
loaded by `verl_reference`), through verl's `default_compute_score` dispatch, on generated cases."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rewardfleet.reward_fns import geo3k, search_r1
from tests.reward_fns import verl_reference
from tests.reward_fns.test_verl_parity import FRAGMENTS, GROUND_TRUTHS

GEO_FRAGMENTS = (
    *FRAGMENTS,
    "<think>",
    "</think>",
    "\\boxed{",
    "\\boxed{3}",
    "}",
    "\n",
    "30^\\circ",
    "2\\sqrt{3}",
)
GEO_TRUTHS = (*GROUND_TRUTHS[:40], "30", "2\\sqrt{3}", "\\frac{\\sqrt{3}}{2}", "12.5", "None")


def _geo_cases(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        truth = rng.choice(GEO_TRUTHS)
        answer = rng.choice((truth, truth.replace(" ", ""), rng.choice(GEO_TRUTHS), "0.5", "3"))
        body = "".join(rng.choice(GEO_FRAGMENTS) for _ in range(rng.randint(0, 6)))
        template = rng.choice(
            (
                "<think>{b}</think> so \\boxed{{{a}}}",
                "<think>{b}</think>\n\\boxed{{{a}}} done",
                "{b} \\boxed{{{a}}}",
                "<think>{b} \\boxed{{{a}}}",
                "{b}",
                "<think></think>{b}\\boxed{{{a}}}}}",
                "\\boxed{{\\boxed{{{a}}}}}<think>x</think>",
            )
        )
        out.append((template.format(b=body, a=answer), truth))
    return out


WORDS = ("Paris", "the", "The", "a", "an", "Eiffel", "Tower", "1889", "U.S.", "new-york", "  ", "!", "é", "ß")


def _qa_cases(count: int, seed: int) -> list[tuple[str, dict[str, Any]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        target = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
        answer = rng.choice(
            (target, target.upper(), f"the {target}.", target.replace(" ", "  "), rng.choice(WORDS))
        )
        tags = rng.choice((1, 1, 2, 11, 12))
        text = rng.choice(
            (
                "<answer>x</answer>" * (tags - 1) + f"<answer>{answer}</answer>",
                f"<answer>\n{answer}\n</answer>" + "</answer>" * (tags - 1),
                f"think... <answer>{answer}",
                f"{answer}",
                f"<answer>{answer}</answer><answer></answer>",
            )
        )
        targets: Any = target if rng.random() < 0.4 else [rng.choice(WORDS), target]
        out.append((text, {"target": targets}))
    return out


GEO_CASES = _geo_cases(400, seed=3)
QA_CASES = _qa_cases(1500, seed=5)


@pytest.fixture(scope="module")
def dispatch() -> Any:
    return verl_reference.default_compute_score()


def test_geo3k_matches_verl(dispatch: Any, capsys: pytest.CaptureFixture[str]) -> None:
    scores = set()
    for text, truth in GEO_CASES:
        expected = dispatch("hiyouga/geometry3k", text, truth)
        got = geo3k.compute_score(data_source="hiyouga/geometry3k", solution_str=text, ground_truth=truth)
        assert (got, type(got)) == (expected, float), (text, truth)
        scores.add(got)
    assert {0.0, 0.1, 0.9, 1.0} <= scores
    capsys.readouterr()


@pytest.mark.parametrize("kwargs", [{"use_boxed": False}, {"format_score": 0.3}])
def test_geo3k_options_match_verl(kwargs: dict[str, Any]) -> None:
    verl_geo3k = verl_reference.module("geo3k")
    for text, truth in GEO_CASES[:100]:
        assert geo3k.compute_score(data_source="", solution_str=text, ground_truth=truth, **kwargs) == (
            verl_geo3k.compute_score(text, truth, **kwargs)
        )


@pytest.mark.parametrize("data_source", search_r1.DATA_SOURCES)
def test_search_r1_matches_verl(dispatch: Any, data_source: str, capsys: pytest.CaptureFixture[str]) -> None:
    scores = set()
    for text, truth in QA_CASES:
        expected = dispatch(data_source, text, truth)
        got = search_r1.compute_score(data_source=data_source, solution_str=text, ground_truth=truth)
        assert (got, type(got)) == (expected, float), (text, truth)
        scores.add(got)
    assert scores == {0.0, 0.25, 1.0}
    capsys.readouterr()  # verl prints one sample in 64


def test_search_r1_options_match_verl() -> None:
    verl_qa = verl_reference.module("search_r1_like_qa_em")
    for text, truth in QA_CASES[:300]:
        got = search_r1.compute_score(
            data_source="", solution_str=text, ground_truth=truth, format_score=0.2, score=2
        )
        assert got == float(verl_qa.compute_score(text, truth, format_score=0.2, score=2))
