"""Input handling shared by the runners: tokenise a batch at once, check lengths, pad into tensors."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rewardfleet.services.model_server.errors import InvalidRequest

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True, slots=True)
class TextInput:
    """One input: text (tokenised in the batch thread) or token ids; `pair` makes it a (text, pair) input."""

    text: str | None = None
    input_ids: list[int] | None = None
    pair: str | None = None


@dataclass(frozen=True, slots=True)
class ImageInput:
    """One image to embed: the encoded file (PNG, JPEG, ...) and the request field it came from."""

    data: bytes
    field: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Encoded:
    """One tokenised input; `type_ids` are the tokenizer's segment ids of a (text, pair) input (BERT-style
    cross-encoders read them), None otherwise (SGLang passes them only for pairs, too)."""

    ids: list[int]
    type_ids: list[int] | None = None


def tokenize_batch(
    tokenizer: Any,
    inputs: Sequence[TextInput],
    *,
    context_length: int,
    add_special_tokens: bool = True,
    reserve_tokens: Sequence[int] | None = None,
) -> list[list[int] | InvalidRequest]:
    """Token ids per input, or an `InvalidRequest` for that input alone (see `encode_batch`)."""
    encoded = encode_batch(
        tokenizer,
        inputs,
        context_length=context_length,
        add_special_tokens=add_special_tokens,
        reserve_tokens=reserve_tokens,
    )
    return [e if isinstance(e, InvalidRequest) else e.ids for e in encoded]


def encode_batch(
    tokenizer: Any,
    inputs: Sequence[TextInput],
    *,
    context_length: int,
    add_special_tokens: bool = True,
    reserve_tokens: Sequence[int] | None = None,
) -> list[Encoded | InvalidRequest]:
    """Token ids (and a pair's segment ids) per input, or an `InvalidRequest` for that input alone (empty,
    or too long for the context).

    Texts are tokenised with one batched call of the fast tokenizer (its Rust loop, not Python's);
    `reserve_tokens[i]` is room input i needs after its prompt (max_new_tokens for generation).
    """
    out: list[Encoded | InvalidRequest] = [Encoded([]) for _ in inputs]
    singles = [i for i, x in enumerate(inputs) if x.input_ids is None and x.pair is None]
    pairs = [i for i, x in enumerate(inputs) if x.input_ids is None and x.pair is not None]
    if singles:
        enc = tokenizer([inputs[i].text for i in singles], add_special_tokens=add_special_tokens)["input_ids"]
        for i, ids in zip(singles, enc, strict=True):
            out[i] = Encoded(list(ids))
    if pairs:
        enc = tokenizer(
            [inputs[i].text for i in pairs],
            [inputs[i].pair for i in pairs],
            add_special_tokens=add_special_tokens,
        )
        types = enc.get("token_type_ids")
        for n, i in enumerate(pairs):
            out[i] = Encoded(list(enc["input_ids"][n]), list(types[n]) if types is not None else None)
    vocab_size = len(tokenizer)
    for i, x in enumerate(inputs):
        if x.input_ids is not None:
            bad = [t for t in x.input_ids if t < 0 or t >= vocab_size]
            out[i] = (
                InvalidRequest(f"token ids {bad[:5]} are outside the vocabulary [0, {vocab_size})")
                if bad
                else Encoded(list(x.input_ids))
            )
        enc_i = out[i]
        if isinstance(enc_i, InvalidRequest):
            continue
        ids = enc_i.ids
        if not ids:
            out[i] = InvalidRequest("input is empty after tokenisation")
            continue
        reserve = reserve_tokens[i] if reserve_tokens is not None else 0
        if len(ids) > context_length:
            out[i] = InvalidRequest(
                f"The input ({len(ids)} tokens) is longer than the model's context length "
                f"({context_length} tokens)."
            )
        elif reserve and len(ids) + reserve > context_length:
            out[i] = InvalidRequest(
                "Requested token count exceeds the model's maximum context length of "
                f"{context_length} tokens. "
                f"You requested a total of {len(ids) + reserve} tokens: {len(ids)} tokens from the input and "
                f"{reserve} tokens for the completion. Please reduce the input or max_new_tokens."
            )
    return out


# Fixed shapes (deterministic mode): on this CPU's torch a row's output is bitwise the same in any batch of
# the same padded width, except in GEMMs over one row per sequence (heads after pooling) whose row count is
# below 4 or, for a one-output head, not a multiple of 4; so every forward pads its width to a bucket and
# those heads' rows to a multiple of ROW_MULTIPLE (docs/reproducibility.md).
ROW_MULTIPLE = 4
_MIN_BUCKET = 16


def shape_bucket(length: int, cap: int) -> int:
    """The padded width for a sequence of `length` tokens: a multiple of 16, then of a quarter of the
    power of two below it (waste under ~25 %), never above `cap` (the context length)."""
    step = max(_MIN_BUCKET, (1 << max(0, length.bit_length() - 1)) // 4)
    return min(cap, -(-length // step) * step) if length > 0 else min(cap, _MIN_BUCKET)


def bucket_groups(lengths: Sequence[int], cap: int) -> dict[int, list[int]]:
    """Indices of `lengths` grouped by `shape_bucket`: the rows that may share one fixed-shape forward."""
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(shape_bucket(n, cap), []).append(i)
    return groups


def length_groups(lengths: Sequence[int], overhead_tokens: int) -> list[list[int]]:
    """Indices of `lengths` split into groups, one padded forward each, that minimise the padded tokens plus
    `overhead_tokens` per forward (the fixed cost of a forward, in tokens): rows sorted by length, cut where
    the padding saved pays for another forward (an exact split of the sorted rows, O(n^2))."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    best = [0.0] + [float("inf")] * n  # best[j]: cost of the first j sorted rows
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = lengths[order[j - 1]]  # the longest of rows i..j-1
        for i in range(j):
            cost = best[i] + overhead_tokens + (j - i) * width
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(order[cut[j] : j])
        j = cut[j]
    return groups[::-1]


def pad_batch(
    sequences: Sequence[list[int]],
    pad_id: int,
    *,
    left: bool,
    width: int | None = None,
    row_multiple: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) as int64 tensors, padded on the left (generation) or right (pooling) to
    `width` (default: the longest sequence); copies of the first row fill the batch up to a multiple of
    `row_multiple` rows (their outputs are to be dropped)."""
    import numpy as np
    import torch

    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    width = int(lengths.max()) if width is None else width
    rows = -(-len(sequences) // row_multiple) * row_multiple
    ids = np.full((rows, width), pad_id, dtype=np.int64)
    cols = np.arange(width)
    real = cols[None, :] >= (width - lengths)[:, None] if left else cols[None, :] < lengths[:, None]
    ids[: len(sequences)][real] = np.fromiter(
        (t for s in sequences for t in s), dtype=np.int64, count=int(lengths.sum())
    )
    mask = np.zeros((rows, width), dtype=np.int64)
    mask[: len(sequences)] = real
    if rows > len(sequences):
        ids[len(sequences) :] = ids[0]
        mask[len(sequences) :] = mask[0]
    return torch.from_numpy(ids), torch.from_numpy(mask)


def split_valid(
    tokenized: list[list[int] | InvalidRequest],
) -> tuple[list[int], list[list[int]]]:
    """Indices and token ids of the inputs that passed validation."""
    idx = [i for i, t in enumerate(tokenized) if not isinstance(t, InvalidRequest)]
    return idx, [t for t in tokenized if not isinstance(t, InvalidRequest)]
