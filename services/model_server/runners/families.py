"""SGLang 0.5.23's reward and classification families, and how the CPU server serves each one.

Every `*ForSequenceClassification`, `*ForRewardModel` and `*ForClassification` class in the `EntryClass` lists
of SGLang's `srt/models/*.py` is either served here, pooled and scored exactly as SGLang does, or listed in
`UNSUPPORTED` with the reason (tests/sglang_conformance/test_reward_families.py reads the wheel and fails on
a family that is neither). SGLang's pooling for these is:

- decoder reward models and classifiers: the hidden state of each sequence's true last token
  (`Pooler(PoolingType.LAST, normalize=False)`; `score_and_pool` never normalises), then the head;
- cross-encoders (BERT, XLM-RoBERTa): `CrossEncodingPooler`: the first token ([CLS] / <s>) through the
  model's own pooler or classification head, then the activation the config names in
  `sbert_ce_default_activation_function` (identity when it names none).

Where transformers has the class, the checkpoint loads with `AutoModelForSequenceClassification` and its own
head is used; where the class exists only as remote code on the Hub, the CPU server loads the base model that
transformers has and builds SGLang's head over it from the checkpoint's weights (`reward_heads.py`); it never
runs code shipped with a checkpoint.

Light on purpose (no torch): the front process and the CLI read it to refuse a checkpoint before loading.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Pooling = Literal["last", "cls"]
# What sits after the pooled hidden state (SGLang's attribute and shape):
#   linear               `score`: Linear(hidden, num_labels), the transformers class's own head
#   mlp                  `score`: Linear(hidden, hidden) -> ReLU -> Linear(hidden, 1)        (remote code)
#   classification_head  `classification_head`: Linear(hidden, classification_out_size)      (remote code)
#   weighted_normal      `score` over num_labels, weighted by `weights.fc` (a float16 SELU MLP)  (remote code)
#   cross_encoder        the transformers class's pooler + classifier on the first token, then the activation
Head = Literal["linear", "mlp", "classification_head", "weighted_normal", "cross_encoder"]


@dataclass(frozen=True, slots=True)
class RewardFamily:
    architecture: str
    sglang_file: str  # srt/models/<file> in the SGLang wheel
    pooling: Pooling
    head: Head
    # The base model class transformers has, when the checkpoint's class is remote code (None: transformers
    # has the architecture itself and loads it with AutoModelForSequenceClassification).
    base_model: str | None = None


def _family(arch: str, file: str, pooling: Pooling, head: Head, base: str | None = None) -> RewardFamily:
    return RewardFamily(arch, file, pooling, head, base)


SUPPORTED: dict[str, RewardFamily] = {
    f.architecture: f
    for f in (
        _family("BertForSequenceClassification", "bert.py", "cls", "cross_encoder"),
        _family("XLMRobertaForSequenceClassification", "roberta.py", "cls", "cross_encoder"),
        _family("LlamaForSequenceClassification", "llama_reward.py", "last", "linear"),
        _family(
            "LlamaForSequenceClassificationWithNormal_Weights",
            "llama_reward.py",
            "last",
            "weighted_normal",
            "LlamaModel",
        ),
        _family(
            "LlamaForClassification", "llama_classification.py", "last", "classification_head", "LlamaModel"
        ),
        _family("Qwen2ForSequenceClassification", "qwen2_classification.py", "last", "linear"),
        _family("Qwen2ForRewardModel", "qwen2_rm.py", "last", "mlp", "Qwen2Model"),
        _family("Qwen3ForSequenceClassification", "qwen3_classification.py", "last", "linear"),
        _family("Qwen3ForRewardModel", "qwen3_rm.py", "last", "mlp", "Qwen3Model"),
        _family("Gemma2ForSequenceClassification", "gemma2_reward.py", "last", "linear"),
    )
}

_NO_TRANSFORMERS_MODEL = (
    "transformers has no {model} model; the checkpoint's modeling code is remote code on the Hub, which "
    "the CPU server does not run"
)
_TRANSFORMERS_BACKEND = (
    "SGLang's transformers-backend fallback (--model-impl transformers, for architectures it has no class "
    "for), not an architecture a checkpoint names; it drops the checkpoint's score/classifier weights and "
    "returns the L2-normalised last hidden state, which is no score to reproduce"
)

UNSUPPORTED: dict[str, str] = {
    "InternLM2ForRewardModel": _NO_TRANSFORMERS_MODEL.format(model="InternLM2"),
    "NanbeigeForSequenceClassification": _NO_TRANSFORMERS_MODEL.format(model="Nanbeige"),
    "TransformersForSequenceClassification": _TRANSFORMERS_BACKEND,
    "TransformersMoEForSequenceClassification": _TRANSFORMERS_BACKEND,
    "TransformersMultiModalForSequenceClassification": _TRANSFORMERS_BACKEND,
    "TransformersMultiModalMoEForSequenceClassification": _TRANSFORMERS_BACKEND,
}

_REWARD_SUFFIXES = ("ForSequenceClassification", "ForRewardModel", "ForClassification")


def is_reward_architecture(arch: str) -> bool:
    """A sequence classifier or reward model by name (served or not)."""
    return (
        arch in SUPPORTED
        or arch in UNSUPPORTED
        or "ForSequenceClassification" in arch
        or arch.endswith(_REWARD_SUFFIXES)
    )


def reward_family(architectures: list[str]) -> RewardFamily:
    """The family the checkpoint's `architectures` name, or a ValueError naming it and what is served."""
    for arch in architectures:
        if arch in SUPPORTED:
            return SUPPORTED[arch]
    named = ", ".join(architectures) or "no architecture"
    reasons = [f"{a}: {UNSUPPORTED[a]}" for a in architectures if a in UNSUPPORTED]
    why = f" ({'; '.join(reasons)})" if reasons else ""
    raise ValueError(
        f"cannot serve the reward/classification checkpoint {named}{why}. The CPU server serves SGLang "
        f"0.5.23's families, pooled and scored as SGLang does: {', '.join(sorted(SUPPORTED))}"
    )
