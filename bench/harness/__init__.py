"""What benchmarks and tests both run: real child processes and stand-in servers, tiny checkpoints, labelled
cases. Tests import from here; nothing here imports from tests/.

- `processes`: free loopback ports and real child processes that are waited for and reaped.
- `waiting`: poll a condition until it holds, within a bounded time.
- `router_process`: a real sglang-router process; `router_admin`: a client for its admin routes.
- `redis_server`: a real redis-server on a free port; `haproxy`: HAProxy's binary and a round-robin config.
- `tiny_models`, `tiny_prm`, `tiny_clip`: tiny random-weight checkpoints built at run time.
- `judge_cases`: labelled reference-answer judgments.
- `metrics_reference`: the gateway's hot metrics on client_python, the baseline for plain metrics.
- `tenants`: tenant API keys, their header, and the fair-queuing gateway's config.
- `preference_judge`, `rubric_standin`: stand-in judge servers (`python -m bench.harness.<name>`).
- `sandbox_rootfs`: a tiny root file system from the host's own binaries, for task-sandbox images;
  `image_layouts`: OCI image layouts and `docker save` tarballs written by hand from layer tars.
"""
