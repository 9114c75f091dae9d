"""`/generate` with `max_new_tokens: 0`: a prefill only, answered as SGLang answers it.

`/generate` with `max_new_tokens: 0`: a prefill only, answered as SGLang answers it (empty text, finish
`length` 0), with `meta_info.input_token_logprobs` when `return_logprob` is set (runners/prompt_logprobs.py).
"""

from __future__ import annotations

import time
from typing import Any

from fastapi import Request

from rewardfleet.services.model_server.responses import request_ids
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.prompt_logprobs import PromptLogprobInput, PromptLogprobResult
from rewardfleet.services.model_server.schemas import GenerateRequest


async def prompt_only(
    server: Any, body: GenerateRequest, inputs: list[TextInput], request: Request, started: float
) -> list[dict[str, Any]]:
    start = body.logprob_start_len if body.return_logprob else -1
    items = [PromptLogprobInput(x, start, body.return_text_in_logprobs) for x in inputs]
    results: list[PromptLogprobResult] = await server.run_many("prompt_logprobs", items, request)
    out = []
    for rid, r in zip(request_ids(body.rid, len(results)), results, strict=True):
        meta: dict[str, Any] = {
            "id": rid,
            "finish_reason": {"type": "length", "length": 0},
            "prompt_tokens": r.prompt_tokens,
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": 0,
            "cached_tokens": 0,
            "e2e_latency": time.perf_counter() - started,
        }
        if body.return_logprob:
            meta["input_token_logprobs"] = [list(e) for e in r.entries]
            meta["output_token_logprobs"] = []
            meta["output_token_logprobs_length"] = 0
        out.append({"text": "", "output_ids": [], "meta_info": meta})
    return out
