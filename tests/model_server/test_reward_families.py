"""Every reward / classification family the CPU server serves, behind the real server, scores as SGLang does.

For each family a tiny random-weight checkpoint is built (tests/tiny_reward_models.py) and served; what
`/v1/embeddings` answers for texts of very different lengths in one request (so padding and batching are in
play) must equal a direct forward of the same checkpoint, one text at a time, pooled and scored the way SGLang
0.5.23's `srt/models/<family>.py` does, written out here on its own:

- decoder families: the hidden state at the last token, then the head (`score` Linear; `score` MLP
  Linear-ReLU-Linear for `Qwen2/3ForRewardModel`; `classification_head` for `LlamaForClassification`; the
  float16-weighted sum of the even logits for `...WithNormal_Weights`), computed from the tensors in the
  checkpoint file for the remote-code families;
- cross-encoders: the transformers class's forward (first token through its pooler/classifier), then the
  activation the config names (`Sigmoid` for the BERT one). `/v1/rerank` feeds (query, document) pairs with
  their segment ids, as SGLang's rerank does.

A checkpoint of a family the server does not serve is refused at start, naming it and the served ones.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, free_port, rewardfleet_cmd
from rewardfleet.services.model_server.runners.families import SUPPORTED
from tests.support.model_server import RunningServer, start_server
from tests.tiny_reward_models import ARCHITECTURES, CROSS_ENCODERS, build_tiny_reward_model

TEXTS = [
    "hello world",
    "the answer is 42.",
    "x",
    "a much longer answer that goes on and on about the world, good and bad " * 3,
    "good",
    "bad answer!",
]
QUERY = "what is the answer?"
DOCS = ["the answer is 42.", "hello world", "bad", "good answer, the answer is 42"]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reward-families")
    return {arch: build_tiny_reward_model(root / arch, arch) for arch in ARCHITECTURES}


@pytest.fixture(scope="module", params=ARCHITECTURES)
def family_server(
    request: pytest.FixtureRequest, checkpoints: dict[str, Path], log_dir: Path
) -> Iterator[tuple[str, RunningServer]]:
    arch: str = request.param
    server = start_server(checkpoints[arch], log_dir, "--is-embedding", name=f"family-{arch}")
    yield arch, server
    server.process.stop()


# -- the reference: SGLang's pooling and head, one text at a time -----------------------------------------
def _tensors(path: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def _last_hidden(base: Any, ids: list[int]) -> Any:
    import torch

    return base(input_ids=torch.tensor([ids])).last_hidden_state[0, -1]


def direct_scores(arch: str, path: Path, inputs: list[tuple[str, str | None]]) -> list[list[float]]:
    """SGLang's output for each (text, pair or None), computed alone: no padding, no batch."""
    import torch
    import torch.nn.functional as F
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(path)
    encodings = [tok(t, p) if p is not None else tok(t) for t, p in inputs]
    out: list[list[float]] = []
    with torch.inference_mode():
        if arch in CROSS_ENCODERS:
            model = transformers.AutoModelForSequenceClassification.from_pretrained(path).eval()
            act = torch.sigmoid if arch == "BertForSequenceClassification" else (lambda x: x)
            for enc in encodings:
                batch = {k: torch.tensor([v]) for k, v in enc.items()}
                out.append(act(model(**batch).logits[0]).tolist())
            return out
        if SUPPORTED[arch].base_model is None:
            model = getattr(transformers, arch).from_pretrained(path).eval()
            for enc in encodings:
                out.append(model.score(_last_hidden(model.base_model, enc["input_ids"])).tolist())
            return out
        base_cls = getattr(transformers, SUPPORTED[arch].base_model or "")
        base = base_cls.from_pretrained(path).eval()
        w = _tensors(path)
        for enc in encodings:
            h = _last_hidden(base, enc["input_ids"])
            if arch in ("Qwen2ForRewardModel", "Qwen3ForRewardModel"):
                x = F.relu(h @ w["score.0.weight"].T + w["score.0.bias"])
                out.append((x @ w["score.2.weight"].T + w["score.2.bias"]).tolist())
            elif arch == "LlamaForClassification":
                out.append((h @ w["classification_head.weight"].T).tolist())
            else:  # LlamaForSequenceClassificationWithNormal_Weights, as llama_reward.py computes it
                logits = h @ w["score.weight"].T
                x = h.to(torch.float16)
                for i in (0, 2, 4):
                    x = F.linear(x, w[f"weights.fc.{i}.weight"], w[f"weights.fc.{i}.bias"])
                    x = F.selu(x) if i < 4 else x
                rewards = logits.view(-1, 2)[:, 0]
                out.append([float((rewards * x).sum())])
    return out


# -- the tests ----------------------------------------------------------------------------------------------
def test_every_family_has_a_tiny_checkpoint() -> None:
    assert set(ARCHITECTURES) == set(SUPPORTED)


def test_served_scores_equal_sglangs_pooling_and_head(
    family_server: tuple[str, RunningServer], checkpoints: dict[str, Path]
) -> None:
    arch, server = family_server
    resp = httpx.post(server.url + "/v1/embeddings", json={"model": "m", "input": TEXTS}, timeout=60)
    assert resp.status_code == 200, resp.text
    served = [d["embedding"] for d in resp.json()["data"]]
    expected = direct_scores(arch, checkpoints[arch], [(t, None) for t in TEXTS])
    print(arch, [round(row[0], 4) for row in expected])
    for got, want in zip(served, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-4)
    # Different inputs score differently: a wrong token pooled would show.
    firsts = [row[0] for row in expected]
    assert max(firsts) - min(firsts) > 1e-2
    info = httpx.get(server.url + "/model_info", timeout=10).json()
    assert info["architectures"] == [arch] and info["is_generation"] is False


def test_native_classify_equals_v1_embeddings(
    family_server: tuple[str, RunningServer], checkpoints: dict[str, Path]
) -> None:
    arch, server = family_server
    got = httpx.post(server.url + "/classify", json={"text": TEXTS[:3]}, timeout=60).json()
    expected = direct_scores(arch, checkpoints[arch], [(t, None) for t in TEXTS[:3]])
    for item, want in zip(got, expected, strict=True):
        assert item["embedding"] == pytest.approx(want, abs=1e-4)


def test_rerank_scores_query_document_pairs(
    family_server: tuple[str, RunningServer], checkpoints: dict[str, Path]
) -> None:
    """SGLang's rerank tokenises (query, document) as a pair: with segment ids for a cross-encoder, the
    tokenizer's plain concatenation for a decoder reward model."""
    arch, server = family_server
    resp = httpx.post(server.url + "/v1/rerank", json={"query": QUERY, "documents": DOCS}, timeout=60)
    assert resp.status_code == 200, resp.text
    expected = [row[0] for row in direct_scores(arch, checkpoints[arch], [(QUERY, d) for d in DOCS])]
    got = {item["index"]: item["score"] for item in resp.json()}
    for i, want in enumerate(expected):
        assert got[i] == pytest.approx(want, abs=1e-4), i
    assert [item["index"] for item in resp.json()] == sorted(range(len(DOCS)), key=lambda i: -expected[i])


def test_bert_segment_ids_change_the_score(checkpoints: dict[str, Path]) -> None:
    """Why the pair's segment ids must reach the model: without them the same pair scores differently."""
    arch = "BertForSequenceClassification"
    with_types = direct_scores(arch, checkpoints[arch], [(QUERY, DOCS[0])])[0][0]
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(checkpoints[arch])
    model = transformers.AutoModelForSequenceClassification.from_pretrained(checkpoints[arch]).eval()
    with torch.inference_mode():
        ids = tok(QUERY, DOCS[0], return_tensors="pt")["input_ids"]
        without = float(torch.sigmoid(model(input_ids=ids).logits[0, 0]))
    assert abs(with_types - without) > 1e-3


def _config_only(path: Path, arch: str, model_type: str) -> Path:
    import json

    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps({"architectures": [arch], "model_type": model_type}))
    return path


@pytest.mark.parametrize(
    ("arch", "model_type", "why"),
    [
        ("InternLM2ForRewardModel", "internlm2", "transformers has no InternLM2 model"),
        ("MistralForSequenceClassification", "mistral", ""),
    ],
)
def test_a_family_not_served_is_refused_naming_it_and_the_served_ones(
    tmp_path: Path, arch: str, model_type: str, why: str
) -> None:
    path = _config_only(tmp_path / arch, arch, model_type)
    out = subprocess.run(
        rewardfleet_cmd("serve-model", "--model-path", str(path), "--port", str(free_port())),
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    assert f"cannot serve the reward/classification checkpoint {arch}" in text
    assert why in text
    for served in SUPPORTED:
        assert served in text
