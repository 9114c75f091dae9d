"""NeMo Gym rule built-ins of the wheel-readable batch (hotpotqa_qa, ...): against NeMo Gym's own scoring
code where it is plain Python (read from its wheel at test time and run here, never copied), on seeded
random inputs built from the cases its rules single out; and on hostile or malformed task fields a typed
error naming the field. Their recorded-row parity is tests/nemo_gym/test_catalog.py."""

from __future__ import annotations
import __future__

import ast
import html
import importlib
import json
import random
import re
import types
import typing
import unicodedata
from typing import Any

import pytest

from rewardfleet.reward_fns import asr_with_pc, bunsenbench_chemistry_mcq, hotpotqa_qa, nvarc, structeval
from rewardfleet.reward_fns._task_text import MAX_RESPONSE_CHARS, TaskFieldError
from tests.nemo_gym.nemo_gym_source import read_text


def _theirs(path: str) -> types.ModuleType:
    try:
        source = read_text(path)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    module = types.ModuleType(path)
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def _score(name: str, text: str, truth: Any, info: dict[str, Any] | None = None) -> dict[str, Any]:
    module = importlib.import_module(f"rewardfleet.reward_fns.{name}")
    return dict(module.compute_score("nemo_gym", text, truth, info or {}))


_PIECES = ["The", "the", "a", "An", "Ed", "Wood", "(film)", '"Q"', "\u201cQ\u201d", "1,234,567", "one",
           "First", "twenty-first", "U.S.", "3.5", "-", "&", "and", "AND", "Rock-and-roll", "yes", "no",
           "\u0130stanbul", "\u2013", "\xa0", "  ", "Smith,", "Jr.", "(", ")", "of", "x", "ab", "!", "12",
           "19th", "New", "York", "\n"]  # fmt: skip


def _phrase(rng: random.Random, n: int) -> str:
    return "".join(rng.choice([" ", ""]) + rng.choice(_PIECES) for _ in range(n)).strip(rng.choice(["", " "]))


def test_hotpotqa_qa_equals_nemo_gyms_scoring() -> None:
    theirs = _theirs("resources_servers/hotpotqa_qa/scoring.py")
    rng = random.Random(51)
    for _ in range(1500):
        reference = _phrase(rng, rng.randint(0, 6))
        answer = reference + _phrase(rng, 3) if rng.random() < 0.3 else _phrase(rng, rng.randint(0, 12))
        if rng.random() < 0.3:
            value = rng.choice([answer, 5, None, [answer]])
            answer = (
                rng.choice(["", "So {x} ", "```json\n"])
                + json.dumps({"answer": value})
                + rng.choice(["", "\n```", " {"])
            )
        if rng.random() < 0.1:
            answer = "x" * rng.randint(60, 120) + answer
        predicted, _ = theirs.parse_generation(answer)
        forms, _ = theirs._gt_alternatives(reference)
        flagged = theirs.normalize_gt(reference)
        want = {
            "extracted_answer": predicted or None,
            "answer_em": theirs.answer_exact_match(predicted, reference),
            "answer_f1": theirs.answer_f1_score(predicted, reference)[0],
            "is_correct": float(theirs.is_correct(forms, predicted)),
            "is_correct_strict": float(theirs.is_correct_strict(forms, predicted)),
            "gt_should_remove": flagged["should_remove"],
            "gt_remove_reason": flagged["remove_reason"],
        }
        got = hotpotqa_qa.compute_score("nemo_gym", answer, reference)
        assert {k: got[k] for k in want} == want, (reference, answer)
        assert got["score"] == want["is_correct_strict"]
        assert hotpotqa_qa.reference_forms(reference) == forms, reference


def test_nvarc_grid_equals_nemo_gyms_parse() -> None:
    """Our grid reading equals nvarc's `_parse_grid` (its app.py's function, with its problem.py's Board)."""
    problem = _theirs("resources_servers/nvarc/problem.py")
    tree = ast.parse(read_text("resources_servers/nvarc/app.py"))
    wanted = ("_strip_thinking", "_parse_grid")
    nodes: list[ast.stmt] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    namespace: dict[str, Any] = {
        **vars(typing),
        "re": re,
        "Board": problem.Board,
        "ColorPalette": problem.ColorPalette,
    }
    exec(compile(ast.Module(nodes, []), "app.py", "exec"), namespace)
    pieces = ["0", "1", "9", "10", " ", "\n", ",", "[", "]", "\\boxed{", "}", "<think>", "</think>", "a", "_",
              "\u0663", "-", "\t", "x1"]  # fmt: skip
    rng = random.Random(51)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert nvarc.parse_grid(text) == namespace["_parse_grid"](text), text


def _their_definitions(path: str, names: set[str] | None, namespace: dict[str, Any]) -> None:
    """The top-level functions (`names`, else all, with the module's constants) of a NeMo Gym file."""
    tree = ast.parse(read_text(path))
    nodes: list[ast.stmt] = [
        n
        for n in tree.body
        if (isinstance(n, ast.FunctionDef) and (names is None or n.name in names))
        or (names is None and isinstance(n, ast.Assign))
    ]
    flags = __future__.annotations.compiler_flag  # their annotations name classes left out here
    exec(compile(ast.Module(nodes, []), path, "exec", flags=flags), namespace)


class _TextOnlyResponse:
    """A response with no status and no refusal part: what the built-in sees of one."""

    output: tuple[Any, ...] = ()
    status = None
    incomplete_details = None


def test_bunsenbench_chemistry_mcq_equals_nemo_gyms_extraction() -> None:
    ns: dict[str, Any] = {**vars(typing), "re": re, "html": html, "unicodedata": unicodedata}
    try:
        _their_definitions("resources_servers/mcqa/app.py", {"_get_allowed_letters_from_options"}, ns)
        _their_definitions("resources_servers/bunsenbench_chemistry_mcq/app.py", None, ns)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    assert ns["SUBSCRIPT_TRANSLATION"] == bunsenbench_chemistry_mcq._ASCII
    option_sets: list[list[dict[str, Any]]] = [
        [{"A": "H2O"}, {"B": "CO\u2082"}, {"C": "Kelvin"}, {"D": None}],
        [{"a": "x"}, {"B": "&amp;"}],
        [],
    ]
    pieces = ["A", "b", "(C)", "D.", "Option B", "choice c", "<answer>", "</answer>", "<choice>",
              "</choice>", "<choices>", "</choices>", "\\boxed{", "}", "\\text{", "Answer:", "**Answer**:",
              "The answer is ", "I choose ", "\n", "H2O", "CO2", "CO\u2082", "kelvin", "'", '"', "<think>",
              "</think>", "I'm sorry, but I can't", "  ", "x", "1. ", "\u017f", "\u212a"]  # fmt: skip
    rng = random.Random(51)
    for _ in range(3000):
        options = rng.choice(option_sets)
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        expected = rng.choice(["B", "(b)", "H2O", "\\boxed{C}", " d ", "Kelvin", "", "ZZ"])
        kept = [{k: v for k, v in entry.items() if v is not None} for entry in options]
        gold = ns["_expected_answer_letter"](expected, kept)
        allowed = ns["_get_allowed_letters_from_options"](kept) | (
            {gold} if len(gold) == 1 and gold.isalpha() else set()
        )
        predicted = ns["extract_bunsen_answer"](text.strip(), kept, allowed) if text.strip() else None
        mode = ns["classify_error_mode"](_TextOnlyResponse(), text, predicted, gold)
        got = bunsenbench_chemistry_mcq.compute_score("nemo_gym", text, expected, {"options": options})
        assert (got["expected_answer"], got["extracted_answer"], got["error_mode"]) == (
            gold,
            predicted,
            mode,
        ), (
            text,
            expected,
        )
        assert got["score"] == float(predicted is not None and predicted == gold)


def test_structeval_equals_nemo_gyms_extraction_parsing_and_paths() -> None:
    import codecs
    import csv
    import io

    import toml
    import xmltodict
    import yaml

    ns: dict[str, Any] = {**vars(typing), "re": re, "codecs": codecs, "csv": csv, "io": io, "json": json}
    ns.update(yaml=yaml, toml=toml, xmltodict=xmltodict)
    names = {"_extract_code", "_parse_content", "_raw_output_eval", "_tokenize_path", "_path_exists"}
    try:
        _their_definitions("resources_servers/structeval/app.py", names, ns)
    except FileNotFoundError as missing:
        pytest.skip(str(missing))

    def theirs(text: str, paths: list[str], output_type: str) -> dict[str, Any]:
        if not text.strip():  # verify's own answer to an empty response
            zeros = dict.fromkeys(("score", "render_score", "key_validation_score", "raw_output_score"), 0.0)
            return {**zeros, "error_type": "empty_response", "error_message": "No assistant response text"}
        parsed, render, error_type, error_message = ns["_parse_content"](
            ns["_extract_code"](text, output_type), output_type
        )
        found = (
            sum(ns["_path_exists"](parsed, p) for p in paths) / len(paths) if render == 1.0 and paths else 0.0
        )
        return {"score": round(0.2 * render + 0.8 * found, 2), "render_score": render,
                "key_validation_score": found, "raw_output_score": ns["_raw_output_eval"](text, paths),
                "error_type": error_type, "error_message": error_message}  # fmt: skip

    documents = {
        "json": ['{"a": {"b": [1, {"c": 2}]}, "d.e": 1}', "[]", '{"a": 1', '{"csv_headers": ["x"]}'],
        "yaml": ["a:\n  b:\n    - 1\n    - c: 2\n", "- x\n- y\n", ": bad: [", "a: &x [1]\nb: *x\n"],
        "toml": ["[a]\nb = [1, 2]\n[a.c]\nd = 1\n", "a = ", 'x = "\\u00e9"\n'],
        "xml": ['<a x="1"><b>1</b><b>2</b><c/></a>', "<a>", "<r><t>x</t></r>"],
        "csv": ["h1,h2\n1,2\n", "", 'a,"b\n'],
    }
    paths = ["a", "a.b", "a.b.*", "a.b.[1].c", "a.b[0]", "`d.e`", "csv::h1", "csv::x", "a.@x", "a.x",
             "a.b.*.c", "r.t", "[0]", "*", "a.c.d", "a..b"]  # fmt: skip
    wrappers = [
        "{doc}",
        "```{kind}\n{doc}\n```",
        "Here:\n```\n{doc}",
        "<|BEGIN_CODE|>\n{doc}\n<|END_CODE|>",
        "&lt;x&gt; ```{kind}   \n{doc}``` and ```json\n{{}}\n```",
        "{doc}\\x",
    ]
    rng = random.Random(51)
    for _ in range(1500):
        kind = rng.choice(list(documents))
        text = rng.choice(wrappers).format(doc=rng.choice(documents[kind]), kind=kind)
        if rng.random() < 0.2:
            text = "<think>\n\n</think>\n\n" + text.replace("\n", "\\n")
        chosen = rng.sample(paths, rng.randint(0, 4))
        output_type = rng.choice([kind, kind.upper()])
        got = structeval.compute_score("nemo_gym", text, chosen, {"output_type": output_type})
        assert got == theirs(text, chosen, output_type.lower()), (text, chosen)


def test_asr_with_pc_equals_nemo_gyms_scores() -> None:
    import numpy as np

    ns: dict[str, Any] = {**vars(typing), "re": re, "np": np}
    try:
        _their_definitions("resources_servers/asr_with_pc/app.py", {"normalize_whitespace", "split_tokens",
                           "extract_punctuation", "preprocess_asr_text", "calculate_per", "evaluate_asr_pc",
                           "evaluate_asr", "_empty_score_record", "_asr_to_response_scores"}, ns)  # fmt: skip
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    keys = ("wer", "wer_c", "wer_pc", "per", "is_correct", "text", "pred_text", "ref_pc_tok", "hyp_pc_tok",
            "ref_c", "hyp_c")  # fmt: skip
    pieces = ["Hello", ",", "world", ".", "Mr.", "Smith", "'s", "4", "four", "o'clock", "?", "!", "  ", "\n",
              "\u2014", "\u00e9", "Colour", "-", "twenty one", "$5", "%", "...", ""]  # fmt: skip
    rng = random.Random(51)
    for _ in range(150):
        reference = "".join(
            rng.choice(["", " "]) + rng.choice(pieces) for _ in range(rng.randint(0, 8))
        ).strip()
        hypothesis = "".join(rng.choice(["", " "]) + rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        for task_type in ("ASR-PC", "ASR"):
            if task_type == "ASR-PC":
                want = ns["evaluate_asr_pc"](reference, hypothesis.strip())
            else:
                want = ns["_asr_to_response_scores"](ns["evaluate_asr"](reference, hypothesis.strip()))
            got = asr_with_pc.compute_score("nemo_gym", hypothesis, reference, {"task_type": task_type})
            assert {k: got[k] for k in keys} == pytest.approx({k: want[k] for k in keys}), (
                reference,
                hypothesis,
            )
            assert got["score"] == (1.0 if want["is_correct"] else 0.0)
        other = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        info = {"task_type": "ASR_LEADERBOARD", "reference_fields": ["text_tn"], "text_tn": other}
        board = asr_with_pc.compute_score("nemo_gym", hypothesis, reference, info)
        theirs = ns["evaluate_asr"](other, hypothesis.strip())
        assert (board["wer_tn"], board["is_correct_tn"]) == (theirs["wer"], theirs["is_correct"])


def test_asr_with_pc_hallucination_by_characters_per_minute() -> None:
    fast = asr_with_pc.compute_score(
        "nemo_gym", "x" * 1501, "", {"task_type": "Hallucination", "audio_duration": 60}
    )
    assert (fast["score"], fast["hallucination_rate"], fast["char_rate"]) == (0.0, 1.0, 1501.0)
    slow = asr_with_pc.compute_score(
        "nemo_gym", "x" * 1500, "", {"task_type": "Hallucination", "audio_duration": 60}
    )
    assert (slow["score"], slow["hallucination_rate"]) == (1.0, 0.0)
    unknown = asr_with_pc.compute_score("nemo_gym", "x" * 9999, "", {"task_type": "Hallucination"})
    assert (unknown["score"], unknown["char_rate"]) == (1.0, 0.0)


BAD_FIELDS: list[tuple[str, Any, dict[str, Any], str]] = [
    ("hotpotqa_qa", "x" * 10_001, {}, "ground_truth"),
    ("nvarc", [[1, "2"]], {}, "ground_truth"),
    ("bunsenbench_chemistry_mcq", "A", {"options": [{"A": 1}]}, "options"),
    ("bunsenbench_chemistry_mcq", "A", {"choices": [7]}, "choices"),
    ("bunsenbench_chemistry_mcq", "A", {"options": [{"A": "x" * 100_001}]}, "options"),
    ("bunsenbench_chemistry_mcq", 1, {}, "ground_truth"),
    ("structeval", ["a.b"], {"output_type": "ini"}, "output_type"),
    ("structeval", ["a[0"], {"output_type": "json"}, "raw_output_metric"),
    ("structeval", "a.b", {"output_type": "json"}, "raw_output_metric"),
    ("asr_with_pc", "hello", {"task_type": "ASR-X"}, "task_type"),
    ("asr_with_pc", "hello", {"task_type": "Hallucination", "audio_duration": "10"}, "audio_duration"),
    ("asr_with_pc", "hello", {"task_type": "ASR_LEADERBOARD", "reference_fields": ["text_tn"]}, "text_tn"),
    ("asr_with_pc", 5, {}, "ground_truth"),
    ("nvarc", [[1]], {"agent_mode": "inductive"}, "agent_mode"),
]


@pytest.mark.parametrize(("name", "truth", "info", "field"), BAD_FIELDS, ids=[c[0] for c in BAD_FIELDS])
def test_bad_task_field_is_a_typed_error_naming_it(
    name: str, truth: Any, info: dict[str, Any], field: str
) -> None:
    with pytest.raises((TaskFieldError, TypeError), match=field):
        _score(name, "an answer", truth, info)


OVERLONG: list[tuple[str, Any, dict[str, Any]]] = [
    ("hotpotqa_qa", "Paris", {}),
    ("nvarc", [[1]], {}),
    ("bunsenbench_chemistry_mcq", "A", {"options": [{"A": "x"}]}),
    ("structeval", ["a"], {"output_type": "json"}),
    ("asr_with_pc", "hello", {}),
]


@pytest.mark.parametrize(("name", "truth", "info"), OVERLONG, ids=[c[0] for c in OVERLONG])
def test_overlong_response_scores_zero_with_the_reason(name: str, truth: Any, info: dict[str, Any]) -> None:
    result = _score(name, "Paris " * (MAX_RESPONSE_CHARS // 6 + 1), truth, info)
    assert result["score"] == 0.0
    assert result["error_type"] == "response_too_long"
