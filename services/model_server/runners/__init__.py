"""Model runners: one per model kind, each a set of synchronous batch functions the batchers call.

    reward       sequence classification (DisRM): `score`, raw logits at the last real token; reward_heads.py
                 holds SGLang's score heads transformers has no class for
    encoder      sentence encoder (e.g. MiniLM): `embed`, pooled as SGLang pools the architecture, normalised
    generation   causal LM (GenRM judge): `generate`, `next_token`; its batch in decode_batch.py, its request
                 state in decoding.py, constrained decoding in constraints.py; deterministic mode's batch in
                 rowwise_batch.py, its packed forwards and per-row attention in rowwise.py
    vision       vision-language judge (Qwen2-VL's family): generation with images
    prm          process reward model: label logits at every step tag, as vLLM's `STEP` pooler
    clip         CLIP-style dual encoder: one embedding per text or image (clip_images.py preprocesses)
    loader       picks the kind from the checkpoint's `architectures` (families.py: SGLang's reward
                 families) and loads model and tokenizer; gguf_checkpoint.py serves GGUF files converted
    base         what every runner shares; common.py the input handling (tokenise, check, pad)
    prompt_logprobs  the log-probabilities of a prompt's own tokens (`/generate` with `return_logprob`)
    deterministic  `--enable-deterministic-inference`: forwards whose rows cannot see each other (batch
                 invariant): fixed shapes for pooling kinds, packed rows for generation

Nothing here imports torch at import time of the package; `loader.load_runner` does.
"""
