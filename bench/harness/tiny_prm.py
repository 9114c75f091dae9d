"""Tiny process reward models built at test time.

`build_tiny_qwen2_prm(path, positive_logit=...)` writes a `Qwen2ForProcessRewardModel` checkpoint laid out as
Qwen2.5-Math-PRM is on the Hub: the base model's tensors under `model.`, vLLM's `score` MLP (hidden -> hidden
-> 2 labels) under `score.0` / `score.2`, a config naming the architecture with an `auto_map` to modeling
code the folder does not have, and a tokenizer with the step tag `<extra_0>` as a special token.

With `positive_logit` set, the head's weights are zero and its last bias is `[0, positive_logit]`: every
token's label logits are exactly that, so every step's reward (softmax probability of label 1) is known in
closed form, `1 / (1 + exp(-positive_logit))`, whatever the base model computes. Without it the head is
random (seeded), and a test compares with its own forward pass.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from bench.harness.tiny_models import _build_qwen2_tokenizer

STEP_TAG = "<extra_0>"
HIDDEN = 32


def build_tiny_qwen2_prm(
    path: str | Path,
    *,
    positive_logit: float | None = None,
    seed: int = 0,
    hidden_size: int = HIDDEN,
    num_layers: int = 2,
) -> Path:
    import torch
    from safetensors.torch import save_file
    from transformers import AddedToken, Qwen2Config, Qwen2Model

    path = Path(path)
    tok = _build_qwen2_tokenizer()
    tok.add_special_tokens(
        {"additional_special_tokens": [AddedToken(STEP_TAG, special=True, normalized=False)]},
        replace_extra_special_tokens=False,
    )
    config = Qwen2Config(
        vocab_size=len(tok),
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        num_labels=2,
        num_hidden_layers=num_layers,
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    base = Qwen2Model(config).eval()
    g = torch.Generator().manual_seed(seed + 1)
    head: dict[str, Any]
    if positive_logit is None:
        head = {
            "score.0.weight": torch.randn(hidden_size, hidden_size, generator=g) * 0.5,
            "score.0.bias": torch.randn(hidden_size, generator=g) * 0.5,
            "score.2.weight": torch.randn(2, hidden_size, generator=g) * 0.5,
            "score.2.bias": torch.randn(2, generator=g) * 0.5,
        }
    else:
        head = {
            "score.0.weight": torch.zeros(hidden_size, hidden_size),
            "score.0.bias": torch.zeros(hidden_size),
            "score.2.weight": torch.zeros(2, hidden_size),
            "score.2.bias": torch.tensor([0.0, positive_logit]),
        }
    path.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.contiguous() for k, v in base.state_dict().items()}
    tensors.update({k: v.contiguous() for k, v in head.items()})
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    config.architectures = ["Qwen2ForProcessRewardModel"]
    config.save_pretrained(path)
    data = json.loads((path / "config.json").read_text())
    data["auto_map"] = {"AutoModel": "modeling_qwen2_rm.Qwen2ForProcessRewardModel"}
    (path / "config.json").write_text(json.dumps(data, indent=2))
    tok.save_pretrained(path)
    return path


def step_tag_id(path: str | Path) -> int:
    from transformers import AutoTokenizer

    return int(AutoTokenizer.from_pretrained(path).convert_tokens_to_ids(STEP_TAG))


@functools.lru_cache(maxsize=4)
def _reference_parts(path: str) -> tuple[Any, dict[str, Any]]:
    from safetensors.torch import load_file
    from transformers import Qwen2Model

    return Qwen2Model.from_pretrained(path).eval(), load_file(str(Path(path) / "model.safetensors"))


def reference_step_logits(path: str | Path, ids: list[int], tag_id: int) -> list[list[float]]:
    """The label logits at each `tag_id` position of `ids`, computed here on its own: one unpadded sequence
    through transformers' `Qwen2Model`, then vLLM's `score` MLP written out with the checkpoint's tensors."""
    import torch

    base, w = _reference_parts(str(path))
    with torch.inference_mode():
        hidden = base(input_ids=torch.tensor([ids])).last_hidden_state[0]
        inner = torch.relu(hidden @ w["score.0.weight"].T + w["score.0.bias"])
        logits = inner @ w["score.2.weight"].T + w["score.2.bias"]
    positions = [i for i, t in enumerate(ids) if t == tag_id]
    return [logits[i].tolist() for i in positions]
