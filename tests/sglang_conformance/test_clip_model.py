"""The CPU server's CLIP pooling and multimodal embedding request, checked against SGLang 0.5.23's source.

`srt/models/clip.py` imports CUDA-only packages, so its `CLIPModel` is read with `ast` (sglang_models.py);
the protocol classes import (sglang_source.py). What runners/clip.py must match: an image input pools the
vision tower's class token, projects it and L2-normalises it; a text input pools the last token normalised,
then projects it. The route's items are SGLang's `MultimodalEmbeddingInput` (text, image, video)."""

from __future__ import annotations

import ast

from rewardfleet.services.model_server.checkpoints import DUAL_ENCODERS
from rewardfleet.services.model_server.schemas import EmbeddingsRequest, MultimodalEmbeddingInput
from tests.sglang_conformance import sglang_source as sgl
from tests.sglang_conformance.sglang_models import entry_classes


def _class_source(file: str, name: str) -> str:
    module = sgl.source(f"srt/models/{file}")
    for node in module.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return ast.unparse(node)
    raise AssertionError(f"{name} is not in srt/models/{file}")


def test_dual_encoders_are_sglang_entry_classes() -> None:
    for arch, file in DUAL_ENCODERS.items():
        assert arch in entry_classes(file), f"{arch} is not an EntryClass of srt/models/{file}"


def test_clip_pooling_is_sglangs() -> None:
    src = _class_source("clip.py", "CLIPModel")
    # Image: class token of the post-layernormed vision output -> visual_projection -> L2 normalise.
    assert "pooled_output = vision_outputs[:, 0, :]" in src
    assert "image_embeds = self.visual_projection(pooled_output)" in src
    assert "nn.functional.normalize(image_embeds, p=2, dim=1)" in src
    # Text: last token, normalised by the pooler, then text_projection (not normalised after it).
    assert "Pooler(pooling_type=PoolingType.LAST, normalize=True)" in src
    assert "embeddings=self.text_projection(pooled_output.embeddings)" in src
    vision = _class_source("clip.py", "CLIPVisionTransformer")
    assert "self.post_layernorm(last_hidden_state)" in vision  # what HF's pooler_output is, at the CLS token


def test_multimodal_items_are_sglangs() -> None:
    theirs = sgl.protocol().MultimodalEmbeddingInput
    assert (
        set(theirs.model_fields) == set(MultimodalEmbeddingInput.model_fields) == {"text", "image", "video"}
    )
    body = {"model": "m", "input": [{"text": "a red photo"}, {"image": "data:image/png;base64,AAAA"}]}
    ours = EmbeddingsRequest.model_validate(body)
    parsed = sgl.protocol().EmbeddingRequest.model_validate(body)
    assert ours.multimodal_items == [item.model_dump() for item in parsed.input]
