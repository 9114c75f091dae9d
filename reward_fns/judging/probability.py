"""Probability mode: the judge's P(Yes) for the next token, no generation.

No generation; the judge's P(Yes) / (P(Yes) + P(No)) for the next token, from SGLang's `POST /v1/score` on the
pool's model servers (the router does not proxy it), with failover between them."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from rewardfleet.reward_fns.judging.endpoint import JudgeEndpoint, bad_response, require_tokenizer
from rewardfleet.reward_fns.judging.errors import JudgeCallError, JudgeConfigError
from rewardfleet.services.common.router_http import post_json


async def judge_probability(
    endpoint: JudgeEndpoint,
    score_server_address: str | Sequence[str],
    messages: list[dict[str, Any]],
    label_tokens: Sequence[str],
) -> tuple[float, float, float]:
    """(score, p_yes, p_no) from a model server's `/v1/score` for the next token after the rendered chat."""
    tokenizer = require_tokenizer(endpoint.tokenizer, "probability=True")
    if len(label_tokens) != 2:
        raise JudgeConfigError(f"label_tokens must be [positive, negative], got {list(label_tokens)}")
    query, item, label_ids = await asyncio.to_thread(_score_inputs, tokenizer, messages, label_tokens)
    payload = {
        "model": endpoint.model,
        "query": query,
        "items": [item],
        "label_token_ids": label_ids,
        "apply_softmax": True,
    }
    body = await _post_score(endpoint, score_addresses(score_server_address), payload)
    try:
        p_yes, p_no = (float(p) for p in body["scores"][0])
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise bad_response(endpoint, "/v1/score", body, "expected scores: [[p_yes, p_no]]") from exc
    total = p_yes + p_no
    if not (0.0 <= p_yes <= 1.0 and 0.0 <= p_no <= 1.0) or total <= 0.0:
        raise bad_response(endpoint, "/v1/score", body, "label probabilities outside [0, 1] or both zero")
    return p_yes / total, p_yes, p_no


def score_addresses(value: str | Sequence[str]) -> list[str]:
    """`host:port`, `"a:1, b:2"` or `["a:1", "b:2"]` as a list of addresses."""
    items = value.split(",") if isinstance(value, str) else list(value)
    out = [str(a).strip() for a in items if str(a).strip()]
    if not out:
        raise JudgeConfigError("score_server_address names no model server")
    return out


async def _post_score(endpoint: JudgeEndpoint, addresses: list[str], payload: dict[str, Any]) -> Any:
    """The router does not proxy /v1/score, so this is the failover it would do: start at a random server
    (spreading the load) and move on after a connect error, a timeout or a 5xx; a 4xx is the request's fault
    and is raised at once. Every server failing raises the last error, naming how many were tried."""
    start = random.randrange(len(addresses))
    order = addresses[start:] + addresses[:start]
    last: JudgeCallError | None = None
    for address in order:
        try:
            return await post_json(
                endpoint.session, address, "/v1/score", payload, timeout_s=endpoint.timeout_s,
                error_cls=JudgeCallError,
            )  # fmt: skip
        except JudgeCallError as exc:
            if exc.kind == "http_status" and exc.status is not None and exc.status < 500:
                raise
            last = exc
    if last is None:
        raise JudgeConfigError("score_server_address names no model server")
    if len(order) > 1:
        raise JudgeCallError(
            f"/v1/score failed on all {len(order)} model servers; last: {last}",
            url=last.url, kind=last.kind, status=last.status, body=last.body,
        )  # fmt: skip
    raise last


def _score_inputs(
    tokenizer: Any, messages: list[dict[str, Any]], labels: Sequence[str]
) -> tuple[list[int], list[int], list[int]]:
    """Token ids of (query, item, labels). Query = the chat without the assistant header, item = the header:
    SGLang scores the next token after query + item, i.e. the first token of the judge's answer. The chat
    template writes any BOS itself, so the text is tokenised without adding special tokens."""
    label_ids = []
    for label in labels:
        ids = tokenizer.encode(label, add_special_tokens=False)
        if len(ids) != 1:
            raise JudgeConfigError(f"label {label!r} is {len(ids)} tokens for this tokenizer; it must be one")
        label_ids.append(int(ids[0]))
    full_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    head_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    full = [int(t) for t in tokenizer.encode(full_text, add_special_tokens=False)]
    head = [int(t) for t in tokenizer.encode(head_text, add_special_tokens=False)]
    if len(full) > len(head) and full[: len(head)] == head:
        return head, full[len(head) :], label_ids
    # No separate assistant header (or it merges with the chat's last token): split off the last token.
    return full[:-1], full[-1:], label_ids
