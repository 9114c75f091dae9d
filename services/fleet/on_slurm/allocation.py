"""The nodes of the Slurm job this process runs in, and a fleet plan placed on them.

The gateway and the routers run on the batch node (the first node of the job, or of its first component in
a heterogeneous job), as `rewardfleet up` runs them. Each model-server replica becomes an `srun` step on a
model node (round robin over the nodes of the second component, else over the job's other nodes, else the
batch node), bound to all its interfaces and addressed by the node's name; SGLang replicas get
`--gres=gpu:<tp>`. `srun` forwards the fleet's SIGTERM to its step, so the one-host runner's order holds.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from rewardfleet.services.fleet.plan import FleetPlan, PoolPlan, ReplicaPlan, router_child_spec
from rewardfleet.services.fleet.supervisor import ChildSpec


class NotInAllocation(RuntimeError):
    """`SLURM_JOB_ID` or its node list is missing, or `scontrol` cannot expand it."""


def hostnames(nodelist: str) -> list[str]:
    """`vm[1-3],gpu7` -> ['vm1', 'vm2', 'vm3', 'gpu7'] by `scontrol show hostnames`."""
    try:
        cmd = ["scontrol", "show", "hostnames", nodelist]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise NotInAllocation(f"scontrol show hostnames {nodelist!r} failed: {exc}") from exc
    return [line.strip() for line in out.splitlines() if line.strip()]


@dataclass(frozen=True)
class Allocation:
    job_id: str
    front: str  # the batch node: gateway and routers
    model_nodes: list[str]
    heterogeneous: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Allocation:
        job = env.get("SLURM_JOB_ID")
        if not job:
            raise NotInAllocation("not inside a Slurm job (SLURM_JOB_ID is unset)")
        if env.get("SLURM_JOB_NODELIST_HET_GROUP_1"):
            front = hostnames(env.get("SLURM_JOB_NODELIST_HET_GROUP_0", ""))
            return cls(job, front[0], hostnames(env["SLURM_JOB_NODELIST_HET_GROUP_1"]), True)
        nodes = hostnames(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "")
        if not nodes:
            raise NotInAllocation(f"job {job}: no node list in SLURM_JOB_NODELIST")
        return cls(job, nodes[0], nodes[1:] or nodes[:1], False)


def _srun(alloc: Allocation, node: str, pool: PoolPlan, name: str) -> list[str]:
    cmd = ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={node}", f"--job-name={name}",
           "--kill-on-bad-exit=1", "--unbuffered"]  # fmt: skip
    if alloc.heterogeneous:
        cmd.append("--het-group=1")
    if pool.config.backend == "sglang":
        tp = pool.config.server_args.get("tp-size") or pool.config.server_args.get("tp") or 1
        cmd += ["--exact", f"--gres=gpu:{tp}", "--cpus-per-task=4"]
    else:
        threads = pool.config.server_args.get("torch-num-threads") or 1
        cmd += ["--overlap", f"--cpus-per-task={threads}"]
    return [*cmd, "--"]


def _bound_to_all(argv: tuple[str, ...]) -> list[str]:
    out = list(argv)
    if "--host" in out:
        out[out.index("--host") + 1] = "0.0.0.0"
    return out


def place(plan: FleetPlan, alloc: Allocation) -> FleetPlan:
    """`plan` (made for one host) with its replicas on the allocation's model nodes and its gateway reachable
    from every node of the job at `http://<batch node>:<port>`."""
    pools: list[PoolPlan] = []
    turn = 0
    for pool in plan.pools:
        replicas: list[ReplicaPlan] = []
        for replica in pool.replicas:
            node = alloc.model_nodes[turn % len(alloc.model_nodes)]
            turn += 1
            port = replica.url.rsplit(":", 1)[1]
            url = f"http://{node}:{port}"
            argv = [*_srun(alloc, node, pool, f"{pool.name}-{replica.index}"), *_bound_to_all(replica.argv)]
            name = f"{pool.name}-{replica.index}"
            spec = ChildSpec(
                name=name, argv=tuple(argv), readiness_url=f"{url}/ready",
                log_path=plan.run_dir / "logs" / f"{name}.log",
                stop_timeout_s=60.0 if pool.config.backend == "sglang" else 20.0,
            )  # fmt: skip
            replicas.append(dataclasses.replace(replica, url=url, argv=tuple(argv), spec=spec))
        router = pool.router.model_copy(update={"worker_urls": [r.url for r in replicas]})
        background = pool.config.load_in_background
        router_spec = router_child_spec(router, pool.router_spec.name, pool.router_spec.log_path, background)
        pools.append(dataclasses.replace(pool, replicas=replicas, router=router, router_spec=router_spec))
    section = yaml.safe_load(plan.gateway_config_text)
    port = section["gateway"]["port"]
    section["gateway"]["host"] = "0.0.0.0"
    text = yaml.safe_dump(section, sort_keys=False)
    notes = [n for n in plan.notes if "SGLang is not installed here" not in n]
    return dataclasses.replace(
        plan, pools=pools, gateway_url=f"http://{alloc.front}:{port}", gateway_config_text=text, notes=notes
    )
