"""Pick the runner for a checkpoint from its `architectures` and load model and tokenizer."""

from __future__ import annotations

import json
import logging
from typing import Literal

from rewardfleet.services.model_server.checkpoints import Checkpoint
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.runners.base import Runner

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


def _read_architectures(checkpoint: Checkpoint) -> list[str]:
    if checkpoint.gguf_file:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(checkpoint.folder, **checkpoint.load_kwargs)
        # transformers loads GGUF files only as causal LMs (llama, qwen2, ...); their config names no class.
        return list(getattr(config, "architectures", None) or []) or ["GGUFForCausalLM"]
    data = json.loads((checkpoint.folder / "config.json").read_text())
    return list(data.get("architectures") or [])


def model_kind(settings: ModelServerSettings) -> ModelKind:
    """The kind of model the settings' checkpoint holds, from its config alone (no weights loaded)."""
    return detect_kind(_read_architectures(settings.checkpoint))


def load_runner(settings: ModelServerSettings) -> Runner:
    import torch
    from transformers import (
        AutoModel,
        AutoModelForCausalLM,
        AutoModelForSequenceClassification,
        AutoTokenizer,
    )
    from transformers.utils import logging as hf_logging

    from rewardfleet.services.model_server.runners.encoder import EncoderRunner
    from rewardfleet.services.model_server.runners.generation import GenerationRunner
    from rewardfleet.services.model_server.runners.reward import RewardRunner

    hf_logging.disable_progress_bar()
    if settings.torch_num_threads is not None:
        torch.set_num_threads(settings.torch_num_threads)
    checkpoint = settings.checkpoint
    path, extra = checkpoint.folder, checkpoint.load_kwargs
    kind = detect_kind(_read_architectures(checkpoint))
    if kind == "generation" and settings.is_embedding:
        raise ValueError(f"{path} is a causal LM; --is-embedding serves reward models and encoders only")
    dtype = "auto" if settings.dtype == "auto" else getattr(torch, settings.dtype)
    if settings.tokenizer_path is not None:
        tokenizer = AutoTokenizer.from_pretrained(settings.tokenizer_path)
    else:  # a GGUF file holds its tokenizer and chat template too
        tokenizer = AutoTokenizer.from_pretrained(path, **extra)
    model_cls = {
        "reward": AutoModelForSequenceClassification,
        "generation": AutoModelForCausalLM,
        "encoder": AutoModel,
    }[kind]
    model = model_cls.from_pretrained(path, dtype=dtype, **extra).eval()
    if not getattr(model.config, "architectures", None):
        model.config.architectures = [type(model).__name__]  # a GGUF config names no class; /model_info does

    context = int(getattr(model.config, "max_position_embeddings", 0) or 0) or int(
        getattr(tokenizer, "model_max_length", 2048)
    )
    if settings.context_length is not None:
        if settings.context_length > context:
            logger.warning(
                "--context-length %d exceeds the model's %d positions", settings.context_length, context
            )
        context = settings.context_length

    common = {"model_path": checkpoint.path, "context_length": context}
    runner: Runner
    if kind == "reward":
        runner = RewardRunner(model, tokenizer, **common)
    elif kind == "generation":
        runner = GenerationRunner(model, tokenizer, **common)
    else:
        runner = EncoderRunner(model, tokenizer, **common)
    logger.info(
        "loaded %s (%s, %s) context=%d", checkpoint.path, kind, ",".join(runner.architectures), context
    )
    return runner
