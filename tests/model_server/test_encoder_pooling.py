"""Encoder pooling agrees with SGLang 0.5.23, so a `similarity` score is the same on either backend.

SGLang's pooling per architecture is read from its own registry (`srt/configs/embedding_model_spec.py` of the
pinned wheel); the CPU server's table must match it, and the MiniLM server's scores must be those of that
pooling. The test prints the cosine under CLS (SGLang, and now the CPU server) and under mean pooling (the
CPU server's old choice, following sentence-transformers) to show how far apart the two are.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rewardfleet.services.model_server.runners.encoder import SGLANG_ENCODER_POOLING, encoder_pooling
from tests.model_server.test_encoder_server import cosine, reference_embeddings
from tests.sglang_conformance import sglang_source as sgl
from tests.support.model_server import RunningServer, start_server

PAIRS = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("The girl is carrying a baby.", "A cheetah is running behind its prey."),
    ("The answer is 42.", "The final answer: 42"),
]


@pytest.fixture(scope="module")
def minilm_server(minilm_path: Path, log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(minilm_path, log_dir, "--is-embedding", name="minilm-pooling")
    yield server
    server.process.stop()


def test_pooling_table_is_sglangs() -> None:
    rows = {r["architecture"]: r for r in sgl.embedding_registry().embedding_support_matrix()}
    for arch, pooling in SGLANG_ENCODER_POOLING.items():
        assert rows[arch]["pooling"] == pooling, arch
        assert rows[arch]["normalize"] is True, arch
    with pytest.raises(ValueError, match="not among SGLang's text embedding models"):
        encoder_pooling(["NomicBertModel"])


def test_similarity_equals_sglang_pooling_not_mean(minilm_server: RunningServer, minilm_path: Path) -> None:
    texts = [t for pair in PAIRS for t in pair]
    resp = httpx.post(minilm_server.url + "/v1/embeddings", json={"input": texts}, timeout=60)
    assert resp.status_code == 200, resp.text
    served = [d["embedding"] for d in resp.json()["data"]]
    cls = reference_embeddings(minilm_path, texts, pooling="cls")
    mean = reference_embeddings(minilm_path, texts, pooling="mean")
    gaps = []
    for i in range(len(PAIRS)):
        a, b = 2 * i, 2 * i + 1
        got, sglang_score, mean_score = (
            cosine(served[a], served[b]),
            cosine(cls[a], cls[b]),
            cosine(mean[a], mean[b]),
        )
        print(
            f"{PAIRS[i]}: cpu server {got:.4f}  sglang (cls) {sglang_score:.4f}  mean-pooled {mean_score:.4f}"
        )
        assert got == pytest.approx(sglang_score, abs=1e-4)
        gaps.append(abs(sglang_score - mean_score))
    # The two poolings really give different scores: agreeing on one of them matters.
    assert max(gaps) > 0.02
