"""Sentence encoders: pooled and L2-normalised exactly as SGLang 0.5.23 pools the same architecture.

SGLang picks the pooling from the architecture alone (`srt/configs/embedding_model_spec.py`): `BertModel` and
`XLMRobertaModel` pool the CLS token, `MistralModel` and `LlamaEmbeddingModel` the last token, and every one
is L2-normalised. It ignores sentence-transformers' `1_Pooling` config, so all-MiniLM-L6-v2 (trained with mean
pooling) gets CLS pooling there. The CPU server does the same, so a `similarity` score does not change when a
pool moves between the CPU backend and SGLang (tests/model_server/test_encoder_pooling.py).
"""

from __future__ import annotations

from typing import Any, Literal

from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.base import WARMUP_TEXT, BatchFn, PooledResult, Runner
from rewardfleet.services.model_server.runners.common import TextInput

Pooling = Literal["cls", "last"]

# SGLang 0.5.23's embedding architectures that are plain text encoders, with its pooling for each.
SGLANG_ENCODER_POOLING: dict[str, Pooling] = {
    "BertModel": "cls",
    "XLMRobertaModel": "cls",
    "MistralModel": "last",
    "LlamaEmbeddingModel": "last",
}


def encoder_pooling(architectures: list[str]) -> Pooling:
    """SGLang's pooling for the checkpoint, or a clear error for an encoder SGLang would not pool."""
    for arch in architectures:
        if arch in SGLANG_ENCODER_POOLING:
            return SGLANG_ENCODER_POOLING[arch]
    raise ValueError(
        f"encoder architectures {architectures} are not among SGLang's text embedding models "
        f"({sorted(SGLANG_ENCODER_POOLING)}); the CPU server pools only what SGLang pools, the same way"
    )


class EncoderRunner(Runner):
    kind = "encoder"

    def __init__(self, model: Any, tokenizer: Any, **kw: Any):
        super().__init__(model, tokenizer, **kw)
        self.pooling = encoder_pooling(self.architectures)

    def operations(self) -> dict[str, BatchFn]:
        return {"embed": self.embed}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return {"embed": [WARMUP_TEXT, WARMUP_TEXT]}

    def embed(self, inputs: list[TextInput]) -> list[PooledResult | InvalidRequest]:
        return self.pooled(inputs, self._embed_rows)

    def _embed_rows(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> list[list[float]]:
        import torch
        import torch.nn.functional as F

        # Single texts only (rerank embeds query and documents apart): no segment ids, as in SGLang.
        hidden = self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state.float()
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:  # right padding: the last real token is at (real tokens - 1)
            pooled = hidden[torch.arange(hidden.shape[0]), attention_mask.sum(dim=1) - 1]
        pooled = F.normalize(pooled, p=2, dim=1)
        rows: list[list[float]] = pooled.tolist()
        return rows
