"""Pick the runner for a checkpoint from its `architectures` and load model and tokenizer."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Literal

from services.model_server.config import ModelServerSettings
from services.model_server.runners.base import Runner

logger = logging.getLogger(__name__)

ModelKind = Literal["reward", "generation", "encoder"]

_REWARD_SUFFIXES = ("ForSequenceClassification", "ForRewardModel")
_GENERATION_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def detect_kind(architectures: list[str]) -> ModelKind:
    """reward for `*ForSequenceClassification`/`*ForRewardModel`, generation for causal LMs, encoder for
    bare encoders (`BertModel`, `XLMRobertaModel`, ...)."""
    for arch in architectures:
        if arch.endswith(_REWARD_SUFFIXES):
            return "reward"
        if arch.endswith(_GENERATION_SUFFIXES):
            return "generation"
        if arch.endswith("Model"):
            return "encoder"
    raise ValueError(
        f"cannot serve architectures {architectures}: expected a sequence classifier, a causal LM "
        "or an encoder (*Model)"
    )


def _read_architectures(model_path: Path) -> list[str]:
    config = json.loads((model_path / "config.json").read_text())
    return list(config.get("architectures") or [])


def load_runner(settings: ModelServerSettings) -> Runner:
    import torch
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )
    from transformers.utils import logging as hf_logging

    from services.model_server.runners.encoder import EncoderRunner
    from services.model_server.runners.generation import GenerationRunner
    from services.model_server.runners.reward import RewardRunner

    hf_logging.disable_progress_bar()
    if settings.torch_num_threads is not None:
        torch.set_num_threads(settings.torch_num_threads)
    path = settings.model_path
    kind = detect_kind(_read_architectures(path))
    if kind == "generation" and settings.is_embedding:
        raise ValueError(f"{path} is a causal LM; --is-embedding serves reward models and encoders only")
    dtype = "auto" if settings.dtype == "auto" else getattr(torch, settings.dtype)
    tokenizer = AutoTokenizer.from_pretrained(settings.tokenizer_path or path)
    model_cls = {
        "reward": AutoModelForSequenceClassification,
        "generation": AutoModelForCausalLM,
        "encoder": AutoModel,
    }[kind]
    model = model_cls.from_pretrained(path, dtype=dtype).eval()

    context = int(getattr(model.config, "max_position_embeddings", 0) or 0) or int(
        getattr(tokenizer, "model_max_length", 2048)
    )
    if settings.context_length is not None:
        if settings.context_length > context:
            logger.warning(
                "--context-length %d exceeds the model's %d positions", settings.context_length, context
            )
        context = settings.context_length

    common = {"model_path": path, "context_length": context}
    runner: Runner
    if kind == "reward":
        runner = RewardRunner(model, tokenizer, **common)
    elif kind == "generation":
        runner = GenerationRunner(model, tokenizer, **common)
    else:
        runner = EncoderRunner(model, tokenizer, **common)
    logger.info("loaded %s (%s, %s) context=%d", path, kind, ",".join(runner.architectures), context)
    return runner
