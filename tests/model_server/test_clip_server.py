"""An image reward model pool end to end: a tiny CLIP (`bench/harness/tiny_clip.py`, weights set so the
caption naming an image's colour must score highest) on a real CPU model server, behind the real
sglang-router, scored by the built-in `image_text_score` through a real gateway. One server, router and
gateway for the module."""

from __future__ import annotations

import base64
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.tiny_clip import build_tiny_clip, png_data_url
from tests.model_server.test_router import start_router
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import RunningServer, start_server

RED, BLUE = (255, 0, 0), (0, 0, 255)
MAX_PIXELS = 64 * 64


@pytest.fixture(scope="module")
def clip_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_clip(tmp_path_factory.mktemp("tiny-clip") / "clip")


@pytest.fixture(scope="module")
def clip_server(clip_path: Path, log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(
        clip_path, log_dir, "--is-embedding", "--served-model-name", "tiny-clip",
        "--max-image-pixels", str(MAX_PIXELS), name="clip",
    )  # fmt: skip
    yield server
    server.process.stop()


@pytest.fixture(scope="module")
def clip_router(clip_server: RunningServer, log_dir: Path) -> Iterator[str]:
    proc, url = start_router(clip_server, log_dir, "clip")
    yield url
    proc.stop()


@pytest.fixture(scope="module")
def gateway(clip_router: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("image-rm-gw")
    config = {
        "workers": 1, "result_cache_size": 0,
        "routers": {"image_reward_model": clip_router.removeprefix("http://")},
        "functions": {"image_text_score": {"timeout_s": 60, "reward_kwargs": {"model": "tiny-clip"}}},
    }  # fmt: skip
    gw = start_gateway(tmp, config, None)
    yield gw
    gw.proc.stop()


def embed(url: str, items: list[dict[str, Any]]) -> httpx.Response:
    return httpx.post(f"{url}/v1/embeddings", json={"model": "tiny-clip", "input": items}, timeout=60)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5)


def test_matching_caption_scores_higher_through_the_router(clip_router: str, clip_path: Path) -> None:
    items = [
        {"text": "a red photo"}, {"text": "a photo of the blue square"},
        {"image": png_data_url(RED)}, {"image": png_data_url(BLUE)},
    ]  # fmt: skip
    resp = embed(clip_router, items)
    assert resp.status_code == 200, resp.text
    red_text, blue_text, red_image, blue_image = [row["embedding"] for row in resp.json()["data"]]
    # The weights carry colour through both towers: the caption naming the image's colour has cosine 1, the
    # other caption 0, and swapping the image swaps the order.
    assert cosine(red_text, red_image) == pytest.approx(1.0, abs=1e-5)
    assert cosine(blue_text, red_image) == pytest.approx(0.0, abs=1e-5)
    assert cosine(blue_text, blue_image) == pytest.approx(1.0, abs=1e-5)
    assert cosine(red_text, blue_image) == pytest.approx(0.0, abs=1e-5)
    # The values are SGLang's vectors: images unit length, texts normalised before the projection only.
    assert sum(x * x for x in red_image) == pytest.approx(1.0, abs=1e-5)

    # And the cosines are what transformers' own CLIP features give for the same inputs.
    import torch
    from PIL import Image
    from transformers import AutoTokenizer, CLIPImageProcessorPil, CLIPModel

    model = CLIPModel.from_pretrained(clip_path).eval()
    tok = AutoTokenizer.from_pretrained(clip_path)
    pixels = CLIPImageProcessorPil.from_pretrained(clip_path)(
        images=[Image.new("RGB", (12, 10), (200, 30, 90))], return_tensors="pt"
    )["pixel_values"]
    with torch.no_grad():
        text_out = model.get_text_features(**tok(["a red photo"], return_tensors="pt"))
        image_out = model.get_image_features(pixel_values=pixels)
    hf_text = getattr(text_out, "pooler_output", text_out)[0].tolist()
    hf_image = getattr(image_out, "pooler_output", image_out)[0].tolist()
    resp = embed(clip_router, [{"text": "a red photo"}, {"image": png_data_url((200, 30, 90))}])
    ours_text, ours_image = [row["embedding"] for row in resp.json()["data"]]
    assert cosine(ours_text, ours_image) == pytest.approx(cosine(hf_text, hf_image), abs=1e-5)
    assert 0.3 < cosine(ours_text, ours_image) < 0.99  # a mixed colour: neither 0 nor 1


def test_request_and_response_conform_to_sglangs_protocol(clip_server: RunningServer) -> None:
    from tests.sglang_conformance import sglang_source as sgl
    from tests.sglang_conformance.test_protocol import conforms

    body = {"model": "tiny-clip", "input": [{"text": "a red photo"}, {"image": png_data_url(RED)}]}
    request = sgl.protocol().EmbeddingRequest.model_validate(body)
    assert type(request.input[0]).__name__ == "MultimodalEmbeddingInput"
    assert request.input[1].image == body["input"][1]["image"]  # type: ignore[index]
    resp = httpx.post(f"{clip_server.url}/v1/embeddings", json=body, timeout=60)
    assert resp.status_code == 200, resp.text
    obj = conforms("EmbeddingResponse", resp.json(), "EmbeddingObject")
    assert [d.index for d in obj.data] == [0, 1]
    assert len(obj.data[1].embedding) == 3
    info = httpx.get(f"{clip_server.url}/model_info", timeout=10).json()
    assert info["architectures"] == ["CLIPModel"] and info["is_generation"] is False


def _png_bytes(size: tuple[int, int], noise: bool = False) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    image = (
        Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3))
        if noise
        else Image.new("RGB", size, RED)
    )
    image.save(buf, format="PNG")
    return buf.getvalue()


_NOISE_PNG = _png_bytes((32, 32), noise=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


BAD_ITEMS = [
    ({"image": "data:image/png;base64,@@not base64@@"}, "input[1].image", "not valid base64"),
    ({"image": _b64(b"just some text, not an image")}, "input[1].image", "not an image"),
    ({"image": "http://169.254.169.254/latest/meta-data"}, "input[1].image", "fetches no URL"),
    ({"image": "/etc/passwd"}, "input[1].image", "reads no file"),
    ({"image": "data:text/plain;base64,aGk="}, "input[1].image", "is not an image"),
    ({"image": _b64(_png_bytes((100, 100)))}, "input[1].image", "max_image_pixels"),
    # A valid header (read in the front) over a cut-off body: only the engine's decode finds it.
    ({"image": _b64(_NOISE_PNG[: len(_NOISE_PNG) // 2])}, "input[1].image", "does not decode"),
    ({"text": "a red photo", "image": png_data_url(RED)}, "input[1]", "not both"),
    ({"video": "data:video/mp4;base64,AAAA"}, "input[1].video", "not supported"),
    ({"image": 12}, "input[1].image", "must be a string"),
    ({"text": "   "}, "input[1]", "non-empty text or an image"),
]


@pytest.mark.parametrize(("item", "field", "needle"), BAD_ITEMS)
def test_bad_image_input_is_a_400_naming_the_field(
    clip_server: RunningServer, item: dict[str, Any], field: str, needle: str
) -> None:
    resp = embed(clip_server.url, [{"text": "a red photo"}, item])
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["object"] == "error" and field in body["message"] and needle in body["message"], body


def test_a_bad_image_through_the_router_is_the_servers_400(clip_router: str) -> None:
    resp = embed(clip_router, [{"image": "https://example.com/cat.png"}])
    assert resp.status_code == 400, resp.text
    assert "input[0].image" in resp.text


def _score(gw: Gateway, **sample: Any) -> dict[str, Any]:
    resp = gw.score(data_source="t2i", reward_fn="image_text_score", solution_str="", **sample)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def test_image_text_score_through_the_gateway(gateway: Gateway) -> None:
    red = _score(gateway, prompt="a red photo", extra_info={"images": [png_data_url(RED)]})
    blue = _score(gateway, prompt="a red photo", extra_info={"images": [png_data_url(BLUE)]})
    assert red["status"] == "ok" and blue["status"] == "ok", (red, blue)
    assert red["score"] == pytest.approx(1.0, abs=1e-5) and blue["score"] == pytest.approx(0.0, abs=1e-5)
    assert red["extra"]["num_images"] == 1
    # verl's multi_modal_data shape, and the prompt as chat messages with content parts.
    messages = [{"role": "user", "content": [{"type": "text", "text": "a blue photo"}]}]
    verl = _score(gateway, prompt=messages, extra_info={"multi_modal_data": {"image": [png_data_url(BLUE)]}})
    assert verl["status"] == "ok" and verl["score"] == pytest.approx(1.0, abs=1e-5), verl


def test_image_text_score_failures_are_typed_errors(gateway: Gateway) -> None:
    url = _score(gateway, prompt="a red photo", extra_info={"images": ["http://10.0.0.1/x.png"]})
    assert url["status"] == "error" and url["score"] is None, url
    assert url["error"]["type"] == "ImageRewardInputError" and "fetches no URL" in url["error"]["message"]
    none = _score(gateway, prompt="a red photo", extra_info={})
    assert none["status"] == "error" and "no image" in none["error"]["message"], none
    bad = _score(gateway, prompt="a red photo", extra_info={"images": [_b64(b"not an image")]})
    assert bad["status"] == "error" and bad["score"] is None, bad
    assert "input[1].image" in bad["error"]["message"], bad


def test_image_text_score_options_and_the_images_argument(clip_router: str) -> None:
    """The function called as the gateway will once it injects the sample's `images` (and as verl calls it
    in process, with PIL images): text from the prompt or the response, and each rescaling."""
    import asyncio

    from PIL import Image

    from rewardfleet.reward_fns.image_text_score import compute_score

    def score(**kw: Any) -> dict[str, Any]:
        routers = {"image_reward_model": clip_router.removeprefix("http://")}
        base: dict[str, Any] = {"data_source": "t2i", "solution_str": "", "ground_truth": None}
        return asyncio.run(compute_score(**{**base, **kw}, router_addresses=routers, model="tiny-clip"))

    blue = png_data_url(BLUE)
    assert score(prompt="a blue photo", images=[blue])["score"] == pytest.approx(1.0, abs=1e-5)
    # `images` wins over extra_info; a PIL image and raw PNG bytes are inlined.
    red_pil = Image.new("RGB", (9, 9), RED)
    out = score(prompt="a red photo", images=[red_pil], extra_info={"images": [blue]})
    assert out["score"] == pytest.approx(1.0, abs=1e-5)
    two = score(prompt="a red photo", images=[red_pil, base64.b64decode(blue.split(",", 1)[1])])
    assert two["num_images"] == 2 and two["score"] == pytest.approx(0.5, abs=1e-5)  # mean of 1 and 0
    caption = score(text="response", solution_str="the blue square", prompt="a red photo", images=[blue])
    assert caption["score"] == pytest.approx(1.0, abs=1e-5)
    linear = score(prompt="a red photo", images=[blue], rescale="linear")
    assert linear["score"] == pytest.approx(0.5, abs=1e-5) and linear["cosine"] == pytest.approx(
        0.0, abs=1e-5
    )
    scaled = score(prompt="a red photo", images=[red_pil], logit_scale=100.0)
    assert scaled["score"] == pytest.approx(100.0, abs=1e-3)
