"""Prompt token logprobs of a causal LM: `/generate` with `return_logprob` and `max_new_tokens: 0`.

SGLang 0.5.23 answers `meta_info.input_token_logprobs` as one `[logprob, token_id, text|None]` per prompt
token from `logprob_start_len` on (`-1`: none), where the first entry's logprob is always None
(`scheduler_components/logprob_result_processor.py`: "add None at start, remove last") and entry j > 0 is
log P(token[start + j] | tokens before it). A start past the prompt is an error. This computes the same from
one forward pass over the batch (left-padded, so the last columns of every row line up and only
`len - start` positions need logits).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import TextInput, pad_batch, split_valid, tokenize_batch


@dataclass(frozen=True, slots=True)
class PromptLogprobInput:
    prompt: TextInput
    logprob_start_len: int = -1
    return_text: bool = False


@dataclass(frozen=True, slots=True)
class PromptLogprobResult:
    entries: list[tuple[float | None, int, str | None]]
    prompt_tokens: int


def prompt_logprobs(
    runner: Any, inputs: list[PromptLogprobInput]
) -> list[PromptLogprobResult | InvalidRequest]:
    """The `input_token_logprobs` of each input (see the module docstring), batched."""
    import torch

    tokenized = tokenize_batch(
        runner.tokenizer, [x.prompt for x in inputs], context_length=runner.context_length
    )
    starts: list[int] = []
    for i, (x, t) in enumerate(zip(inputs, tokenized, strict=True)):
        n = len(t) if isinstance(t, list) else 0
        start = n if x.logprob_start_len == -1 else x.logprob_start_len
        if isinstance(t, list) and not 0 <= start <= n:
            tokenized[i] = InvalidRequest(
                f"logprob_start_len={x.logprob_start_len} is higher than the number of input tokens {n}",
                param="logprob_start_len",
            )
        starts.append(start)
    idx, seqs = split_valid(tokenized)
    out: list[PromptLogprobResult | InvalidRequest] = [
        t if isinstance(t, InvalidRequest) else PromptLogprobResult([], 0) for t in tokenized
    ]
    if not seqs:
        return out
    keep = max(max(len(s) - starts[i] for i, s in zip(idx, seqs, strict=True)), 1)
    input_ids, attention_mask = pad_batch(seqs, runner.pad_id, left=True)
    position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        logits = runner.model(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
            use_cache=False, logits_to_keep=keep + 1,
        ).logits.float()  # fmt: skip
        logprobs = torch.log_softmax(logits, dim=-1)
    width = input_ids.shape[1]
    for row, (i, seq) in enumerate(zip(idx, seqs, strict=True)):
        n, start = len(seq), starts[i]
        entries: list[tuple[float | None, int, str | None]] = []
        for pos in range(start, n):
            value: float | None = None
            if pos > start:
                # Logits column for the prediction of token `pos` is the one at token `pos - 1`, counted from
                # the right end of the kept columns (rows are left-padded to `width`).
                column = logprobs.shape[1] - (width - (width - n + pos - 1))
                value = float(logprobs[row, column, seq[pos]])
            text = runner.tokenizer.decode([seq[pos]]) if inputs[i].return_text else None
            entries.append((value, int(seq[pos]), text))
        out[i] = PromptLogprobResult(entries, n)
    return out
