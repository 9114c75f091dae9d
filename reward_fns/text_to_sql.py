"""Text-to-SQL judged by an LLM, as NeMo Gym's `text_to_sql` server judges it.

Text-to-SQL judged by an LLM (NeMo Gym's `text_to_sql` server): is the predicted query equivalent to the
reference for the question and schema?

The SQL is taken from the response (`extract_sql`) and a judge compares it with the reference `ground_truth`
(the task's `sql`): `judge_prompt_template` filled with `{sql_dialect}`, `{sql_context}`, `{sql_prompt}`,
`{first_answer}` (the reference) and `{second_answer}` (the prediction), after `judge_system_message` when
set. The first of `judge_equal_label` / `judge_not_equal_label` in the judge's reply decides; with
`check_twice_swap` an equal verdict is asked again with the queries swapped, and a second "not equal" scores
`reward_if_swap_fails`. When the predicted SQL itself holds a label, no verdict is read (the judge may quote
it back: `judging.nemo_gym.shows_label`) and it scores 0.

`extra_info`: `sql_dialect` (mysql, postgresql, sqlite; `postgres`, `pg`, `sqlite3` accepted), `sql_context`,
`sql_prompt`. Returns `{"score", "model_output", "extracted_sql", "judge_passed", "failure_reason",
"judge_evaluations"}` (NeMo Gym's shape; `failure_reason`: none, no_sql_extracted, judge_evaluation_failed).
A judge that cannot be reached is a `JudgeCallError`, a missing or unknown dialect a `JudgeConfigError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation, first_label, shows_label

__all__ = ["DIALECTS", "compute_score", "extract_sql"]

DIALECTS = {"mysql": "mysql", "postgresql": "postgresql", "sqlite": "sqlite", "postgres": "postgresql",
            "pg": "postgresql", "sqlite3": "sqlite"}  # fmt: skip
_SQL_FENCE = re.compile(r"```sql\s*(.*?)\s*```", re.I | re.S)
_ANY_FENCE = re.compile(r"```\s*(.*?)\s*```", re.S)
_STATEMENT = re.compile(r"\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP)\s", re.I)
_RAW_START = re.compile(r"(?:SELECT|INSERT|UPDATE|DELETE|WITH)\s", re.I)


def extract_sql(text: str) -> str | None:
    """The response's SQL: the last ```sql block; else the last fenced block that starts with a statement
    keyword; else from the first SELECT/INSERT/UPDATE/DELETE/WITH (anywhere, any case) to the last `;`
    after it (or the end), ending in exactly one `;`. None when there is none."""
    fenced = _SQL_FENCE.findall(text)
    if fenced:
        return fenced[-1].strip()
    for block in reversed(_ANY_FENCE.findall(text)):
        if _STATEMENT.match(block.strip()):
            return block.strip()
    start = _RAW_START.search(text)
    if start is None:
        return None
    end = text.rfind(";")
    raw = text[start.start() : end + 1] if end >= start.start() else text[start.start() :]
    return raw.strip().rstrip(";") + ";"


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    judge_system_message: str | None = None,
    judge_equal_label: str = "[[A=B]]",
    judge_not_equal_label: str = "[[A!=B]]",
    check_twice_swap: bool = True,
    reward_if_swap_fails: float = 0.0,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template:
        raise JudgeConfigError("reward_kwargs.judge_prompt_template: the judge's prompt text is required")
    info = extra_info or {}
    raw_dialect = info.get("sql_dialect")
    dialect = DIALECTS.get(raw_dialect.strip().lower()) if isinstance(raw_dialect, str) else None
    if dialect is None:
        raise JudgeConfigError(
            f"extra_info.sql_dialect: one of mysql, postgresql, sqlite, not {raw_dialect!r:.40}"
        )
    expected = "" if ground_truth is None else str(ground_truth)
    result: dict[str, Any] = {"score": 0.0, "model_output": solution_str, "extracted_sql": None,
                              "judge_passed": False, "failure_reason": "no_sql_extracted",
                              "judge_evaluations": []}  # fmt: skip
    predicted = extract_sql(solution_str) if solution_str else None
    if not predicted:
        return result
    result["extracted_sql"] = predicted
    judge = endpoint(
        pool,
        router_addresses,
        reward_router_address,
        http_client,
        model=model,
        max_tokens=max_tokens,
        temperature=temperature,
        timeout_s=timeout_s,
    )
    labels = (judge_equal_label, judge_not_equal_label)

    async def equal(first: str, second: str) -> bool:
        user = judge_prompt_template.format(
            sql_prompt=str(info.get("sql_prompt", "")),
            sql_context=str(info.get("sql_context", "")),
            first_answer=first,
            second_answer=second,
            sql_dialect=dialect,
        )
        chat = [{"role": "system", "content": judge_system_message}] if judge_system_message else []
        chat.append({"role": "user", "content": user})
        reply = await ask_judge(judge, chat)
        label = None if shows_label(predicted, labels) else first_label(reply.text.strip(), labels)
        result["judge_evaluations"].append(evaluation(chat, reply.text, label))
        return label == judge_equal_label

    result["failure_reason"] = "judge_evaluation_failed"
    if await equal(expected, predicted):
        if not check_twice_swap or await equal(predicted, expected):
            result.update(score=1.0, judge_passed=True, failure_reason="none")
        else:
            result["score"] = float(reward_if_swap_fails)
    return result
