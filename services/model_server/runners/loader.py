"""Pick the runner for a checkpoint from its `architectures` and load model and tokenizer."""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from rewardfleet.services.model_server.checkpoints import DUAL_ENCODERS, Checkpoint
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.runners.base import Runner
from rewardfleet.services.model_server.runners.families import (
    is_reward_architecture,
    process_reward_family,
    reward_family,
)
from rewardfleet.services.model_server.runners.gguf_checkpoint import loadable

logger = logging.getLogger(__name__)

ModelKind = Literal["reward", "generation", "encoder", "prm", "clip"]

_PADDING_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert")
_GENERATION_SUFFIXES = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


def detect_kind(architectures: list[str], *, lm_is_prm: bool = False) -> ModelKind:
    """reward for sequence classifiers and reward models (only SGLang's families: `families.py`; any other
    is refused here, naming it and the served ones), prm for process reward models (token classifiers, and
    causal LMs when `lm_is_prm`: the server has `returned_token_ids`), generation for causal LMs, clip for
    CLIP-style dual encoders (`CLIPModel`: text and image embeddings), encoder for bare encoders
    (`BertModel`, `XLMRobertaModel`, ...)."""
    if process_reward_family(architectures, lm_with_token_ids=lm_is_prm) is not None:
        return "prm"
    for arch in architectures:
        if arch in DUAL_ENCODERS:
            return "clip"
        if is_reward_architecture(arch):
            reward_family(architectures)  # raises for a family the server does not serve
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
    return _kind(loadable(settings.checkpoint), settings)


def _kind(checkpoint: Checkpoint, settings: ModelServerSettings) -> ModelKind:
    return detect_kind(_read_architectures(checkpoint), lm_is_prm=settings.returned_token_ids is not None)


def load_runner(settings: ModelServerSettings) -> Runner:
    import torch
    from transformers import AutoModel, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from rewardfleet.services.model_server.runners.encoder import EncoderRunner
    from rewardfleet.services.model_server.runners.generation import GenerationRunner
    from rewardfleet.services.model_server.runners.reward import RewardRunner

    hf_logging.disable_progress_bar()
    if settings.torch_num_threads is not None:
        torch.set_num_threads(settings.torch_num_threads)
    source = settings.checkpoint  # what /model_info names; a GGUF file loads from its converted copy
    checkpoint = loadable(source)
    path, extra = checkpoint.folder, checkpoint.load_kwargs
    kind = _kind(checkpoint, settings)
    if kind == "generation" and settings.is_embedding:
        raise ValueError(f"{path} is a causal LM; --is-embedding serves reward models and encoders only")
    dtype = "auto" if settings.dtype == "auto" else getattr(torch, settings.dtype)
    if settings.tokenizer_path is not None:
        tokenizer = AutoTokenizer.from_pretrained(settings.tokenizer_path)
    else:  # a GGUF file holds its tokenizer and chat template too
        tokenizer = AutoTokenizer.from_pretrained(path, **extra)
    head = None
    image_processor = None
    if kind == "prm":
        from rewardfleet.services.model_server.runners.prm import load_process_reward_model

        model, head = load_process_reward_model(checkpoint, settings, dtype)
    elif kind == "reward":
        model, head = _load_reward_model(checkpoint, dtype)
    elif kind == "generation" and is_vision_checkpoint(checkpoint):
        from transformers import AutoModelForImageTextToText

        model = AutoModelForImageTextToText.from_pretrained(path, dtype=dtype, **extra).eval()
        image_processor = load_image_processor(checkpoint)
    elif kind == "clip":
        from transformers import CLIPImageProcessorPil, CLIPModel

        model = CLIPModel.from_pretrained(path, dtype=dtype).eval()  # no GGUF file holds a CLIP
        # The PIL processor: transformers' default CLIP processor needs torchvision, which is not installed.
        image_processor = CLIPImageProcessorPil.from_pretrained(path)
    else:
        model_cls = AutoModelForCausalLM if kind == "generation" else AutoModel
        model = model_cls.from_pretrained(path, dtype=dtype, **extra).eval()
    if not getattr(model.config, "architectures", None):
        model.config.architectures = [type(model).__name__]  # a GGUF config names no class; /model_info does

    text_config = getattr(model.config, "text_config", None) or model.config
    context = int(getattr(text_config, "max_position_embeddings", 0) or 0) or int(
        getattr(tokenizer, "model_max_length", 2048)
    )
    if getattr(model.config, "model_type", "") in _PADDING_OFFSET_POSITIONS:
        # RoBERTa-style positions start after the padding index: 514 positions hold 512 tokens.
        context -= int(getattr(model.config, "pad_token_id", 0) or 0) + 1
    if settings.context_length is not None:
        if settings.context_length > context:
            logger.warning(
                "--context-length %d exceeds the model's %d positions", settings.context_length, context
            )
        context = settings.context_length

    common = {"model_path": source.path, "context_length": context}
    runner: Runner
    if kind == "prm":
        from rewardfleet.services.model_server.runners.prm import ProcessRewardRunner

        runner = ProcessRewardRunner(model, tokenizer, head=head, settings=settings, **common)
    elif kind == "reward":
        family = reward_family(_read_architectures(checkpoint))
        runner = RewardRunner(model, tokenizer, family=family, head=head, **common)
    elif kind == "generation" and image_processor is not None:
        from rewardfleet.services.model_server.runners.vision import VisionGenerationRunner

        runner = VisionGenerationRunner(model, tokenizer, image_processor, **common)
    elif kind == "generation":
        runner = GenerationRunner(model, tokenizer, **common)
    elif kind == "clip":
        from rewardfleet.services.model_server.runners.clip import ClipRunner

        runner = ClipRunner(model, tokenizer, image_processor=image_processor, **common)
    else:
        runner = EncoderRunner(model, tokenizer, **common)
    logger.info("loaded %s (%s, %s) context=%d", source.path, kind, ",".join(runner.architectures), context)
    return runner


def is_vision_checkpoint(checkpoint: Checkpoint) -> bool:
    """An image-text-to-text checkpoint: a `*ForConditionalGeneration` with an image processor config."""
    if checkpoint.gguf_file:
        return False
    archs = _read_architectures(checkpoint)
    return (checkpoint.folder / "preprocessor_config.json").is_file() and any(
        a.endswith("ForConditionalGeneration") for a in archs
    )


def load_image_processor(checkpoint: Checkpoint) -> Any:
    """The checkpoint's image processor. The Pillow backend (`<Type>Pil`) when there is one: the default
    backend needs torchvision, which this CPU server does not install."""
    import transformers

    config = json.loads((checkpoint.folder / "preprocessor_config.json").read_text())
    name = str(config.get("image_processor_type") or "")
    cls = getattr(transformers, f"{name}Pil", None) or getattr(transformers, name, None)
    if cls is None:
        raise ValueError(f"{checkpoint.folder}: unknown image_processor_type {name!r}")
    return cls.from_pretrained(checkpoint.folder)


def _load_reward_model(checkpoint: Checkpoint, dtype: Any) -> tuple[Any, Any]:
    """(model, None) for a family transformers has (its own head is used), or (base model, SGLang's head
    built from the checkpoint's weights) for a remote-code family. Never runs the checkpoint's own code."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    from rewardfleet.services.model_server.runners.reward_heads import load_head

    family = reward_family(_read_architectures(checkpoint))
    path = checkpoint.folder
    if family.base_model is None:
        model = AutoModelForSequenceClassification.from_pretrained(path, dtype=dtype, trust_remote_code=False)
        loaded = type(model).__name__
        if loaded != family.architecture:
            raise ValueError(
                f"{path}: config names {family.architecture} but its model_type "
                f"{model.config.model_type!r} loads {loaded}"
            )
        return model.eval(), None
    base = AutoModel.from_pretrained(path, dtype=dtype, trust_remote_code=False)
    if type(base).__name__ != family.base_model:
        raise ValueError(
            f"{path}: {family.architecture} is SGLang's head over {family.base_model}, but the config's "
            f"model_type {base.config.model_type!r} loads {type(base).__name__}"
        )
    head = load_head(family, base.config, path, base.dtype)
    # transformers lists the head's tensors as UNEXPECTED for the base model: they are the head built here.
    logger.info(
        "%s: SGLang's %s head over %s, from the checkpoint's tensors", path, family.head, family.base_model
    )
    return base.eval(), head
