"""Our instruction checkers against IFEval's and IFBench's own classes (loaded from their wheels at test time,
tests/reward_fns/if_reference.py) on generated responses and kwargs: every IFEval type and every IFBench type
we support must give the reference's verdict on every case."""

from __future__ import annotations

import random
from typing import Any

import pytest

from rewardfleet.reward_fns import instruction_following
from rewardfleet.reward_fns._instructions.spec import REGISTRY, UNSUPPORTED, InstructionKwargsError
from tests.reward_fns.if_reference import load_registries, reference_check
from tests.reward_fns.if_targeted import TARGETED

WORDS = [
    "the",
    "river",
    "Sea",
    "USA",
    "town",
    "quiet",
    "and",
    "but",
    "or",
    "level",
    "radar",
    "I",
    "you",
    "they",
]
WORDS += ["Emma", "Liam", "Noah", "42", "3.5", "😀", "madam", "ab", "abc", "yet", "so", "It", "Dr.", "e.g."]
PIECES = ["\n", "\n\n", ". ", "! ", "? ", ", ", " *", "**bold**", "*italic*", " - item\n", "* point\n", "***"]
PIECES += [
    "<<Title>>",
    "[name]",
    '"',
    "'",
    "(",
    ")",
    "******",
    "P.S. note",
    "SECTION 1",
    "    ",
    "  x\n",
    "<i>t</i>",
]
PIECES += [
    '{"a": 1}',
    "My answer is yes.",
    "Question 1",
    "A) x\n",
    "!?",
    ";",
    ":",
    "bald eagle",
    "2020-01-01",
]

KW_VALUES: dict[str, list[Any]] = {
    "relation": ["less than", "at least"],
    "capital_relation": ["less than", "at least"],
    "let_relation": ["less than", "at least"],
    "keywords": [["river"], ["sea", "town"]],
    "forbidden_words": [["river"], ["madam", "zzz"]],
    "keyword": ["river", "sea", "level"],
    "word": ["river", "sea"],
    "letter": ["a", "e", "z"],
    "language": ["en", "fr"],
    "end_phrase": ["quiet.", "Any other questions?"],
    "first_word": ["the", "river"],
    "postscript_marker": ["P.S.", "P.P.S"],
    "section_spliter": ["SECTION", "Section"],
    "prompt_to_repeat": ["Write about the river.", "the quiet town"],
    "sep": ["-", "..."],
    "options": ["yes/no/maybe", "a), b), c), d)", "I know or I don't know"],
    "reference_text": ["the river and the sea and the town"],
    "percentage": [10.0, 50.0],
    "keyword1": ["river"],
    "keyword2": ["sea"],
    "keyword3": ["town"],
    "keyword4": ["the"],
    "keyword5": ["and"],
    "n_start": [1, 3],
    "n_end": [5, 9],
}
INT_DEFAULTS = [1, 2, 3, 5, 10]


def _response(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 40)):
        parts.append(rng.choice(WORDS if rng.random() < 0.7 else PIECES))
        parts.append(" " if rng.random() < 0.8 else "")
    return "".join(parts)


def _kwargs(rng: random.Random, spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind in {**spec.required, **spec.optional}.items():
        if name in KW_VALUES:
            out[name] = rng.choice(KW_VALUES[name])
        elif kind in ("int", "number"):
            out[name] = rng.choice(INT_DEFAULTS)
        else:
            raise AssertionError(f"no generated value for {name} ({kind})")
    return out


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield load_registries(tmp_path_factory.mktemp("if_reference"), monkeypatch)


def _compare(registry: dict[str, Any], ids: list[str], cases: int, seed: int) -> list[str]:
    """Mismatches on generated and hand-made cases; also fails a type whose cases all got one verdict (a
    comparison that could not have found a difference in what the check decides)."""
    rng = random.Random(seed)
    mismatches = []
    for instruction_id in ids:
        spec = REGISTRY[instruction_id]
        trials = [(_kwargs(rng, spec), _response(rng)) for _ in range(cases)]
        if instruction_id in TARGETED:
            kwargs, responses = TARGETED[instruction_id]
            trials += [(kwargs, r) for r in responses]
        verdicts = set()
        for kwargs, response in trials:
            try:
                ours = bool(response.strip()) and spec.check(response, kwargs, "")
            except InstructionKwargsError:
                continue  # kwargs the reference replaces with a random draw: ours refuses them

            theirs = bool(response.strip()) and reference_check(registry, instruction_id, kwargs, response)
            verdicts.add(theirs)
            if ours != theirs:
                mismatches.append(f"{instruction_id} {kwargs} {response!r}: ours {ours}, reference {theirs}")
        if verdicts != {True, False}:
            mismatches.append(f"{instruction_id}: every case got {verdicts}; add a case to if_targeted.py")
    return mismatches


def test_ifeval_types_agree_with_ifevals_classes(references: Any) -> None:
    ifeval, _ = references
    ids = sorted(ifeval)
    assert len(ids) == 25 and set(ids) <= set(REGISTRY)
    mismatches = _compare(ifeval, ids, cases=150, seed=1)
    assert not mismatches, "\n".join(mismatches[:20])


def test_ifbench_types_agree_with_ifbenchs_classes(references: Any) -> None:
    _, ifbench = references
    assert len(ifbench) == 58
    # words:paragraph_last_first follows the IFBench commit NeMo Gym pins, which this package release changed.
    ids = sorted(set(ifbench) - set(UNSUPPORTED) - {"words:paragraph_last_first"})
    assert set(ids) <= set(REGISTRY)
    mismatches = _compare(ifbench, ids, cases=150, seed=2)
    assert not mismatches, "\n".join(mismatches[:20])


def test_strict_and_loose_lists_agree_with_if_verifiables_evaluation(references: Any) -> None:
    """Whole tasks through `compute_score` vs if-verifiable's `evaluate_instructions` (IFEval's strict and
    loose rules, 8 loose variants) with IFEval's classes."""
    from if_verifiable.common import evaluate_instructions  # type: ignore[import-not-found]

    ifeval, _ = references
    rng = random.Random(4)
    ids = sorted(ifeval)
    both_differ = 0
    for _ in range(300):
        chosen = rng.sample(ids, 3)
        kwargs = [_kwargs(rng, REGISTRY[i]) for i in chosen]
        if "length_constraints:nth_paragraph_first_word" in chosen:
            k = kwargs[chosen.index("length_constraints:nth_paragraph_first_word")]
            k["nth_paragraph"] = min(k["nth_paragraph"], k["num_paragraphs"])
        # Stripped: if-verifiable strips a response first (`strip_thinking`); IFEval and NeMo Gym do not.
        response = (
            "Sure:\n" + _response(rng) + "\n" + rng.choice(["Thanks!", "*Done*", "**END**", ""])
        ).strip()
        task = {"instruction_id_list": chosen, "kwargs": kwargs}
        ours = instruction_following.compute_score("ifeval", response, None, task)
        theirs, scores = evaluate_instructions(response, chosen, kwargs, "", ifeval)
        assert ours["strict_follow_list"] == [r.strict_pass for r in theirs], (chosen, kwargs, response)
        assert ours["loose_follow_list"] == [r.loose_pass for r in theirs], (chosen, kwargs, response)
        assert ours["prompt_level_loose"] == (scores.binary_loose == 1.0)
        both_differ += ours["strict_follow_list"] != ours["loose_follow_list"]
    assert both_differ > 0  # the loose variants changed some verdicts: the comparison exercised them
