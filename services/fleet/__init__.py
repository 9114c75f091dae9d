"""The fleet: model-server pools, one sglang-router per pool and the gateway, run as supervised children.

config.py       the fleet YAML (pools, their routers, the gateway); default.yaml is the embedded CPU fleet
plan.py         a `FleetConfig` turned into the exact child processes to run (`up --dry-run` prints it)
determinism.py  `deterministic: true` on a pool: the server flags that make its scores batch invariant
supervisor.py   one child process: readiness, restarts with backoff, stop
probe_key.py    the key the readiness probe sends to a gateway that has keys
runner.py       start model servers, then routers, then the gateway; stop in reverse
status.py       `rewardfleet status`: pools, replicas, health and addresses
routable.py     a replica is ready once its router lists it healthy (not merely when it answers /health)
default_probes.py  master-key probes on by default for every judge pool the fleet runs
cli.py          `rewardfleet up` and `rewardfleet status`
on_ray/         `up --ray`: the same plan as Ray actors (placement, restarts, scaling, the published address)
on_slurm/       `up --slurm`: the batch script, and the plan placed on a Slurm job's nodes as `srun` steps
"""
