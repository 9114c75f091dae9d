"""The fleet config's `slurm:` section: the allocation `rewardfleet up --slurm` asks for.

```yaml
slurm:
  partition: cpu             # the gateway's node (and every part when gpu_nodes is 0)
  gpu_partition: gpu         # with gpu_nodes > 0: a heterogeneous job, model servers on these nodes
  gpu_nodes: 2
  gpus_per_node: 8
  cpus: 8                    # CPUs of the gateway's node (default: what the fleet's processes need)
  time: "24:00:00"
  sbatch_args: ["--account=rl"]   # more #SBATCH lines, as written
```
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

_TIME_RE = re.compile(r"^(\d+-)?\d+(:\d{2}){0,2}$|^infinite$|^UNLIMITED$")


class SlurmConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partition: str | None = None
    gpu_partition: str | None = None
    gpu_nodes: int = Field(default=0, ge=0, le=1024, description="0: one job on one node, no GPUs.")
    gpus_per_node: int = Field(default=8, ge=1, le=64)
    cpus: int | None = Field(default=None, ge=1, le=4096)
    time: str | None = Field(default=None, description="Slurm's time format, e.g. 24:00:00 or 1-00:00:00.")
    job_name: str = Field(default="rewardfleet", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    sbatch_args: list[str] = Field(default_factory=list)
    ready_file: str = Field(default="gateway.url", pattern=r"^[A-Za-z0-9_.-]{1,64}$")

    @field_validator("time")
    @classmethod
    def _time(cls, value: str | None) -> str | None:
        if value is not None and not _TIME_RE.match(value):
            raise ValueError(f"{value!r} is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)")
        return value

    @field_validator("sbatch_args")
    @classmethod
    def _args(cls, value: list[str]) -> list[str]:
        for arg in value:
            if not arg.startswith("--") or "\n" in arg:
                raise ValueError(f"{arg!r}: each entry is one long option, e.g. --account=rl")
        return value
