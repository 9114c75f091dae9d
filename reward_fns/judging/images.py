"""A sample's images, shown to a VLM judge as OpenAI `image_url` content parts of its chat request.

The images are the sample's `images` (the gateway injects them), then the `image_url` parts of its `prompt`
messages, in that order: exactly the fields the gateway checked (services/common/images.py: bounded, decoded,
URLs only from allowed hosts). Images elsewhere (`extra_info`) are never sent: nothing checked them. They go
into the last user message of the judge's chat, before its text, as SGLang's and OpenAI's chat APIs take
them; the judge's template itself stays text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rewardfleet.services.common.images import message_image_urls


def image_parts(images: Sequence[str] | None, prompt: Any) -> list[dict[str, Any]]:
    """`[{"type": "image_url", "image_url": {"url": ...}}, ...]` for the sample's images (see the module
    docstring); [] when it has none."""
    urls = [str(u) for u in images or ()]
    urls += [str(url) for _, url in message_image_urls(prompt) if isinstance(url, str)]
    return [{"type": "image_url", "image_url": {"url": url}} for url in urls]


def with_images(messages: list[dict[str, Any]], parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with `parts` put before the text of the last user message (a copy; unchanged without
    parts). A chat with no user message gets them in a user message of their own at the end."""
    if not parts:
        return messages
    out = [dict(m) for m in messages]
    for message in reversed(out):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, list) else [{"type": "text", "text": str(content or "")}]
            message["content"] = [*parts, *text]
            return out
    return [*out, {"role": "user", "content": list(parts)}]
