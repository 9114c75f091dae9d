"""The images of a verl 0.9.1 multimodal sample, as the gateway's `images` (data URLs).

What verl passes a reward function for a multimodal sample (read in verl 0.9.1's source): `compute_score`
gets no image argument. Its agent loop stores the sample's chat as `extra_fields["raw_prompt"]`
(`AgentLoopWorker._agent_loop_postprocess`), which the reward managers merge into `extra_info`
(`tool_extra_fields`), so `extra_info["raw_prompt"]` holds the messages `RLHFDataset._build_messages` made:
content parts `{"type": "text", "text"}` and, per `<image>` placeholder, `{"type": "image", "image": X}` where
X is a `PIL.Image`, or the dataset's dict (`{"bytes", "path"}`, plus `"image"`: the opened `PIL.Image`), or a
path / URL string. A user dataset (or a tool's `extra_fields`) may also carry `multi_modal_data: {"images":
[...]}` the way verl's agent loop names it.

`extract_images` takes that shape unchanged: every image, in order, becomes a `data:image/...;base64` URL
in the sample's `images` (a `PIL.Image` is encoded as PNG, bytes are sent as they are, a local path is read
here on the trainer: the gateway reads no file and fetches no URL but those of allowed hosts); in the JSON
sent, each image's place in `raw_prompt` / `multi_modal_data` keeps `{"type": "image", "image_index": i}` /
`i`, so the text and the order survive without sending an image twice.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def extract_images(extra_info: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`(extra_info without image objects, images as URLs)`; `extra_info` itself is not changed."""
    images: list[str] = []
    out = dict(extra_info)
    raw_prompt: Any = extra_info.get("raw_prompt")
    if _is_list(raw_prompt):
        out["raw_prompt"] = [_message(m, images) for m in raw_prompt]
    mm = extra_info.get("multi_modal_data")
    if isinstance(mm, Mapping) and _is_list(mm.get("images")):
        indexes = []
        for image in mm["images"]:
            images.append(image_url(image))
            indexes.append(len(images) - 1)
        out["multi_modal_data"] = {**mm, "images": indexes}
    return out, images


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple) or type(value).__name__ == "ndarray"


def _message(message: Any, images: list[str]) -> Any:
    if not isinstance(message, Mapping) or not _is_list(message.get("content")):
        return message
    parts = []
    for part in message["content"]:
        if isinstance(part, Mapping) and part.get("type") == "image":
            source = part.get("image")
            if source is None or (isinstance(part.get("bytes"), bytes | bytearray) and part["bytes"]):
                source = part.get("bytes") or part.get("path")
            images.append(image_url(source))
            parts.append({"type": "image", "image_index": len(images) - 1})
        else:
            parts.append(part)
    return {**message, "content": parts}


def image_url(image: Any) -> str:
    """One verl image as a URL: a data URL, or an http(s)/data URL string as given."""
    if isinstance(image, Mapping):  # the dataset's {"bytes", "path"} (and "image")
        image = image.get("bytes") or image.get("image") or image.get("path")
    if isinstance(image, bytes | bytearray):
        return _data_url(bytes(image))
    if isinstance(image, str):
        if image.startswith(("data:", "http://", "https://")):
            return image
        path = image.removeprefix("file://")
        return _data_url(Path(path).read_bytes())
    if hasattr(image, "save"):  # a PIL.Image
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return _data_url(buffer.getvalue(), "png")
    raise TypeError(
        f"a verl image is a PIL.Image, bytes, a {{'bytes','path'}} dict or a path, not {type(image)}"
    )


def _data_url(data: bytes, kind: str | None = None) -> str:
    if kind is None:
        kind = _sniff(data)
    return f"data:image/{kind};base64,{base64.b64encode(data).decode()}"


def _sniff(data: bytes) -> str:
    """The image type from its magic bytes (the gateway checks the image itself; this only names it)."""
    if data.startswith(b"\x89PNG"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    if data.startswith(b"GIF8"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith(b"BM"):
        return "bmp"
    return "octet-stream"
