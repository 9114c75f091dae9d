"""Small images for the multimodal tests, built with Pillow at test time."""

from __future__ import annotations

import base64
import io

from PIL import Image


def png_bytes(width: int = 8, height: int = 8, color: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def data_url(data: bytes, kind: str = "png") -> str:
    return f"data:image/{kind};base64,{base64.b64encode(data).decode()}"


def png_url(width: int = 8, height: int = 8, color: tuple[int, int, int] = (255, 0, 0)) -> str:
    return data_url(png_bytes(width, height, color))


def bomb_png(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` pixels and whose data is tiny: 1-bit pixels, all zero,
    compress to almost nothing (a decompression bomb)."""
    buffer = io.BytesIO()
    Image.new("1", (width, height)).save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()
