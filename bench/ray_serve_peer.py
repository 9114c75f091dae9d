"""The serving peer of the dynamic-batching benchmark: Ray Serve's `@serve.batch` around the same batch
function the CPU model server runs (the model server's own runner: same tokenising, padding and forward), as
Ray Serve's documentation writes a batched model deployment. Runs as its own process; `bench.batching`
starts it and sends the load.

`POST /` with `{"text": ...}` answers `{"values": [...]}` (the reward model's score or the embedding).
One replica, `max_batch_size` and `batch_wait_timeout_s` as given, `max_ongoing_requests` high enough for
every client to be queued at the replica (the batch fills from there), Ray on this machine's cores.

    .venv/bin/python -m bench.ray_serve_peer --model-path DIR --port 8012 [--max-batch-size 32]
"""

from __future__ import annotations

import argparse
import os
import signal
import time
from typing import Any


def build_app(model_path: str, threads: int, max_batch_size: int, wait_s: float, max_ongoing: int) -> Any:
    from ray import serve
    from starlette.requests import Request

    @serve.deployment(max_ongoing_requests=max_ongoing, ray_actor_options={"num_cpus": 1})
    class Scorer:
        def __init__(self) -> None:
            import torch

            from rewardfleet.services.model_server.config import ModelServerSettings
            from rewardfleet.services.model_server.runners.loader import load_runner

            torch.set_num_threads(threads)
            runner = load_runner(ModelServerSettings(model_path=model_path))
            self._fn = next(iter(runner.operations().values()))

        @serve.batch(max_batch_size=max_batch_size, batch_wait_timeout_s=wait_s)
        async def score(self, texts: list[str]) -> list[dict[str, Any]]:
            from rewardfleet.services.model_server.runners.common import TextInput

            results = self._fn([TextInput(text=t) for t in texts])
            return [{"values": getattr(r, "values", None)} for r in results]

        async def __call__(self, request: Request) -> dict[str, Any]:
            body = await request.json()
            if body.get("info"):  # what the benchmark reports: the replica's own thread settings
                import torch

                return {"torch_threads": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS")}
            answer: dict[str, Any] = await self.score(body["text"])
            return answer

    return Scorer.bind()  # type: ignore[attr-defined]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-path", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1, help="torch threads in the replica")
    ap.add_argument("--max-batch-size", type=int, default=32)
    ap.add_argument("--batch-wait-s", type=float, default=0.005)
    ap.add_argument("--max-ongoing", type=int, default=256)
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

    import ray
    from ray import serve

    def stop(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    ray.init(
        num_cpus=os.cpu_count() or 2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        log_to_driver=False,
    )
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": args.port})
        app = build_app(
            args.model_path, args.threads, args.max_batch_size, args.batch_wait_s, args.max_ongoing
        )
        serve.run(app, route_prefix="/")
        print("ready", flush=True)
        deadline = time.monotonic() + 3600  # bounded: the benchmark stops it long before
        while time.monotonic() < deadline:
            time.sleep(1)
    finally:
        serve.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
