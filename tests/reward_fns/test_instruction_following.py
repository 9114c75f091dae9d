"""`instruction_following`: parity with NeMo Gym's recorded instruction_following and ifbench rows,
IFEval's strict/loose and credit rules, and hostile tasks and responses (typed errors or 0, never a crash or
a pass)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from rewardfleet.reward_fns import instruction_following as ifn
from rewardfleet.reward_fns._instructions.spec import REGISTRY, UNSUPPORTED
from tests.reward_fns.nemo_gym_rows import output_text, rollouts

TASK_FIELDS = ("instruction_id_list", "kwargs", "prompt", "grading_mode")


def _score(text: str, ids: list[str], kwargs: list[Any], **options: Any) -> dict[str, Any]:
    return ifn.compute_score("ifeval", text, None, {"instruction_id_list": ids, "kwargs": kwargs}, **options)


def _rows(server: str) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(rollouts(server)))


@pytest.mark.parametrize("server", ["instruction_following", "ifbench"])
def test_nemo_gym_rows_same_reward_and_follow_list(server: str) -> None:
    """Every recorded row: the same reward and per-instruction list, or (only for the instruction types listed
    in UNSUPPORTED) a typed UnsupportedInstruction."""
    rows = rollouts(server)
    assert len(rows) == 5
    scored = 0
    for i, row in enumerate(rows):
        task = {k: row[k] for k in TASK_FIELDS if k in row}
        if any(iid in UNSUPPORTED for iid in row["instruction_id_list"]):
            with pytest.raises(ifn.UnsupportedInstruction):
                ifn.compute_score(server, output_text(row), None, task)
            continue
        result = ifn.compute_score(server, output_text(row), None, task)
        assert result["follow_instruction_list"] == row["follow_instruction_list"], (server, i)
        assert result["score"] == row["reward"], (server, i)
        assert result["follow_all_instructions"] == row["follow_all_instructions"], (server, i)
        scored += 1
    # instruction_following: all 5; ifbench: 2 (ratio:stop_words and words:start_verb need NLTK data).
    assert scored == {"instruction_following": 5, "ifbench": 2}[server]


def test_the_task_can_come_as_ground_truth_object_or_json() -> None:
    row = rollouts("instruction_following")[1]
    task = {k: row[k] for k in TASK_FIELDS if k in row}
    import json

    as_object = ifn.compute_score("x", output_text(row), task, None)
    as_json = ifn.compute_score("x", output_text(row), json.dumps(task), None)
    assert as_object["score"] == as_json["score"] == row["reward"]


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_an_empty_ground_truth_means_none_and_the_task_comes_from_extra_info(blank: str) -> None:
    """A verl data row without a reference carries ground_truth "": the task is read from extra_info."""
    row = rollouts("instruction_following")[1]
    task = {k: row[k] for k in TASK_FIELDS if k in row}
    result = ifn.compute_score("x", output_text(row), blank, task)
    assert result["score"] == row["reward"]
    assert result["follow_instruction_list"] == row["follow_instruction_list"]


def test_text_ground_truth_that_is_not_json_is_still_a_typed_error() -> None:
    with pytest.raises(ifn.InstructionKwargsError, match="not a JSON object"):
        ifn.compute_score("x", "response", "keywords please", {"instruction_id_list": [], "kwargs": []})


def test_strict_and_loose() -> None:
    # The first line breaks "end with": loose drops it; strict does not.
    text = "Sure, here it is:\n*Hello* world. Is there anything else I can help with?"
    ids, kw = ["startend:end_checker"], [{"end_phrase": "Is there anything else I can help with?"}]
    assert _score(text, ids, kw)["score"] == 1.0
    ids2, kw2 = ["detectable_format:title"], [None]
    strict = _score("intro\n<<Title>>\nbody", ids2, kw2)
    assert strict["score"] == 1.0
    ids3, kw3 = ["punctuation:no_comma"], [None]
    with_comma_first_line = "Well, okay\nno commas here\nat all"
    assert _score(with_comma_first_line, ids3, kw3)["score"] == 0.0
    loose = _score(with_comma_first_line, ids3, kw3, strictness="loose")
    assert loose["score"] == 1.0
    assert loose["strict_follow_list"] == [False] and loose["loose_follow_list"] == [True]


def test_credit_all_or_fraction_and_grading_mode_overrides() -> None:
    ids = ["punctuation:no_comma", "change_case:english_lowercase"]
    text = "no commas but Not lowercase"
    assert _score(text, ids, [None, None])["score"] == 0.0
    assert _score(text, ids, [None, None], credit="fraction")["score"] == 0.5
    task = {"instruction_id_list": ids, "kwargs": [None, None], "grading_mode": "fraction"}
    assert ifn.compute_score("x", text, None, task)["score"] == 0.5
    result = _score(text, ids, [None, None], credit="fraction")
    assert result["reward_components"] == {"change_case": 0.0, "punctuation": 1.0}


def test_empty_response_follows_nothing() -> None:
    result = _score("   ", ["keywords:forbidden_words"], [{"forbidden_words": ["x"]}])
    assert result["score"] == 0.0 and result["follow_instruction_list"] == [False]


def test_ifeval_counts() -> None:
    # number_sentences counts with Punkt's English model: "Dr." does not end a sentence.
    ids, text = ["length_constraints:number_sentences"], "Dr. Smith went home. He slept. Then he ate."
    assert _score(text, ids, [{"num_sentences": 3, "relation": "at least"}])["score"] == 1.0
    assert _score(text, ids, [{"num_sentences": 4, "relation": "at least"}])["score"] == 0.0
    # capital words count NLTK tokens: "DON'T" is two upper-case tokens.
    ids = ["change_case:capital_word_frequency"]
    kw = [{"capital_frequency": 2, "capital_relation": "at least"}]
    assert _score("I DON'T know", ids, kw)["score"] == 1.0
    assert _score("i DONT know", ids, kw)["score"] == 0.0
    assert (
        _score(
            "Bonjour, je suis très content de vous voir aujourd'hui.",
            ["language:response_language"],
            [{"language": "fr"}],
        )["score"]
        == 1.0
    )
    assert _score('{"a": [1, 2]}', ["detectable_format:json_format"], [None])["score"] == 1.0
    assert _score('```json\n{"a": 1}\n```', ["detectable_format:json_format"], [None])["score"] == 1.0
    assert _score("{'a': 1}", ["detectable_format:json_format"], [None])["score"] == 0.0


def test_registry_covers_ifeval_ifevalg_and_ifbench() -> None:
    ifeval_types = {
        "keywords:existence",
        "keywords:frequency",
        "keywords:forbidden_words",
        "keywords:letter_frequency",
        "language:response_language",
        "length_constraints:number_sentences",
        "length_constraints:number_paragraphs",
        "length_constraints:number_words",
        "length_constraints:nth_paragraph_first_word",
        "detectable_content:number_placeholders",
        "detectable_content:postscript",
        "detectable_format:number_bullet_lists",
        "detectable_format:constrained_response",
        "detectable_format:number_highlighted_sections",
        "detectable_format:multiple_sections",
        "detectable_format:json_format",
        "detectable_format:title",
        "combination:two_responses",
        "combination:repeat_prompt",
        "startend:end_checker",
        "change_case:capital_word_frequency",
        "change_case:english_capital",
        "change_case:english_lowercase",
        "punctuation:no_comma",
        "startend:quotation",
    }
    assert len(ifeval_types) == 25 and ifeval_types <= set(REGISTRY)
    ifbench_prefixes = ("count:", "ratio:", "words:", "sentence:", "format:", "custom:", "repeat:")
    ifbench = {k for k in REGISTRY if k.startswith(ifbench_prefixes)} - {
        k for k in REGISTRY if k.startswith(("count:lowercase", "count:counting", "count:count_"))
    }
    assert len(ifbench) + len(UNSUPPORTED) == 58
    assert len(REGISTRY) == 110


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_words": "ten", "relation": "at least"}, "kwargs[0].num_words"),
        ({"num_words": 10, "relation": "more than"}, "kwargs[0].relation"),
        ({"num_words": 10}, "kwargs[0].relation"),
        ({"num_words": 10.5, "relation": "at least"}, "kwargs[0].num_words"),
        ({"num_words": True, "relation": "at least"}, "kwargs[0].num_words"),
        ({"num_words": -5, "relation": "at least"}, "kwargs[0].num_words"),
        ({"num_words": 10, "relation": "at least", "bogus": 1}, "kwargs[0].bogus"),
        ("not an object", "kwargs[0]"),
    ],
)
def test_wrong_kwargs_are_typed_errors_naming_the_field(kwargs: Any, field: str) -> None:
    with pytest.raises(ifn.InstructionKwargsError, match=field.replace("[", r"\[").replace("]", r"\]")):
        _score("one two three", ["length_constraints:number_words"], [kwargs])


def test_float_integers_from_parquet_are_accepted() -> None:
    result = _score(
        "a b c", ["length_constraints:number_words"], [{"num_words": 3.0, "relation": "at least"}]
    )
    assert result["score"] == 1.0


def test_hostile_tasks() -> None:
    with pytest.raises(ifn.UnknownInstruction, match=r"instruction_id_list\[0\]"):
        _score("x", ["keywords:made_up"], [None])
    with pytest.raises(ifn.InstructionKwargsError, match="at most 64"):
        _score("x", ["punctuation:no_comma"] * 10_000, [None] * 10_000)
    with pytest.raises(ifn.InstructionKwargsError, match="one object"):
        _score("x", ["punctuation:no_comma", "punctuation:no_comma"], [None])
    with pytest.raises(ifn.InstructionKwargsError, match="instruction_id_list"):
        ifn.compute_score("x", "y", None, {"instruction_id_list": "punctuation:no_comma", "kwargs": []})
    with pytest.raises(ifn.InstructionKwargsError, match="grading_mode"):
        task = {"instruction_id_list": [], "kwargs": [], "grading_mode": "lenient"}
        ifn.compute_score("x", "y", None, task)
    with pytest.raises(ifn.InstructionKwargsError, match="letter"):
        _score(
            "x",
            ["keywords:letter_frequency"],
            [{"letter": "ab", "let_frequency": 1, "let_relation": "at least"}],
        )
    with pytest.raises(TypeError):
        ifn.compute_score("x", None, None, {"instruction_id_list": [], "kwargs": []})  # type: ignore[arg-type]


def test_no_instructions_is_not_a_pass() -> None:
    assert _score("anything", [], [])["score"] == 0.0


def test_huge_response_scores_zero_without_being_read() -> None:
    huge = "word " * 2_000_000  # 10 MB
    started = time.monotonic()
    result = _score(huge, ["length_constraints:number_words"], [{"num_words": 5, "relation": "at least"}])
    assert result["score"] == 0.0 and result["reason"] == "response_too_long"
    assert time.monotonic() - started < 5  # bounded: the text is never tokenised


def test_every_checker_survives_hostile_text() -> None:
    """Each registered type on odd text: a bool, never an exception (kwargs filled with plausible values)."""
    values = {"int": 2, "number": 50.0, "str": "a", "strs": ["a"], "relation": "at least"}
    texts = [
        "",
        "*",
        "\n\n\n",
        "***\n***",
        "İ" * 50,
        "((((((((((",
        '"\'"\'"',
        "a.b.c. d? e! 😀",
        "Question 1\nA. x",
    ]
    for instruction_id, spec in REGISTRY.items():
        kwargs = {name: values[kind] for name, kind in spec.required.items()}
        if instruction_id == "keywords:letter_frequency" or instruction_id == "letters:letter_counting2":
            kwargs["letter"] = "a"
        if "n_end" in kwargs:
            kwargs.update(n_start=0, n_end=1)
        for text in texts:
            result = _score(text or " ", [instruction_id], [kwargs], strictness="loose")
            assert isinstance(result["score"], float), instruction_id


def test_reward_components_stay_within_the_bounds_for_every_group() -> None:
    """One component per instruction group: every group of the registry together is at most 32 names of the
    components' charset (docs/nemo_gym.md's bound), so no task can exceed it."""
    import re

    groups = {instruction_id.split(":", 1)[0] for instruction_id in REGISTRY}
    assert len(groups) <= 32
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,63}", g) for g in groups)
    ids = sorted(REGISTRY)[:64]
    values = {"int": 1, "number": 1.0, "str": "a", "strs": ["a"], "relation": "at least"}
    kwargs = [{n: values[k] for n, k in REGISTRY[i].required.items()} for i in ids]
    result = _score("a b c", ids, kwargs, credit="fraction")
    assert set(result["reward_components"]) <= groups and len(result["reward_components"]) <= 32
    assert all(0.0 <= v <= 1.0 for v in result["reward_components"].values())
