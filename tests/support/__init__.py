"""What tests share besides fixtures (those are in the conftests: tests/conftest.py for every folder). What
benchmarks use too (child processes, stand-ins, tiny checkpoints) is in bench/harness/.

- `gateway`: a real `rewardfleet gateway` process, its command and its config file.
- `model_server`: `rewardfleet serve-model` on a free port.
- `router`: stand-in SGLang replicas and real sglang-router processes.
- `state_store`: Redis state-store backends, one per "replica".
- `reliability`: restartable gateways over the reliability suite's `fns/`, and the figures it prints.
- `live_gateway`: the integration tests' live gateway.
- `rescore`: a gateway and `rewardfleet score` for the re-scoring tests.
- `remote_fleet`: one stand-in pool per model behind a real router, for the remote reward functions.
- `group_judges`: a gateway whose judge pools are preference stand-ins.
- `vllm`: where the vLLM conformance tests find vLLM.
- `sandbox`: whether this host can run the local sandbox provider, and the `needs_local` skip mark.
"""
