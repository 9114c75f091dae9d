"""Causal LMs (GenRM judges): batched generation and next-token probabilities.

Generation is batched with left padding: every prompt ends at the same column, so one decode step serves
the whole batch. Position ids come from the attention mask, so a padded prompt sees exactly the positions it
would see alone. Each request keeps its own sampling parameters, `max_new_tokens` and stop conditions; the
batch ends when its last request ends (no continuous batching: that is what SGLang on a GPU is for).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, Runner
from rewardfleet.services.model_server.runners.common import TextInput, pad_batch, split_valid, tokenize_batch
from rewardfleet.services.model_server.runners.constraints import Constraint, Grammars, MaskBuffer, apply_mask


@dataclass(frozen=True, slots=True)
class SamplingParams:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    seed: int | None = None
    constraint: Constraint | None = None  # regex / json_schema / ebnf the output must match

    @property
    def greedy(self) -> bool:
        return self.temperature < 1e-5 or self.top_k == 1


@dataclass(frozen=True, slots=True)
class GenerationInput:
    prompt: TextInput
    params: SamplingParams = field(default_factory=SamplingParams)


@dataclass(frozen=True, slots=True)
class GenerationResult:
    text: str
    output_ids: list[int]
    finish_reason: dict[
        str, Any
    ]  # SGLang's shape: {"type": "stop", "matched": id|str} | {"type": "length", ...}
    prompt_tokens: int

    @property
    def completion_tokens(self) -> int:
        return len(self.output_ids)

    @property
    def matched_stop(self) -> int | str | None:
        return self.finish_reason.get("matched") if self.finish_reason.get("type") == "stop" else None


@dataclass(frozen=True, slots=True)
class NextTokenInput:
    """`/v1/score`: probabilities of `label_token_ids` as the token after `prompt`."""

    prompt: TextInput
    label_token_ids: tuple[int, ...]
    apply_softmax: bool = False


@dataclass(frozen=True, slots=True)
class NextTokenResult:
    probs: list[float]
    prompt_tokens: int


class _Row:
    """Decoding state of one request in the batch."""

    def __init__(
        self, prompt_len: int, params: SamplingParams, eos_ids: set[int], generator: Any, matcher: Any = None
    ) -> None:
        self.prompt_len = prompt_len
        self.params = params
        self.stop_ids = set(params.stop_token_ids) | (set() if params.ignore_eos else eos_ids)
        self.generator = generator
        self.matcher = matcher  # llguidance matcher of a constrained request
        self.output: list[int] = []
        self.finish: dict[str, Any] | None = None
        self.trim_text: str | None = None  # the text with the stop string cut off


class GenerationRunner(Runner):
    kind = "generation"
    is_generation = True

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

    def operations(self) -> dict[str, BatchFn]:
        return {"generate": self.generate, "next_token": self.next_token}

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
            logits = self._prefill(seqs)[0].float()
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
        import torch

        tokenized = tokenize_batch(
            self.tokenizer,
            [x.prompt for x in inputs],
            context_length=self.context_length,
            reserve_tokens=[x.params.max_new_tokens for x in inputs],
        )
        matchers: dict[int, Any] = {}
        for i, t in enumerate(tokenized):
            c = inputs[i].params.constraint
            if c is not None and not isinstance(t, InvalidRequest):
                try:
                    matchers[i] = self.grammars.matcher(c)
                except InvalidRequest as exc:
                    tokenized[i] = exc
        idx, seqs = split_valid(tokenized)
        out: list[GenerationResult | InvalidRequest] = [
            t if isinstance(t, InvalidRequest) else GenerationResult("", [], {}, 0) for t in tokenized
        ]
        if not seqs:
            return out
        rows = []
        for i, seq in zip(idx, seqs, strict=True):
            p = inputs[i].params
            gen = None
            if not p.greedy and p.seed is not None:
                gen = torch.Generator().manual_seed(p.seed)
            rows.append(_Row(len(seq), p, self.eos_ids, gen, matchers.get(i)))
        with torch.inference_mode():
            self._decode(seqs, rows)
        for i, seq, row in zip(idx, seqs, rows, strict=True):
            out[i] = self._result(row, len(seq))
        return out

    def _prefill(self, seqs: list[list[int]]) -> tuple[Any, Any, Any, Any]:
        """Run the padded prompts; return (last-position logits, cache, attention mask, next position ids)."""
        input_ids, attention_mask = pad_batch(seqs, self.pad_id, left=True)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.logits[:, -1, :], out.past_key_values, attention_mask, position_ids[:, -1:] + 1

    def _decode(self, seqs: list[list[int]], rows: list[_Row]) -> None:
        import torch

        logits, cache, attention_mask, positions = self._prefill(seqs)
        budget = max(r.params.max_new_tokens for r in rows)
        for _step in range(budget):
            self._constrain(logits, rows)
            next_ids = self._sample(logits, rows)
            for r, tok in zip(rows, next_ids, strict=True):
                if r.finish is None:
                    r.output.append(tok)
                    if r.matcher is not None and tok not in r.stop_ids:
                        r.matcher.consume_token(tok)
                    self._check_finish(r, tok)
            if all(r.finish is not None for r in rows):
                break
            alive = torch.tensor([[0 if r.finish is not None else 1] for r in rows], dtype=torch.long)
            attention_mask = torch.cat([attention_mask, alive], dim=1)
            feed = torch.tensor([[tok] for tok in next_ids], dtype=torch.long)
            out = self.model(
                input_ids=feed,
                attention_mask=attention_mask,
                position_ids=positions,
                past_key_values=cache,
                use_cache=True,
            )
            logits, cache, positions = out.logits[:, -1, :], out.past_key_values, positions + 1

    def _constrain(self, logits: Any, rows: list[_Row]) -> None:
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

    def _sample(self, logits: Any, rows: list[_Row]) -> list[int]:
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

    def _check_finish(self, r: _Row, tok: int) -> None:
        if tok in r.stop_ids:
            r.finish = {"type": "stop", "matched": tok}
            return
        if r.params.stop:
            text = self.tokenizer.decode(r.output, skip_special_tokens=r.params.skip_special_tokens)
            # Checked after every token, so a match is always one the newest token completed.
            for stop in r.params.stop:
                pos = text.find(stop)
                if pos != -1:
                    r.finish = {"type": "stop", "matched": stop}
                    r.trim_text = text if r.params.no_stop_trim else text[:pos]
                    return
        if len(r.output) >= r.params.max_new_tokens:
            r.finish = {"type": "length", "length": len(r.output)}

    def _result(self, r: _Row, prompt_len: int) -> GenerationResult:
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
        return GenerationResult(text, list(r.output), finish, prompt_len)
