"""Image reward model server benchmark: dynamic batching of (text, image) pairs on a CLIP pool (a script).

One sample is what `image_text_score` sends: one `POST /v1/embeddings` with `[{"text": prompt}, {"image":
data URL}]`, two inputs of one batch. In one run, alternating rounds:

1. offline: the server's own batch function (`ClipRunner.embed`: PNG decode, CLIP image processor, both
   towers) in this process, same thread count as the server, at 1/4/8/16/32 pairs per batch; the best one
   is the baseline;
2. the server (`rewardfleet serve-model`, engine process, `--max-batch-size 64` inputs = 32 pairs) under C
   concurrent clients, each sending one sample per request (aiohttp, a bounded number of requests).

Prints samples/s and the ratio server / offline best (target >= 0.85), as bench/batching.py does for DisRMs.
The model is a random-weight CLIP (hidden 128, 4 layers per tower, 224x224 images in 32x32 patches, ViT-B/32's
geometry at a fraction of its width); each request carries one of 64 different 256x256 JPEGs (about 25 KB),
so every sample decodes, resizes and crops a real image.

    .venv/bin/python -m bench.image_rm_server [--concurrency 64] [--requests 1500] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import OFFLINE_ENV as ENV  # noqa: E402
from bench.common import BenchResult, add_served_vs_offline, alternate_offline_and_served, print_result  # noqa: E402
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd  # noqa: E402
from bench.harness.tiny_clip import build_random_clip  # noqa: E402

PROMPTS = ("a red photo of the square", "a photo of a green square", "the blue photo")
PAIR_SIZES = (1, 4, 8, 16, 32)
IMAGE_SIDE = 256
MAX_BATCH_INPUTS = 64


def test_images(count: int, size: int = IMAGE_SIDE) -> list[str]:
    """`count` different JPEGs (seeded smooth colour fields with noise: photo-like sizes) as data URLs."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    out = []
    ramp = np.linspace(0.0, 1.0, size)[None, :, None]
    for _ in range(count):
        base = rng.uniform(0, 255, size=(1, 1, 3)) * (0.5 + 0.5 * ramp)
        pixels = np.clip(base + rng.normal(0, 12, size=(size, size, 3)), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(pixels, "RGB").save(buf, format="JPEG", quality=90)
        out.append("data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode())
    return out


def offline(model_path: Path, images: list[str], threads: int, seconds: float) -> dict[int, float]:
    """Pairs/s of the server's batch function (the same code path, no HTTP) at several batch sizes."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.image_inputs import ImageLimits, multimodal_inputs
    from rewardfleet.services.model_server.runners.loader import load_runner

    torch.set_num_threads(threads)
    runner = load_runner(ModelServerSettings(model_path=model_path))
    embed = runner.operations()["embed"]
    limits = ImageLimits(8 * 1024 * 1024, 4096 * 4096)
    out = {}
    for pairs in PAIR_SIZES:
        items = []
        for i in range(pairs):
            items += [{"text": PROMPTS[i % len(PROMPTS)]}, {"image": images[i % len(images)]}]
        batch = multimodal_inputs(items, limits)  # the front's checks are outside the batch, as in the server
        warm_until = time.perf_counter() + min(0.5, seconds / 4)
        while time.perf_counter() < warm_until:
            embed(batch)
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            results = embed(batch)
            n += pairs
        if any(isinstance(r, BaseException) for r in results):
            raise RuntimeError(f"offline batch failed: {results}")
        out[pairs] = n / (time.perf_counter() - started)
    return out


async def _load(url: str, images: list[str], concurrency: int, total: int) -> tuple[float, list[float]]:
    left = total
    latencies: list[float] = []
    errors: list[str] = []

    def body(i: int) -> dict[str, object]:
        items = [{"text": PROMPTS[i % len(PROMPTS)]}, {"image": images[i % len(images)]}]
        return {"model": "clip", "input": items}

    async def client(session: aiohttp.ClientSession, cid: int) -> None:
        nonlocal left
        while left > 0:
            left -= 1
            t0 = time.perf_counter()
            async with session.post(url, json=body(cid * 7919 + left)) as resp:
                await resp.read()
                if resp.status != 200:
                    errors.append(str(resp.status))
            latencies.append(time.perf_counter() - t0)

    conn = aiohttp.TCPConnector(limit=concurrency, keepalive_timeout=4)
    async with aiohttp.ClientSession(connector=conn) as session:

        async def warm(i: int) -> None:
            async with session.post(url, json=body(i)) as resp:
                await resp.read()

        await asyncio.gather(*(warm(i) for i in range(concurrency)))
        started = time.perf_counter()
        await asyncio.gather(*(client(session, c) for c in range(concurrency)))
        elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} requests failed: {errors[:5]}")
    return total / elapsed, latencies


def served(
    model_path: Path, images: list[str], threads: int, concurrency: int, requests: int, log: Path
) -> tuple[float, float]:
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", str(model_path), "--port", str(port),
        "--torch-num-threads", str(threads),
        "--max-batch-size", str(MAX_BATCH_INPUTS), "--max-queue", "4096", "--log-level", "warning",
    )  # fmt: skip
    proc = ChildProcess(cmd, log, env=ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        proc.wait_http(base + "/health", timeout_s=180)
        rps, lat = asyncio.run(_load(base + "/v1/embeddings", images, concurrency, requests))
        return rps, statistics.median(lat) * 1000
    finally:
        proc.stop()


def run(
    concurrency: int = 64,
    requests: int = 1500,
    threads: int = 1,
    offline_seconds: float = 2.0,
    rounds: int = 2,
) -> BenchResult:
    """Alternating rounds of (offline sweep, server); medians of each."""
    os.environ.update(ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-clip-"))
    model = build_random_clip(work / "clip", hidden_size=128, layers=4, image_size=224, patch_size=32)
    images = test_images(64)
    result = BenchResult("image reward model server")
    result.notes.append(
        f"random CLIP (hidden 128, 4 layers per tower, 224x224 images, 32x32 patches), one (text, "
        f"{IMAGE_SIDE}x{IMAGE_SIDE} JPEG) pair per request, "
        f"concurrency {concurrency}, {requests} requests, torch threads {threads}, {os.cpu_count()} cores, "
        f"{rounds} alternating rounds, medians; samples (pairs)/s"
    )
    offs, ons = alternate_offline_and_served(
        rounds,
        lambda: offline(model, images, threads, offline_seconds),
        lambda r: served(model, images, threads, concurrency, requests, work / f"server-{r}.log"),
    )
    add_served_vs_offline(result, "CLIP /v1/embeddings", offs, ons, unit="{} pairs")
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1500, help="requests per server run")
    ap.add_argument("--threads", type=int, default=1, help="torch threads, offline and in the server")
    ap.add_argument("--offline-seconds", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print_result(run(args.concurrency, args.requests, args.threads, args.offline_seconds, args.rounds))


if __name__ == "__main__":
    main()
