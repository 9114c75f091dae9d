"""The running generation batch: rows that share one left-padded KV cache and advance one token per step.

Continuous batching happens here. Between two decode steps, rows that finished (or whose client left) are
cut out of the cache, and newly arrived prompts are prefilled on their own and spliced in, so a request never
waits for the longest one of a batch it happened to arrive with.

Why splicing keeps each row's output equal to its unbatched output: every row carries its own position ids
and attention mask. Llama-style models rotate keys by their absolute position *before* caching them, so a
row's cached keys do not depend on where its columns sit in the padded cache; padding columns are masked
out. Splicing therefore only pads rows on the left (new zero columns, masked) and drops rows (index-select on
the batch dimension), never moves a real key relative to its row's positions.

Everything here runs on the server's single forward thread.
"""

from __future__ import annotations

from typing import Any, Protocol

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import split_valid, tokenize_batch
from rewardfleet.services.model_server.runners.decoding import (
    GenerationInput,
    GenerationResult,
    Row,
    SamplingParams,
)


class DecodeRunner(Protocol):
    """What a `DecodeBatch` needs of the runner that owns the model (`GenerationRunner` in generation.py,
    which imports this module: the batch names the runner by this protocol, not by its class)."""

    model: Any
    tokenizer: Any
    context_length: int
    pad_id: int

    def new_row(self, prompt_len: int, params: SamplingParams) -> Row: ...

    def prefill(self, seqs: list[list[int]], *, use_cache: bool) -> tuple[Any, Any, Any]: ...

    def constrain(self, logits: Any, rows: list[Row]) -> None: ...

    def sample(self, logits: Any, rows: list[Row]) -> list[int]: ...

    def result(self, r: Row) -> GenerationResult: ...


def _layers(cache: Any) -> list[Any]:
    """The per-layer key/value holders of a transformers `DynamicCache` (5.x: `cache.layers`)."""
    layers = getattr(cache, "layers", None)
    if layers is None or any(not hasattr(layer, "keys") for layer in layers):
        raise RuntimeError(f"continuous batching needs a DynamicCache with per-layer keys; got {type(cache)}")
    return list(layers)


def _pad_left(tensor: Any, width: int, dim: int) -> Any:
    """`tensor` with `width` zero columns prepended along `dim`."""
    import torch

    if width == 0:
        return tensor
    shape = list(tensor.shape)
    shape[dim] = width
    return torch.cat([tensor.new_zeros(shape), tensor], dim=dim)


class DecodeBatch:
    """Rows in flight plus their shared state: KV cache, attention mask, next position ids and the logits of
    the next token (already computed, not yet sampled)."""

    def __init__(self, runner: DecodeRunner) -> None:
        self.runner = runner
        self.rows: list[Row] = []
        self._cache: Any = None
        self._mask: Any = None  # [rows, columns] int64: 1 where a column holds a real token of that row
        self._positions: Any = None  # [rows, 1] position id of each row's next token
        self._logits: Any = None  # [rows, vocab] logits of each row's next token

    def __len__(self) -> int:
        return len(self.rows)

    def result(self, row: Row) -> GenerationResult:
        return self.runner.result(row)

    # -- admission -----------------------------------------------------------------------------------------
    def admit(self, inputs: list[GenerationInput]) -> list[Row | InvalidRequest]:
        """Validate and prefill `inputs` as one padded batch and splice them into the running rows. Returns a
        row per input, or its `InvalidRequest` (that input alone is refused)."""
        import torch

        runner = self.runner
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
        with torch.inference_mode():
            result, mask, position_ids = runner.prefill(seqs, use_cache=True)
        self._splice(
            [r for r in (out[i] for i in idx) if not isinstance(r, InvalidRequest)],
            result.past_key_values,
            mask,
            position_ids[:, -1:] + 1,
            result.logits[:, -1, :],
        )
        return out

    def _splice(self, rows: list[Row], cache: Any, mask: Any, positions: Any, logits: Any) -> None:
        import torch

        if not self.rows:
            self.rows, self._cache, self._mask = rows, cache, mask
            self._positions, self._logits = positions, logits
            return
        old_width, new_width = self._mask.shape[1], mask.shape[1]
        width = max(old_width, new_width)
        for mine, theirs in zip(_layers(self._cache), _layers(cache), strict=True):
            # [rows, heads, columns, head_dim]: pad the shorter side on the left, then stack the rows.
            mine.keys = torch.cat(
                [_pad_left(mine.keys, width - old_width, 2), _pad_left(theirs.keys, width - new_width, 2)]
            )
            mine.values = torch.cat(
                [_pad_left(mine.values, width - old_width, 2), _pad_left(theirs.values, width - new_width, 2)]
            )
        self._mask = torch.cat(
            [_pad_left(self._mask, width - old_width, 1), _pad_left(mask, width - new_width, 1)]
        )
        self._positions = torch.cat([self._positions, positions])
        self._logits = torch.cat([self._logits, logits])
        self.rows = self.rows + rows

    # -- removal -------------------------------------------------------------------------------------------
    def remove(self, gone: list[Row]) -> None:
        """Cut rows out of the batch (finished, or their client left) and drop the cache columns no remaining
        row uses (left padding that only the removed rows needed)."""
        if not gone:
            return
        gone_ids = {id(r) for r in gone}
        keep = [i for i, r in enumerate(self.rows) if id(r) not in gone_ids]
        if not keep:
            self.rows, self._cache, self._mask, self._positions, self._logits = [], None, None, None, None
            return
        import torch

        index = torch.tensor(keep, dtype=torch.long)
        mask = self._mask.index_select(0, index)
        used = mask.any(dim=0).nonzero()
        first = int(used[0].item()) if used.numel() else 0
        for layer in _layers(self._cache):
            layer.keys = layer.keys.index_select(0, index)[:, :, first:, :]
            layer.values = layer.values.index_select(0, index)[:, :, first:, :]
        self._mask = mask[:, first:]
        self._positions = self._positions.index_select(0, index)
        self._logits = self._logits.index_select(0, index)
        self.rows = [self.rows[i] for i in keep]

    # -- one decode step -----------------------------------------------------------------------------------
    def step(self) -> list[Row]:
        """Pick every row's next token, take the finished rows out (returned), and run one forward for the
        others so their next logits are ready."""
        import torch

        if not self.rows:
            return []
        runner = self.runner
        with torch.inference_mode():
            runner.constrain(self._logits, self.rows)
            next_ids = runner.sample(self._logits, self.rows)
            for r, tok in zip(self.rows, next_ids, strict=True):
                if r.finish is None:
                    r.append(tok, runner.tokenizer)
            finished = [r for r in self.rows if r.finish is not None]
            alive = {id(r) for r in self.rows if r.finish is None}
            feed = [tok for r, tok in zip(self.rows, next_ids, strict=True) if id(r) in alive]
            self.remove(finished)
            if self.rows:
                ones = torch.ones((len(self.rows), 1), dtype=torch.long)
                self._mask = torch.cat([self._mask, ones], dim=1)
                out = runner.model(
                    input_ids=torch.tensor([[tok] for tok in feed], dtype=torch.long),
                    attention_mask=self._mask,
                    position_ids=self._positions,
                    past_key_values=self._cache,
                    use_cache=True,
                )
                self._cache, self._logits = out.past_key_values, out.logits[:, -1, :]
                self._positions = self._positions + 1
        return finished
