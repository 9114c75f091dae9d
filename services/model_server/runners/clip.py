"""CLIP-style dual encoders (`CLIPModel`): one embedding per text or per image, pooled as SGLang does.

SGLang 0.5.23 serves `CLIPModel` (`srt/models/clip.py`) as an embedding model: an input with an image gets the
image embedding — the vision tower's class token after `post_layernorm`, through `visual_projection`, then
L2-normalised; a text-only input gets the text embedding — the text tower's hidden state at the last token
(`Pooler(LAST, normalize=True)`: normalised *before* the projection), through `text_projection`, and not
normalised after it. So text embeddings are not unit length there; the cosine of a text and an image
embedding is the same either way, and the CPU server returns SGLang's vectors so a pool can move between the
two (tests/sglang_conformance/test_clip_model.py reads those facts from the wheel).

A batch may mix texts and images: the texts go through the text tower in one forward, the images through
the vision tower in another. The images arrive checked (`image_inputs.py`: base64, header, pixel count) and
are decoded and preprocessed here (`clip_images.py`); one that does not decode fails alone, its error naming
its request field.
"""

from __future__ import annotations

import io
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, PooledResult, Runner
from rewardfleet.services.model_server.runners.clip_images import ImagePreprocessor
from rewardfleet.services.model_server.runners.common import ImageInput, TextInput


def _warmup_image() -> ImageInput:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (128, 64, 32)).save(buf, format="PNG")
    return ImageInput(buf.getvalue(), "warmup", 8, 8)


class ClipRunner(Runner):
    kind = "clip"

    def __init__(self, model: Any, tokenizer: Any, *, image_processor: Any, **kw: Any) -> None:
        super().__init__(model, tokenizer, **kw)
        self.preprocess = ImagePreprocessor(image_processor)

    def operations(self) -> dict[str, BatchFn]:
        return {"embed": self.embed}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return {"embed": [WARMUP_TEXT, _warmup_image()]}

    def embed(self, inputs: list[TextInput | ImageInput]) -> list[PooledResult | InvalidRequest]:
        """Texts through the text tower in one forward, images (decoded and preprocessed here) through the
        vision tower in another; an image that does not decode keeps its `InvalidRequest` in its place."""
        out: list[PooledResult | InvalidRequest] = [PooledResult([], 0)] * len(inputs)
        texts = [(i, x) for i, x in enumerate(inputs) if isinstance(x, TextInput)]
        if texts:
            pooled = self.pooled([x for _, x in texts], self._text_rows)
            for (i, _), result in zip(texts, pooled, strict=True):
                out[i] = result
        images = [(i, x) for i, x in enumerate(inputs) if isinstance(x, ImageInput)]
        pixels: list[tuple[int, Any]] = []
        for (i, _), done in zip(images, self.preprocess([x for _, x in images]), strict=True):
            if isinstance(done, InvalidRequest):
                out[i] = done
            else:
                pixels.append((i, done))
        if pixels:
            for (i, _), row in zip(pixels, self._image_rows([p for _, p in pixels]), strict=True):
                out[i] = PooledResult(row, 0)
        return out

    def _text_rows(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> list[list[float]]:
        import torch
        import torch.nn.functional as F

        hidden = self.model.text_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        last = attention_mask.sum(dim=1) - 1  # right padding: the last real token
        pooled = F.normalize(hidden[torch.arange(hidden.shape[0]), last].float(), p=2, dim=1)
        projected = self.model.text_projection(self.head_rows(pooled.to(hidden.dtype)))[: len(pooled)]
        rows: list[list[float]] = projected.float().tolist()
        return rows

    def _image_rows(self, pixels: list[Any]) -> list[list[float]]:
        import numpy as np
        import torch
        import torch.nn.functional as F

        filler = -len(pixels) % self.row_multiple  # fixed shapes: the projection's rows, a multiple of 4
        batch = torch.from_numpy(np.stack(pixels + [pixels[0]] * filler)).to(self.model.dtype)
        with torch.inference_mode():
            vision = self.model.vision_model(pixel_values=batch)
            embeds = F.normalize(self.model.visual_projection(vision.pooler_output).float(), p=2, dim=1)
        rows: list[list[float]] = embeds[: len(pixels)].tolist()
        return rows
