"""Vision-language judges: batched generation over prompts with images.

Vision-language judges (transformers' image-text-to-text models, Qwen2-VL's family): batched generation
over prompts with images, with the same per-request sampling parameters, stop conditions and grammars as
text generation.

A batch is one `model.generate` call over left-padded prompts: the model computes its own multimodal
(M-RoPE) positions from the image grids, which the text runner's splicing of positions cannot. Each
request keeps its own decoding state (`Row`): a logits processor masks what the row's grammar forbids and
picks the row's token with its own sampling parameters (`GenerationRunner.constrain` / `sample`); a
stopping criterion feeds the picked token to the row and ends it on eos, a stop string or its token budget.
So the batching is the dynamic batching every operation gets (batcher.py), not continuous batching: a row
that finishes early waits for the batch's longest row.

An image is a `data:image/...;base64` URL checked by services/common/images.py (bytes, header pixels, format)
before it is decoded; the server fetches no URL. In the prompt, each image is the processor's image
placeholder token, expanded here to the number of vision tokens its grid makes (`grid_t·grid_h·grid_w /
merge_size²`), as Qwen2-VL's processor does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import BatchFn
from rewardfleet.services.model_server.runners.common import TextInput, pad_batch, split_valid, tokenize_batch
from rewardfleet.services.model_server.runners.decoding import (
    GenerationInput,
    GenerationResult,
    Row,
    SamplingParams,
)
from rewardfleet.services.model_server.runners.generation import GenerationRunner


@dataclass(frozen=True, slots=True)
class VisionGenerationInput:
    """A rendered chat prompt (one image placeholder token per image) and its decoded RGB images."""

    prompt: TextInput
    images: tuple[Any, ...] = ()
    params: SamplingParams = field(default_factory=SamplingParams)


class VisionGenerationRunner(GenerationRunner):
    """`generate` over text and images; no continuous batching and no `/v1/score` (see the docstring)."""

    def __init__(self, model: Any, tokenizer: Any, image_processor: Any, **kw: Any) -> None:
        super().__init__(model, tokenizer, **kw)
        self.image_processor = image_processor
        self.image_token_id = int(model.config.image_token_id)
        self.merge_size = int(getattr(image_processor, "merge_size", 2))

    def operations(self) -> dict[str, BatchFn]:
        return {"generate": self.generate}

    def continuous_operations(self) -> dict[str, Callable[[], Any]]:
        return {}

    def deterministic_operations(self) -> dict[str, BatchFn]:
        return {}  # images go through the vision tower: each request alone

    def deterministic_continuous_operations(self) -> dict[str, Callable[[], Any]]:
        return {}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        from PIL import Image

        params = SamplingParams(max_new_tokens=4, temperature=0.0)
        image = Image.new("RGB", (32, 32), (128, 128, 128))
        pad = self.tokenizer.convert_ids_to_tokens(self.image_token_id)
        return {"generate": [VisionGenerationInput(TextInput(text=f"{pad}Is it grey?"), (image,), params)]}

    def generate(  # type: ignore[override]
        self, inputs: list[GenerationInput | VisionGenerationInput]
    ) -> list[GenerationResult | InvalidRequest]:
        import torch

        images = [tuple(getattr(x, "images", ())) for x in inputs]
        tokenized = tokenize_batch(
            self.tokenizer,
            [x.prompt for x in inputs],
            context_length=self.context_length,
            reserve_tokens=[x.params.max_new_tokens for x in inputs],
        )
        pixels, grids = [], []
        for i, ids in enumerate(tokenized):
            if isinstance(ids, InvalidRequest):
                continue
            try:
                expanded, pixel_values, grid = self._expand(ids, images[i])
            except InvalidRequest as exc:
                tokenized[i] = exc
                continue
            tokenized[i] = expanded
            if pixel_values is not None:
                pixels.append(pixel_values)
                grids.append(grid)
        rows: dict[int, Row] = {}
        for i, ids in enumerate(tokenized):
            if isinstance(ids, list):
                try:
                    rows[i] = self.new_row(len(ids), inputs[i].params)
                except InvalidRequest as exc:
                    tokenized[i] = exc
        idx, seqs = split_valid(tokenized)
        if seqs:
            self._generate([rows[i] for i in idx], seqs, pixels, grids, torch)
        return [t if isinstance(t, InvalidRequest) else self.result(rows[i]) for i, t in enumerate(tokenized)]

    def _expand(self, ids: list[int], images: tuple[Any, ...]) -> tuple[list[int], Any, Any]:
        """The prompt with each image placeholder expanded to its vision tokens, and the images' pixel
        values and grids (None, None without images)."""
        slots = sum(1 for t in ids if t == self.image_token_id)
        if slots != len(images):
            raise InvalidRequest(f"the prompt has {slots} image placeholders for {len(images)} images")
        if not images:
            return ids, None, None
        processed = self.image_processor(images=list(images), return_tensors="pt")
        grid = processed["image_grid_thw"]
        counts = iter(int(g.prod()) // self.merge_size**2 for g in grid)
        out: list[int] = []
        for t in ids:
            out.extend([t] * next(counts) if t == self.image_token_id else [t])
        if len(out) > self.context_length:
            raise InvalidRequest(
                f"prompt with its images is {len(out)} tokens; the context is {self.context_length}"
            )
        return out, processed["pixel_values"], grid

    def _generate(
        self, rows: list[Row], seqs: list[list[int]], pixels: list[Any], grids: list[Any], torch: Any
    ) -> None:
        from transformers import LogitsProcessorList, StoppingCriteriaList

        input_ids, attention_mask = pad_batch(seqs, self.pad_id, left=True)
        extra: dict[str, Any] = {}
        if pixels:
            extra = {"pixel_values": torch.cat(pixels), "image_grid_thw": torch.cat(grids)}
        with torch.inference_mode():
            self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                **extra,
                max_new_tokens=max(r.params.max_new_tokens for r in rows),
                do_sample=False,
                logits_processor=LogitsProcessorList([_PickPerRow(self, rows)]),
                stopping_criteria=StoppingCriteriaList([_FinishPerRow(self, rows)]),
                pad_token_id=self.pad_id,
                eos_token_id=None,
                use_cache=True,
            )


class _PickPerRow:
    """A logits processor: each row's own grammar mask and sampling; the picked token is the only one left,
    so generate's greedy choice takes it."""

    def __init__(self, runner: VisionGenerationRunner, rows: list[Row]) -> None:
        self.runner, self.rows = runner, rows

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        logits = scores.float()
        self.runner.constrain(logits, self.rows)
        chosen = self.runner.sample(logits, self.rows)
        picked = torch.full_like(scores, float("-inf"))
        for b, tok in enumerate(chosen):
            picked[b, tok if self.rows[b].finish is None else self.runner.pad_id] = 0.0
        return picked


class _FinishPerRow:
    """A stopping criterion: feed each live row its new token; a row is done once it has finished."""

    def __init__(self, runner: VisionGenerationRunner, rows: list[Row]) -> None:
        self.runner, self.rows = runner, rows

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        last = input_ids[:, -1].tolist()
        for r, tok in zip(self.rows, last, strict=True):
            if r.finish is None:
                r.append(int(tok), self.runner.tokenizer)
        return torch.tensor([r.finish is not None for r in self.rows], dtype=torch.bool)
