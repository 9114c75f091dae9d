"""Causal LMs (GenRM judges): batched generation and next-token probabilities.

Generation is batched with left padding: every prompt ends at the same column, so one decode step serves
the whole batch. Position ids come from the attention mask, so a padded prompt sees exactly the positions it
would see alone. Each request keeps its own sampling parameters, `max_new_tokens`, stop conditions and
grammar. The batch itself is a `DecodeBatch` (decode_batch.py): finished rows leave it after every step and
new requests join it between steps (continuous batching, driven by `services/model_server/continuous.py`).
A deterministic server decodes in a `RowwiseDecodeBatch` instead (rowwise_batch.py: packed forwards, each
row's attention over its own cache) when the model's attention allows it (`supports_rowwise`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, Runner
from rewardfleet.services.model_server.runners.common import pad_batch, split_valid, tokenize_batch
from rewardfleet.services.model_server.runners.constraints import Constraint, Grammars, MaskBuffer, apply_mask
from rewardfleet.services.model_server.runners.decode_batch import DecodeBatch
from rewardfleet.services.model_server.runners.decoding import (
    GenerationInput,
    GenerationResult,
    NextTokenInput,
    NextTokenResult,
    Row,
    SamplingParams,
)
from rewardfleet.services.model_server.runners.prompt_logprobs import prompt_logprobs
from rewardfleet.services.model_server.runners.rowwise import RowCache, register, supports_rowwise
from rewardfleet.services.model_server.runners.rowwise_batch import (
    RowwiseDecodeBatch,
    num_layers,
    prefill_logits,
    rowwise_generate,
)


class GenerationRunner(Runner):
    kind = "generation"
    is_generation = True
    supports_fixed_shapes = False  # deterministic mode packs rows instead (deterministic_operations)

    def __init__(self, model: Any, tokenizer: Any, **kw: Any) -> None:
        super().__init__(model, tokenizer, **kw)
        eos: set[int] = set()
        for source in (getattr(model, "generation_config", None), self.config):
            value = getattr(source, "eos_token_id", None) if source is not None else None
            if isinstance(value, int):
                eos.add(value)
            elif isinstance(value, list | tuple):
                eos.update(int(v) for v in value)
        if tokenizer.eos_token_id is not None:
            eos.add(int(tokenizer.eos_token_id))
        self.eos_ids = eos
        # The logits row is as wide as the embedding matrix, which may be padded past the tokenizer.
        self.logits_width = max(len(tokenizer), int(getattr(self.config, "vocab_size", 0) or 0))
        self.grammars = Grammars(tokenizer, self.logits_width)
        self._mask = MaskBuffer(self.logits_width)
        # Batch-invariant generation with shared forwards (deterministic mode), if the attention allows it.
        self.rowwise = supports_rowwise(model)
        if self.rowwise:
            register()

    def operations(self) -> dict[str, BatchFn]:
        return {
            "generate": self.generate,
            "next_token": self.next_token,
            "prompt_logprobs": lambda inputs: prompt_logprobs(self, inputs),
        }

    def continuous_operations(self) -> dict[str, Callable[[], DecodeBatch]]:
        """Operations served by continuous batching: a factory of the running batch they step through."""
        return {"generate": self.decode_batch}

    def decode_batch(self) -> DecodeBatch:
        return DecodeBatch(self)

    def deterministic_operations(self) -> dict[str, BatchFn]:
        """Generation and next-token probabilities through packed forwards, bitwise the same alone and in any
        batch (rowwise_batch.py); nothing when the model's attention does not allow it (each input alone)."""
        if not self.rowwise:
            return {}
        return {
            "generate": lambda inputs: rowwise_generate(self, inputs),
            "next_token": self.rowwise_next_token,
        }

    def deterministic_continuous_operations(self) -> dict[str, Callable[[], RowwiseDecodeBatch]]:
        return {"generate": self.rowwise_batch} if self.rowwise else {}

    def rowwise_batch(self) -> RowwiseDecodeBatch:
        return RowwiseDecodeBatch(self)

    def warmup_inputs(self) -> dict[str, list[Any]]:
        params = SamplingParams(max_new_tokens=4, temperature=0.0)
        # A constrained row too: it builds the grammar library's view of the tokenizer (~1 s) before ready.
        constrained = SamplingParams(
            max_new_tokens=4, temperature=0.0, constraint=Constraint("regex", "(Yes|No)", "regex")
        )
        return {
            "generate": [GenerationInput(WARMUP_TEXT, params), GenerationInput(WARMUP_TEXT, constrained)],
            "next_token": [NextTokenInput(WARMUP_TEXT, (0, 1))],
        }

    # -- /v1/score ---------------------------------------------------------------------------------------
    def next_token(self, inputs: list[NextTokenInput]) -> list[NextTokenResult | InvalidRequest]:
        """Probabilities of each input's label tokens after its prompt, from one left-padded forward."""
        return self._next_token(inputs, lambda seqs: self.prefill(seqs, use_cache=False)[0].logits[:, -1, :])

    def rowwise_next_token(self, inputs: list[NextTokenInput]) -> list[NextTokenResult | InvalidRequest]:
        """`next_token` from one packed forward: each row's probabilities bitwise those it gets alone."""
        layers = num_layers(self.model)
        return self._next_token(
            inputs, lambda seqs: prefill_logits(self, seqs, [RowCache(layers) for _ in seqs])
        )

    def _next_token(
        self, inputs: list[NextTokenInput], last_logits: Callable[[list[list[int]]], Any]
    ) -> list[NextTokenResult | InvalidRequest]:
        import torch

        vocab = len(self.tokenizer)
        tokenized = tokenize_batch(
            self.tokenizer, [x.prompt for x in inputs], context_length=self.context_length
        )
        for i, x in enumerate(inputs):
            bad = [t for t in x.label_token_ids if t < 0 or t >= vocab]
            if bad and not isinstance(tokenized[i], InvalidRequest):
                tokenized[i] = InvalidRequest(
                    f"label_token_ids {bad[:5]} are outside the vocabulary [0, {vocab})"
                )
        idx, seqs = split_valid(tokenized)
        out: list[NextTokenResult | InvalidRequest] = [
            t if isinstance(t, InvalidRequest) else NextTokenResult([], 0) for t in tokenized
        ]
        if not seqs:
            return out
        with torch.inference_mode():
            logits = last_logits(seqs).float()
            logprobs = torch.log_softmax(logits, dim=-1)
        for row, (i, seq) in enumerate(zip(idx, seqs, strict=True)):
            labels = torch.tensor(inputs[i].label_token_ids, dtype=torch.long)
            if inputs[i].apply_softmax:
                probs = torch.softmax(logits[row, labels], dim=-1)
            else:
                probs = logprobs[row, labels].exp()
            out[i] = NextTokenResult(probs.tolist(), len(seq))
        return out

    # -- /generate ---------------------------------------------------------------------------------------
    def generate(self, inputs: list[GenerationInput]) -> list[GenerationResult | InvalidRequest]:
        """Generate for a whole batch at once (warm-up, offline use): admit every input, step until done."""
        batch = DecodeBatch(self)
        admitted = batch.admit(inputs)
        while len(batch):
            batch.step()
        return [r if isinstance(r, InvalidRequest) else self.result(r) for r in admitted]

    def new_row(self, prompt_len: int, params: SamplingParams) -> Row:
        """A request's decoding state; a grammar that does not compile raises `InvalidRequest`."""
        import torch

        matcher = self.grammars.matcher(params.constraint) if params.constraint is not None else None
        gen = (
            torch.Generator().manual_seed(params.seed)
            if not params.greedy and params.seed is not None
            else None
        )
        return Row(prompt_len, params, self.eos_ids, gen, matcher)

    def prefill(self, seqs: list[list[int]], *, use_cache: bool) -> tuple[Any, Any, Any]:
        """Run the left-padded prompts: (model output with last-position logits, attention mask, position
        ids). `/v1/score` reads the logits; a `DecodeBatch` also keeps the cache."""
        input_ids, attention_mask = pad_batch(seqs, self.pad_id, left=True)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=use_cache,
            logits_to_keep=1,
        )
        return out, attention_mask, position_ids

    def constrain(self, logits: Any, rows: list[Row]) -> None:
        """Mask what each constrained row's grammar forbids as the next token."""
        for b, r in enumerate(rows):
            if r.matcher is None or r.finish is not None:
                continue
            allowed = self._mask.allowed(r.matcher)
            if not allowed.any():
                # The grammar allows nothing more (complete, with eos ignored): the output is finished.
                r.finish = {"type": "stop", "matched": None}
                continue
            apply_mask(logits[b], allowed)

    def sample(self, logits: Any, rows: list[Row]) -> list[int]:
        import torch

        chosen = logits.argmax(dim=-1).tolist()
        for b, r in enumerate(rows):
            if r.finish is not None or r.params.greedy:
                continue
            p = r.params
            scores = logits[b].float() / p.temperature
            if p.top_k > 0:
                kth = torch.topk(scores, min(p.top_k, scores.numel())).values[-1]
                scores = scores.masked_fill(scores < kth, float("-inf"))
            probs = torch.softmax(scores, dim=-1)
            if p.top_p < 1.0:
                sorted_probs, order = probs.sort(descending=True)
                drop = sorted_probs.cumsum(-1) - sorted_probs > p.top_p
                sorted_probs = sorted_probs.masked_fill(drop, 0.0)
                probs = torch.zeros_like(probs).scatter(0, order, sorted_probs)
            if p.min_p > 0.0:
                probs = probs.masked_fill(probs < p.min_p * probs.max(), 0.0)
            chosen[b] = int(torch.multinomial(probs / probs.sum(), 1, generator=r.generator).item())
        return chosen

    def result(self, r: Row) -> GenerationResult:
        finish = r.finish or {"type": "length", "length": len(r.output)}
        if r.trim_text is not None:
            text = r.trim_text
        else:
            ids = r.output
            if (
                finish.get("type") == "stop"
                and isinstance(finish.get("matched"), int)
                and not r.params.no_stop_trim
            ):
                ids = ids[:-1]  # the matched stop/eos token is not part of the text
            text = self.tokenizer.decode(ids, skip_special_tokens=r.params.skip_special_tokens)
        return GenerationResult(text, list(r.output), finish, r.prompt_len)
