"""Images a sample carries, checked before anything uses them.

Images a sample carries, checked before anything uses them: the gateway on every sample, the model server
on every chat request with image parts.

An image is a string: a `data:image/<type>;base64,<data>` URL (the image itself) or an `http(s)://` URL.
Everything about it is hostile input (the policy under training wrote or chose it), so:

- a data URL is decoded strictly (`validate=True`: no characters outside the base64 alphabet), and its size
  is bounded from the encoded length before decoding (`max_image_bytes`);
- its width and height are read from the header only (`PIL.Image.open` is lazy: no pixel is decoded) and
  bounded (`max_image_pixels`), so a decompression bomb (a small file of a huge image) is refused before it
  is decoded. Pillow's own `MAX_IMAGE_PIXELS` guard is turned into the same refusal, never a warning;
- only the formats in `IMAGE_FORMATS` are opened (Pillow's other plug-ins are not reachable);
- a URL is never fetched here. It is accepted only if its host is in `allowed_url_hosts` (empty by default:
  no URL at all), so a sample cannot make a judge pool fetch an internal address (SSRF). `*.example.org`
  allows the subdomains of example.org.

Errors are `ImageError` with the field they concern (`images[2]`, `prompt[0].content[1].image_url.url`) and
whether the value was too large (the service answers 413) or malformed / not allowed (422). Pillow is
imported on first use.
"""

from __future__ import annotations

import base64
import binascii
import io
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

# Formats a sample's image may be in (Pillow format names); the rest of Pillow's plug-ins are not tried.
IMAGE_FORMATS: tuple[str, ...] = ("PNG", "JPEG", "WEBP", "GIF", "BMP")


class ImageError(ValueError):
    """An image a request carries is refused; `field` names it, `too_large` says 413 rather than 422."""

    def __init__(self, field: str, message: str, *, too_large: bool = False) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.too_large = too_large


@dataclass(frozen=True)
class ImageLimits:
    max_images: int = 16
    max_image_bytes: int = 8 * 1024 * 1024
    max_image_pixels: int = 4096 * 4096
    allowed_url_hosts: tuple[str, ...] = ()

    def host_allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for allowed in self.allowed_url_hosts:
            pattern = allowed.lower().rstrip(".")
            if pattern.startswith("*."):
                if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                    return True
            elif host == pattern:
                return True
        return False


@dataclass(frozen=True)
class ImageInfo:
    """What was checked: a data URL's format, size and dimensions, or an allowed URL (`url` set)."""

    format: str | None = None
    width: int = 0
    height: int = 0
    nbytes: int = 0
    url: str | None = None


def check_image(value: Any, field: str, limits: ImageLimits) -> ImageInfo:
    """Check one image string (see the module docstring); raises `ImageError` naming `field`."""
    if not isinstance(value, str):
        raise ImageError(
            field, f"an image is a data: URL or an http(s) URL string, not {type(value).__name__}"
        )
    if value[:5].lower() == "data:":
        data = decode_data_url(value, field, limits)
        return _header(data, field, limits)
    return ImageInfo(url=check_url(value, field, limits))


def check_url(url: str, field: str, limits: ImageLimits) -> str:
    """An http(s) URL whose host the allow-list permits, else `ImageError` (422)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname  # lower-cased, without userinfo and port ("http://ok@evil" is evil)
    except ValueError as exc:
        raise ImageError(field, f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ImageError(field, "an image must be a data:image/...;base64 URL or an http(s) URL")
    if not limits.allowed_url_hosts:
        raise ImageError(
            field, f"image URLs are not accepted (host {host!r}): allowed_image_url_hosts is empty; "
            "send the image inline as a data:image/...;base64 URL",
        )  # fmt: skip
    if not limits.host_allowed(host):
        raise ImageError(field, f"host {host!r} is not in allowed_image_url_hosts")
    return url


def decode_data_url(value: str, field: str, limits: ImageLimits) -> bytes:
    """The bytes of a `data:image/...;base64,` URL, bounded by `max_image_bytes` before decoding."""
    header, sep, payload = value.partition(",")
    if not sep:
        raise ImageError(field, "a data URL needs a ',' between its header and its data")
    media = header[5:].split(";")
    if not media[0].lower().startswith("image/") or media[-1].lower() != "base64":
        raise ImageError(field, f"expected data:image/<type>;base64, not {header[:64]!r}")
    # Each 4 base64 characters are 3 bytes: the size is known before decoding anything.
    if len(payload) // 4 * 3 > limits.max_image_bytes + 2:
        raise ImageError(
            field, f"image over {limits.max_image_bytes} bytes; max_image_bytes is {limits.max_image_bytes}",
            too_large=True,
        )  # fmt: skip
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageError(field, f"invalid base64 ({exc})") from None
    if len(data) > limits.max_image_bytes:
        raise ImageError(
            field, f"image of {len(data)} bytes; max_image_bytes is {limits.max_image_bytes}", too_large=True
        )
    if not data:
        raise ImageError(field, "empty image data")
    return data


def _header(data: bytes, field: str, limits: ImageLimits) -> ImageInfo:
    img = open_image(data, field, limits)
    return ImageInfo(format=img.format, width=img.width, height=img.height, nbytes=len(data))


def open_image(data: bytes, field: str, limits: ImageLimits) -> Any:
    """A lazily opened `PIL.Image.Image` whose header passed the checks (its pixels are not decoded yet)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageError(field, f"decompression bomb refused ({exc})", too_large=True) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(field, f"not an image in {'/'.join(IMAGE_FORMATS)} ({exc})") from None
    width, height = img.size
    if width <= 0 or height <= 0:
        raise ImageError(field, f"image of {width}x{height} pixels")
    if width * height > limits.max_image_pixels:
        raise ImageError(
            field, f"image of {width}x{height} = {width * height} pixels; max_image_pixels is "
            f"{limits.max_image_pixels}", too_large=True,
        )  # fmt: skip
    return img


def decode_image(value: str, field: str, limits: ImageLimits) -> Any:
    """A data URL decoded to an RGB `PIL.Image.Image` (first frame), after every check; for the model
    server, which never fetches a URL."""
    if value[:5].lower() != "data:":
        raise ImageError(field, "only inline data:image/...;base64 images are accepted (no URL is fetched)")
    img = open_image(decode_data_url(value, field, limits), field, limits)
    try:
        img.seek(0)
        return img.convert("RGB")
    except (OSError, SyntaxError, ValueError) as exc:  # a header that lied about its data
        raise ImageError(field, f"image data does not decode ({exc})") from None


def check_images(images: Sequence[Any], field: str, limits: ImageLimits) -> int:
    """Check a list of images (`images[i]`); returns their total characters."""
    if len(images) > limits.max_images:
        raise ImageError(
            field, f"{len(images)} images; max_images_per_sample is {limits.max_images}", too_large=True
        )
    chars = 0
    for i, image in enumerate(images):
        check_image(image, f"{field}[{i}]", limits)
        chars += len(image)
    return chars


def message_image_urls(messages: Any, field: str = "prompt") -> Iterator[tuple[str, Any]]:
    """`(field path, url)` of every OpenAI `image_url` content part of chat messages; a malformed part raises
    `ImageError`. Messages that are not a list of dicts are left to the schema (nothing is yielded)."""
    if not isinstance(messages, list):
        return
    for m, message in enumerate(messages):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for p, part in enumerate(content):
            if not isinstance(part, Mapping) or part.get("type") != "image_url":
                continue
            where = f"{field}[{m}].content[{p}].image_url"
            image_url = part.get("image_url")
            url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
            yield f"{where}.url" if isinstance(image_url, Mapping) else where, url


def check_message_images(messages: Any, field: str, limits: ImageLimits, already: int = 0) -> tuple[int, int]:
    """Check every `image_url` part of chat messages, counted with `already` other images of the sample
    against `max_images`; returns `(already + the images found, their total characters)`."""
    count, chars = already, 0
    for where, url in message_image_urls(messages, field):
        count += 1
        if count > limits.max_images:
            raise ImageError(
                where, f"more than {limits.max_images} images in the sample; max_images_per_sample is "
                f"{limits.max_images}", too_large=True,
            )  # fmt: skip
        check_image(url, where, limits)
        chars += len(url)
    return count, chars
