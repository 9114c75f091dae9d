"""Tiny random-weight checkpoints of every reward / classification family the CPU server serves.

`build_tiny_reward_model(path, architecture)` writes a checkpoint folder of that SGLang family:

- families transformers has (`Qwen3ForSequenceClassification`, `Gemma2ForSequenceClassification`,
  `BertForSequenceClassification`, `XLMRobertaForSequenceClassification`, ...): the transformers class,
  `save_pretrained`;
- remote-code families (`Qwen2ForRewardModel`, `Qwen3ForRewardModel`, `LlamaForClassification`,
  `LlamaForSequenceClassificationWithNormal_Weights`): laid out as on the Hub: the base model's tensors under
  `model.`, the head's tensors under the names SGLang's `load_weights` reads (`score.0.weight`, ...), a config
  that names the architecture and an `auto_map` pointing at modeling code the folder does not have (the
  server must never need it).

Cross-encoders get a WordPiece (BERT) or Unigram (XLM-R) tokenizer over lowercase letters, digits and
punctuation; BERT's config names `torch.nn.modules.activation.Sigmoid` as its
`sbert_ce_default_activation_function`, as sentence-transformers cross-encoders do.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from bench.harness.tiny_models import _build_llama_tokenizer, _build_qwen2_tokenizer, _save

HIDDEN = 32
_DECODER = {
    "num_hidden_layers": 2,
    "hidden_size": HIDDEN,
    "intermediate_size": 2 * HIDDEN,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 256,
    "tie_word_embeddings": False,
}
# architecture -> (config class, tokenizer builder, transformers model class or base model class, head)
_FAMILIES: dict[str, tuple[str, str, str, str | None]] = {
    "Qwen2ForSequenceClassification": ("Qwen2Config", "qwen2", "Qwen2ForSequenceClassification", None),
    "Qwen3ForSequenceClassification": ("Qwen3Config", "qwen2", "Qwen3ForSequenceClassification", None),
    "LlamaForSequenceClassification": ("LlamaConfig", "llama", "LlamaForSequenceClassification", None),
    "Gemma2ForSequenceClassification": ("Gemma2Config", "llama", "Gemma2ForSequenceClassification", None),
    "Qwen2ForRewardModel": ("Qwen2Config", "qwen2", "Qwen2Model", "mlp"),
    "Qwen3ForRewardModel": ("Qwen3Config", "qwen2", "Qwen3Model", "mlp"),
    "LlamaForClassification": ("LlamaConfig", "llama", "LlamaModel", "classification_head"),
    "LlamaForSequenceClassificationWithNormal_Weights": ("LlamaConfig", "llama", "LlamaModel", "weighted"),
}
CROSS_ENCODERS = ("BertForSequenceClassification", "XLMRobertaForSequenceClassification")
ARCHITECTURES = (*_FAMILIES, *CROSS_ENCODERS)
WEIGHTED_NUM_LABELS = 4  # LlamaForSequenceClassificationWithNormal_Weights: (reward, other) pairs
CLASSIFICATION_OUT_SIZE = 3  # LlamaForClassification

_CHARS = list(string.ascii_lowercase + string.digits + string.punctuation)
_WORDS = ["the", "answer", "is", "hello", "world", "good", "bad"]


def _head_tensors(head: str, seed: int) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(seed + 1)

    def rand(*shape: int, dtype: Any = torch.float32) -> Any:
        return (torch.randn(*shape, generator=g) * 0.5).to(dtype)

    if head == "mlp":
        return {
            "score.0.weight": rand(HIDDEN, HIDDEN),
            "score.0.bias": rand(HIDDEN),
            "score.2.weight": rand(1, HIDDEN),
            "score.2.bias": rand(1),
        }
    if head == "classification_head":
        return {"classification_head.weight": rand(CLASSIFICATION_OUT_SIZE, HIDDEN)}
    half, n = torch.float16, WEIGHTED_NUM_LABELS
    return {
        "score.weight": rand(n, HIDDEN),
        "weights.fc.0.weight": rand(HIDDEN, HIDDEN, dtype=half),
        "weights.fc.0.bias": rand(HIDDEN, dtype=half),
        "weights.fc.2.weight": rand(HIDDEN, HIDDEN, dtype=half),
        "weights.fc.2.bias": rand(HIDDEN, dtype=half),
        "weights.fc.4.weight": rand(n // 2, HIDDEN, dtype=half),
        "weights.fc.4.bias": rand(n // 2, dtype=half),
    }


def _decoder(path: Path, arch: str, seed: int) -> Path:
    import torch
    import transformers
    from safetensors.torch import save_file

    config_cls, tok_kind, model_cls, head = _FAMILIES[arch]
    tok = _build_qwen2_tokenizer() if tok_kind == "qwen2" else _build_llama_tokenizer()
    extra: dict[str, Any] = {} if config_cls == "Qwen2Config" else {"head_dim": HIDDEN // 4}
    if head == "classification_head":
        extra["classification_out_size"] = CLASSIFICATION_OUT_SIZE
    config = getattr(transformers, config_cls)(
        vocab_size=len(tok),
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.bos_token_id,
        num_labels=WEIGHTED_NUM_LABELS if head == "weighted" else 1,
        **_DECODER,
        **extra,
    )
    torch.manual_seed(seed)
    model = getattr(transformers, model_cls)(config).eval()
    if head is None:
        return _save(model, tok, path)
    path.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.contiguous() for k, v in model.state_dict().items()}
    tensors.update(_head_tensors(head, seed))
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
    config.architectures = [arch]
    config.save_pretrained(path)
    data = json.loads((path / "config.json").read_text())
    data["auto_map"] = {"AutoConfig": f"configuration_rm.{arch}Config", "AutoModel": f"modeling_rm.{arch}"}
    (path / "config.json").write_text(json.dumps(data, indent=2))
    tok.save_pretrained(path)
    return path


def _bert(path: Path, seed: int) -> Path:
    import torch
    import transformers

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {t: i for i, t in enumerate(specials + _CHARS + ["##" + c for c in _CHARS] + _WORDS)}
    tok = transformers.BertTokenizer(vocab=vocab)
    config = transformers.BertConfig(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=512,
        num_labels=1,
        initializer_range=0.2,  # wide enough that different inputs get clearly different scores
        pad_token_id=tok.pad_token_id,
        sbert_ce_default_activation_function="torch.nn.modules.activation.Sigmoid",
    )
    torch.manual_seed(seed)
    return _save(transformers.BertForSequenceClassification(config).eval(), tok, path)


def _xlm_roberta(path: Path, seed: int) -> Path:
    import torch
    import transformers

    pieces = [("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -1.0)]
    pieces += [(c, -2.0) for c in _CHARS] + [("▁" + w, -0.5) for w in _WORDS] + [("<mask>", 0.0)]
    tok = transformers.XLMRobertaTokenizer(vocab=pieces)
    config = transformers.XLMRobertaConfig(
        vocab_size=len(tok),
        hidden_size=HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=2 * HIDDEN,
        max_position_embeddings=514,  # 512 tokens: positions start after the padding index (1)
        type_vocab_size=1,
        num_labels=1,
        initializer_range=0.2,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    return _save(transformers.XLMRobertaForSequenceClassification(config).eval(), tok, path)


def build_tiny_reward_model(path: str | Path, architecture: str, *, seed: int = 0) -> Path:
    """Write a tiny checkpoint of `architecture` (one of `ARCHITECTURES`) to `path`; return `path`."""
    path = Path(path)
    if architecture == "BertForSequenceClassification":
        return _bert(path, seed)
    if architecture == "XLMRobertaForSequenceClassification":
        return _xlm_roberta(path, seed)
    if architecture not in _FAMILIES:
        raise ValueError(f"no tiny builder for {architecture}; known: {list(ARCHITECTURES)}")
    return _decoder(path, architecture, seed)
