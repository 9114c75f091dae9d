"""Process reward models: label logits at every step-tag token, as vLLM's `STEP` pooler returns them.

vLLM (`vllm/model_executor/layers/pooler/tokwise/methods.py`, `StepPool`) runs the model over the whole input,
keeps per token the head's output (cut to `returned_token_ids` when given), and returns the rows at the
positions whose token id is `step_tag_id` (every position when it is None). The activation (softmax over two
or more labels, sigmoid for one) is applied afterwards, per request (`use_activation`), by the route.

Three kinds of checkpoint (`families.ProcessRewardFamily`):

- `Qwen2ForProcessRewardModel` (Qwen2.5-Math-PRM): remote code on the Hub; the base `Qwen2Model` plus vLLM's
  `score` MLP with 2 labels, built from the checkpoint's tensors (`reward_heads.load_head`); the step reward
  is the probability of label 1 at each `<extra_0>`;
- any transformers `*ForTokenClassification`: its own head;
- a causal LM given `returned_token_ids` (Math-Shepherd: the logits of "+" and "-" at each step tag).

Inputs are right-padded into one batch, so a row's positions are those it has alone (`Runner.pooled`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rewardfleet.services.model_server.checkpoints import Checkpoint
from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, Runner
from rewardfleet.services.model_server.runners.common import Encoded, TextInput, encode_batch, pad_batch
from rewardfleet.services.model_server.runners.families import ProcessRewardFamily, process_reward_family


@dataclass(frozen=True, slots=True)
class StepInput:
    """One `/pooling` input: text or token ids, or chat `messages` rendered with the model's chat template
    (vLLM's `PoolingChatRequest`); options as vLLM names them."""

    text: str | None = None
    input_ids: list[int] | None = None
    messages: list[dict[str, Any]] | None = None
    add_special_tokens: bool = True
    add_generation_prompt: bool = False
    continue_final_message: bool = False
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StepRows:
    """Raw label logits at each step-tag position of one input, in order; `prompt_tokens` for usage."""

    rows: list[list[float]]
    prompt_tokens: int


def _family(settings: ModelServerSettings, architectures: list[str]) -> ProcessRewardFamily:
    family = process_reward_family(architectures, lm_with_token_ids=settings.returned_token_ids is not None)
    if family is None:
        raise ValueError(f"{architectures} is no process reward model")
    return family


def load_process_reward_model(
    checkpoint: Checkpoint, settings: ModelServerSettings, dtype: Any
) -> tuple[Any, Any]:
    """(model, head): the base model and vLLM's head for `prm_mlp`, else the transformers model (its own
    head) and None. Never runs code shipped with a checkpoint."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForTokenClassification

    from rewardfleet.services.model_server.runners.reward_heads import load_head

    config = AutoConfig.from_pretrained(checkpoint.folder, trust_remote_code=False, **checkpoint.load_kwargs)
    family = _family(settings, list(getattr(config, "architectures", None) or []))
    path, extra = checkpoint.folder, checkpoint.load_kwargs
    if family.head == "prm_mlp":
        base = AutoModel.from_pretrained(path, dtype=dtype, trust_remote_code=False)
        if type(base).__name__ != family.base_model:
            raise ValueError(
                f"{path}: {family.architecture} is vLLM's head over {family.base_model}, but the config's "
                f"model_type {base.config.model_type!r} loads {type(base).__name__}"
            )
        return base.eval(), load_head(family, base.config, path, base.dtype)
    model_cls = (
        AutoModelForTokenClassification if family.head == "token_classification" else AutoModelForCausalLM
    )
    model = model_cls.from_pretrained(path, dtype=dtype, trust_remote_code=False, **extra)
    return model.eval(), None


class ProcessRewardRunner(Runner):
    kind = "prm"

    def __init__(
        self, model: Any, tokenizer: Any, *, head: Any, settings: ModelServerSettings, **kwargs: Any
    ) -> None:
        super().__init__(model, tokenizer, **kwargs)
        if not getattr(self.config, "architectures", None):
            self.config.architectures = [type(model).__name__]
        self.family = _family(settings, self.architectures)
        self.head = head
        vocab = len(tokenizer)
        self.step_tag_id = (
            settings.step_tag_id if settings.step_tag_id is not None else self.family.default_step_tag_id
        )
        if self.step_tag_id is not None and self.step_tag_id >= vocab:
            raise ValueError(
                f"step_tag_id {self.step_tag_id} is outside this tokenizer's vocabulary [0, {vocab}); "
                "set --step-tag-id to the id of the model's step tag"
            )
        if self.family.head == "lm_logits":
            width = int(self.config.vocab_size)
        elif head is not None:
            width = int(head[-1].out_features)
        else:
            width = int(self.config.num_labels)
        self.returned_token_ids = settings.returned_token_ids
        if self.returned_token_ids is not None:
            bad = [t for t in self.returned_token_ids if t >= width]
            if bad:
                raise ValueError(f"returned_token_ids {bad} are outside the model's {width} outputs")
            width = len(self.returned_token_ids)
        self.num_labels = width
        self.id2label = {i: f"LABEL_{i}" for i in range(width)}

    def operations(self) -> dict[str, BatchFn]:
        return {"steps": self.steps}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return {"steps": [StepInput(text=WARMUP_TEXT.text), StepInput(text=WARMUP_TEXT.text)]}

    def _encode(self, inputs: list[StepInput]) -> list[Encoded | InvalidRequest]:
        """Token ids per input: chats rendered with the model's template, then each group of inputs with the
        same `add_special_tokens` tokenised in one call."""
        out: list[Encoded | InvalidRequest | None] = [None] * len(inputs)
        texts: list[TextInput] = []
        for i, x in enumerate(inputs):
            if x.messages is None:
                texts.append(TextInput(text=x.text, input_ids=x.input_ids))
                continue
            texts.append(TextInput(text=""))
            try:
                rendered = self.tokenizer.apply_chat_template(
                    x.messages,
                    tokenize=False,
                    add_generation_prompt=x.add_generation_prompt,
                    continue_final_message=x.continue_final_message,
                    **x.chat_template_kwargs,
                )
            except Exception as exc:  # a template error is the request's (bad roles, missing fields)
                out[i] = InvalidRequest(f"messages: the chat template failed: {exc}", param="messages")
                continue
            texts[i] = TextInput(text=str(rendered))
        for flag in (True, False):
            idx = [i for i, x in enumerate(inputs) if out[i] is None and x.add_special_tokens is flag]
            if idx:
                encoded = encode_batch(
                    self.tokenizer,
                    [texts[i] for i in idx],
                    context_length=self.context_length,
                    add_special_tokens=flag,
                )
                for i, e in zip(idx, encoded, strict=True):
                    out[i] = e
        return [e if e is not None else InvalidRequest("input was not encoded") for e in out]

    def steps(self, inputs: list[StepInput]) -> list[StepRows | InvalidRequest]:
        import torch

        encoded = self._encode(inputs)
        out: list[StepRows | InvalidRequest] = [
            e if isinstance(e, InvalidRequest) else StepRows([], 0) for e in encoded
        ]
        valid = [(i, e) for i, e in enumerate(encoded) if isinstance(e, Encoded)]
        for group, width in self.forward_groups([len(e.ids) for _, e in valid]):
            rows_in = [valid[g] for g in group]
            input_ids, attention_mask = pad_batch(
                [e.ids for _, e in rows_in],
                self.pad_id,
                left=False,
                width=width,
            )
            with torch.inference_mode():
                logits = self._token_logits(input_ids, attention_mask).float()
                if self.returned_token_ids is not None and self.family.head != "lm_logits":
                    logits = logits[..., self.returned_token_ids]
                keep = attention_mask.bool()
                if self.step_tag_id is not None:
                    keep &= input_ids == self.step_tag_id
                for row, (i, e) in enumerate(rows_in):
                    out[i] = StepRows(logits[row][keep[row]].tolist(), len(e.ids))
        return out

    def _token_logits(self, input_ids: Any, attention_mask: Any) -> Any:
        """[batch, tokens, labels]: the head's output at every token."""
        if self.head is not None:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            return self.head(hidden)
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        if self.family.head == "lm_logits" and self.returned_token_ids is not None:
            return logits[..., self.returned_token_ids]
        return logits
