"""Judge templates: rendering, field checks, and the sample fields they are filled with."""

from __future__ import annotations

import pytest

from rewardfleet.reward_fns.judging.judge import template_values
from rewardfleet.reward_fns.judging.templates import (
    TEMPLATES,
    TemplateError,
    as_text,
    chat_messages,
    get_template,
    number_steps,
    problem_text,
)

VALUES = {
    "problem": "What is 6 * 7?",
    "response": "6*7 = 42. Answer: {42}",
    "reference": "42",
    "rubric": "Be right.",
    "steps": "Step 0: 6*7 = 42.",
    "response_a": "42",
    "response_b": "41",
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_every_builtin_template_renders_with_all_fields(name: str) -> None:
    messages = TEMPLATES[name].render(VALUES)
    assert messages[-1]["role"] == "user"
    user = messages[-1]["content"]
    assert "{" not in user.replace("{42}", "").replace("\\boxed{}", "")  # no placeholder left
    for field in TEMPLATES[name].fields():
        assert VALUES[field] in user


def test_correctness_template_puts_fields_in_place_and_asks_for_verdict_line() -> None:
    messages = get_template("correctness").render(VALUES)
    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert user.index("What is 6 * 7?") < user.index("[Reference answer]\n42") < user.index("Answer: {42}")
    assert user.rstrip().endswith("`Verdict: correct` or `Verdict: incorrect`.")


def test_braces_in_values_are_not_interpreted() -> None:
    values = {**VALUES, "response": "{problem} {0} {{x}} \\boxed{7}"}
    user = get_template("correctness").render(values)[-1]["content"]
    assert "{problem} {0} {{x}} \\boxed{7}" in user


def test_step_critique_asks_for_boxed_index() -> None:
    user = get_template("step_critique").render(VALUES)[-1]["content"]
    assert user.endswith("put your final answer (the index) in \\boxed{}.")
    assert get_template("step_critique").verdict_kind == "step_index"


def test_system_prompt_override_and_missing_field() -> None:
    messages = get_template("rubric").render(VALUES, system_prompt="Be terse.")
    assert messages[0] == {"role": "system", "content": "Be terse."}
    with pytest.raises(TemplateError, match=r"needs \['reference'\]"):
        get_template("correctness").render({k: v for k, v in VALUES.items() if k != "reference"})


def test_unknown_template_and_custom_templates() -> None:
    with pytest.raises(TemplateError, match="unknown judge template 'nope'"):
        get_template("nope")
    custom = get_template(None, user_template="Q: {problem}\nA: {response}\nScore 0-5.", verdict_kind="scale")
    assert custom.verdict_kind == "scale" and custom.system is None
    assert custom.render(VALUES) == [
        {"role": "user", "content": "Q: What is 6 * 7?\nA: 6*7 = 42. Answer: {42}\nScore 0-5."}
    ]
    with pytest.raises(TemplateError, match="does not parse"):
        get_template(None, user_template="{problem} {unclosed")
    for bad in ("{0}", "{response.__class__}", "{answer}", "{}"):
        with pytest.raises(TemplateError, match="unknown placeholders"):
            get_template(None, user_template=f"{{problem}} {bad}")
    with pytest.raises(TemplateError, match="asks for a binary verdict"):
        get_template("correctness", verdict_kind="scale")
    with pytest.raises(TemplateError, match="unknown verdict_kind"):
        get_template("correctness", verdict_kind="stars")


def test_chat_messages_sources_in_order() -> None:
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    assert chat_messages(msgs, {"question": "other"}) == msgs
    assert chat_messages("plain", None) == [{"role": "user", "content": "plain"}]
    assert chat_messages(None, {"raw_prompt": msgs}) == msgs
    assert chat_messages(None, {"question": "Q?"}) == [{"role": "user", "content": "Q?"}]
    assert chat_messages(None, {"prompt": [{"no": "role"}]}) is None
    assert chat_messages("  ", {}) is None


def test_problem_text_prefers_the_bare_question() -> None:
    msgs = [{"role": "system", "content": "Think step by step."}, {"role": "user", "content": "Solve x+1=2."}]
    assert problem_text(msgs, {"question": "x+1=2"}) == "x+1=2"
    assert problem_text(msgs, None) == "Solve x+1=2."
    parts = [{"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image"}]}]
    assert problem_text(parts, None) == "part one\n"
    assert problem_text(None, None) is None


def test_number_steps_and_as_text() -> None:
    assert number_steps("a = 1.\n\nb = 2.\n  \nSo 3.") == "Step 0: a = 1.\n\nStep 1: b = 2.\n\nStep 2: So 3."
    assert number_steps("one line") == "Step 0: one line"
    assert as_text(["1", 2]) == "1, 2" and as_text(3.5) == "3.5" and as_text(None) is None


def test_template_values_pairwise_reference_response() -> None:
    values = template_values("mine", "42", {"reference_response": "theirs", "question": "Q"}, None, None)
    assert values["other_response"] == "theirs" and values["reference"] == "42" and values["problem"] == "Q"
    assert values["rubric"] and "Correctness" in values["rubric"]
