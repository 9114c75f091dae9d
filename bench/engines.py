"""The fleet on each engine, in one run: time from the command to a ready fleet (one host, Ray, Slurm), and a
step's burst through the Ray-placed fleet ÷ the same fleet started by `rewardfleet up` (target <= 1.05).

The fleet: one CPU model server of a tiny reward model (built here) behind its router, and the gateway with
an async function that awaits `--latency-s` (a judge-style call: admission and the path, not the model). The
burst is `--samples` single-sample posts at once from the fleet's `AsyncRewardClient`, each size sent
`--rounds` times per engine, alternating one host and Ray; the ratio is of the medians. Ray runs as a local
cluster of one head node (`ray.cluster_utils.Cluster`); Slurm only as root with slurm-wlm and munge installed
(the tests' local slurmctld + slurmd + munged), time to ready only.

    .venv/bin/python -m bench.engines [--samples 2048] [--latency-s 2] [--rounds 2] [--no-slurm]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bench.common import OFFLINE_ENV, BenchResult, Row, median, print_result, write_fn
from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy
from rewardfleet.services.common.open_files import raise_open_files_limit

RAY_DEFAULT_NICENESS = 15  # Ray's `worker_niceness`: what the fleet's processes got before `ray.niceness`
WAIT_FN = """
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(float(extra_info["latency_s"]))
    return 1.0
"""


def fleet_yaml(tmp: Path, run_dir: Path, extra: str = "") -> Path:
    rm = tmp / "rm" if (tmp / "rm").exists() else build_tiny_qwen2(tmp / "rm", "seq_cls", seed=5)
    if not (tmp / "fns" / "wait.py").exists():
        write_fn(tmp / "fns", "wait", WAIT_FN)
    path = tmp / f"{run_dir.name}.yaml"
    path.write_text(
        textwrap.dedent(f"""
        pools:
          reward_model:
            kind: reward_model
            model_path: {rm}
            served_model_name: tiny-rm
            server_args: {{torch-num-threads: 1}}
            router: {{health_check_interval_secs: 1, health_check_timeout_secs: 1}}
        run_dir: {run_dir}
        gateway:
          workers: 1
          reward_fns_dirs: [{tmp / "fns"}]
          functions:
            reward_model: {{reward_kwargs: {{model: tiny-rm}}}}
        """)
        + extra
    )
    return path


async def burst(url: str, samples: int, latency_s: float) -> float:
    """Wall time of `samples` posts sent at once; every one must be scored."""
    retry = RetryPolicy(max_attempts=3, max_elapsed_s=60)
    async with AsyncRewardClient(url, max_concurrency=samples, retry=retry, timeout_s=120) as client:
        body = {"data_source": "x", "reward_fn": "wait", "solution_str": "a", "ground_truth": "a",
                "extra_info": {"latency_s": latency_s}}  # fmt: skip
        started = time.perf_counter()
        results = await client.score_many([body] * samples)
        took = time.perf_counter() - started
    bad = [r for r in results if r.status != "ok"]
    if bad:
        raise RuntimeError(f"{len(bad)} of {samples} posts not scored: {bad[:2]}")
    return took


@contextmanager
def one_host(tmp: Path) -> Iterator[tuple[str, float]]:
    port = free_port()
    config = fleet_yaml(tmp, tmp / "host")
    started = time.monotonic()
    proc = ChildProcess(rewardfleet_cmd("up", "--config", str(config), "--port", str(port)), tmp / "host.log",
                        env=OFFLINE_ENV)  # fmt: skip
    try:
        eventually(lambda: "Reward Fleet is up" in proc.log() or proc.proc.poll() is not None, timeout_s=300,
                   interval_s=0.05, what="rewardfleet up ready", detail=proc.log)  # fmt: skip
        if proc.proc.poll() is not None:
            raise RuntimeError(f"rewardfleet up exited: {proc.log()[-3000:]}")
        yield f"http://127.0.0.1:{port}", time.monotonic() - started
    finally:
        proc.signal(signal.SIGINT)
        proc.stop(timeout_s=60)


@contextmanager
def on_ray(tmp: Path, address: str, niceness: int = 0) -> Iterator[tuple[str, float]]:
    name = f"ray-nice{niceness}"
    config = fleet_yaml(tmp, tmp / name, f"ray: {{name: {name}, niceness: {niceness}}}\n")
    started = time.monotonic()
    proc = ChildProcess(rewardfleet_cmd("up", "--ray", address, "--config", str(config)), tmp / f"{name}.log",
                        env={**OFFLINE_ENV, "COLUMNS": "200"})  # fmt: skip
    try:
        eventually(lambda: "ready in" in proc.log() or proc.proc.poll() is not None, timeout_s=300,
                   interval_s=0.05, what="up --ray ready", detail=proc.log)  # fmt: skip
        if proc.proc.poll() is not None:
            raise RuntimeError(f"rewardfleet up --ray exited: {proc.log()[-3000:]}")
        took = time.monotonic() - started
        url = next(line.split("gateways ready: ", 1)[1].split(",")[0].strip()
                   for line in proc.log().splitlines() if "gateways ready: " in line)  # fmt: skip
        yield url, took
    finally:
        proc.signal(signal.SIGINT)
        proc.stop(timeout_s=120)


def slurm_ready_s(tmp: Path) -> float | str:
    """Seconds from `rewardfleet up --slurm` to the gateway's address file, or why it was not measured."""
    from bench.harness import slurm_cluster

    why = slurm_cluster.missing()
    if why:
        return why
    cluster = slurm_cluster.start()
    try:
        config = fleet_yaml(tmp, tmp / "slurm", "slurm: {cpus: 2}\n")
        started = time.monotonic()
        out = subprocess.run(
            rewardfleet_cmd("up", "--slurm", "--config", str(config), "--port", str(free_port())),
            capture_output=True, text=True, timeout=120, env={**cluster.env, **OFFLINE_ENV},
        ).stdout  # fmt: skip
        job = out.split("submitted Slurm job ", 1)[1].split()[0]
        ready = tmp / "slurm" / f"job-{job}" / "gateway.url"
        eventually(ready.exists, timeout_s=300, interval_s=0.05, what="the Slurm fleet's gateway.url")
        took = time.monotonic() - started
        cluster.run("scancel", job)
        return took
    finally:
        slurm_cluster.stop(cluster)


def run(samples: int, latency_s: float, rounds: int, slurm: bool) -> BenchResult:
    import ray
    from ray.cluster_utils import Cluster

    raise_open_files_limit(2 * samples + 1024, "one client connection per post")
    result = BenchResult("engines")
    with tempfile.TemporaryDirectory(prefix="bench-engines-") as folder, ExitStack() as stack:
        tmp = Path(folder)
        tmp.chmod(0o755)
        ray_started = time.monotonic()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, "include_dashboard": False})
        stack.callback(cluster.shutdown)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        stack.callback(ray.shutdown)
        ray_head_s = time.monotonic() - ray_started
        host_url, host_ready = stack.enter_context(one_host(tmp))
        ray_url, ray_ready = stack.enter_context(on_ray(tmp, cluster.address))
        nice_url, _ = stack.enter_context(on_ray(tmp, cluster.address, niceness=RAY_DEFAULT_NICENESS))
        host_walls: list[float] = []
        ray_walls: list[float] = []
        nice_walls: list[float] = []
        load = [os.getloadavg()[0]]
        for _ in range(rounds):
            host_walls.append(asyncio.run(burst(host_url, samples, latency_s)))
            ray_walls.append(asyncio.run(burst(ray_url, samples, latency_s)))
            nice_walls.append(asyncio.run(burst(nice_url, samples, latency_s)))
            load.append(os.getloadavg()[0])
        ratio = median(ray_walls) / median(host_walls)
        nice_ratio = median(nice_walls) / median(host_walls)
        head = f"starting the 1-node cluster took {ray_head_s:.1f} s more"
        size = f"{samples} posts, {latency_s:g} s each"
        result.rows += [
            Row("engines", "time to ready: rewardfleet up (s)", host_ready, fmt="{:.1f}"),
            Row("engines", "time to ready: up --ray (s, cluster up)", ray_ready, fmt="{:.1f}", detail=head),
            Row("engines", f"step burst ({size}): one host, median (s)", median(host_walls),
                detail=f"rounds {[round(w, 2) for w in host_walls]}"),
            Row("engines", f"step burst ({size}): on Ray, median (s)", median(ray_walls),
                detail=f"rounds {[round(w, 2) for w in ray_walls]}"),
            Row("engines", "step burst: Ray / one host", ratio, target="<= 1.05", met=ratio <= 1.05,
                fmt="{:.3f}"),
            Row("engines", f"step burst: Ray at Ray's worker niceness {RAY_DEFAULT_NICENESS} / one host",
                nice_ratio, fmt="{:.3f}", detail=f"rounds {[round(w, 2) for w in nice_walls]}"),
        ]  # fmt: skip
        result.notes.append(f"1-minute load average during the rounds: {[round(x, 1) for x in load]}")
        stack.close()
        if slurm:
            took = slurm_ready_s(tmp)
            if isinstance(took, str):
                result.notes.append(f"Slurm not measured: {took}")
            else:
                what = "time to ready: up --slurm (s, submit to address file)"
                result.rows.append(Row("engines", what, took, fmt="{:.1f}"))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--latency-s", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-slurm", action="store_true")
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    print_result(run(args.samples, args.latency_s, args.rounds, not args.no_slurm))


if __name__ == "__main__":
    main()
