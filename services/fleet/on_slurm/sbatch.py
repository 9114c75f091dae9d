"""The batch script `rewardfleet up --slurm` writes for a fleet, and its submission.

One job on one node (`gpu_nodes: 0`), or a heterogeneous job: component 0 one CPU node (gateway, routers),
component 1 `gpu_nodes` nodes with `--gres=gpu:<gpus_per_node>` (model servers). The script runs
`rewardfleet up --slurm` in the job (`launcher.py`), waits for the gateway's address file and, when given a
command, runs it as a step of the same allocation with `$REWARDFLEET_URL` set, then stops the fleet.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

from rewardfleet.services.fleet.config import FleetConfig
from rewardfleet.services.fleet.on_slurm.config import SlurmConfig
from rewardfleet.services.fleet.plan import gateway_processes


class SubmitError(RuntimeError):
    """`sbatch` is missing or refused the script; the message holds its output."""


def front_cpus(config: FleetConfig) -> int:
    """CPUs of the gateway's node: its processes, one per router, and the CPU pools' torch threads when they
    share that node (no GPU nodes)."""
    slurm = config.slurm or SlurmConfig()
    if slurm.cpus is not None:
        return slurm.cpus
    cpus = gateway_processes(config) + len(config.pools)
    if slurm.gpu_nodes == 0:
        cpus += sum(
            int(p.server_args.get("torch-num-threads") or 1) * p.replicas
            for p in config.pools.values()
            if p.backend == "cpu"
        )
    return cpus


def script(
    config: FleetConfig, config_path: Path, run_dir: Path, python: str, up_args: Sequence[str] = ()
) -> str:
    """The batch script; `up_args` are more `rewardfleet up` options (`--port`, `--processes`)."""
    slurm = config.slurm or SlurmConfig()
    head = [
        "#!/bin/bash", f"#SBATCH --job-name={slurm.job_name}", f"#SBATCH --output={run_dir}/slurm-%j.out",
        "#SBATCH --nodes=1", "#SBATCH --ntasks=1", f"#SBATCH --cpus-per-task={front_cpus(config)}",
    ]  # fmt: skip
    if slurm.partition:
        head.append(f"#SBATCH --partition={slurm.partition}")
    if slurm.time:
        head.append(f"#SBATCH --time={slurm.time}")
    head += [f"#SBATCH {arg}" for arg in slurm.sbatch_args]
    if slurm.gpu_nodes:
        head += ["#SBATCH hetjob", f"#SBATCH --nodes={slurm.gpu_nodes}",
                 f"#SBATCH --gres=gpu:{slurm.gpus_per_node}", "#SBATCH --exclusive"]  # fmt: skip
        if slurm.gpu_partition:
            head.append(f"#SBATCH --partition={slurm.gpu_partition}")
        if slurm.time:
            head.append(f"#SBATCH --time={slurm.time}")
    q = shlex.quote
    ready = f"$REWARDFLEET_RUN_DIR/{slurm.ready_file}"
    extra = "".join(f" {q(arg)}" for arg in up_args)
    body = f"""
# Written by `rewardfleet up --slurm`. Usage: sbatch THIS_FILE [trainer command and its arguments]
# ({run_dir} must exist before: Slurm writes the job's output there.)
set -euo pipefail
export REWARDFLEET_RUN_DIR={q(str(run_dir))}/job-$SLURM_JOB_ID
{q(python)} -m rewardfleet.services.cli up --slurm --config {q(str(config_path))} \\
  --run-dir "$REWARDFLEET_RUN_DIR"{extra} &
fleet=$!
trap 'kill -TERM $fleet 2>/dev/null; wait $fleet' TERM INT
until [ -s "{ready}" ]; do
  kill -0 $fleet 2>/dev/null || {{ echo "the fleet did not start" >&2; wait $fleet; exit 1; }}
  sleep 1
done
export REWARDFLEET_URL="$(cat "{ready}")"
echo "gateway: $REWARDFLEET_URL"
if [ $# -gt 0 ]; then
  status=0
  srun --overlap --nodes=1 --ntasks=1 "$@" || status=$?
  kill -TERM $fleet
  wait $fleet || true
  exit $status
fi
wait $fleet
"""
    return "\n".join(head) + "\n" + body


def submit(script_path: Path, trainer: list[str]) -> str:
    """`sbatch --parsable SCRIPT [trainer...]`; returns the job id."""
    try:
        proc = subprocess.run(
            ["sbatch", "--parsable", str(script_path), *trainer], capture_output=True, text=True, timeout=60
        )
    except OSError as exc:
        raise SubmitError(f"sbatch: {exc.strerror or exc} (is Slurm's client installed here?)") from exc
    if proc.returncode != 0:
        raise SubmitError(f"sbatch refused {script_path}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout.strip().split(";")[0]
