"""LAB-Bench 2 figure, table and protocol questions, as NeMo Gym's `labbench2_vlm` server grades them: a
judge compares the answer with the ideal one and the first of `[[A=B]]` / `[[A!=B]]` in its text decides.

The judge gets `judge_prompt_template` filled with `{question}` (the last user message's text of the sample's
`messages`), `{expected_answer}` (`extra_info["verifier_metadata"]["ideal"]`) and `{generated_answer}` (the
last assistant message), as one user message; for a protocol task (`tag` starting `protocolqa2`) the
`judge_prompt_template_protocol`, which also gets `{reference_passage}`. The judge sees text only.

Returns `{"score", "judge_evaluations"}` (NeMo Gym's shape). A judge that cannot be reached is a
`JudgeCallError`, never a score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint, evaluation, last_message

__all__ = ["compute_score"]


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    messages: list[dict[str, Any]] | None = None,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompt_template: str = "",
    judge_prompt_template_protocol: str = "",
    judge_equal_label: str = "[[A=B]]",
    judge_not_equal_label: str = "[[A!=B]]",
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    if not judge_prompt_template or not judge_prompt_template_protocol:
        raise JudgeConfigError(
            "reward_kwargs.judge_prompt_template and judge_prompt_template_protocol (the texts) are required"
        )
    if messages is None:
        raise JudgeConfigError(
            "labbench2_vlm needs the sample's messages (NeMo Gym mapping: response: messages)"
        )
    meta = (extra_info or {}).get("verifier_metadata") or {}
    meta = meta if isinstance(meta, Mapping) else {}
    values = {
        "question": (last_message(messages, "user") or "").strip(),
        "expected_answer": str(meta.get("ideal", "")),
        "generated_answer": (last_message(messages, "assistant") or "").strip(),
    }
    if str(meta.get("tag", "")).startswith("protocolqa2"):
        user = judge_prompt_template_protocol.strip().format(
            **values, reference_passage=str(meta.get("reference_passage", ""))
        )
    else:
        user = judge_prompt_template.strip().format(**values)
    chat = [{"role": "user", "content": user}]
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
    reply = await ask_judge(judge, chat)
    eq, neq = reply.text.find(judge_equal_label), reply.text.find(judge_not_equal_label)
    equal = eq >= 0 and (neq < 0 or eq < neq)
    label = judge_equal_label if equal else (judge_not_equal_label if neq >= 0 else None)
    return {"score": 1.0 if equal else 0.0, "judge_evaluations": [evaluation(chat, reply.text, label)]}
