"""SGLang's score heads for reward families transformers has no class for; the cross-encoder activation.

A remote-code reward model (`Qwen2ForRewardModel`, ...) is a base model transformers has (`Qwen2Model`) plus
a small head. The loader loads the base model with `AutoModel` (never the checkpoint's own code) and
`load_head` builds the head as SGLang's `srt/models/<file>.py` defines it, filled from the checkpoint's
safetensors (every head tensor must be there, with its shape: a mismatch is an error naming the tensor).
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rewardfleet.services.model_server.runners.families import ProcessRewardFamily, RewardFamily

AnyFamily = RewardFamily | ProcessRewardFamily


class _WeightedNormal(nn.Module):
    """`LlamaForSequenceClassificationWithNormal_Weights` (llama_reward.py): `score` gives num_labels logits,
    the even ones are rewards; a float16 SELU MLP (`weights.fc`) gives one weight per reward; the score is
    their weighted sum."""

    def __init__(self, hidden_size: int, num_labels: int) -> None:
        super().__init__()
        if num_labels < 2 or num_labels % 2:
            raise ValueError(f"{type(self).__name__} needs an even num_labels >= 2, not {num_labels}")
        self.num_labels = num_labels
        self.score = nn.Linear(hidden_size, num_labels, bias=False)
        half = torch.float16
        self.fc = nn.Sequential(
            nn.Linear(hidden_size, hidden_size, dtype=half),
            nn.SELU(),
            nn.Linear(hidden_size, hidden_size, dtype=half),
            nn.SELU(),
            nn.Linear(hidden_size, num_labels // 2, dtype=half),
        )

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        logits = self.score(pooled)
        weights = self.fc(pooled.to(torch.float16))
        rewards = logits.view(-1, self.num_labels // 2, 2)[:, :, 0]
        return (rewards * weights).sum(dim=-1).view(-1, 1)


def _build(family: AnyFamily, config: Any) -> tuple[nn.Module, dict[str, str]]:
    """The head module and {checkpoint tensor name: head parameter name}."""
    hidden = int(config.hidden_size)
    if family.head in ("mlp", "prm_mlp"):
        # qwen2_rm.py / qwen3_rm.py: one score, whatever num_labels says; vLLM's
        # Qwen2ForProcessRewardModel: the same MLP with 2 labels per token.
        out = 2 if family.head == "prm_mlp" else 1
        head: nn.Module = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))
        prefix = "score."
    elif family.head == "classification_head":  # llama_classification.py
        size = getattr(config, "classification_out_size", None)
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"{family.architecture} needs `classification_out_size` in its config")
        head = nn.Linear(hidden, size, bias=False)
        prefix = "classification_head."
    elif family.head == "weighted_normal":
        head = _WeightedNormal(hidden, int(config.num_labels))
        # checkpoint: score.weight, weights.fc.{0,2,4}.{weight,bias}
        return head, {("weights." + n if n.startswith("fc.") else n): n for n in head.state_dict()}
    else:
        raise ValueError(f"{family.architecture}: no separate head for {family.head!r}")
    return head, {prefix + n: n for n in head.state_dict()}


def _safetensors_files(folder: Path) -> list[Path]:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [folder / s for s in shards]
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ValueError(f"{folder} has no safetensors weights (the score head is read from them)")
    return files


def load_head(family: AnyFamily, config: Any, folder: Path, dtype: torch.dtype) -> nn.Module:
    """SGLang's head for `family`, with the checkpoint's weights; the float16 part of `weighted_normal`
    stays float16 as in SGLang."""
    from safetensors import safe_open

    head, names = _build(family, config)
    found: dict[str, torch.Tensor] = {}
    for file in _safetensors_files(folder):
        with safe_open(str(file), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 (safe_open is not a mapping)
                if key in names:
                    found[names[key]] = f.get_tensor(key)
    missing = sorted(k for k, v in names.items() if v not in found)
    if missing:
        raise ValueError(f"{family.architecture} checkpoint {folder} lacks the head tensors {missing}")
    expected = head.state_dict()
    for key, name in names.items():
        if tuple(found[name].shape) != tuple(expected[name].shape):
            raise ValueError(
                f"{family.architecture}: head tensor {key} has shape {tuple(found[name].shape)}, "
                f"SGLang's head needs {tuple(expected[name].shape)}"
            )
    head.load_state_dict({k: v.to(expected[k].dtype) for k, v in found.items()}, strict=True)
    for param in head.parameters():
        if param.dtype != torch.float16:
            param.data = param.data.to(dtype)
    return head.eval()


def cross_encoder_activation(config: Any) -> nn.Module:
    """SGLang's `get_cross_encoder_activation_function`: the class `sbert_ce_default_activation_function`
    names, which must live under `torch.nn.modules` (a config must not pick arbitrary code), built without
    arguments; identity when the config names none."""
    name = getattr(config, "sbert_ce_default_activation_function", None)
    if name is None:
        return nn.Identity()
    module_name, _, attr = str(name).rpartition(".")
    if not module_name.startswith("torch.nn.modules"):
        raise ValueError(
            f"sbert_ce_default_activation_function {name!r}: only classes under torch.nn.modules are allowed"
        )
    try:
        cls = getattr(importlib.import_module(module_name), attr, None)
    except ImportError:
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
        raise ValueError(f"sbert_ce_default_activation_function {name!r} is not a torch.nn module class")
    activation: nn.Module = cls()
    return activation
