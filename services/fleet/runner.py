"""Run a planned fleet: start model servers, then routers, then the gateway, each supervised; stop in reverse.

Start order follows the data path's dependencies (a router registers only healthy workers; the gateway's
`/ready` checks its routers). Shutdown drains from the front: the gateway first, so no new work enters, then
the routers, then the model servers. A crashed child is restarted with exponential backoff by its
`Supervisor`; every child runs in its own process group, and stopping kills the whole group: no orphans.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Sequence

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from rewardfleet.services.fleet.plan import FleetPlan, write_gateway_config
from rewardfleet.services.fleet.routable import wait_routable
from rewardfleet.services.fleet.supervisor import Backoff, ChildFailed, ChildSpec, Supervisor

STATE_FILE = "fleet.json"


class FleetStartError(RuntimeError):
    """A child did not become ready; the message names it and holds the end of its log."""


class Fleet:
    def __init__(self, plan: FleetPlan, console: Console, ready_timeout_s: float, backoff: Backoff) -> None:
        self.plan = plan
        self.console = console
        self.ready_timeout_s = ready_timeout_s
        self.backoff = backoff
        # Replicas of pools that load in the background: start-up does not wait for them, and they start only
        # once the rest is up, so their loading does not slow the gateway's and the other pools' start.
        self.background = [
            r.spec
            for p in plan.pools
            if p.config.load_in_background
            for r in p.replicas
            if r.spec is not None
        ]
        names = {spec.name for spec in self.background}
        # Stages in start order; each stage's children start together.
        self.stages: list[list[ChildSpec]] = [
            [
                r.spec
                for p in plan.pools
                for r in p.replicas
                if r.spec is not None and r.spec.name not in names
            ],
            [p.router_spec for p in plan.pools],
            [plan.gateway_spec],
        ]
        self.supervisors: list[list[Supervisor]] = []
        self._watchers: list[asyncio.Task[None]] = []
        # Replica name -> (its router's URL, its URL, the router's API key): a replica is announced ready
        # only once that router routes to it (routable.py).
        self.routes: dict[str, tuple[str, str, str | None]] = {
            r.spec.name: (
                p.router.url,
                r.url,
                p.router.api_key.get_secret_value() if p.router.api_key else None,
            )
            for p in plan.pools
            for r in p.replicas
            if r.spec is not None
        }

    async def start(self) -> None:
        write_gateway_config(self.plan)
        # The state file first: `rewardfleet status` probes every part itself, so it may show a fleet that is
        # still starting, and the file exists by the time the gateway answers /ready (background pools start
        # after that).
        self._write_state()
        for note in self.plan.notes:
            self.console.print(f"[yellow]{note}[/yellow]")
        columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, console=self.console, transient=False) as progress:
            loaded: list[tuple[Supervisor, TaskID]] = []
            for index, stage in enumerate(self.stages):
                sups = [Supervisor(spec, self.backoff) for spec in stage]
                self.supervisors.append(sups)
                tasks = [progress.add_task(f"{s.spec.name}: starting", total=1) for s in sups]
                for sup in sups:
                    await sup.start()
                # Replicas (stage 0) are only loaded until their routers (stage 1) route to them.
                await asyncio.gather(
                    *(self._await_ready(s, t, progress, index == 0) for s, t in zip(sups, tasks, strict=True))
                )
                if index == 0:
                    loaded = list(zip(sups, tasks, strict=True))
                elif index == 1:
                    await asyncio.gather(*(self._await_routable(s, t, progress) for s, t in loaded))
        for spec in self.background:
            sup = Supervisor(spec, self.backoff)
            self.supervisors[0].append(sup)  # stopped with the other model servers, after the gateway
            await sup.start()
            self.console.print(f"{spec.name}: loading in the background")
            self._watchers.append(asyncio.create_task(self._announce_ready(sup)))

    async def _await_ready(
        self, sup: Supervisor, task: TaskID, progress: Progress, routed: bool = False
    ) -> None:
        try:
            await sup.wait_ready(self.ready_timeout_s)
        except (ChildFailed, TimeoutError) as exc:
            progress.update(task, description=f"[red]{sup.spec.name}: failed[/red]")
            raise FleetStartError(f"{exc}\n--- end of {sup.spec.log_path} ---\n{_tail(sup)}") from exc
        if routed and sup.spec.name in self.routes:
            progress.update(task, description=f"{sup.spec.name}: loaded, waiting for its router")
            return
        progress.update(task, description=f"[green]{sup.spec.name}: ready[/green]", completed=1)

    async def _await_routable(self, sup: Supervisor, task: TaskID, progress: Progress) -> None:
        if sup.spec.name not in self.routes:
            return
        router, url, api_key = self.routes[sup.spec.name]
        try:
            await wait_routable(router, url, timeout_s=self.ready_timeout_s, api_key=api_key)
        except TimeoutError as exc:
            progress.update(task, description=f"[red]{sup.spec.name}: not routable[/red]")
            raise FleetStartError(str(exc)) from exc
        progress.update(task, description=f"[green]{sup.spec.name}: ready[/green]", completed=1)

    async def _announce_ready(self, sup: Supervisor) -> None:
        """Say when a background replica is ready, or that it failed; the rest of the fleet keeps serving."""
        started = asyncio.get_running_loop().time()
        try:
            await sup.wait_ready(self.ready_timeout_s)
        except (ChildFailed, TimeoutError) as exc:
            self.console.print(f"[red]{sup.spec.name} did not start:[/red] {exc}\n{_tail(sup)}")
            return
        if sup.spec.name in self.routes:
            router, url, api_key = self.routes[sup.spec.name]
            try:
                await wait_routable(router, url, timeout_s=self.ready_timeout_s, api_key=api_key)
            except TimeoutError as exc:
                self.console.print(
                    f"[red]{sup.spec.name} loaded but its router does not route to it:[/red] {exc}"
                )
                return
        took = asyncio.get_running_loop().time() - started
        self.console.print(
            f"[green]{sup.spec.name}: ready[/green] (loaded in the background in {took:.0f} s)"
        )

    async def stop(self) -> None:
        """Gateway first, then routers, then model servers; each stage's children stop together."""
        for watcher in self._watchers:
            watcher.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        self._watchers.clear()
        for sups in reversed(self.supervisors):
            await asyncio.gather(*(s.stop() for s in sups), return_exceptions=True)
        self.supervisors.clear()
        with contextlib.suppress(FileNotFoundError):
            (self.plan.run_dir / STATE_FILE).unlink()

    def endpoints_table(self) -> Table:
        table = Table(title="Reward Fleet is up", show_lines=False)
        for col in ("part", "address", "notes"):
            table.add_column(col, overflow="fold")
        table.add_row(
            "gateway", self.plan.gateway_url, "POST /score, /score/batch; GET /reward_fns, /metrics, /docs"
        )
        for p in self.plan.pools:
            table.add_row(f"{p.name} router", p.router.url, f"{p.config.kind}, policy {p.router.policy}, "
                          f"metrics :{p.router.prometheus_port}")  # fmt: skip
            for r in p.replicas:
                table.add_row(
                    f"  {p.name}-{r.index}", r.url, p.config.backend if r.spec else "external (SGLang)"
                )
        return table

    def _write_state(self) -> None:
        state = {"pid": os.getpid(), **self.plan.to_state()}
        (self.plan.run_dir / STATE_FILE).write_text(json.dumps(state, indent=2))


def _tail(sup: Supervisor, chars: int = 3000) -> str:
    path = sup.spec.log_path
    if path is None or not path.exists():
        return "(no log)"
    return path.read_text(errors="replace")[-chars:]


async def run_fleet(fleet: Fleet, stop_signals: Sequence[int] = (signal.SIGINT, signal.SIGTERM)) -> int:
    """Start `fleet`, print its endpoints, run until a stop signal, then stop it. Returns an exit code."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in stop_signals:
        loop.add_signal_handler(sig, stop.set)
    code = 0
    try:
        starting = asyncio.create_task(fleet.start())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if starting.done():
            starting.result()  # raises FleetStartError
            fleet.console.print(fleet.endpoints_table())
            fleet.console.print("Ctrl-C stops the fleet (gateway, then routers, then model servers).")
            await stopping
        else:
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, FleetStartError):
                await starting
        fleet.console.print("stopping the fleet…")
    except FleetStartError as exc:
        fleet.console.print(f"[red]the fleet did not start:[/red] {exc}")
        code = 1
    finally:
        await fleet.stop()
        for sig in stop_signals:
            loop.remove_signal_handler(sig)
    fleet.console.print("fleet stopped.")
    return code
