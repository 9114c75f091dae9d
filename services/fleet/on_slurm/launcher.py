"""Inside the Slurm job: run the placed fleet with the one-host runner; publish the gateway's address.

Once every part is ready the gateway's URL is written to `<run dir>/<slurm.ready_file>` (`gateway.url`),
which the batch script waits for and exports as `$REWARDFLEET_URL` to the trainer step; any other job step
or job that sees the run dir reads the same file. It is removed when the fleet stops (SIGTERM, `scancel`):
the gateway drains first, then the routers and the model servers' `srun` steps stop.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from rich.console import Console

from rewardfleet.services.fleet.config import FleetConfig
from rewardfleet.services.fleet.on_slurm.allocation import Allocation, place
from rewardfleet.services.fleet.on_slurm.config import SlurmConfig
from rewardfleet.services.fleet.plan import FleetPlan
from rewardfleet.services.fleet.runner import Fleet, run_fleet
from rewardfleet.services.fleet.supervisor import Backoff


class SlurmFleet(Fleet):
    """The one-host `Fleet` that also writes (and at stop removes) the gateway's address file."""

    def __init__(self, plan: FleetPlan, console: Console, config: FleetConfig, ready_file: Path) -> None:
        super().__init__(plan, console, config.ready_timeout_s, Backoff(max_s=config.restart_max_backoff_s))
        self.ready_file = ready_file

    async def start(self) -> None:
        await super().start()
        partial = self.ready_file.with_suffix(".tmp")
        partial.write_text(self.plan.gateway_url + "\n")
        partial.replace(self.ready_file)

    async def stop(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.ready_file.unlink()
        await super().stop()


def run_in_allocation(config: FleetConfig, plan: FleetPlan, console: Console) -> int:
    """Place `plan` on the job's nodes and run it until SIGTERM/SIGINT. Returns an exit code."""
    slurm = config.slurm or SlurmConfig()
    alloc = Allocation.from_env()
    placed = place(plan, alloc)
    console.print(
        f"Slurm job {alloc.job_id}: gateway on {alloc.front}, model servers on {', '.join(alloc.model_nodes)}"
    )
    fleet = SlurmFleet(placed, console, config, placed.run_dir / slurm.ready_file)
    return asyncio.run(run_fleet(fleet))
