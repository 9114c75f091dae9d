"""Batch-invariant forwards of a causal LM: many sequences' tokens in one forward, each row's attention alone.

What moves a token's output with its batch on this CPU's torch (docs/reproducibility.md): GEMMs over fewer
than 4 rows (another kernel than 4 or more), and attention over a key/value width padded past the row's own
tokens or with its columns shifted (the reductions' vector lanes and tails follow the width and the offset).
Everything else a Llama-style layer does is per token (embedding, norms, rotary, activations).

So a `Packed` forward lays the tokens of every row end to end in one sequence of a single batch row, with at
least `ROW_MULTIPLE` tokens in all (filler tokens after the real ones), and replaces the model's attention
by `rowwise_attention`: each row's queries attend to exactly that row's keys and values, kept in its own
`RowCache`, in one `scaled_dot_product_attention` call per row and layer (causal over a prompt, one query
at a decode step). Every GEMM then runs over at least 4 token rows, and each row's attention is the very
call it makes alone: a row's logits are bitwise the same alone and beside any other rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from rewardfleet.services.model_server.runners.common import ROW_MULTIPLE

ATTENTION = "rewardfleet_rowwise"


class RowCache:
    """One sequence's keys and values per layer ([kv_heads, capacity, head_dim]), filled up to `length`;
    the capacity doubles when a write would overflow it."""

    def __init__(self, layers: int) -> None:
        self.keys: list[Any] = [None] * layers
        self.values: list[Any] = [None] * layers
        self.length = 0  # tokens stored (the same in every layer once a forward is through)

    def write(self, layer: int, offset: int, keys: Any, values: Any) -> tuple[Any, Any]:
        """Store `keys`/`values` ([kv_heads, n, head_dim]) at columns offset..offset+n of `layer`; returns
        that layer's keys and values up to the last one written (views, not copies)."""
        end = offset + keys.shape[1]
        held = self.keys[layer]
        if held is None or held.shape[1] < end:
            capacity = max(16, end, 2 * (held.shape[1] if held is not None else 0))
            grown_k = keys.new_empty((keys.shape[0], capacity, keys.shape[2]))
            grown_v = values.new_empty((values.shape[0], capacity, values.shape[2]))
            if held is not None:
                grown_k[:, :offset] = held[:, :offset]
                grown_v[:, :offset] = self.values[layer][:, :offset]
            self.keys[layer], self.values[layer] = grown_k, grown_v
        self.keys[layer][:, offset:end] = keys
        self.values[layer][:, offset:end] = values
        return self.keys[layer][:, :end], self.values[layer][:, :end]


@dataclass(frozen=True, slots=True)
class Segment:
    """One row's tokens in a packed forward: `count` tokens from packed position `start`, stored in `cache`
    from column `offset` (its earlier tokens)."""

    cache: RowCache
    start: int
    count: int
    offset: int


class Packed:
    """The inputs of one packed forward: token ids and positions as [1, tokens] tensors, and each row's
    `Segment`. Build with `add` per row, then `tensors()`."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = pad_id
        self.segments: list[Segment] = []
        self._ids: list[int] = []
        self._positions: list[int] = []

    def add(self, cache: RowCache, ids: Sequence[int]) -> int:
        """Append a row's next tokens (its whole prompt, or the one token of a decode step); returns the
        packed index of the row's last token (where its next-token logits come out)."""
        start = len(self._ids)
        self.segments.append(Segment(cache, start, len(ids), cache.length))
        self._ids.extend(ids)
        self._positions.extend(range(cache.length, cache.length + len(ids)))
        return start + len(ids) - 1

    def tensors(self) -> tuple[Any, Any]:
        """(input_ids, position_ids), filler tokens appended up to a multiple of `ROW_MULTIPLE` (no row
        attends to them; their outputs are never read)."""
        import torch

        filler = -len(self._ids) % ROW_MULTIPLE
        ids = self._ids + [self.pad_id] * filler
        positions = self._positions + [0] * filler
        return torch.tensor([ids], dtype=torch.long), torch.tensor([positions], dtype=torch.long)

    def done(self) -> None:
        """Every layer has stored this forward's keys and values: advance each row's cache length."""
        for seg in self.segments:
            seg.cache.length = seg.offset + seg.count


def rowwise_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[Any, None]:
    """A transformers attention function ([1, heads, tokens, head_dim] in, [1, tokens, heads, head_dim]
    out): per `Segment` of the `packed` kwarg, store the row's new keys and values, then attend over the
    row's own cache alone. Filler tokens get zeros."""
    import torch

    packed: Packed | None = kwargs.get("packed")
    if packed is None:
        raise RuntimeError("rowwise attention runs only inside a Packed forward")
    if kwargs.get("sliding_window") is not None or kwargs.get("softcap") is not None:
        raise RuntimeError("rowwise attention supports full causal attention only (no sliding window)")
    layer = int(module.layer_idx)
    out = query.new_zeros(query.shape)
    for seg in packed.segments:
        end = seg.start + seg.count
        keys, values = seg.cache.write(
            layer, seg.offset, key[0, :, seg.start : end], value[0, :, seg.start : end]
        )
        if seg.count > 1 and seg.offset:
            raise RuntimeError("a packed row continues either a prompt from column 0 or one decode token")
        out[0, :, seg.start : end] = torch.nn.functional.scaled_dot_product_attention(
            query[:, :, seg.start : end],
            keys[None],
            values[None],
            scale=scaling,
            is_causal=seg.count > 1,
            enable_gqa=keys.shape[0] != query.shape[1],
        )[0]
    return out.transpose(1, 2).contiguous(), None


def register() -> None:
    """Make `rowwise_attention` known to transformers (idempotent)."""
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, rowwise_attention)


def supports_rowwise(model: Any) -> bool:
    """Whether `model` is a decoder whose attention layers dispatch by name and carry a layer index, with
    full causal attention (no sliding window, no soft cap)."""
    config = getattr(model, "config", None)
    if config is None or getattr(config, "_attn_implementation", None) not in ("sdpa", "eager"):
        return False
    if getattr(config, "use_sliding_window", False) or getattr(config, "attn_logit_softcapping", None):
        return False
    layer_types = getattr(config, "layer_types", None)
    if layer_types and any(t != "full_attention" for t in layer_types):
        return False
    attentions = [m for name, m in model.named_modules() if name.endswith("self_attn")]
    return bool(attentions) and all(isinstance(getattr(m, "layer_idx", None), int) for m in attentions)


@contextmanager
def rowwise(model: Any) -> Iterator[None]:
    """Within this block the model's attention is `rowwise_attention` (its config names the function; it is
    put back after). Runs on the server's single forward thread."""
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = before


def forward_packed(model: Any, packed: Packed, keep: Sequence[int]) -> Any:
    """Run `packed` through `model` with rowwise attention; the logits at packed indices `keep` as [len(keep),
    vocab] float32 (the head runs over `keep` repeated up to at least `ROW_MULTIPLE` rows)."""
    import torch

    input_ids, position_ids = packed.tensors()
    rows = list(keep) + [keep[-1]] * (-len(keep) % ROW_MULTIPLE)
    with rowwise(model):
        out = model(
            input_ids=input_ids,
            position_ids=position_ids,
            use_cache=False,
            logits_to_keep=torch.tensor(rows, dtype=torch.long),
            packed=packed,
        )
    packed.done()
    return out.logits[0, : len(keep)].float()
