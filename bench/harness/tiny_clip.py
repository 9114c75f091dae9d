"""A tiny CLIP (`CLIPModel`) built at test time whose weights make the matching caption score highest.

Random weights would order captions by chance, so the weights are set by hand: both towers carry an image's
mean colour / a caption's colour word through unchanged, and the projections map them onto the same three
axes (red, green, blue).

- Hidden size 6, in pairs (+R, -R, +G, -G, +B, -B): every vector the towers make has mean 0, so a LayerNorm
  (weight 1, bias 0) only rescales it and keeps its direction.
- Text: the word-level tokenizer appends `</s>`; `red`/`green`/`blue` embed as (k, -k) on their pair, every
  other token as 0, positions as 0. One layer whose attention is uniform (q, k = 0) with v and out = identity
  and whose MLP adds 0 (fc2 = 0): the last token (`</s>`, where SGLang and HF pool) holds the mean of the
  caption's colour words. `text_projection` reads each pair as (+ - -)/2.
- Vision: 8x8 images (processor: resize, crop, rescale to [0, 1], mean 0, std 1), 4x4 patches; the patch
  convolution writes the patch's mean R, G, B as (+c, -c) pairs, the class token and positions are 0, the
  same uniform attention gives the class token the mean over patches, `visual_projection` reads the pairs.

So a caption's embedding points along its colour, an image's along its mean colour: a red image against
"a red photo" has cosine 1 and against "a blue photo" 0; a blue image the other way round.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

WORDS = ["<pad>", "<unk>", "<s>", "</s>", "a", "photo", "of", "the", "square", "red", "green", "blue"]
COLOURS = {"red": 0, "green": 1, "blue": 2}
HIDDEN = 6
IMAGE_SIZE = 8


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", vocab["</s>"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="<pad>", eos_token="</s>", bos_token="<s>", unk_token="<unk>"
    )


def _pairs_projection() -> Any:
    import torch

    proj = torch.zeros(3, HIDDEN)
    for axis in range(3):
        proj[axis, 2 * axis] = 0.5
        proj[axis, 2 * axis + 1] = -0.5
    return proj


def _pass_through_layers(encoder: Any) -> None:
    """Uniform attention carrying its input through (q, k = 0; v, out = I), an MLP that adds nothing."""
    import torch

    for layer in encoder.layers:
        attn = layer.self_attn
        for lin in (attn.q_proj, attn.k_proj):
            lin.weight.zero_()
            lin.bias.zero_()
        for lin in (attn.v_proj, attn.out_proj):
            lin.weight.copy_(torch.eye(HIDDEN))
            lin.bias.zero_()
        layer.mlp.fc2.weight.zero_()
        layer.mlp.fc2.bias.zero_()


def build_tiny_clip(path: str | Path) -> Path:
    """Write the checkpoint (config, safetensors, tokenizer, CLIP image processor config) to `path`."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    path = Path(path)
    tok = _tokenizer()
    text = {
        "vocab_size": len(WORDS), "hidden_size": HIDDEN, "intermediate_size": 4, "num_hidden_layers": 1,
        "num_attention_heads": 1, "max_position_embeddings": 16, "pad_token_id": 0, "bos_token_id": 2,
        "eos_token_id": 3,  # not 2: HF's legacy eos==2 path pools at the argmax token id instead
        "projection_dim": 3,
    }  # fmt: skip
    vision = {
        "hidden_size": HIDDEN, "intermediate_size": 4, "num_hidden_layers": 1, "num_attention_heads": 1,
        "image_size": IMAGE_SIZE, "patch_size": 4, "num_channels": 3, "projection_dim": 3,
    }  # fmt: skip
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=3)
    model = CLIPModel(config).eval()
    with torch.no_grad():
        emb = model.text_model.embeddings
        emb.token_embedding.weight.zero_()
        emb.position_embedding.weight.zero_()
        for word, axis in COLOURS.items():
            emb.token_embedding.weight[WORDS.index(word), 2 * axis] = 4.0
            emb.token_embedding.weight[WORDS.index(word), 2 * axis + 1] = -4.0
        _pass_through_layers(model.text_model.encoder)
        vis = model.vision_model.embeddings
        vis.class_embedding.zero_()
        vis.position_embedding.weight.zero_()
        conv = torch.zeros_like(vis.patch_embedding.weight)  # (HIDDEN, 3, 4, 4)
        for channel in range(3):
            conv[2 * channel, channel] = 1.0 / 16
            conv[2 * channel + 1, channel] = -1.0 / 16
        vis.patch_embedding.weight.copy_(conv)
        _pass_through_layers(model.vision_model.encoder)
        model.text_projection.weight.copy_(_pairs_projection())
        model.visual_projection.weight.copy_(_pairs_projection())
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    CLIPImageProcessorPil(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=[0.0, 0.0, 0.0],
        image_std=[1.0, 1.0, 1.0],
    ).save_pretrained(path)
    return path


def png_data_url(rgb: tuple[int, int, int], size: tuple[int, int] = (12, 10)) -> str:
    """A one-colour PNG as a `data:image/png;base64,` URL."""
    import base64
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, rgb).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def build_random_clip(
    path: str | Path, *, hidden_size: int = 64, layers: int = 2, image_size: int = 64, patch_size: int = 16
) -> Path:
    """A random-weight CLIP of a given size (benchmarks: real towers' cost, no meaning in the scores)."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    path = Path(path)
    common = {
        "hidden_size": hidden_size, "intermediate_size": hidden_size * 4, "num_hidden_layers": layers,
        "num_attention_heads": max(1, hidden_size // 32), "projection_dim": hidden_size,
    }  # fmt: skip
    text = {**common, "vocab_size": len(WORDS), "max_position_embeddings": 77, "pad_token_id": 0,
            "bos_token_id": 2, "eos_token_id": 3}  # fmt: skip
    vision = {**common, "image_size": image_size, "patch_size": patch_size, "num_channels": 3}
    torch.manual_seed(0)
    model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=hidden_size)).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    _tokenizer().save_pretrained(path)
    CLIPImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    ).save_pretrained(path)
    return path
