"""DisRM: a discriminative reward model behind the `reward_model` pool's sglang-router scores the response.

The input is built as verl's reward loop builds it, so scores match what verl would get from the same model:
the sample's prompt messages + `{"role": "assistant", "content": response}`, rendered with the reward model's
own tokenizer (`reward_model_tokenizer.apply_chat_template(chat, add_generation_prompt=False,
tokenize=False)`), with a leading BOS string stripped (the server's tokenizer adds it again). The text goes to
`POST /v1/embeddings {"model", "input"}` — what SGLang serves for `--is-embedding` reward models and what the
router proxies — and the score is `data[-1].embedding[-1]`, the model's raw last-token logit.

The reward_kwargs stay flat keywords, declared from two groups (`judging/keywords.py`): the server's
`RewardModelContext` and `RewardModelSettings`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.templates import chat_messages_from
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()


class RewardModelCallError(RemoteCallError):
    """The reward model's router or server did not answer with a usable 2xx (see `RemoteCallError.kind`)."""


class RewardModelInputError(ValueError):
    """The sample or configuration does not allow building the reward model's input."""


@dataclass(frozen=True)
class RewardModelContext:
    """What the server passes with each call: the routers, the shared HTTP session, the reward model's
    tokenizer and the sample's prompt."""

    reward_router_address: str | None = None
    router_addresses: Mapping[str, str] | None = None
    http_client: aiohttp.ClientSession | None = None
    reward_model_tokenizer: Any = None
    prompt: Any = None


@dataclass(frozen=True)
class RewardModelSettings:
    """The reward_kwargs: the pool and model asked, the policy's eos string to remove, the call's timeout."""

    pool: str = "reward_model"
    model: str | None = None
    policy_eos_token: str | None = None
    timeout_s: float = 60.0


# The flat keywords of compute_score: what the server passes, then the reward's settings.
KEYWORDS = Keywords(RewardModelContext, RewardModelSettings)


def build_disrm_input(
    solution_str: str,
    messages: list[dict[str, Any]],
    tokenizer: Any,
    policy_eos_token: str | None = None,
) -> str:
    """The text verl sends to a DisRM for this sample (see the module docstring).

    `policy_eos_token` is the policy's eos string, removed from the response as verl removes it after decoding
    (the gateway receives text, so it is only there if the trainer kept it).
    """
    response = solution_str.replace(policy_eos_token, "") if policy_eos_token else solution_str
    chat = [*messages, {"role": "assistant", "content": response}]
    text = tokenizer.apply_chat_template(chat, add_generation_prompt=False, tokenize=False)
    if not isinstance(text, str):
        raise RewardModelInputError(f"apply_chat_template(tokenize=False) returned {type(text).__name__}")
    bos = getattr(tokenizer, "bos_token", None)
    if bos and text.startswith(bos):
        text = text[len(bos) :]
    return text


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """`{"score": the reward model's raw score of (prompt, response), "prompt_source": where the prompt came
    from}`. `ground_truth` is not used. `prompt_source` is "prompt", "extra_info.raw_prompt", ... (see
    `chat_messages_from`): "extra_info.question"/"extra_info.problem" means the model saw the bare question,
    not the full prompt verl's own DisRM renders.

    `model` is sent as the request's `model` field (the router ignores it outside IGW mode; SGLang accepts
    its served name); it defaults to the tokenizer's `name_or_path`. The keywords are those of
    `RewardModelContext` and `RewardModelSettings` (`inspect.signature` lists them).
    """
    context, settings = KEYWORDS.read(reward_kwargs)
    return await score_response(solution_str, extra_info, context, settings)


async def score_response(
    solution_str: str,
    extra_info: dict[str, Any] | None,
    context: RewardModelContext,
    settings: RewardModelSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read."""
    reward_model_tokenizer = context.reward_model_tokenizer
    if reward_model_tokenizer is None:
        raise RewardModelInputError(
            "reward_model needs reward_model_tokenizer: configure the reward model so the gateway injects it"
        )
    messages, prompt_source = chat_messages_from(context.prompt, extra_info)
    if messages is None:
        raise RewardModelInputError(
            "no prompt for this sample: send `prompt` (text or chat messages) or extra_info['raw_prompt']"
        )
    try:
        address = resolve_address(settings.pool, context.router_addresses, context.reward_router_address)
    except ValueError as exc:
        raise RewardModelInputError(str(exc)) from exc
    text = await asyncio.to_thread(
        build_disrm_input, solution_str, messages, reward_model_tokenizer, settings.policy_eos_token
    )
    name = settings.model or str(getattr(reward_model_tokenizer, "name_or_path", "") or "default")
    body = await post_json(
        context.http_client,
        address,
        "/v1/embeddings",
        {"model": name, "input": text},
        timeout_s=settings.timeout_s,
        error_cls=RewardModelCallError,
    )
    try:
        score = float(body["data"][-1]["embedding"][-1])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        url = f"{address}/v1/embeddings"
        raise RewardModelCallError(
            f"unusable answer from {url}: expected data[-1].embedding[-1]: {str(body)[:300]}",
            url=url,
            kind="bad_response",
        ) from exc
    if not math.isfinite(score):
        url = f"{address}/v1/embeddings"
        raise RewardModelCallError(f"non-finite reward {score} from {url}", url=url, kind="bad_response")
    return {"score": score, "prompt_source": prompt_source}
