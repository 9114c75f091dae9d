"""The model server's HTTP routes, one module per group.

HTTP routes, one module per group: `health` (health and info), `native` (SGLang's own routes),
`openai_generation` (`/v1/chat/completions`, `/v1/completions`, `/v1/score`), `openai_pooling`
(`/v1/embeddings`, `/v1/classify`, `/v1/rerank`), `pooling` (vLLM's `/pooling`, for process reward
models) and `prompt_logprobs` (`/generate` with `return_logprob`: a prompt's token logprobs)."""
