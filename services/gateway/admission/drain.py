"""Graceful shutdown: on SIGTERM (or SIGINT) the gateway drains before uvicorn stops.

uvicorn's own handling of SIGTERM closes the listening socket at once, so a trainer's next request meets a
refused connection instead of an answer. `Drain` takes the signal from uvicorn while the app runs:

1. `/ready` turns 503 (the `on_drain` callback clears the gateway's ready flag) and every work route answers
   503 + `Retry-After` (`Admission.start_draining`); requests still queued for a slot get the same answer;
2. requests already admitted run to the end, for at most `shutdown_grace_s`;
3. the handler uvicorn had installed is called with the signal, and uvicorn shuts down as it always does
   (closing idle keep-alive connections, running the lifespan's shutdown, exiting).

A second signal during the drain skips the wait. Workers of the sync pool are in their own process group
(`execution/isolation.py`), so a SIGTERM sent to the gateway's group does not kill the calls being drained.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from rewardfleet.services.gateway.admission.admission import Admission

logger = logging.getLogger(__name__)

DRAIN_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)


class Drain:
    def __init__(
        self,
        admission: Admission,
        grace_s: float,
        on_drain: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.admission = admission
        self.clock = clock
        self.grace_s = grace_s
        self.on_drain = on_drain
        self._previous: dict[int, Any] = {}
        self._task: asyncio.Task[None] | None = None
        self._skip_wait = asyncio.Event()
        self.drained_in_s: float | None = None

    def install(self) -> None:
        """Take over the drain signals (main thread only; elsewhere, e.g. under a test server, do nothing)."""
        loop = asyncio.get_running_loop()
        for sig in DRAIN_SIGNALS:
            try:
                previous = signal.getsignal(sig)
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (ValueError, RuntimeError):  # not the main thread
                continue
            self._previous[sig] = previous

    def uninstall(self) -> None:
        loop = asyncio.get_running_loop()
        for sig, previous in self._previous.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, previous)
        self._previous.clear()

    def _on_signal(self, sig: int) -> None:
        if self._task is not None:
            logger.warning("second %s during the drain: stopping now", signal.Signals(sig).name)
            self._skip_wait.set()
            return
        self._task = asyncio.get_running_loop().create_task(self.drain(sig))

    async def drain(self, sig: int) -> None:
        started = self.clock()
        admission = self.admission
        logger.info(
            "%s: draining (%d requests in flight, grace %.0fs); new work gets 503",
            signal.Signals(sig).name,
            admission.active,
            self.grace_s,
        )
        self.on_drain()
        admission.start_draining()
        deadline = started + self.grace_s
        while admission.active > 0 and self.clock() < deadline and not self._skip_wait.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._skip_wait.wait(), 0.05)
        self.drained_in_s = self.clock() - started
        if admission.active:
            logger.warning("grace period over with %d requests still in flight", admission.active)
        else:
            logger.info("drained in %.2fs", self.drained_in_s)
        self._hand_over(sig)

    def _hand_over(self, sig: int) -> None:
        previous = self._previous.get(sig)
        self.uninstall()
        if callable(previous):
            frame: FrameType | None = None
            previous(sig, frame)  # uvicorn's Server.handle_exit: should_exit = True
        else:
            signal.raise_signal(sig)
