"""Tiny random-weight checkpoints built at test time (no model can be downloaded here).

Each builder writes a complete Hugging Face checkpoint directory (config, safetensors weights, tokenizer
with a chat template) that `AutoModel*.from_pretrained` and `AutoTokenizer.from_pretrained` reload
unchanged, so a test can launch a real server on it:

    from bench.harness.tiny_models import build_tiny_qwen2, build_tiny_llama
    rm_dir = build_tiny_qwen2(tmp / "rm", kind="seq_cls")      # Qwen2ForSequenceClassification, num_labels=1
    judge_dir = build_tiny_qwen2(tmp / "judge", kind="causal")  # Qwen2ForCausalLM
    llama_dir = build_tiny_llama(tmp / "llama", kind="causal")

Tokenizers are byte-level BPE over the 256 byte symbols plus a few merges, so any text round-trips. The pad
token is never the eos token: sequence-classification heads find the last real token by the pad id.
Weights are deterministic for a given `seed`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

ModelKind = Literal["causal", "seq_cls"]

# ChatML, the format Qwen2 instruct models use; `add_generation_prompt` opens the assistant turn.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# A Llama-2 style template; like real Llama templates it writes the bos token itself.
LLAMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'system' %}{{ '<<SYS>>' + message['content'] + '<</SYS>>' }}"
    "{% else %}{{ ' ' + message['content'] + '</s>' }}{% endif %}"
    "{% endfor %}"
)

# A few merges so the BPE path is exercised (pairs of byte-level symbols; "Ġ" is the byte-level space).
_MERGES: list[tuple[str, str]] = [
    ("Ġ", "t"),
    ("h", "e"),
    ("Ġt", "he"),
    ("i", "n"),
    ("Ġ", "a"),
    ("e", "r"),
    ("o", "n"),
    ("Ġ", "s"),
    ("r", "e"),
    ("a", "t"),
]


# A reward model is a sequence classifier with one label: its logit is the score.
_ONE_LABEL: dict[str, Any] = {"num_labels": 1}


def _byte_level_vocab() -> dict[str, int]:
    """The 256 byte-level symbols (GPT-2's printable mapping of bytes) followed by the merged symbols."""
    from tokenizers.pre_tokenizers import ByteLevel

    symbols = sorted(ByteLevel.alphabet())
    vocab = {sym: i for i, sym in enumerate(symbols)}
    for left, right in _MERGES:
        vocab.setdefault(left + right, len(vocab))
    return vocab


def _build_qwen2_tokenizer() -> Any:
    from transformers import AddedToken, Qwen2Tokenizer

    # Merges as tuples (the stubs say strings; tokenizers takes pairs); no unk token for a byte-level vocab.
    kwargs: dict[str, Any] = {"merges": list(_MERGES), "unk_token": None}
    tok = Qwen2Tokenizer(
        vocab=_byte_level_vocab(), eos_token="<|im_end|>", pad_token="<|endoftext|>", **kwargs
    )
    tok.add_special_tokens(
        {"additional_special_tokens": [AddedToken("<|im_start|>", special=True, normalized=False)]}
    )
    tok.chat_template = CHATML_TEMPLATE
    return tok


def _build_llama_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(vocab=_byte_level_vocab(), merges=list(_MERGES), fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    bos_id = tok.convert_tokens_to_ids("<s>")
    backend = tok.backend_tokenizer
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A $B", special_tokens=[("<s>", bos_id)]
    )
    tok.chat_template = LLAMA_TEMPLATE
    return tok


def _save(model: Any, tokenizer: Any, path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _check_kind(kind: str) -> None:
    if kind not in ("causal", "seq_cls"):
        raise ValueError(f"kind must be 'causal' or 'seq_cls', not {kind!r}")


def _build(  # type: ignore[no-untyped-def]
    path: Path,
    kind: ModelKind,
    tok,
    arch: str,
    *,
    bos_token_id: int | None,
    seed: int,
    hidden_size: int,
    num_layers: int,
    num_heads: int,
    max_position_embeddings: int,
) -> Path:
    """One tiny checkpoint of `arch` (`Qwen2` or `Llama`): config, seeded random weights, saved with `tok`."""
    _check_kind(kind)
    import torch
    import transformers

    config = getattr(transformers, f"{arch}Config")(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=max(1, num_heads // 2),
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=False,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=bos_token_id,
        num_labels=1,
    )
    torch.manual_seed(seed)
    head = "ForCausalLM" if kind == "causal" else "ForSequenceClassification"
    model = getattr(transformers, f"{arch}{head}")(config).eval()
    if kind == "causal":
        model.generation_config.pad_token_id = tok.pad_token_id
        model.generation_config.eos_token_id = tok.eos_token_id
    return _save(model, tok, path)


def build_tiny_qwen2(
    path: str | Path,
    kind: ModelKind = "causal",
    *,
    seed: int = 0,
    hidden_size: int = 32,
    num_layers: int = 2,
    num_heads: int = 4,
    max_position_embeddings: int = 512,
) -> Path:
    """Write a tiny Qwen2 checkpoint (`Qwen2ForCausalLM`, or `Qwen2ForSequenceClassification` with
    num_labels=1, i.e. a reward model) with a ChatML-templated Qwen2 tokenizer to `path`; return `path`."""
    return _build(
        Path(path), kind, _build_qwen2_tokenizer(), "Qwen2", bos_token_id=None, seed=seed,
        hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
        max_position_embeddings=max_position_embeddings,
    )  # fmt: skip


def build_tiny_llama(
    path: str | Path,
    kind: ModelKind = "causal",
    *,
    seed: int = 0,
    hidden_size: int = 32,
    num_layers: int = 2,
    num_heads: int = 4,
    max_position_embeddings: int = 512,
) -> Path:
    """Write a tiny Llama checkpoint (`LlamaForCausalLM` or `LlamaForSequenceClassification`, num_labels=1)
    with a byte-level BPE tokenizer (bos `<s>`, eos `</s>`, pad `<pad>`) to `path`; return `path`."""
    tok = _build_llama_tokenizer()
    return _build(
        Path(path), kind, tok, "Llama", bos_token_id=tok.bos_token_id, seed=seed, hidden_size=hidden_size,
        num_layers=num_layers, num_heads=num_heads, max_position_embeddings=max_position_embeddings,
    )  # fmt: skip


# Qwen2-VL's chat format: each image part is the vision span around one `<|image_pad|>` placeholder, which
# the processor (here the model server) expands to the image's vision tokens.
QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or part['type'] == 'image_url' %}"
    "{{ '<|vision_start|><|image_pad|><|vision_end|>' }}"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{{ '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")


def build_tiny_qwen2_vl(path: str | Path, *, seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny `Qwen2VLForConditionalGeneration` (2 text layers, a 1-block vision tower, M-RoPE) with
    a ChatML tokenizer holding Qwen2-VL's vision tokens and a `Qwen2VLImageProcessor` config (small
    `max_pixels`, so an image is a few vision tokens) to `path`; return `path`. No processor class is
    saved: transformers' Qwen2-VL processor needs torchvision for its video half; the server combines the
    tokenizer and the image processor itself."""
    import torch
    from transformers import (
        AddedToken,
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    path = Path(path)
    tok = _build_qwen2_tokenizer()
    tok.add_special_tokens(
        {
            "additional_special_tokens": [
                AddedToken(t, special=True, normalized=False) for t in ("<|im_start|>", *_VISION_TOKENS)
            ]
        }
    )
    tok.chat_template = QWEN2_VL_TEMPLATE
    ids = {t: tok.convert_tokens_to_ids(t) for t in _VISION_TOKENS}
    heads = 4
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tok), "hidden_size": hidden_size, "intermediate_size": hidden_size * 2,
            "num_hidden_layers": 2, "num_attention_heads": heads, "num_key_value_heads": heads // 2,
            "max_position_embeddings": 2048, "tie_word_embeddings": False, "bos_token_id": None,
            "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
            # M-RoPE sections (temporal, height, width) over half the head dimension
            "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, hidden_size // heads // 2 - 2]},
        },
        vision_config={
            "depth": 1, "embed_dim": 32, "hidden_size": hidden_size, "num_heads": 2, "mlp_ratio": 2,
            "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2, "in_channels": 3,
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )  # fmt: skip
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    _save(model, tok, path)
    Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=112 * 112).save_pretrained(path)
    return path
