"""Sequence-classification reward models (DisRM): raw logits of the last real token, as SGLang gives.

SGLang pools a reward model's hidden states at each sequence's true last token (`PoolingType.LAST` in
`models/llama_reward.py`), then applies the score head. The HF head instead pools "the rightmost token that is
not the pad id", which is wrong when the pad id is also the chat template's last token (`<|im_end|>` or
`<|eot_id|>` used as pad). So the runner runs the base model, picks the last position the attention mask marks
real, and applies the checkpoint's own score head there.
"""

from __future__ import annotations

from typing import Any

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, PooledResult, Runner
from rewardfleet.services.model_server.runners.common import TextInput


class RewardRunner(Runner):
    kind = "reward"

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        head = getattr(model, "score", None)
        if head is None or getattr(model, "base_model", None) is None:
            raise ValueError(
                f"{type(model).__name__} has no `score` head over a base model; "
                "serve a *ForSequenceClassification checkpoint"
            )
        self.head = head
        self.num_labels = int(getattr(self.config, "num_labels", 1))
        id2label = getattr(self.config, "id2label", None) or {}
        self.id2label = {int(k): str(v) for k, v in id2label.items()} or {
            i: f"LABEL_{i}" for i in range(self.num_labels)
        }

    def operations(self) -> dict[str, BatchFn]:
        return {"score": self.score}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return {"score": [WARMUP_TEXT, WARMUP_TEXT]}

    def score(self, inputs: list[TextInput]) -> list[PooledResult | InvalidRequest]:
        """Logits per input (right padding: see `Runner.pooled`)."""
        return self.pooled(inputs, self._logit_rows)

    def _logit_rows(self, input_ids: Any, attention_mask: Any) -> list[list[float]]:
        import torch

        hidden = self.model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        # Right padding: a row's last real token sits at (its number of real tokens - 1).
        last = attention_mask.sum(dim=1) - 1
        pooled = hidden[torch.arange(hidden.shape[0]), last]
        rows: list[list[float]] = self.head(pooled).float().tolist()
        return rows
