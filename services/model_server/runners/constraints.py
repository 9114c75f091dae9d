"""Constrained decoding: SGLang's `regex` / `json_schema` / `ebnf` sampling parameters, with llguidance.

Each constrained request gets a grammar matcher. Before every sampling step the matcher says which tokens may
come next (a bitmask over the vocabulary); every other logit is set to -inf, so greedy and sampled decoding
alike can only produce text the grammar accepts. Once the grammar is complete only the end-of-sequence token
is allowed, which ends the request as a normal stop.

Why llguidance (measured on SmolLM2-135M, see docs/model_server.md): it computes a mask in well under a
millisecond per row without building a whole-vocabulary index per grammar, compiles a grammar in microseconds
to milliseconds, takes regexes, JSON schemas and GBNF/EBNF grammars (SGLang's `ebnf` dialect) and has no
dependencies; SGLang offers it as a grammar backend too. xgrammar (SGLang's default) needs triton as a hard
dependency; outlines-core has no EBNF.
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from rewardfleet.services.model_server.errors import InvalidRequest

ConstraintKind = Literal["regex", "json_schema", "ebnf"]


@dataclass(frozen=True, slots=True)
class Constraint:
    """One grammar a request's output must match. `param` is the request field it came from (for a 400)."""

    kind: ConstraintKind
    source: str
    param: str


def pick_constraint(
    regex: str | None,
    json_schema: str | None,
    ebnf: str | None,
    *,
    prefix: str = "",
    schema_param: str | None = None,
) -> Constraint | None:
    """The one constraint of a request, or None; SGLang refuses more than one. `schema_param` names the field
    a JSON schema came from when it is not `json_schema` (OpenAI's `response_format`)."""
    given = [
        (k, v) for k, v in (("regex", regex), ("json_schema", json_schema), ("ebnf", ebnf)) if v is not None
    ]
    if len(given) > 1:
        names = ", ".join(prefix + k for k, _ in given)
        raise InvalidRequest(
            f"only one of regex, json_schema or ebnf may be set, got {names}", param=prefix + given[1][0]
        )
    if not given:
        return None
    kind, source = given[0]
    param = schema_param if kind == "json_schema" and schema_param else prefix + kind
    if not source.strip():
        raise InvalidRequest(f"{param} must not be empty", param=param)
    return Constraint(kind, source, param)  # type: ignore[arg-type]


@lru_cache(maxsize=256)
def _grammar(kind: ConstraintKind, source: str) -> str:
    import llguidance

    if kind == "json_schema":
        json.loads(source)  # ValueError names the JSON problem
    return str(llguidance.grammar_from(kind, source))


def _tokenizer_json(hf_tokenizer: Any) -> str:
    """The fast tokenizer as llguidance reads it (what `llguidance.hf.from_tokenizer` sends, plus one repair).

    llguidance learns each token's bytes from the decoder. Some transformers releases (5.10, which verl 0.9.1
    pins) convert a byte-level BPE GGUF tokenizer with a `Sequence[ByteFallback, Fuse, Replace, ByteLevel]`
    decoder; llguidance then takes `Ġ` literally, so a regex such as `Verdict: (yes|no)` can never match a
    space and decoding wanders (`Verdict::`). For a byte-level pre-tokenizer the plain `ByteLevel` decoder
    gives the same text, so it is put back on a copy."""
    backend = copy.copy(hf_tokenizer.backend_tokenizer)
    backend.no_padding()
    backend.no_truncation()
    spec = json.loads(backend.to_str())
    if (
        _has_type(spec.get("pre_tokenizer"), "ByteLevel")
        and (spec.get("decoder") or {}).get("type") == "Sequence"
    ) and _has_type(spec["decoder"], "ByteLevel"):
        spec["decoder"] = {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        }
    return json.dumps(spec)


def _has_type(node: Any, kind: str) -> bool:
    """Whether a tokenizers component (or any member of a `Sequence`) is of type `kind`."""
    if not isinstance(node, dict):
        return False
    if node.get("type") == kind:
        return True
    members = node.get("pretokenizers") or node.get("decoders") or []
    return any(_has_type(member, kind) for member in members)


class Grammars:
    """Matchers for one tokenizer. The llguidance tokenizer costs ~1 s to build: once, on first use."""

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        self._hf_tokenizer = tokenizer
        self.vocab_size = vocab_size
        self._ll_tokenizer: Any = None
        self._lock = threading.Lock()

    def _tokenizer(self) -> Any:
        with self._lock:
            if self._ll_tokenizer is None:
                import llguidance

                self._ll_tokenizer = llguidance.LLTokenizer(
                    _tokenizer_json(self._hf_tokenizer),
                    n_vocab=self.vocab_size,
                    eos_token=self._hf_tokenizer.eos_token_id,
                )
            return self._ll_tokenizer

    def matcher(self, constraint: Constraint) -> Any:
        """A fresh matcher for `constraint`; an invalid grammar raises `InvalidRequest` naming the field."""
        import llguidance

        try:
            grammar = _grammar(constraint.kind, constraint.source)
        except ValueError as exc:
            raise InvalidRequest(f"{constraint.param} is invalid: {exc}", param=constraint.param) from exc
        matcher = llguidance.LLMatcher(self._tokenizer(), grammar, log_level=0)
        if matcher.is_error():
            raise InvalidRequest(
                f"{constraint.param} is invalid: {matcher.get_error()}", param=constraint.param
            )
        return matcher


class MaskBuffer:
    """The bitmask llguidance fills for one matcher, turned into a boolean "allowed" row for the logits."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.bits = np.zeros((vocab_size + 31) // 32, dtype=np.int32)

    def allowed(self, matcher: Any) -> np.ndarray[Any, np.dtype[np.bool_]]:
        matcher.unsafe_compute_mask_ptr(self.bits.ctypes.data, self.bits.nbytes)
        # Bit j of word i allows token 32*i + j (little-endian words, least significant bit first).
        return np.unpackbits(self.bits.view(np.uint8), bitorder="little")[: self.vocab_size].astype(bool)


def apply_mask(logits_row: Any, allowed: np.ndarray[Any, np.dtype[np.bool_]]) -> None:
    """Set the logits of every token the grammar forbids to -inf, in place (the row may be wider than the
    tokenizer's vocabulary: padded embedding rows are never allowed)."""
    import torch

    keep = torch.zeros(logits_row.shape[-1], dtype=torch.bool)
    keep[: allowed.shape[0]] = torch.from_numpy(allowed)
    logits_row.masked_fill_(~keep, float("-inf"))
