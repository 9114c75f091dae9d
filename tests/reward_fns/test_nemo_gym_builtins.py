"""The built-ins for NeMo Gym's rule-based tasks, one rule at a time: mcqa's grading modes, json_schema's
strictness and formats, equivalence_rule's three rules, format_verification's two verifiers (parity with
NeMo Gym's recorded results is tests/nemo_gym/test_parity.py)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from rewardfleet.reward_fns import equivalence_rule, format_verification, json_schema, mcqa
from rewardfleet.reward_fns._task_text import TaskFieldError

OPTIONS = [{"A": "Karyotyping"}, {"B": "Polymerase Chain Reaction"}, {"C": "Southern blotting"}, {"D": None}]


def grade(text: str, gold: str = "B", **info: Any) -> dict[str, Any]:
    return mcqa.compute_score("d", text, gold, {"options": OPTIONS, **info})


@pytest.mark.parametrize(
    ("text", "mode", "letter"),
    [
        ("so \\boxed{B}", "strict_single_letter_boxed", "B"),
        ("so \\boxed{ (B) }", "strict_single_letter_boxed", "B"),
        ("so \\boxed{b}", "strict_single_letter_boxed", None),  # strict: capital only
        ("so \\boxed{D}", "strict_single_letter_boxed", None),  # D's text is null: not an allowed letter
        ("so \\boxed{E}", "strict_single_letter_boxed", None),
        ("B", "strict_single_letter_boxed", None),
        ("\\boxed{\\text{polymerase  chain reaction}}", "lenient_boxed", "B"),
        ("\\boxed{Karyotyping or Southern blotting}", "lenient_boxed", None),  # two options: no answer
        ("Answer: b", "lenient_answer_colon", "B"),
        ("answer: southern blotting", "lenient_answer_colon", "C"),
        ("Answer: maybe", "lenient_answer_colon", None),
        ("**Answer:** C", "lenient_answer_colon_md", "C"),
        ("Answer: Cx", "lenient_answer_colon_md", None),
    ],
)
def test_mcqa_modes(text: str, mode: str, letter: str | None) -> None:
    result = grade(text, grading_mode=mode)
    assert result["extracted_answer"] == letter
    assert result["score"] == (1.0 if letter == "B" else 0.0)


def test_mcqa_template_regex_and_bounds() -> None:
    template = {"output_regex": r"Final:\s*(\S+)"}
    assert grade("Final: A ... Final: ب", template_metadata=template)["extracted_answer"] == "B"
    assert grade("   ", template_metadata=template)["score"] == 0.0
    with pytest.raises(TaskFieldError, match="not a valid regex"):
        grade("x", template_metadata={"output_regex": "("})
    with pytest.raises(TaskFieldError, match="at most 2000"):
        grade("x", template_metadata={"output_regex": "a" * 2001})
    with pytest.raises(TaskFieldError, match="grading_mode"):
        grade("x", grading_mode="vibes")
    assert grade("\\boxed{B}", gold="")["score"] == 0.0  # no gold: never a pass


SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}


def check(text: str, schema: Any = SCHEMA, **info: Any) -> dict[str, Any]:
    return json_schema.compute_score("d", text, json.dumps(schema), info)


def test_json_schema_is_strict_and_parses_the_text_as_is() -> None:
    assert check('{"name": "x", "n": 1}')["score"] == 1.0
    assert check('{"name": "x"}')["error_type"] == "validation_error"  # every property required
    assert check('{"name": "x", "n": 1, "extra": 0}')["score"] == 0.0  # nothing else allowed
    assert check('```json\n{"name": "x", "n": 1}\n```')["error_type"] == "parse_error"
    assert check("  ")["error_type"] == "empty_response"
    assert check("name: x\nn: 1", schema_type="yaml")["score"] == 1.0
    assert check('name = "x"\nn = 1', schema_type="toml")["score"] == 1.0
    rows = {"type": "array", "items": SCHEMA}
    assert check("name,n\nx,1\ny,2", schema=rows, schema_type="csv")["score"] == 1.0
    assert check("name,n\nx,one", schema=rows, schema_type="csv")["score"] == 0.0


def test_json_schema_refuses_unusable_schemas() -> None:
    with pytest.raises(json_schema.SchemaRefused, match="not JSON"):
        json_schema.compute_score("d", "{}", "{nope", {})
    with pytest.raises(json_schema.SchemaRefused, match="max_schema_nodes"):
        check("{}", schema={"anyOf": [{"type": "string"}] * 6000})
    with pytest.raises(json_schema.SchemaRefused, match="does not resolve"):
        check("{}", schema={"$ref": "#/$defs/missing"})
    cyclic = {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    with pytest.raises(json_schema.SchemaRefused):
        check("{}", schema=cyclic)


@pytest.mark.parametrize(
    ("rule", "response", "score"),
    [
        ("exact", "  Paris\n", 1.0),
        ("exact", "paris, france", 0.0),
        ("seq_match", "abcd", 0.75),  # ratio of "abcd" and "abcf": 2*3/8
        ("weighted_seq_match", "abcd", 0.75),
    ],
)
def test_equivalence_rules(rule: str, response: str, score: float) -> None:
    reference = "PARIS" if rule == "exact" else "abcf"
    result = equivalence_rule.compute_score("d", response, reference, {"grading_rule": rule})
    assert result["score"] == pytest.approx(score) and result["equivalence_score"] == result["score"]


def test_equivalence_bounds_its_quadratic_rules() -> None:
    long = "a" * 20_000
    result = equivalence_rule.compute_score("d", long, long, {"grading_rule": "seq_match"})
    assert result["score"] == 0.0 and result["error_type"] == "response_too_long"
    with pytest.raises(TaskFieldError):
        equivalence_rule.compute_score("d", "a", "a", {"grading_rule": "fuzzy"})


def test_format_verification_verifiers() -> None:
    lines = {"type": "regex", "verify_regex": [r"^\d+\. ", r"^- "], "verify_min_matches": 2}
    result = format_verification.compute_score("d", "1. a\n- b\nplain", lines)
    assert result["score"] == 1.0 and result["match_details"]["matching_lines"] == 2
    assert format_verification.compute_score("d", "1. a\nplain", lines)["score"] == 0.0
    markers = {"type": "string_match", "expected_markers": ["[1]", "[2]"], "patterns": [r"\[\d+\]"]}
    assert format_verification.compute_score("d", "x [1] y [2]", markers)["score"] == 1.0
    spurious = format_verification.compute_score("d", "x [1] y [2] z [3]", markers)
    assert spurious["score"] == 0.0 and spurious["match_details"]["spurious"] == ["[3]"]
    assert format_verification.compute_score("d", "x [1]", markers)["match_details"]["missing"] == ["[2]"]
    with pytest.raises(TaskFieldError, match="type"):
        format_verification.compute_score("d", "x", {"type": "llm"})
    with pytest.raises(TaskFieldError, match="verify_min_matches"):
        format_verification.compute_score("d", "x", {"type": "regex", "verify_min_matches": "2"})


@pytest.mark.parametrize("module", [mcqa, json_schema, equivalence_rule, format_verification])
def test_verl_contract(module: Any) -> None:
    parameters = list(inspect.signature(module.compute_score).parameters)
    assert parameters[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    assert not inspect.iscoroutinefunction(module.compute_score)
    assert not getattr(module, "DATA_SOURCES", ())  # they claim no data source
