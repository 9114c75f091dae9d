"""What keeps the gateway up under load and abuse: `admission` (bounded work, 429/503), `drain` (SIGTERM),
`idempotency` (in-flight join, result cache), `input_limits` (per-sample sizes), `function_limits`
(per-function concurrency and rate), `external_pools` (forwarding to OpenAI-compatible endpoints outside
the fleet) with its `rate_limits` (RPM/TPM budgets, what a 429 asks), `spend` (judge tokens in dollars,
with caps). The API-key, body-limit and
request-metrics middlewares are shared with the model server: `rewardfleet.services.common`."""
