"""Asking a judge: where and how, one generation, and reading its verdict.

Where and how (`JudgeEndpoint`), one generation through the pool's router (`ask_judge`, over
`/v1/chat/completions` or SGLang's `/generate` with token ids), and reading its verdict.

Shared by every judge built-in (`judge`, `rule_then_judge`, `step_judge`, `rubric`, the group judges)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.errors import JudgeCallError, JudgeConfigError, JudgeTruncatedError
from rewardfleet.reward_fns.judging.seed import routing_headers, sample_seed
from rewardfleet.reward_fns.judging.templates import JudgeTemplate
from rewardfleet.reward_fns.judging.verdicts import Verdict, VerdictParseError, parse_verdict
from rewardfleet.services.common.router_http import post_json


@dataclass(frozen=True)
class JudgeReply:
    text: str
    finish_reason: str
    usage: dict[str, int] = field(default_factory=dict)  # OpenAI-shaped token counts, when the server says


def _usage(prompt: Any, completion: Any) -> dict[str, int]:
    """`{"prompt_tokens", "completion_tokens", "total_tokens"}`, or {} if the counts are missing: the gateway
    charges a function's TPM budget with these real counts (`extra["usage"]`)."""
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return {}
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def total_usage(replies: Sequence[JudgeReply]) -> dict[str, int]:
    if not replies or any(not r.usage for r in replies):
        return {}
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {k: sum(r.usage[k] for r in replies) for k in keys}


@dataclass(frozen=True)
class JudgeEndpoint:
    """Where and how to ask a judge: the per-call settings shared by `judge` and `rule_then_judge`."""

    session: aiohttp.ClientSession | None
    address: str
    model: str = "default"
    use_generate: bool = False
    tokenizer: Any = None
    max_tokens: int = 1024
    temperature: float = 0.0
    timeout_s: float = 120.0
    regex: str | None = None  # constrain the output to this regex (SGLang's `regex` sampling parameter)
    # Seed each call from (seed_key, messages) (`judging/seed.py`); seed_key is the sample's uid, or "".
    sampling_seed: bool = True
    seed_key: str | None = None


async def ask_judge(endpoint: JudgeEndpoint, messages: list[dict[str, Any]]) -> JudgeReply:
    """One judge generation for `messages`, through the router."""
    if endpoint.use_generate:
        return await _ask_generate(endpoint, messages)
    payload = {
        "model": endpoint.model,
        "messages": messages,
        "max_tokens": endpoint.max_tokens,
        "temperature": endpoint.temperature,
    }
    if endpoint.regex is not None:
        payload["regex"] = endpoint.regex
    seed = sample_seed(endpoint.seed_key, messages)
    if endpoint.sampling_seed:
        payload["seed"] = seed
    body = await post_json(
        endpoint.session,
        endpoint.address,
        "/v1/chat/completions",
        payload,
        timeout_s=endpoint.timeout_s,
        error_cls=JudgeCallError,
        headers=routing_headers(seed),
    )
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
        finish = str(choice.get("finish_reason") or "")
    except (KeyError, IndexError, TypeError) as exc:
        raise bad_response(endpoint, "/v1/chat/completions", body, "no choices[0].message.content") from exc
    if not isinstance(content, str):
        # A reasoning parser on the server may have moved everything into `reasoning_content`.
        raise bad_response(endpoint, "/v1/chat/completions", body, "message.content is not text")
    reported = body.get("usage")
    usage: Mapping[str, Any] = reported if isinstance(reported, Mapping) else {}
    return JudgeReply(
        text=content,
        finish_reason=finish,
        usage=_usage(usage.get("prompt_tokens"), usage.get("completion_tokens")),
    )


async def _ask_generate(endpoint: JudgeEndpoint, messages: list[dict[str, Any]]) -> JudgeReply:
    tokenizer = require_tokenizer(endpoint.tokenizer, "use_generate=True")
    input_ids = await asyncio.to_thread(_chat_token_ids, tokenizer, messages)
    sampling: dict[str, Any] = {"max_new_tokens": endpoint.max_tokens, "temperature": endpoint.temperature}
    if endpoint.regex is not None:
        sampling["regex"] = endpoint.regex
    seed = sample_seed(endpoint.seed_key, messages)
    if endpoint.sampling_seed:
        sampling["sampling_seed"] = seed
    payload = {"input_ids": input_ids, "sampling_params": sampling}
    body = await post_json(
        endpoint.session,
        endpoint.address,
        "/generate",
        payload,
        timeout_s=endpoint.timeout_s,
        error_cls=JudgeCallError,
        headers=routing_headers(seed),
    )
    if not isinstance(body, Mapping):
        raise bad_response(endpoint, "/generate", body, "expected one JSON object")
    text = body.get("text")
    if not isinstance(text, str):
        output_ids = body.get("output_ids")
        if not isinstance(output_ids, list):
            raise bad_response(endpoint, "/generate", body, "neither text nor output_ids")
        # A server started with --skip-tokenizer-init answers with ids only.
        text = await asyncio.to_thread(tokenizer.decode, output_ids, skip_special_tokens=True)
    meta_info = body.get("meta_info")
    meta: Mapping[str, Any] = meta_info if isinstance(meta_info, Mapping) else {}
    finish = meta.get("finish_reason") or {}
    return JudgeReply(
        text=str(text),
        finish_reason=str(finish.get("type", "")) if isinstance(finish, dict) else "",
        usage=_usage(meta.get("prompt_tokens"), meta.get("completion_tokens")),
    )


def _chat_token_ids(tokenizer: Any, messages: list[dict[str, Any]]) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, Mapping):  # transformers 5 returns a BatchEncoding by default
        ids = ids["input_ids"]
    return [int(i) for i in ids]


def read_verdict(reply: JudgeReply, template: JudgeTemplate, scale_min: float, scale_max: float) -> Verdict:
    try:
        return parse_verdict(reply.text, template.verdict_kind, scale_min=scale_min, scale_max=scale_max)
    except VerdictParseError as exc:
        if reply.finish_reason == "length":
            raise JudgeTruncatedError(f"judge output cut at max_tokens: {exc}", reply.text) from exc
        raise


def bad_response(endpoint: JudgeEndpoint, path: str, body: Any, what: str) -> JudgeCallError:
    shown = str(body)[:500]
    url = f"{endpoint.address}{path}"
    return JudgeCallError(
        f"unusable answer from {url}: {what}: {shown}", url=url, kind="bad_response", body=shown
    )


def require_tokenizer(tokenizer: Any, why: str) -> Any:
    if tokenizer is None:
        raise JudgeConfigError(
            f"{why} needs the judge's tokenizer: configure the pool's model so the gateway "
            "injects reward_model_tokenizer"
        )
    return tokenizer
