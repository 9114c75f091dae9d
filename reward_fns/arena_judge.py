"""Open-ended answers judged pairwise against a baseline, as NeMo Gym's `arena_judge` server does.

Open-ended answers judged pairwise against a baseline answer (Arena-Hard v2), as NeMo Gym's `arena_judge`
server grades them: 1.0 when the judge prefers the answer (`A>>B` or `A>B` with the answer as A).

The judge is asked twice, concurrently: with the answer as A and the baseline (`extra_info
["baseline_answer"]`) as B, and swapped. The prompt of the task's `category` (`judge_prompts`: category ->
`{"system", "user"}` texts with `{question}`, `{answer_1}`, `{answer_2}`; an unknown category uses
`default_category`'s) fills each. A reply's verdict is its `[[...]]` label when every such label in it is the
same one of A>>B, A>B, A=B, B>A, B>>A, else none (`invalid_*`). An answer that itself holds such a label gets
no verdict read from either reply (the judge may quote it). `sanitize_generations` replaces lone surrogates
in both answers.

Returns `{"score", "judgement_gen_base", "judgement_base_gen", "verdict_gen_base", "verdict_base_gen",
"category", "invalid_gen_base", "invalid_base_gen"}` (NeMo Gym's shape). A judge that cannot be reached is a
`JudgeCallError`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.endpoint import ask_judge
from rewardfleet.reward_fns.judging.errors import JudgeConfigError
from rewardfleet.reward_fns.judging.nemo_gym import endpoint

__all__ = ["compute_score", "read_verdict"]

VERDICTS = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
_LABEL = re.compile(r"\[\[([AB<>=]+)\]\]")


def read_verdict(text: str) -> str | None:
    """The one `[[...]]` label of the reply when all agree and it is a valid verdict, else None."""
    found = {m for m in _LABEL.findall(text) if m}
    return next(iter(found)) if len(found) == 1 and next(iter(found)) in VERDICTS else None


def _clean(text: str) -> str:
    """Lone surrogates replaced, as NeMo Gym's sanitize_generation does (its NUL removal runs on the
    JSON-escaped text, where no NUL is left to remove, so NULs stay: so here)."""
    return text.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")


async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    *,
    reward_router_address: str | None = None,
    router_addresses: Mapping[str, str] | None = None,
    http_client: aiohttp.ClientSession | None = None,
    judge_prompts: Mapping[str, Mapping[str, str]] | None = None,
    default_category: str = "hard_prompt",
    sanitize_generations: bool = False,
    pool: str = "judge",
    model: str = "default",
    max_tokens: int = 4096,
    temperature: float = 0.0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    prompts = dict(judge_prompts or {})
    if default_category not in prompts or not all(
        isinstance(p, Mapping) and p.get("user") for p in prompts.values()
    ):
        raise JudgeConfigError(
            "reward_kwargs.judge_prompts: {category: {system, user}}, default_category among them"
        )
    info = extra_info or {}
    answer, baseline = solution_str, str(info.get("baseline_answer") or "")
    if sanitize_generations:
        answer, baseline = _clean(answer), _clean(baseline)
    category = str(info.get("category") or default_category)
    category = category if category in prompts else default_category
    prompt = prompts[category]
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
    forged = _LABEL.search(answer) is not None

    async def once(first: str, second: str) -> tuple[str, str | None]:
        fill = {"question": str(info.get("question") or ""), "answer_1": first, "answer_2": second}
        chat = (
            [{"role": "system", "content": prompt["system"].format_map(fill)}] if prompt.get("system") else []
        )
        chat.append({"role": "user", "content": prompt["user"].format_map(fill)})
        text = (await ask_judge(judge, chat)).text
        return text, None if forged else read_verdict(text)

    (gen_base, verdict_gb), (base_gen, verdict_bg) = await asyncio.gather(
        once(answer, baseline), once(baseline, answer)
    )
    return {
        "score": 1.0 if verdict_gb in ("A>>B", "A>B") else 0.0,
        "judgement_gen_base": gen_base,
        "judgement_base_gen": base_gen,
        "verdict_gen_base": verdict_gb,
        "verdict_base_gen": verdict_bg,
        "category": category,
        "invalid_gen_base": verdict_gb is None,
        "invalid_base_gen": verdict_bg is None,
    }
