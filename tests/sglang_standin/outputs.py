"""What the stand-in answers: deterministic rewards, embeddings, token ids and generated text."""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

from tests.sglang_standin.state import StandinConfig

EOS_TOKEN_ID = 2
REPLY_RE = re.compile(r"<standin-reply>(.*?)</standin-reply>", re.DOTALL)
_WORD_RE = re.compile(r"\w+")


def standin_reward(text: str) -> float:
    """The stand-in reward model's score of `text`: a stable hash mapped into [-5, 5), rounded to 6 places."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    unit = int.from_bytes(digest[:8], "big") / 2**64
    return round(unit * 10.0 - 5.0, 6)


def standin_embedding(text: str, dim: int = 64) -> list[float]:
    """The stand-in encoder's embedding of `text`: hashed signed bag of lower-cased words, unit length."""
    vec = [0.0] * dim
    for word in _WORD_RE.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:4], "big") % dim
        vec[slot] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return [v / norm for v in vec]


def token_ids(text: str) -> list[int]:
    """A deterministic pseudo-tokenisation: one id per UTF-8 byte (ids 3..258; 0-2 are special)."""
    return [b + 3 for b in text.encode("utf-8")]


def embed(config: StandinConfig, text: str) -> list[float]:
    if config.mode == "reward":
        return [standin_reward(text)]
    return standin_embedding(text, config.dim)


def generated(
    config: StandinConfig, prompt: str, max_new_tokens: int | None
) -> tuple[str, list[int], dict[str, Any]]:
    """The reply to `prompt` (its last `<standin-reply>`, else the canned text), cut at `max_new_tokens`."""
    found = REPLY_RE.findall(prompt)
    text = found[-1] if found else config.canned_text
    ids = token_ids(text)
    if max_new_tokens is not None and len(ids) > max_new_tokens:
        ids = ids[:max_new_tokens]
        text = bytes(i - 3 for i in ids).decode("utf-8", errors="ignore")
        return text, ids, {"type": "length", "length": max_new_tokens}
    return text, ids, {"type": "stop", "matched": EOS_TOKEN_ID}


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
        "reasoning_tokens": 0,
    }
