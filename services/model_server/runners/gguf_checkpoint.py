"""A GGUF checkpoint served from its converted copy.

A GGUF checkpoint served from its converted copy: the first load converts the file (dequantised weights,
config, tokenizer with its chat template) and saves it as an HF folder under
`$XDG_CACHE_HOME/rewardfleet/gguf-checkpoints/<key>/` (services/common/gguf_cache.py); later loads read that.

Reading a GGUF file costs transformers several seconds per read, and a server read the embedded judge's file
four times (its kind, its tokenizer, its weights): ~45 s of CPU for SmolLM2-135M on 2 cores, against ~2 s
from the converted folder. The folder holds the weights as loaded (float32; SmolLM2: ~540 MB on disk). If the
cache cannot be written (a read-only home), the server reads the GGUF file as before.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rewardfleet.services.common.gguf_cache import cache_dir, publish
from rewardfleet.services.model_server.checkpoints import Checkpoint

logger = logging.getLogger(__name__)

KIND = "gguf-checkpoints"


def loadable(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint to load: for a GGUF file its converted folder (converting it first if need be),
    otherwise the checkpoint itself."""
    if not checkpoint.gguf_file:
        return checkpoint
    cached = cache_dir(KIND, checkpoint.path)
    if (cached / "config.json").is_file():
        return Checkpoint(cached)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        logger.warning("%s is read from its GGUF file on every start: no cache (%s)", checkpoint.path, exc)
        return checkpoint
    return Checkpoint(cached) if _convert(checkpoint, cached) else checkpoint


def _convert(checkpoint: Checkpoint, cached: Path) -> bool:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.info("converting %s once into %s", checkpoint.path, cached)
    extra = checkpoint.load_kwargs
    # transformers reads GGUF files as causal LMs only (llama, qwen2, ...), dequantised to float32.
    model = AutoModelForCausalLM.from_pretrained(checkpoint.folder, dtype=torch.float32, **extra)
    if not getattr(model.config, "architectures", None):
        model.config.architectures = [type(model).__name__]  # a GGUF config names no class
    tokenizer = AutoTokenizer.from_pretrained(checkpoint.folder, **extra)

    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)

    if publish(cached, write):
        return True
    logger.warning("cannot write %s: %s is read from its GGUF file on every start", cached, checkpoint.path)
    return False
