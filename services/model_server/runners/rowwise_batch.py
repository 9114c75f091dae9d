"""The running generation batch of a deterministic server: rows share forwards, tokens bitwise as alone.

It answers the continuous-batching loop (`continuous.py`) as a `DecodeBatch` does (`admit`, `remove`,
`step`, `result`), but its forwards are packed (runners/rowwise.py): the admitted prompts are prefilled in
one forward, every decode step feeds one token per running row in one forward, each row keeps its own
key/value cache, and attention runs per row over that cache. Nothing is padded to another row's length, so
rows join and leave between steps without touching the others' caches.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import split_valid, tokenize_batch
from rewardfleet.services.model_server.runners.decode_batch import DecodeRunner
from rewardfleet.services.model_server.runners.decoding import GenerationInput, GenerationResult, Row, seeded
from rewardfleet.services.model_server.runners.rowwise import Packed, RowCache, forward_packed


def num_layers(model: Any) -> int:
    config = getattr(model.config, "text_config", None) or model.config
    return int(config.num_hidden_layers)


def prefill_logits(runner: DecodeRunner, seqs: list[list[int]], caches: list[RowCache]) -> Any:
    """One packed forward over the prompts `seqs` (each into its empty cache): the logits of each prompt's
    next token, [len(seqs), vocab]."""
    packed = Packed(runner.pad_id)
    keep = [packed.add(cache, seq) for cache, seq in zip(caches, seqs, strict=True)]
    return forward_packed(runner.model, packed, keep)


class RowwiseDecodeBatch:
    """Rows in flight, each with its own cache and the logits of its next token (computed, not sampled)."""

    def __init__(self, runner: DecodeRunner) -> None:
        self.runner = runner
        self.rows: list[Row] = []
        self._layers = num_layers(runner.model)
        self._caches: dict[int, RowCache] = {}  # id(row) -> its keys and values
        self._logits: dict[int, Any] = {}  # id(row) -> [vocab] logits of its next token

    def __len__(self) -> int:
        return len(self.rows)

    def result(self, row: Row) -> GenerationResult:
        return self.runner.result(row)

    def admit(self, inputs: list[GenerationInput]) -> list[Row | InvalidRequest]:
        """Validate `inputs` and prefill the valid ones in one packed forward; a row per input, or its
        `InvalidRequest` (that input alone is refused). A sampled input without a seed gets seed 42."""
        import torch

        runner = self.runner
        inputs = [seeded(x) for x in inputs]
        tokenized = tokenize_batch(
            runner.tokenizer,
            [x.prompt for x in inputs],
            context_length=runner.context_length,
            reserve_tokens=[x.params.max_new_tokens for x in inputs],
        )
        out: list[Row | InvalidRequest] = []
        for i, t in enumerate(tokenized):
            if isinstance(t, InvalidRequest):
                out.append(t)
                continue
            try:
                out.append(runner.new_row(len(t), inputs[i].params))
            except InvalidRequest as exc:  # a grammar that does not compile: this input alone is refused
                out.append(exc)
                tokenized[i] = exc
        idx, seqs = split_valid(tokenized)
        if not seqs:
            return out
        rows = [r for r in (out[i] for i in idx) if isinstance(r, Row)]
        caches = [RowCache(self._layers) for _ in rows]
        with torch.inference_mode():
            logits = prefill_logits(runner, seqs, caches)
        for n, (row, cache) in enumerate(zip(rows, caches, strict=True)):
            self._caches[id(row)] = cache
            self._logits[id(row)] = logits[n]
        self.rows = self.rows + rows
        return out

    def remove(self, gone: list[Row]) -> None:
        """Cut rows out (finished, or their client left); their caches go with them."""
        gone_ids = {id(r) for r in gone}
        for key in gone_ids:
            self._caches.pop(key, None)
            self._logits.pop(key, None)
        self.rows = [r for r in self.rows if id(r) not in gone_ids]

    def step(self) -> list[Row]:
        """Pick every row's next token, take the finished rows out (returned), and run one packed forward
        for the others so their next logits are ready."""
        import torch

        if not self.rows:
            return []
        runner = self.runner
        with torch.inference_mode():
            logits = torch.stack([self._logits[id(r)] for r in self.rows])
            runner.constrain(logits, self.rows)
            next_ids = runner.sample(logits, self.rows)
            for r, tok in zip(self.rows, next_ids, strict=True):
                if r.finish is None:
                    r.append(tok, runner.tokenizer)
            finished = [r for r in self.rows if r.finish is not None]
            feed = [(r, tok) for r, tok in zip(self.rows, next_ids, strict=True) if r.finish is None]
            self.remove(finished)
            if feed:
                packed = Packed(runner.pad_id)
                keep = [packed.add(self._caches[id(r)], [tok]) for r, tok in feed]
                new = forward_packed(runner.model, packed, keep)
                for n, (r, _) in enumerate(feed):
                    self._logits[id(r)] = new[n]
        return finished


def rowwise_generate(runner: DecodeRunner, inputs: list[GenerationInput]) -> list[Any]:
    """Generate for a whole batch (warm-up, offline use): admit every input, step until done."""
    batch = RowwiseDecodeBatch(runner)
    admitted = batch.admit(inputs)
    while len(batch):
        batch.step()
    return [r if isinstance(r, InvalidRequest) else runner.result(r) for r in admitted]
