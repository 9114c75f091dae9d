"""The judge calls NeMo Gym recorded in a judge server's rows (`judge_evaluations`), compared with ours, and
the judge built-in's settings read from the server's own config file at the pinned commit."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tests.nemo_gym import gym_mirror
from tests.nemo_gym.judge_replay import normalise
from tests.nemo_gym.judge_sources import ANSWER_ONLY, CONFIG_FILES, RESPONSE, code_templates, filled_lines


def judge_inputs(evaluation: dict[str, Any]) -> list[dict[str, Any]]:
    return list(evaluation.get("responses_create_params", {}).get("input") or [])


def judge_text(evaluation: dict[str, Any]) -> str:
    """What NeMo Gym reads of a judge's answer: the last content part of its last output item."""
    output = evaluation.get("response", {}).get("output") or [{}]
    content = output[-1].get("content") or [{}]
    return str(content[-1].get("text", ""))


def recorded_judge(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A row's judge calls: its `judge_evaluations`, or the one call a server records as
    `judge_responses_create_params` and `judge_response` (aalcr)."""
    if isinstance(row.get("judge_responses_create_params"), dict):
        call = {"responses_create_params": row["judge_responses_create_params"]}
        return [{**call, "response": row.get("judge_response") or {}}]
    return [e for e in row.get("judge_evaluations") or [] if isinstance(e, dict)]


def judge_diffs(ours: Any, recorded: list[dict[str, Any]]) -> list[str]:
    if not isinstance(ours, list) or len(ours) != len(recorded):
        return [f"judge calls: {len(ours) if isinstance(ours, list) else ours!r} != {len(recorded)}"]
    diffs = []
    for k, (got, want) in enumerate(zip(ours, recorded, strict=True)):
        if normalise(judge_inputs(got)) != normalise(judge_inputs(want)):
            diffs.append(f"judge call {k}: request messages differ from the recorded ones")
        if "verdict_label" in want and got.get("verdict_label") != want["verdict_label"]:
            diffs.append(
                f"judge call {k}: verdict {got.get('verdict_label')!r} != {want.get('verdict_label')!r}"
            )
    return diffs


def judge_kwargs(server: str, fn: Callable[..., Any]) -> dict[str, Any]:
    """The judge function's reward_kwargs from the server's own config file at the pinned commit (its
    `<server>.yaml`, or judge_sources.CONFIG_FILES'): every setting of the same name, each prompt template
    file (`<name>_fpath`) read as the text `<name>`, and the prompt texts the server keeps in its code
    (judge_sources.CODE_TEMPLATES)."""
    config = gym_mirror.config(server, CONFIG_FILES.get(server, f"{server}.yaml"))
    settings = next(
        v["resources_servers"][server]
        for v in config.values()
        if isinstance(v, dict) and server in (v.get("resources_servers") or {})
    )
    params = inspect.signature(fn).parameters
    kwargs = {k: v for k, v in settings.items() if k in params}
    for key, path in settings.items():
        name = key.removesuffix("_fpath")
        if key.endswith("_fpath") and name in params:
            text = gym_mirror.show(f"{gym_mirror.SERVERS}/{server}/{path}")
            if text is None:
                raise FileNotFoundError(f"{server}: no prompt template at {path}")
            kwargs[name] = text
    return {**kwargs, **code_templates(server)}


def response_text(row: dict[str, Any]) -> str:
    """The policy's text in a row: every output_text part of its message items."""
    parts = [
        str(part.get("text", ""))
        for item in (row.get("response") or {}).get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    return " ".join(parts)


def arena_recordings(server: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    """arena_judge's two judge calls of a row (answer as A, then as B), its prompt of the row's category
    rendered with the row's question, baseline and the policy's text, answered with the recorded
    judgements."""
    if server != "arena_judge":
        return []
    prompts = code_templates(server)["judge_prompts"]
    prompt = prompts.get(str(row.get("category"))) or prompts["hard_prompt"]
    answer, baseline = response_text(row), str(row.get("baseline_answer") or "")
    out = []
    for first, second, key in (
        (answer, baseline, "judgement_gen_base"),
        (baseline, answer, "judgement_base_gen"),
    ):
        fill = {"question": str(row.get("question") or ""), "answer_1": first, "answer_2": second}
        messages = (
            [{"role": "system", "content": prompt["system"].format_map(fill)}] if "system" in prompt else []
        )
        messages.append({"role": "user", "content": prompt["user"].format_map(fill)})
        out.append({"messages": messages, "answer": str(row.get(key) or "")})
    return out


def rubric_recordings(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Stand-in judge recordings of a row that records each criterion's judge prompt and answer
    (`rubric_evaluations`, inverse_if): each answers the request that holds that prompt."""
    return [
        {"contains": [str(e["judge_prompt"])], "answer": str(e["judge_response"])}
        for e in row.get("rubric_evaluations") or []
        if isinstance(e, dict) and "judge_prompt" in e and "judge_response" in e
    ]


def answer_only_recordings(server: str, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Stand-in judge recordings of a row that holds the judge's answers but not its requests
    (judge_sources.ANSWER_ONLY): it answers the request that holds the server's template lines of the named
    placeholders filled with the row's texts."""
    if server not in ANSWER_ONLY:
        return []
    answer, fields = ANSWER_ONLY[server]
    texts = {**row, RESPONSE: response_text(row)}

    def text(key: str) -> str:
        head, _, tail = key.partition(".")
        value = texts.get(head)
        value = value.get(tail) if tail and isinstance(value, dict) else value
        return "" if value is None else str(value)

    values = {name: text(key) for name, key in fields.items()}
    template = str(code_templates(server).get("judge_prompt_template", ""))
    needles = filled_lines(template, values) if template else list(values.values())
    said = row.get(answer)
    return [{"contains": needles, "answer": said}] if isinstance(said, str) else []
