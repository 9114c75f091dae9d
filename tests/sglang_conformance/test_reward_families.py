"""The CPU server's reward/classification families (`runners/families.py`) against SGLang 0.5.23's source.

Every `*ForSequenceClassification`, `*ForRewardModel` and `*ForClassification` class in an `EntryClass` list
of the wheel's `srt/models/*.py` must be served or listed as unsupported with a reason; a family SGLang adds
fails here until someone decides. For each served one, the pooler and the head the CPU server applies must be
the ones SGLang's class builds (read with `ast`). tests/model_server/test_reward_families.py then checks the
served numbers against a direct computation of that pooling and head on a tiny checkpoint of each family.
"""

from __future__ import annotations

import ast
import re

import pytest

from rewardfleet.services.model_server.runners.families import SUPPORTED, UNSUPPORTED, RewardFamily
from tests.sglang_conformance import sglang_models as sm
from tests.sglang_conformance import sglang_source as sgl

LAST_POOLER = "Pooler(pooling_type=PoolingType.LAST, normalize=False)"
MLP_HEAD = (
    "nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.ReLU(), "
    "nn.Linear(config.hidden_size, self.num_labels))"
)
LINEAR_HEAD = re.compile(r"nn\.Linear\(config\.hidden_size, (self|config)\.num_labels(, bias=False)?\)")
WEIGHTS_FC = (
    "torch.nn.Sequential(torch.nn.Linear(hidden_size, hidden_size, dtype=torch.float16), torch.nn.SELU(), "
    "torch.nn.Linear(hidden_size, hidden_size, dtype=torch.float16), torch.nn.SELU(), "
    "torch.nn.Linear(hidden_size, num_label // 2, dtype=torch.float16))"
)
# SGLang's score Linear has a bias here that the transformers class (and so every checkpoint it saves) lacks;
# SGLang's loader leaves it at its initial value. The CPU server uses the checkpoint's head (docs).
SGLANG_BIAS_NOT_IN_CHECKPOINTS = {"Qwen2ForSequenceClassification", "Qwen3ForSequenceClassification"}


def test_every_family_in_the_wheel_is_served_or_refused_with_a_reason() -> None:
    families = sm.reward_families()
    assert "BertForSequenceClassification" in families and "Qwen2ForRewardModel" in families
    undecided = sorted(set(families) - set(SUPPORTED) - set(UNSUPPORTED))
    assert not undecided, f"SGLang families neither served nor listed as unsupported: {undecided}"
    stale = sorted((set(SUPPORTED) | set(UNSUPPORTED)) - set(families))
    assert not stale, f"listed but not in any EntryClass of the wheel: {stale}"
    assert not set(SUPPORTED) & set(UNSUPPORTED)
    for arch, reason in UNSUPPORTED.items():
        assert len(reason) > 20, arch
    for arch, family in SUPPORTED.items():
        assert families[arch] == family.sglang_file, arch


def test_sglangs_classification_registry_is_served() -> None:
    registry = sgl.embedding_registry()._CLASSIFICATION_ARCHITECTURES
    assert set(registry) <= set(SUPPORTED)


def _pooling(cls: sm.ModelClass) -> str:
    pooler = cls.attr("pooler") or ""
    if pooler.startswith("CrossEncodingPooler("):
        return "cls"
    if pooler == LAST_POOLER:
        return "last"
    # Qwen3ForSequenceClassification builds a normalising LAST pooler, but its forward goes through
    # `score_and_pool`, which takes only the pooler's pooling type (checked below) and never normalises.
    if pooler.startswith("Pooler(pooling_type=PoolingType.LAST") and "score_and_pool" in cls.calls:
        return "last"
    raise AssertionError(f"{cls.name}: pooler {pooler!r} is none the CPU server knows")


def test_score_and_pool_never_normalises() -> None:
    text = sm.function_source("srt/layers/pooler.py", "score_and_pool")
    assert "normalize" not in text and "pooler.pooling_type" in text


def test_cross_encoders_pool_the_first_token_then_the_configs_activation() -> None:
    assert "hidden_states[0, :]" in ast_source(sm.model_class("bert.py", "BertPooler"))
    roberta_head = sm.model_class("roberta.py", "RobertaClassificationHead")
    assert "features[0, :]" in ast_source(roberta_head)
    activation = sm.function_source("srt/layers/activation.py", "get_cross_encoder_activation_function")
    for fact in ("sbert_ce_default_activation_function", "torch.nn.modules.", "nn.Identity()"):
        assert fact in activation, fact


def ast_source(cls: sm.ModelClass) -> str:
    return ast.unparse(cls.node)


@pytest.mark.parametrize("family", list(SUPPORTED.values()), ids=list(SUPPORTED))
def test_pooler_and_head_are_sglangs(family: RewardFamily) -> None:
    cls = sm.model_class(family.sglang_file, family.architecture)
    assert _pooling(cls) == family.pooling
    if family.head == "linear":
        score = cls.attr("score") or ""
        assert LINEAR_HEAD.fullmatch(score), score
        has_bias = "bias=False" not in score
        assert has_bias == (family.architecture in SGLANG_BIAS_NOT_IN_CHECKPOINTS)
        assert family.base_model is None  # the transformers class's own head
    elif family.head == "mlp":
        assert cls.attr("score") == MLP_HEAD and cls.attr("num_labels") == "1"
    elif family.head == "classification_head":
        head = cls.attr("classification_head")
        assert head == "nn.Linear(config.hidden_size, config.classification_out_size, bias=False)"
    elif family.head == "weighted_normal":
        assert cls.attr("weights") == "self.Weights(config.hidden_size, self.num_labels)"
        text = ast_source(cls)
        assert f"self.fc = {WEIGHTS_FC}" in text
        assert "pooled_logits.view(-1, self.num_labels // 2, 2)[:, :, 0]" in text
        assert "(rews * pooled_weights).sum(dim=-1)" in text
        assert cls.attr("score") == "nn.Linear(config.hidden_size, self.num_labels, bias=False)"
    else:
        assert family.head == "cross_encoder"
        assert (cls.attr("pooler") or "").startswith("CrossEncodingPooler(config, self.classifier")


def test_sglang_squeezes_a_cross_encoder_score_which_its_embeddings_route_cannot_carry() -> None:
    """Why the CPU server answers `[score]` for a cross-encoder too (docs/model_server.md): SGLang's
    `CrossEncodingPooler` squeezes the label dimension, and a bare number is no valid `EmbeddingObject`."""
    pooler = sm.class_source("srt/layers/pooler.py", "CrossEncodingPooler")
    assert ".squeeze(-1)" in pooler
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        sgl.protocol().EmbeddingObject(embedding=0.73, index=0)
    sgl.protocol().EmbeddingObject(embedding=[0.73], index=0)
