"""`rewardfleet up --slurm`: the fleet in a Slurm allocation (docs/deploy.md, "On Slurm").

| module | what it holds |
| --- | --- |
| `config.py` | `SlurmConfig`: the fleet config's `slurm:` section (partitions, GPU nodes, time) |
| `sbatch.py` | the batch script for a fleet, and `submit()` (`sbatch --parsable`) |
| `allocation.py` | the job's nodes (`scontrol show hostnames`), the plan placed on them (`srun`) |
| `launcher.py` | in the job: the placed fleet on the one-host runner; the gateway's address file |
"""
