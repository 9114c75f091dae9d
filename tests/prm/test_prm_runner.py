"""The PRM runner in this process (no server): the three checkpoint kinds it serves, each against a forward
pass of its own. `Qwen2ForProcessRewardModel` with a closed-form head: every step's reward is exactly
sigmoid(positive_logit); a transformers `*ForTokenClassification` and a Math-Shepherd-style causal LM
(`returned_token_ids`) against their transformers forward on one unpadded sequence."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from bench.harness.tiny_models import build_tiny_llama
from bench.harness.tiny_prm import STEP_TAG, build_tiny_qwen2_prm, step_tag_id
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.routes.pooling import activate
from rewardfleet.services.model_server.runners.loader import load_runner, model_kind
from rewardfleet.services.model_server.runners.prm import StepInput, StepRows

TEXTS = [f"a{STEP_TAG}", f"hello world{STEP_TAG}good{STEP_TAG}", f"x{STEP_TAG}y{STEP_TAG}z{STEP_TAG}the end"]


def _rows(runner: Any, inputs: list[StepInput]) -> list[list[list[float]]]:
    out = runner.steps(inputs)
    assert all(isinstance(r, StepRows) for r in out), out
    return [r.rows for r in out]


def test_closed_form_head_gives_known_step_rewards(tmp_path: Path) -> None:
    path = build_tiny_qwen2_prm(tmp_path / "prm", positive_logit=math.log(3.0))
    runner = load_runner(ModelServerSettings(model_path=path, step_tag_id=step_tag_id(path)))
    assert runner.kind == "prm"
    for text, rows in zip(TEXTS, _rows(runner, [StepInput(text=t) for t in TEXTS]), strict=True):
        assert len(rows) == text.count(STEP_TAG)
        for row in rows:
            assert activate(row) == pytest.approx([0.25, 0.75], abs=1e-7)  # softmax([0, ln 3])


def test_default_step_tag_outside_the_vocabulary_names_the_flag(tmp_path: Path) -> None:
    path = build_tiny_qwen2_prm(tmp_path / "prm", positive_logit=0.0)
    with pytest.raises(ValueError, match="--step-tag-id"):  # vLLM's default 151651 for this family
        load_runner(ModelServerSettings(model_path=path))


def _reference_logits(model: Any, ids: list[int], tag: int, columns: list[int] | None) -> list[list[float]]:
    import torch

    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    if columns is not None:
        logits = logits[:, columns]
    return [logits[i].tolist() for i, t in enumerate(ids) if t == tag]


def _check(runner: Any, model: Any, tok: Any, tag: int, columns: list[int] | None, texts: list[str]) -> None:
    got = _rows(runner, [StepInput(text=t) for t in texts])
    for text, rows in zip(texts, got, strict=True):
        want = _reference_logits(model, tok(text)["input_ids"], tag, columns)
        assert len(rows) == len(want) > 0
        for g, w in zip(rows, want, strict=True):
            assert g == pytest.approx(w, abs=1e-5)


def test_math_shepherd_style_causal_lm_with_returned_token_ids(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = build_tiny_llama(tmp_path / "lm", kind="causal")
    tok = AutoTokenizer.from_pretrained(path)
    tag = tok.convert_tokens_to_ids("!")
    good, bad = tok.convert_tokens_to_ids("+"), tok.convert_tokens_to_ids("-")
    plain = ModelServerSettings(model_path=path)
    assert model_kind(plain) == "generation"  # a causal LM is a PRM only when given returned_token_ids
    settings = ModelServerSettings(model_path=path, step_tag_id=tag, returned_token_ids=[good, bad])
    runner = load_runner(settings)
    assert runner.kind == "prm" and runner.num_labels == 2
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    _check(runner, model, tok, tag, [good, bad], ["the answer!", "hello!world is good!", "a!b!c!d is long!"])


def test_token_classification_checkpoint_uses_its_own_head(tmp_path: Path) -> None:
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForTokenClassification

    prm = build_tiny_qwen2_prm(tmp_path / "prm", positive_logit=0.0)  # for its tokenizer with the tag
    tok = AutoTokenizer.from_pretrained(prm)
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, num_labels=2, pad_token_id=tok.pad_token_id, max_position_embeddings=256,
    )  # fmt: skip
    torch.manual_seed(5)
    model = Qwen2ForTokenClassification(config).eval()
    path = tmp_path / "tokcls"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    tag = step_tag_id(path)
    runner = load_runner(ModelServerSettings(model_path=path, step_tag_id=tag))
    assert runner.kind == "prm"
    _check(runner, model, tok, tag, None, TEXTS)
