"""`rewardfleet up --slurm` on a real Slurm (slurmctld + slurmd + munged on this host, a CPU node of 2 CPUs).

One module-scoped Slurm. A light fleet (a tiny reward model's CPU server as an `srun` step, its router and the
gateway in the batch step) answers a trainer step of the same allocation (`--then`), which finds the gateway
through `$REWARDFLEET_URL`; `scancel` in the middle of a load: every post the gateway accepted is answered,
the rest are refused (never an error result), and nothing of the job is left.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.harness import slurm_cluster
from bench.harness.processes import free_port, rewardfleet_cmd
from bench.harness.slurm_cluster import LocalSlurm
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from rewardfleet.services.client import AsyncRewardClient, RetryPolicy
from tests.fleet.procs import alive, cmdline

pytestmark = [
    pytest.mark.skipif(slurm_cluster.missing() is not None, reason=str(slurm_cluster.missing())),
    pytest.mark.timeout(900),  # a job's fleet starts in ~20-60 s, longer on busy cores
]

SLOW_FN = '''
import asyncio

async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """Holds each post ~0.3 s, so that many are in flight when the job is cancelled."""
    await asyncio.sleep(0.3)
    return float(solution_str == ground_truth)
'''

TRAINER = """
import json, os, sys
from rewardfleet.services.integrations.verl_reward import compute_score_sync

out = []
for i in range(20):
    out.append(compute_score_sync("chat", f"It is {2 * i}.", None, {"question": f"{i} + {i}?"},
                                  reward_fn="reward_model"))
out.append(compute_score_sync("openai/gsm8k", "#### 42", "42"))
with open(sys.argv[1], "w") as f:
    json.dump({"url": os.environ["REWARDFLEET_URL"], "results": out}, f)
"""


@pytest.fixture(scope="module")
def slurm() -> Iterator[LocalSlurm]:
    cluster = slurm_cluster.start()
    try:
        yield cluster
    finally:
        slurm_cluster.stop(cluster)


@pytest.fixture(scope="module")
def fleet_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("slurm")
    tmp.chmod(0o755)
    rm = build_tiny_qwen2(tmp / "rm", "seq_cls", seed=3)
    (tmp / "fns").mkdir()
    (tmp / "fns" / "slow.py").write_text(SLOW_FN)
    (tmp / "trainer.py").write_text(TRAINER)
    (tmp / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:
          reward_model:
            kind: reward_model
            model_path: {rm}
            served_model_name: tiny-rm
            server_args: {{torch-num-threads: 1, max-batch-size: 16}}
            router: {{policy: round_robin, health_check_interval_secs: 1, health_check_timeout_secs: 1}}
        run_dir: {tmp / "run"}
        ready_timeout_s: 360
        gateway:
          workers: 1
          reward_fns_dirs: [fns]
          admission: {{shutdown_grace_s: 20}}
          functions:
            reward_model: {{reward_kwargs: {{model: tiny-rm}}}}
        slurm:
          cpus: 2
          time: "30"
        """)
    )
    return tmp / "fleet.yaml"


def _submit(slurm: LocalSlurm, fleet_yaml: Path, *extra: str) -> str:
    cmd = rewardfleet_cmd("up", "--slurm", "--config", str(fleet_yaml), "--port", str(free_port()), *extra)
    env = {**slurm.env, "HF_HUB_OFFLINE": "1", "COLUMNS": "300"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("submitted Slurm job ", 1)[1].split()[0]


def _job_log(fleet_yaml: Path, job: str) -> str:
    path = fleet_yaml.parent / "run" / f"slurm-{job}.out"
    return path.read_text(errors="replace")[-4000:] if path.exists() else "(no job output yet)"


def test_the_sbatch_fleet_answers_a_trainer_step_in_the_same_allocation(
    slurm: LocalSlurm, fleet_yaml: Path
) -> None:
    out = fleet_yaml.parent / "trainer.json"
    job = _submit(slurm, fleet_yaml, "--then", f"{sys.executable} {fleet_yaml.parent / 'trainer.py'} {out}")
    eventually(
        lambda: slurm.job_state(job) in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "GONE"),
        timeout_s=480, interval_s=1.0, what=f"job {job} done", detail=lambda: _job_log(fleet_yaml, job),
    )  # fmt: skip
    assert slurm.job_state(job) in ("COMPLETED", "GONE"), _job_log(fleet_yaml, job)
    body = json.loads(out.read_text())
    assert body["url"].startswith(f"http://{slurm.node}:"), body["url"]
    rm, gsm8k = body["results"][:-1], body["results"][-1]
    assert all(r["reward_failed"] == 0.0 and isinstance(r["score"], float) for r in rm), rm
    assert gsm8k["score"] == 1.0
    log = _job_log(fleet_yaml, job)
    assert f"gateway: {body['url']}" in log and "fleet stopped." in log, log
    assert not (fleet_yaml.parent / "run" / f"job-{job}" / "gateway.url").exists()


@pytest.mark.parametrize(
    "cancel",
    [
        ("scancel",),  # every process of the job signalled at once
        ("scancel", "--batch", "--signal=TERM"),  # the batch script's trap stops the fleet in order
    ],
    ids=["scancel", "scancel-batch-term"],
)
def test_scancel_mid_load_loses_nothing_the_gateway_accepted(
    slurm: LocalSlurm, fleet_yaml: Path, cancel: tuple[str, ...]
) -> None:
    job = _submit(slurm, fleet_yaml)
    ready = fleet_yaml.parent / "run" / f"job-{job}" / "gateway.url"
    eventually(ready.exists, timeout_s=420, interval_s=0.5, what="the gateway's address",
               detail=lambda: _job_log(fleet_yaml, job))  # fmt: skip
    url = ready.read_text().strip()
    done = 0
    cancelled_at: list[int] = []
    mid_load = asyncio.Event()

    async def load() -> list[Any]:
        # No retries: a post the draining gateway refused fails at once, before another test's server can
        # bind the freed port and answer a retry (seen once under xdist: a foreign 404).
        retry = RetryPolicy(max_attempts=1)
        async with AsyncRewardClient(url, max_concurrency=64, retry=retry, timeout_s=60) as client:

            async def one(i: int) -> Any:
                nonlocal done
                sample = {"data_source": "x", "reward_fn": "slow", "solution_str": "a", "ground_truth": "a"}
                result = await client.score_many([sample])
                done += 1
                if done == 200:
                    mid_load.set()
                return result[0]

            posts = asyncio.ensure_future(asyncio.gather(*(one(i) for i in range(1500))))
            waiting = asyncio.ensure_future(mid_load.wait())
            await asyncio.wait([posts, waiting], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            cancelled_at.append(done)
            await asyncio.to_thread(slurm.run, *cancel, job)
            return list(await posts)

    results = asyncio.run(load())
    ok = [r for r in results if r.status == "ok"]
    refused = [r for r in results if r.status != "ok"]
    # An accepted post is answered; one the draining gateway refused fails on the client side only.
    assert all(r.error is not None and r.error.type == "GatewayUnavailable" for r in refused), refused[:3]
    assert all(r.score == 1.0 for r in ok)
    assert cancelled_at[0] < len(ok) < 1500, (cancelled_at, len(ok))  # in-flight posts finished after scancel
    ended = ("CANCELLED", "GONE") if len(cancel) == 1 else ("COMPLETED", "FAILED", "CANCELLED", "GONE")
    eventually(lambda: slurm.job_state(job) in ended, timeout_s=90, interval_s=0.5,
               what=f"job {job} cancelled")  # fmt: skip
    run_dir = str(fleet_yaml.parent / "run" / f"job-{job}")
    left = {p for p in alive(set(_all_pids())) if run_dir in cmdline(p) or str(fleet_yaml) in cmdline(p)}
    assert not left, [cmdline(p) for p in left]
    if len(cancel) > 1:  # the launcher itself ran its stop: gateway drained, then routers, then the replica
        assert "fleet stopped." in _job_log(fleet_yaml, job), _job_log(fleet_yaml, job)
    print(f"{' '.join(cancel)} after {cancelled_at[0]} answers; {len(ok)} answered, {len(refused)} refused")


def _all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
