"""What every runner shares: the loaded model and tokenizer, the context length, result types, warm-up."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import (
    ROW_MULTIPLE,
    Encoded,
    TextInput,
    bucket_groups,
    encode_batch,
    length_groups,
    pad_batch,
)

logger = logging.getLogger(__name__)

BatchFn = Callable[[list[Any]], Sequence[Any]]
# forward(input_ids, attention_mask, token_type_ids or None) -> one row of floats per sequence
PooledForward = Callable[[Any, Any, Any], list[list[float]]]


@dataclass(frozen=True, slots=True)
class PooledResult:
    """One pooled output: a reward model's logits (`[score]` for num_labels=1) or a sentence embedding."""

    values: list[float]
    prompt_tokens: int


_PLACEHOLDER = PooledResult([], 0)


class Runner:
    """A loaded model plus the synchronous batch functions (`operations`) its batchers call."""

    kind: ClassVar[str]
    is_generation: ClassVar[bool] = False
    # Fixed-shape forwards (deterministic mode): set on a twin by `with_fixed_shapes`, never on a shared one.
    fixed_shapes: bool = False
    # Whether fixed shapes make this runner's operations batch-invariant (generation's decode loop: not yet).
    supports_fixed_shapes: ClassVar[bool] = True
    # A forward's fixed cost in padded tokens: a batch of mixed lengths splits into forwards of similar
    # lengths where that saves more padding than this per extra forward. Measured at warm-up
    # (`calibrate_forward_overhead`); 128 until then.
    forward_overhead_tokens: int = 128

    def __init__(self, model: Any, tokenizer: Any, *, model_path: Path, context_length: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.config = model.config
        self.model_path = model_path
        self.context_length = context_length
        pad_id = tokenizer.pad_token_id
        if pad_id is None:
            # No pad token: pad with eos. Every runner goes by the attention mask, never by the pad id.
            pad_id = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
        self.pad_id: int = int(pad_id)

    @property
    def architectures(self) -> list[str]:
        return list(getattr(self.config, "architectures", None) or [])

    @property
    def model_type(self) -> str:
        return str(getattr(self.config, "model_type", "unknown"))

    def operations(self) -> dict[str, BatchFn]:
        raise NotImplementedError

    def continuous_operations(self) -> dict[str, Callable[[], Any]]:
        """Operations the server drives step by step (continuous batching): a factory of the running batch
        (`runners/decode_batch.py`). Each also stays in `operations()` for warm-up and offline use."""
        return {}

    def deterministic_operations(self) -> dict[str, BatchFn]:
        """Batch functions of a deterministic server whose rows share forwards and stay bitwise those alone,
        for runners without fixed shapes (causal LMs); an operation not named here runs each input alone."""
        return {}

    def deterministic_continuous_operations(self) -> dict[str, Callable[[], Any]]:
        """Like `continuous_operations`, for a deterministic server: factories of a batch-invariant running
        batch; an operation not named here decodes each request alone."""
        return {}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        """One small batch per operation, run once before the server reports ready."""
        raise NotImplementedError

    def pooled(self, inputs: list[TextInput], forward: PooledForward) -> list[PooledResult | InvalidRequest]:
        """Tokenise, right-pad the valid inputs (positions 0..n-1 stay as they are for an input alone), run
        `forward` once per group of similar lengths (`forward_groups`); an invalid input keeps its
        `InvalidRequest` in its place. Segment ids go along when a (text, pair) input has them (zeros for the
        other rows and the padding)."""
        import torch

        encoded = encode_batch(self.tokenizer, inputs, context_length=self.context_length)
        out: list[PooledResult | InvalidRequest] = [
            e if isinstance(e, InvalidRequest) else _PLACEHOLDER for e in encoded
        ]
        valid = [(i, e) for i, e in enumerate(encoded) if isinstance(e, Encoded)]
        for group, width in self.forward_groups([len(e.ids) for _, e in valid]):
            rows_in = [valid[g] for g in group]
            input_ids, attention_mask = pad_batch(
                [e.ids for _, e in rows_in],
                self.pad_id,
                left=False,
                width=width,
                row_multiple=self.input_row_multiple,
            )
            token_type_ids = None
            if any(e.type_ids is not None for _, e in rows_in):
                token_type_ids = torch.zeros_like(input_ids)
                for row, (_, e) in enumerate(rows_in):
                    if e.type_ids is not None:
                        token_type_ids[row, : len(e.type_ids)] = torch.tensor(e.type_ids, dtype=torch.long)
                if len(rows_in) < len(input_ids):  # filler rows copy the first row, segment ids too
                    token_type_ids[len(rows_in) :] = token_type_ids[0]
            with torch.inference_mode():
                rows = forward(input_ids, attention_mask, token_type_ids)
            for (i, e), values in zip(rows_in, rows, strict=False):
                out[i] = PooledResult(values, len(e.ids))
        return out

    @property
    def row_multiple(self) -> int:
        """GEMMs over one row per sequence (heads after pooling) get a multiple of this many rows: 4 with
        `fixed_shapes` (fewer rows, or a one-output head, take other kernels); the body's GEMMs run over
        rows x bucket width tokens, a multiple of 16 already."""
        return ROW_MULTIPLE if self.fixed_shapes else 1

    @property
    def input_row_multiple(self) -> int:
        """Rows of the padded input batch: a multiple of this (filler rows copy the first and are dropped).
        1, unless the model's own forward runs a per-sequence head (a cross-encoder's pooler)."""
        return 1

    def head_rows(self, pooled: Any) -> Any:
        """`pooled` ([sequences, hidden]) with zero rows appended up to a multiple of `row_multiple`; slice
        the head's output back to the first `len(pooled)` rows."""
        filler = -pooled.shape[0] % self.row_multiple
        return pooled if not filler else torch_cat_zeros(pooled, filler)

    def forward_groups(self, lengths: list[int]) -> list[tuple[list[int], int | None]]:
        """Which rows share a forward, and the width it pads to: rows of similar length together, each group
        padded to its longest (split only where the padding saved outweighs `forward_overhead_tokens`), or
        with `fixed_shapes` one forward per shape bucket, padded to the bucket."""
        if not lengths:
            return []
        if not self.fixed_shapes:
            return [(g, None) for g in length_groups(lengths, self.forward_overhead_tokens)]
        return [(g, w) for w, g in sorted(bucket_groups(lengths, self.context_length).items())]

    def with_fixed_shapes(self) -> Runner:
        """This runner (same model, tokenizer, everything) whose operations run fixed-shape forwards: a row's
        output is then bitwise the same alone and in any batch (runners/deterministic.py)."""
        twin = copy.copy(self)
        twin.fixed_shapes = True
        return twin

    def warmup(self) -> None:
        ops = self.operations()
        for name, batch in self.warmup_inputs().items():
            results = ops[name](batch)
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                raise RuntimeError(f"warm-up of {name!r} failed: {errors[0]}")
        if not self.is_generation:
            self.calibrate_forward_overhead()

    def calibrate_forward_overhead(self) -> None:
        """Set `forward_overhead_tokens` from this model on this host: the time of one 16-token row vs four
        128-token rows (best of 3 each) gives a forward's fixed cost and a token's; the default stays when
        the measure is unusable (a token costing nothing measurable)."""
        import time

        name, batch = next(iter(self.warmup_inputs().items()))
        op = self.operations()[name]
        first = batch[0]
        if not hasattr(first, "input_ids"):
            return
        ids = self.tokenizer(str(WARMUP_TEXT.text), add_special_tokens=False)["input_ids"][:1] or [
            self.pad_id
        ]
        short, long = min(16, self.context_length), min(128, self.context_length)

        def best(n: int, rows: int) -> float:
            items = [replace(first, text=None, input_ids=ids * n)] * rows
            op(items)
            times = []
            for _ in range(3):
                started = time.perf_counter()
                op(items)
                times.append(time.perf_counter() - started)
            return min(times)

        t_short, t_long = best(short, 1), best(long, 4)
        per_token = (t_long - t_short) / (4 * long - short)
        if per_token > 0:
            self.forward_overhead_tokens = int(min(4096, max(16, t_short / per_token - short)))
        logger.info("a forward's fixed cost: %d padded tokens", self.forward_overhead_tokens)


WARMUP_TEXT = TextInput(text="The capital city of France is")


def torch_cat_zeros(x: Any, rows: int) -> Any:
    """`x` with `rows` zero rows appended along the first dimension."""
    import torch

    return torch.cat([x, x.new_zeros((rows, *x.shape[1:]))])
