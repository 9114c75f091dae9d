"""Image preprocessing for CLIP pools: decode, then the checkpoint's `CLIPImageProcessor` (PIL version).

It runs in the engine process with the towers. Tried and measured (bench/image_rm_server.py): run in the
HTTP process on a thread of its own, it competes with the event loop for the GIL, and the HTTP process
(which already spends more CPU per request on a large image body than the engine on the pair) became the
bottleneck.
transformers' default CLIP processor needs torchvision, which is not installed; its PIL version is the same
algorithm.
"""

from __future__ import annotations

import io
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import ImageInput


class ImagePreprocessor:
    """Checked images in; per image its `pixel_values` row (float32, channels first) or an `InvalidRequest`
    naming its request field."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def __call__(self, images: list[ImageInput]) -> list[Any]:
        from PIL import Image

        out: list[Any] = []
        decoded: list[tuple[int, Any]] = []
        for n, image in enumerate(images):
            try:
                with Image.open(io.BytesIO(image.data)) as img:
                    decoded.append((n, img.convert("RGB")))
                out.append(None)  # the pixels, once the batch is processed
            except (OSError, ValueError, Image.DecompressionBombError) as exc:
                out.append(
                    InvalidRequest(f"{image.field}: the image does not decode ({exc})", param=image.field)
                )
        if decoded:
            pixels = self.processor(images=[img for _, img in decoded], return_tensors="np")["pixel_values"]
            for (n, _), row in zip(decoded, pixels, strict=True):
                out[n] = row
        return out
