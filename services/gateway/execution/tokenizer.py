"""The reward model's tokenizer (`reward_model_tokenizer`). transformers is an optional dependency, imported
only when a tokenizer is configured."""

from __future__ import annotations

from typing import Any

from rewardfleet.services.gateway.errors import TokenizerUnavailable


def load_tokenizer(path: str) -> Any:
    try:
        from transformers import AutoTokenizer
    except ImportError as exc:
        raise TokenizerUnavailable(
            "reward_model_tokenizer is set but transformers is not installed; "
            "install the model extra: pip install 'reward-fleet[model]'"
        ) from exc
    try:
        return AutoTokenizer.from_pretrained(path)
    except Exception as exc:
        raise TokenizerUnavailable(f"reward_model_tokenizer: cannot load {path!r}: {exc}") from exc
