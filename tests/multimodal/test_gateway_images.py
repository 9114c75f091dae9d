"""Images on samples through a real gateway on 127.0.0.1: limits answered 413/422 naming the field, nothing
fetched, images injected into the function, and verl 0.9.1's multimodal sample shape through the verl
adapter unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.integrations import verl_reward
from tests.integrations.test_verl_trainer_code import ANTLR_FOR_VERL
from tests.multimodal.images import bomb_png, data_url, png_bytes, png_url
from tests.support.gateway import Gateway, start_gateway

FNS = Path(__file__).parent / "image_fns"


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    config = {
        "builtin_package": None,
        "workers": 1,
        "default_reward_fn": "seen_images",
        "max_images_per_sample": 2,
        "max_image_bytes": 20_000,
        "max_image_pixels": 256 * 256,
        "allowed_image_url_hosts": ["images.example.org"],
    }
    gateway = start_gateway(tmp_path_factory.mktemp("images"), config, FNS)
    yield gateway
    gateway.proc.stop()


def _post(gw: Gateway, **fields: Any) -> httpx.Response:
    return httpx.post(f"{gw.url}/score", json={"data_source": "x", "solution_str": "a", **fields}, timeout=30)


def _image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


TEXT = {"type": "text", "text": "q"}
REFUSED: dict[str, tuple[dict[str, Any], int, str, str]] = {
    "too many": ({"images": [png_url()] * 3}, 413, "images", "max_images_per_sample"),
    "oversized bytes": (
        {"images": [png_url(), data_url(png_bytes() + b"\0" * 30_000)]}, 413, "images[1]", "max_image_bytes"
    ),
    "oversized pixels": ({"images": [png_url(300, 300)]}, 413, "images[0]", "max_image_pixels"),
    "bomb": ({"images": [data_url(bomb_png(5000, 5000))]}, 413, "images[0]", "5000x5000"),
    "bad base64": ({"images": ["data:image/png;base64,!!!!"]}, 422, "images[0]", "invalid base64"),
    "not an image": ({"images": [data_url(b"\x89PNG but truncated")]}, 422, "images[0]", "not an image"),
    "url outside the allow-list": (
        {"images": ["http://127.0.0.1:6379/"]}, 422, "images[0]", "not in allowed_image_url_hosts"
    ),
    "beside a text prompt": (
        {"prompt": "What is it?", "images": ["http://10.0.0.1/x.png"]}, 422, "images[0]", "10.0.0.1"
    ),
    "prompt part url": (
        {"prompt": [{"role": "user", "content": [_image_part("http://169.254.169.254/latest")]}]},
        422, "prompt[0].content[0].image_url.url", "169.254.169.254",
    ),
    "prompt part bad base64": (
        {"prompt": [{"role": "user", "content": [TEXT, _image_part("data:image/png;base64,%%")]}]},
        422, "prompt[0].content[1].image_url.url", "invalid base64",
    ),
    "count across images and prompt": (
        {"images": [png_url()] * 2, "prompt": [{"role": "user", "content": [_image_part(png_url())]}]},
        413, "prompt[0].content[0].image_url.url", "max_images_per_sample",
    ),
    "trajectory part url": (
        {"messages": [{"role": "user", "content": [TEXT, _image_part("http://10.0.0.2/a.png")]},
                      {"role": "assistant", "content": "a"}]},
        422, "messages[0].content[1].image_url.url", "10.0.0.2",
    ),
    "count across images and trajectory": (
        {"images": [png_url()] * 2,
         "messages": [{"role": "user", "content": [_image_part(png_url())]},
                      {"role": "assistant", "content": "a"}]},
        413, "messages[0].content[0].image_url.url", "max_images_per_sample",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(REFUSED))
def test_hostile_images_are_a_clear_4xx_naming_the_field(gw: Gateway, case: str) -> None:
    fields, status, field, words = REFUSED[case]
    resp = _post(gw, **fields)
    assert resp.status_code == status, (case, resp.text[:300])
    error = resp.json()["error"]
    assert error["field"] == field and words in error["message"], error
    assert error["type"] == ("FieldTooLarge" if status == 413 else "InvalidImage")
    batch = {
        "samples": [
            {"data_source": "x", "solution_str": "a"},
            {"data_source": "x", "solution_str": "a", **fields},
        ]
    }
    resp = httpx.post(f"{gw.url}/score/batch", json=batch, timeout=30)
    assert resp.status_code == status and resp.json()["error"]["field"] == field
    assert "samples[1]" in resp.json()["error"]["message"]


def test_accepted_images_reach_the_function(gw: Gateway) -> None:
    prompt = [
        {"role": "user", "content": [{"type": "text", "text": "what is it?"}, _image_part(png_url(200, 200))]}
    ]
    resp = _post(gw, images=["https://images.example.org/cat.png"], prompt=prompt)
    assert resp.status_code == 200, resp.text[:300]
    body = resp.json()
    assert body["status"] == "ok" and body["extra"]["n_images"] == 1
    assert body["extra"]["first_image"] == "https://images.example.org/cat.png"[:30]


def test_images_are_part_of_the_cache_key(gw: Gateway) -> None:
    first = _post(gw, uid="same", images=[png_url(color=(255, 0, 0))]).json()
    other = _post(gw, uid="same", images=[png_url(color=(0, 0, 255)), png_url()]).json()
    assert first["extra"]["n_images"] == 1 and other["extra"]["n_images"] == 2 and not other["cached"]


def test_verl_multimodal_sample_through_the_adapter(gw: Gateway, tmp_path: Path) -> None:
    """What verl 0.9.1 hands a reward function for a multimodal sample: `extra_info["raw_prompt"]` holds the
    dataset's messages after `RLHFDataset._build_messages`, an image part per `<image>` (a PIL image, or the
    parquet `{"bytes", "path"}` dict with the opened image added, or a path), plus the agent loop's keys."""
    path = tmp_path / "third.png"
    path.write_bytes(png_bytes(5, 5))
    raw = png_bytes(6, 6, (0, 255, 0))
    extra_info: dict[str, Any] = {
        "split": "train",
        "index": 3,
        "raw_prompt": [
            {
                "role": "user",
                "content": [
                    {"type": "image", "image": Image.new("RGB", (7, 7), (0, 0, 255))},
                    {"type": "text", "text": "Which image is green?"},
                    {
                        "type": "image",
                        "bytes": raw,
                        "path": None,
                        "image": Image.open(__import__("io").BytesIO(raw)),
                    },
                ],
            }
        ],
        "num_turns": 2,
        "rollout_reward_scores": {},
    }
    body = verl_reward._body("geo3k_mm", "the second", "B", extra_info, "seen_images")
    assert [u[:22] for u in body["images"]] == ["data:image/png;base64,"] * 2
    parts = body["extra_info"]["raw_prompt"][0]["content"]
    assert parts[0] == {"type": "image", "image_index": 0} and parts[2] == {"type": "image", "image_index": 1}
    json.dumps(body)  # nothing left that JSON cannot carry
    assert isinstance(
        extra_info["raw_prompt"][0]["content"][0]["image"], Image.Image
    )  # caller's dict unchanged

    out = verl_reward.compute_score_sync(
        "geo3k_mm", "the second", "B", extra_info, gateway_url=gw.url, reward_fn="seen_images"
    )
    assert out["score"] == 1.0 and out["reward_failed"] == 0.0
    assert json.loads(out["reward_extra"])["n_images"] == 2
    path_sample = {"raw_prompt": [{"role": "user", "content": [{"type": "image", "image": str(path)}]}]}
    out = verl_reward.compute_score_sync(
        "d", "a", "b", path_sample, gateway_url=gw.url, reward_fn="seen_images"
    )
    assert json.loads(out["reward_extra"])["n_images"] == 1
    # An image over the gateway's limits is the gateway's 413 naming it, not a silent score.
    big = {
        "raw_prompt": [
            {"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (300, 300))}]}
        ]
    }
    with pytest.raises(Exception, match="images\\[0\\]"):
        verl_reward.compute_score_sync("d", "a", "b", big, gateway_url=gw.url, reward_fn="seen_images")


def test_verl_own_build_messages_sample_through_the_adapter(gw: Gateway) -> None:
    """The same, with the chat made by verl 0.9.1's own `RLHFDataset._build_messages`, in an interpreter
    where verl imports (verl_mm_sample.py)."""
    if not (ANTLR_FOR_VERL / "antlr4").is_dir():
        pytest.fail(f"no antlr4 4.9 for verl in {ANTLR_FOR_VERL}: run .ci/setup")
    pythonpath = os.pathsep.join(p for p in (str(ANTLR_FOR_VERL), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.multimodal.verl_mm_sample", gw.url],
        cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": pythonpath}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["image_parts"] == ["Image", "PngImageFile"]  # verl's shape: PIL images in the parts
    assert out["result"]["score"] == 1.0 and out["result"]["reward_failed"] == 0.0
    assert json.loads(out["result"]["reward_extra"])["n_images"] == 2
