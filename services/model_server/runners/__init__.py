"""Model runners: one per model kind, each a set of synchronous batch functions the batchers call.

    reward      sequence classification (DisRM): `score`  -> raw logits at the last real token (mask)
    encoder     sentence encoder (e.g. MiniLM): `embed`   -> pooled as SGLang pools the architecture (CLS for
                BertModel), L2-normalised
    generation  causal LM (GenRM judge): `generate`, `next_token`

The kind comes from the checkpoint's `architectures` (see `loader.detect_kind`). Nothing here imports torch at
import time of the package; `loader.load_runner` does.
"""
