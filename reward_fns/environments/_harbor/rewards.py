"""The reward a Harbor verifier left in `/logs/verifier`, read as Harbor reads it.

`reward.json` (an object; its numeric fields) when present, else `reward.txt` (one number). Anything else is a
typed error, never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

REWARD_TXT = "/logs/verifier/reward.txt"
REWARD_JSON = "/logs/verifier/reward.json"


class VerifierFailed(RuntimeError):
    """The task's verifier gave no reward: it timed out, wrote no reward file, or wrote one that is not a
    reward. The message names which, and ends with the tail of the verifier's output."""


def read_rewards(collected: Mapping[str, bytes], output_tail: str) -> dict[str, float]:
    """The verifier's named rewards (`reward` among them) from the files it left; `VerifierFailed` else."""
    if REWARD_JSON in collected:
        rewards = _from_json(collected[REWARD_JSON], output_tail)
        if "reward" not in rewards and REWARD_TXT in collected:
            rewards["reward"] = _from_text(collected[REWARD_TXT], output_tail)
        if "reward" not in rewards:
            raise VerifierFailed(
                f"{REWARD_JSON} has no numeric 'reward' field (fields: {sorted(rewards)}) and there is no "
                f"{REWARD_TXT}\n{output_tail}"
            )
        return rewards
    if REWARD_TXT in collected:
        return {"reward": _from_text(collected[REWARD_TXT], output_tail)}
    raise VerifierFailed(f"tests/test.sh wrote neither {REWARD_TXT} nor {REWARD_JSON}\n{output_tail}")


def _from_text(data: bytes, output_tail: str) -> float:
    text = data.decode("utf-8", errors="replace").strip()
    try:
        value = float(text)
    except ValueError:
        raise VerifierFailed(f"{REWARD_TXT} does not hold a number: {text[:80]!r}\n{output_tail}") from None
    return _finite(REWARD_TXT, value, output_tail)


def _from_json(data: bytes, output_tail: str) -> dict[str, float]:
    try:
        parsed = json.loads(data)
    except ValueError:
        raise VerifierFailed(f"{REWARD_JSON} is not JSON: {data[:80]!r}\n{output_tail}") from None
    if not isinstance(parsed, dict):
        raise VerifierFailed(f"{REWARD_JSON} must hold an object, got {type(parsed).__name__}\n{output_tail}")
    # As Harbor: the numeric fields are the rewards; anything else in the object is a report, ignored.
    return {
        key: _finite(f"{REWARD_JSON} {key!r}", float(value), output_tail)
        for key, value in parsed.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }


def _finite(where: str, value: float, output_tail: str) -> float:
    if not math.isfinite(value):
        raise VerifierFailed(f"{where} is not a finite number: {value}\n{output_tail}")
    return value
