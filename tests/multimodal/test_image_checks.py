"""services/common/images.py on hostile images, in process: each refusal names the field and says whether
it is too large (413) or malformed / not allowed (422)."""

from __future__ import annotations

import base64

import pytest

from rewardfleet.services.common.images import (
    ImageError,
    ImageLimits,
    check_image,
    check_images,
    check_message_images,
    decode_image,
)
from tests.multimodal.images import bomb_png, data_url, png_bytes, png_url

LIMITS = ImageLimits(max_images=3, max_image_bytes=50_000, max_image_pixels=100 * 100)


def refused(value: object, limits: ImageLimits = LIMITS) -> ImageError:
    with pytest.raises(ImageError) as info:
        check_image(value, "images[0]", limits)
    assert info.value.field == "images[0]"
    return info.value


def test_a_small_png_passes_with_its_header_dimensions() -> None:
    info = check_image(png_url(30, 20), "images[0]", LIMITS)
    assert (info.format, info.width, info.height) == ("PNG", 30, 20)
    image = decode_image(png_url(30, 20), "x", LIMITS)
    assert image.size == (30, 20) and image.mode == "RGB"


@pytest.mark.parametrize(
    ("value", "too_large", "words"),
    [
        ("data:image/png;base64,@@@@not-base64@@@@", False, "invalid base64"),
        (data_url(b"GIF89a but not really an image at all"), False, "not an image"),
        (data_url(b"%PDF-1.4 a pdf is no image"), False, "not an image"),
        ("data:text/html;base64," + base64.b64encode(b"<b>x</b>").decode(), False, "data:image"),
        ("data:image/png;base64", False, "','"),
        (data_url(b""), False, "empty"),
        (png_url(101, 100), True, "max_image_pixels"),  # just over 100x100
        (data_url(png_bytes(8, 8) + b"\0" * 60_000), True, "max_image_bytes"),
        (12, False, "string"),
    ],
)
def test_hostile_values_are_refused(value: object, too_large: bool, words: str) -> None:
    error = refused(value)
    assert error.too_large is too_large and words in str(error), str(error)


def test_decompression_bombs_are_refused_from_the_header() -> None:
    # 4000x4000 1-bit zeros: a ~2 KB file of 16 M pixels, over our bound.
    small_file = bomb_png(4000, 4000)
    assert len(small_file) < 10_000
    error = refused(data_url(small_file))
    assert error.too_large and "4000x4000" in str(error)
    # Over Pillow's own MAX_IMAGE_PIXELS guard: its error (or warning) is the same refusal.
    big = ImageLimits(max_image_bytes=50_000_000, max_image_pixels=10**12)
    from PIL import Image

    side = int(float(Image.MAX_IMAGE_PIXELS or 0) ** 0.5) + 100
    huge = bomb_png(side, side)
    error = refused(data_url(huge), big)
    assert error.too_large and "decompression bomb" in str(error)


def test_urls_need_an_allowed_host() -> None:
    assert "allowed_image_url_hosts is empty" in str(refused("https://example.org/cat.png"))
    allow = ImageLimits(allowed_url_hosts=("images.example.org", "*.cdn.example"))
    assert check_image("https://images.example.org/a.png", "f", allow).url is not None
    assert check_image("http://x.cdn.example/a.png", "f", allow).url is not None
    for bad in (
        "http://169.254.169.254/latest/meta-data",
        "http://images.example.org@169.254.169.254/",  # userinfo is not the host
        "http://images.example.org.evil.test/a.png",
        "http://cdn.example/a.png",  # the wildcard is for subdomains only
        "file:///etc/passwd",
        "ftp://images.example.org/a.png",
    ):
        error = refused(bad, allow)
        assert not error.too_large, bad
    with pytest.raises(ImageError, match="no URL is fetched"):
        decode_image("https://images.example.org/a.png", "f", allow)


def test_counts_and_message_parts_are_named() -> None:
    with pytest.raises(ImageError) as info:
        check_images([png_url()] * 4, "images", LIMITS)
    assert info.value.too_large and info.value.field == "images"
    messages = [
        {"role": "system", "content": "judge"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "q"}, {"type": "image_url", "image_url": {"url": "x"}}],
        },
    ]
    with pytest.raises(ImageError) as info:
        check_message_images(messages, "prompt", LIMITS)
    assert info.value.field == "prompt[1].content[1].image_url.url"
    ok = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": png_url()}}]}]
    assert check_message_images(ok, "prompt", LIMITS) == (1, len(png_url()))
    with pytest.raises(ImageError) as info:
        check_message_images(ok, "prompt", LIMITS, already=3)  # 3 in `images` already
    assert info.value.too_large
