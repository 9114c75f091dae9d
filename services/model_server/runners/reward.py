"""Reward models and sequence classifiers (DisRM): pooled and scored as SGLang 0.5.23 does for the family.

The family (`families.py`) says how. Decoder reward models pool each sequence's hidden state at its true last
token (SGLang's `PoolingType.LAST`), then apply the score head. The HF head instead pools "the rightmost token
that is not the pad id", which is wrong when the pad id is also the chat template's last token (`<|im_end|>`
or `<|eot_id|>` used as pad), so the runner runs the base model, picks the last position the attention mask
marks real, and applies the head there. Cross-encoders (BERT, XLM-RoBERTa) pool the first token through the
model's own pooler and classifier (their HF forward does exactly that) and apply the config's activation.

Output is the head's row (`[score]` for one label), never squeezed: verl reads `embedding[-1]`.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, PooledResult, Runner
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.families import RewardFamily


class RewardRunner(Runner):
    kind = "reward"

    def __init__(
        self, model: Any, tokenizer: Any, *, family: RewardFamily, head: Any = None, **kwargs: Any
    ) -> None:
        """`model` is the transformers class of the family (its own head is used), or, with `head`, the base
        model that `head` (SGLang's head, see `reward_heads.py`) scores."""
        super().__init__(model, tokenizer, **kwargs)
        self.family = family
        self.activation: Any = None
        if family.head == "cross_encoder":
            from rewardfleet.services.model_server.runners.reward_heads import cross_encoder_activation

            self.activation = cross_encoder_activation(self.config)
            num_labels = int(self.config.num_labels)
        elif head is not None:
            self.base, self.head = model, head
            num_labels = _out_features(head)
        else:
            self.base, self.head = model.base_model, model.score
            num_labels = int(self.config.num_labels)
        self.num_labels = num_labels
        id2label = {int(k): str(v) for k, v in (getattr(self.config, "id2label", None) or {}).items()}
        if sorted(id2label) != list(range(num_labels)):
            id2label = {i: f"LABEL_{i}" for i in range(num_labels)}
        self.id2label = id2label

    @property
    def input_row_multiple(self) -> int:
        # A cross-encoder's pooler and classifier run inside the model's forward: pad the batch itself.
        return self.row_multiple if self.family.head == "cross_encoder" else 1

    def operations(self) -> dict[str, BatchFn]:
        return {"score": self.score}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return {"score": [WARMUP_TEXT, WARMUP_TEXT]}

    def score(self, inputs: list[TextInput]) -> list[PooledResult | InvalidRequest]:
        """Logits per input (right padding: see `Runner.pooled`)."""
        forward = self._cross_encoder_rows if self.family.head == "cross_encoder" else self._last_token_rows
        return self.pooled(inputs, forward)

    def _last_token_rows(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> list[list[float]]:
        import torch

        hidden = self.base(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # Right padding: a row's last real token sits at (its number of real tokens - 1).
        last = attention_mask.sum(dim=1) - 1
        pooled = hidden[torch.arange(hidden.shape[0]), last]
        rows: list[list[float]] = self.head(self.head_rows(pooled))[: len(pooled)].float().tolist()
        return rows

    def _cross_encoder_rows(
        self, input_ids: Any, attention_mask: Any, token_type_ids: Any
    ) -> list[list[float]]:
        kwargs = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        logits = self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs).logits
        rows: list[list[float]] = self.activation(logits).float().tolist()
        return rows


def _out_features(head: Any) -> int:
    """How many values a head gives per sequence (its last Linear's width; 1 for a weighted sum)."""
    if hasattr(head, "fc"):  # weighted_normal: one weighted score
        return 1
    linears = [m for m in head.modules() if hasattr(m, "out_features")]
    return int(linears[-1].out_features)
