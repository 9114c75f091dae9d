"""SGLang's heads over a base model refuse a checkpoint that does not hold them; the activation a config names
must be a torch.nn module class (a config must not pick code to run)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from rewardfleet.services.model_server.runners.families import SUPPORTED
from tests.tiny_reward_models import build_tiny_reward_model


def test_missing_head_tensor_is_named(tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    from rewardfleet.services.model_server.runners.reward_heads import load_head

    path = build_tiny_reward_model(tmp_path / "rm", "Qwen2ForRewardModel")
    config = SimpleNamespace(hidden_size=32, num_labels=1)
    family = SUPPORTED["Qwen2ForRewardModel"]
    head = load_head(family, config, path, torch.float32)
    tensors = load_file(str(path / "model.safetensors"))
    assert torch.equal(head.state_dict()["2.bias"], tensors["score.2.bias"])

    del tensors["score.2.bias"]
    save_file(tensors, str(path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"lacks the head tensors \['score.2.bias'\]"):
        load_head(family, config, path, torch.float32)

    tensors["score.2.bias"] = torch.zeros(3)
    save_file(tensors, str(path / "model.safetensors"))
    with pytest.raises(ValueError, match=r"score.2.bias has shape \(3,\), SGLang's head needs \(1,\)"):
        load_head(family, config, path, torch.float32)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        (None, "Identity"),
        ("torch.nn.modules.activation.Sigmoid", "Sigmoid"),
        ("os.system", None),
        ("torch.nn.modules.activation.no_such_thing", None),
        ("torch.nn.modules.nope.Sigmoid", None),
        ("torch.nn.modules.activation.F", None),  # a module attribute, not an nn.Module class
    ],
)
def test_cross_encoder_activation(name: str | None, ok: str | None) -> None:
    from rewardfleet.services.model_server.runners.reward_heads import cross_encoder_activation

    config = SimpleNamespace(sbert_ce_default_activation_function=name)
    if ok is None:
        with pytest.raises(ValueError, match="sbert_ce_default_activation_function"):
            cross_encoder_activation(config)
    else:
        assert type(cross_encoder_activation(config)).__name__ == ok
