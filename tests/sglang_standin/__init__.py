"""A stand-in for a GPU SGLang server, speaking SGLang's HTTP protocol for what it serves.

Real SGLang needs CUDA, so tests put this behind the real sglang-router instead. Shapes follow SGLang's
`srt/entrypoints/http_server.py` and `srt/entrypoints/openai/protocol.py`; outputs are deterministic:

- `judge` (a generation model): `/generate`, `/v1/chat/completions`, `/v1/completions` answer with the
  process's canned text, or with the text between `<standin-reply>` and `</standin-reply>` if the prompt holds
  one (so a test can choose each verdict per request).
- `reward` (an `--is-embedding` reward model with one label): `/v1/embeddings`, `/classify`, `/encode` answer
  with the one-element embedding `[standin_reward(text)]`; `/v1/classify` answers with softmax probs `[1.0]`.
- `encoder` (an embedding model): `/v1/embeddings`, `/encode` answer with `standin_embedding(text, dim)`, a
  unit-length hashed bag of words, so equal texts have cosine 1 and shared words raise the similarity.

- `judge` also answers `/v1/score` (next-token probabilities of `label_token_ids`): with token ids as given,
  with text tokenised like SGLang does (one pseudo-BOS id 1 in front), so a test can tell the two apart.

Probes behave like SGLang 0.5.23's: `/ready` is cheap (503 until started); `/health` and `/health_generate`
take `--health-delay-s` (default 1 s, what SGLang's generation-backed check waits at least) before the 200.

Every answer carries `x-standin-replica` and `x-standin-served` headers; `GET /metrics` shows
`sglang:num_requests_total` and `GET /standin/stats` the per-route counts, so tests can see the spread over
replicas. `POST /standin/control` flips health, the failure rate or a delay at run time for fault tests; a
request whose client disconnects during the delay is abandoned (counted, not served), as SGLang aborts it.

The package is laid out like the CPU model server (services/model_server/routes/): `app.py` builds the app,
`routes/` holds one module per route family, `serving.py` the plumbing every work route shares.

Run: `python -m tests.sglang_standin --port P --mode judge|reward|encoder [--replica-id X]
[--canned-text "..."] [--fail-rate 0.2] [--fail-status 503] [--startup-delay-s 1] [--delay-ms 0]`.
"""

from tests.sglang_standin.app import create_app
from tests.sglang_standin.outputs import standin_embedding, standin_reward
from tests.sglang_standin.state import DEFAULT_CANNED_TEXT, WORK_ROUTES, Mode, StandinConfig, StandinState

__all__ = [
    "DEFAULT_CANNED_TEXT",
    "WORK_ROUTES",
    "Mode",
    "StandinConfig",
    "StandinState",
    "create_app",
    "standin_embedding",
    "standin_reward",
]
