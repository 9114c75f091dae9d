"""Image reward model: the cosine of a text and an image, embedded by a CLIP-style dual encoder (PickScore).

The `image_reward_model` pool serves the dual encoder (a CPU model server with `CLIPModel`, or SGLang with
`--is-embedding`). One `POST /v1/embeddings {"model", "input": [{"text": T}, {"image": I1}, ...]}` through
its router embeds the text and every image of the sample (SGLang's `MultimodalEmbeddingInput` items; one
request, so one replica and one batch), and the score is computed here from the embeddings: SGLang has no
score route for a dual encoder, and the cosine does not depend on the vectors' lengths (SGLang's text
embeddings are not unit length, its image embeddings are).

The text T is, with `text="prompt"` (default; image generation, as PickScore/HPS score it): the prompt's
last user turn (its text parts) or `extra_info["question"]`/`["problem"]`; with `text="response"`
(captioning): the response. A sample's images come from the `images` argument (the gateway's image field)
or else from `extra_info["images"]` or verl's `multi_modal_data["image"]` in `extra_info`. Each is a
`data:image/...;base64,` URL, bare base64, an OpenAI `image_url` part, `{"bytes": ...}`, raw bytes, or a PIL
image; nothing is fetched: a URL is refused here (an allow-listed URL must be inlined by the gateway first).

The score of an image is its cosine c with the text, in [-1, 1]; `rescale="linear"` maps it to (c + 1) / 2 in
[0, 1]; `logit_scale=s` gives s * c instead (PickScore reports 100 * c: exp of the model's `logit_scale`).
With several images the score is their mean. Extras: `cosine` (the mean raw cosine), `num_images`.

The reward_kwargs stay flat keywords, declared from two groups (`judging/keywords.py`): the server's
`ImageScoreContext` and `ImageScoreSettings`.
"""

from __future__ import annotations

import base64
import io
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from rewardfleet.reward_fns.judging.keywords import Keywords
from rewardfleet.reward_fns.judging.templates import problem_text
from rewardfleet.reward_fns.similarity import checked_cosine, embedding_vectors
from rewardfleet.services.common.router_http import RemoteCallError, post_json, resolve_address

DATA_SOURCES: tuple[str, ...] = ()
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class ImageRewardCallError(RemoteCallError):
    """The image reward model's router or server did not answer with usable embeddings."""


class ImageRewardInputError(ValueError):
    """The sample has no text or no usable image, or the configuration is wrong."""


@dataclass(frozen=True)
class ImageScoreContext:
    """What the server passes with each call: the sample's images, the routers, the shared HTTP session and
    the sample's prompt."""

    images: Sequence[Any] | None = None
    reward_router_address: str | None = None
    router_addresses: Mapping[str, str] | None = None
    http_client: aiohttp.ClientSession | None = None
    prompt: Any = None


@dataclass(frozen=True)
class ImageScoreSettings:
    """The reward_kwargs: the pool and model asked, which text the images are scored against (`text`), how
    the cosine becomes the score (`rescale`, `logit_scale`), the call's timeout."""

    pool: str = "image_reward_model"
    model: str = "default"
    text: str = "prompt"
    rescale: str = "none"
    logit_scale: float | None = None
    timeout_s: float = 30.0


# The flat keywords of compute_score: what the server passes, then the reward's settings.
KEYWORDS = Keywords(ImageScoreContext, ImageScoreSettings)


def inline_image(item: Any, where: str) -> str:
    """`item` as the string an embeddings request carries (a data: URL or base64); never a URL."""
    if isinstance(item, Mapping):
        for key in ("image_url", "url", "image", "bytes"):
            if item.get(key) is not None:
                inner = item[key]
                if key == "image_url" and isinstance(inner, Mapping):
                    inner = inner.get("url")
                return inline_image(inner, f"{where}.{key}")
        raise ImageRewardInputError(f"{where}: an image object needs image_url, url, image or bytes")
    if isinstance(item, bytes | bytearray):
        return base64.b64encode(bytes(item)).decode("ascii")
    if hasattr(item, "save") and hasattr(item, "size"):  # a PIL image (verl's multi_modal_data in process)
        buf = io.BytesIO()
        item.save(buf, format="PNG")
        return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    if not isinstance(item, str) or not item.strip():
        raise ImageRewardInputError(
            f"{where}: expected an image (data: URL or base64), got {type(item).__name__}"
        )
    if _URL.match(item.strip()):
        raise ImageRewardInputError(
            f"{where}: image_text_score sends inline images only (data: URL or base64) and fetches no URL; "
            "the gateway inlines an allow-listed URL before scoring"
        )
    return item.strip()


def sample_images(images: Sequence[Any] | None, extra_info: Mapping[str, Any] | None) -> list[Any]:
    """The sample's images: the `images` argument, else `extra_info["images"]`, else verl's
    `extra_info["multi_modal_data"]["image"]` (one image or a list)."""
    if images:
        return list(images)
    info = extra_info or {}
    found: Any = info.get("images")
    if not found and isinstance(info.get("multi_modal_data"), Mapping):
        found = info["multi_modal_data"].get("image")
    if found is None:
        return []
    return list(found) if isinstance(found, list | tuple) else [found]


@KEYWORDS.declare
async def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: dict[str, Any] | None = None,
    **reward_kwargs: Any,
) -> dict[str, Any]:
    """{"score", "cosine": the mean raw cosine, "num_images"}: see the module docstring (no ground truth).
    The keywords are those of `ImageScoreContext` and `ImageScoreSettings` (`inspect.signature` lists
    them)."""
    context, settings = KEYWORDS.read(reward_kwargs)
    return await score_images(solution_str, extra_info, context, settings)


async def score_images(
    solution_str: str,
    extra_info: dict[str, Any] | None,
    context: ImageScoreContext,
    settings: ImageScoreSettings,
) -> dict[str, Any]:
    """`compute_score`'s work, on its settings once read."""
    text, rescale, logit_scale = settings.text, settings.rescale, settings.logit_scale
    if text not in ("prompt", "response"):
        raise ImageRewardInputError(f"text must be 'prompt' or 'response', not {text!r}")
    if rescale not in ("none", "linear"):
        raise ImageRewardInputError(f"rescale must be 'none' or 'linear', not {rescale!r}")
    if logit_scale is not None and (rescale != "none" or not math.isfinite(logit_scale) or logit_scale <= 0):
        raise ImageRewardInputError("logit_scale must be a positive number, and only with rescale='none'")
    caption = solution_str if text == "response" else problem_text(context.prompt, extra_info)
    if not caption or not caption.strip():
        raise ImageRewardInputError(f"no text to score the image against: the {text} is empty")
    found = sample_images(context.images, extra_info)
    if not found:
        raise ImageRewardInputError(
            "no image for this sample: send `images`, extra_info['images'] or extra_info['multi_modal_data']"
        )
    inline = [inline_image(item, f"images[{i}]") for i, item in enumerate(found)]
    try:
        address = resolve_address(settings.pool, context.router_addresses, context.reward_router_address)
    except ValueError as exc:
        raise ImageRewardInputError(str(exc)) from exc
    url = f"{address}/v1/embeddings"
    payload = {"model": settings.model, "input": [{"text": caption}, *({"image": image} for image in inline)]}
    body = await post_json(
        context.http_client,
        address,
        "/v1/embeddings",
        payload,
        timeout_s=settings.timeout_s,
        error_cls=ImageRewardCallError,
    )
    text_vec, *image_vecs = embedding_vectors(body, url, 1 + len(inline), ImageRewardCallError)
    cosines = [checked_cosine(text_vec, vec, url, ImageRewardCallError) for vec in image_vecs]
    cos = sum(cosines) / len(cosines)
    if logit_scale is not None:
        score = logit_scale * cos
    elif rescale == "linear":
        score = (cos + 1.0) / 2.0
    else:
        score = cos
    return {"score": score, "cosine": cos, "num_images": len(inline)}
