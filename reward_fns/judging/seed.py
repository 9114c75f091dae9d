"""The sampling seed of a judge call, derived from the sample so that asking again asks the same question.

A retried, re-scored (`rewardfleet score`) or shadow-judged sample renders the same messages; with the seed
taken from them, a judge that samples (temperature > 0) draws the same tokens again on a deterministic pool
instead of a fresh verdict. The uid is mixed in only on request (`generation.seed_uid`): `rewardfleet score`
sends each run and each `--repeat` under a uid of its own, so a uid-keyed seed would change exactly where the
question did not. SGLang calls the field
`sampling_seed` (`srt/sampling/sampling_params.py`; `seed` on the OpenAI routes is mapped onto it, as the
CPU model server does too). The hash is SHA-256 over a canonical JSON of (uid, messages): stable across
processes, machines and Python versions (unlike `hash()`), and kept in [0, 2**63) which SGLang accepts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

_MAX_SEED = 2**63 - 1
# sglang-router 0.3.2's routing-key header (`routers/header_utils.rs`): with `--policy manual` every request
# carrying the same key goes to the same worker; other policies ignore it.
ROUTING_KEY_HEADER = "X-SMG-Routing-Key"


def sample_seed(key: str | None, messages: Sequence[Any]) -> int:
    """A 63-bit seed from the sample's uid (`key`, may be None) and the exact messages the judge is asked."""
    canonical = json.dumps([key or "", list(messages)], sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(canonical.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") & _MAX_SEED


def routing_headers(seed: int) -> dict[str, str]:
    """The routing-key header of a judge call: the same question, the same key, the same replica."""
    return {ROUTING_KEY_HEADER: f"{seed:016x}"}
