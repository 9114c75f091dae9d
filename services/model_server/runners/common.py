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


def pad_batch(
    sequences: Sequence[list[int]], pad_id: int, *, left: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) as int64 tensors, padded on the left (generation) or right (pooling)."""
    import torch

    width = max(len(s) for s in sequences)
    rows: list[list[int]] = []
    masks: list[list[int]] = []
    for seq in sequences:
        fill = width - len(seq)
        rows.append([pad_id] * fill + seq if left else seq + [pad_id] * fill)
        masks.append([0] * fill + [1] * len(seq) if left else [1] * len(seq) + [0] * fill)
    ids = torch.tensor(rows, dtype=torch.long)
    mask = torch.tensor(masks, dtype=torch.long)
    return ids, mask


def split_valid(
    tokenized: list[list[int] | InvalidRequest],
) -> tuple[list[int], list[list[int]]]:
    """Indices and token ids of the inputs that passed validation."""
    idx = [i for i, t in enumerate(tokenized) if not isinstance(t, InvalidRequest)]
    return idx, [t for t in tokenized if not isinstance(t, InvalidRequest)]
