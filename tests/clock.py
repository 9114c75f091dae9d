"""A clock a test moves by hand, for code that takes `clock=` (and `sleep=`) instead of reading the time.

`FakeClock()` is the clock (`clock()` reads it); `clock.sleep` is the matching `asyncio.sleep` and
`clock.call_later` the loop's: a sleeper wakes (a timer runs) when `advance` moves the time to or past its
end, never on its own, so a test of a lease, a window, a drain or a backoff runs in no wall time and says
exactly how much time passed. With `autojump=True` a sleep moves the clock itself (for a loop whose waits
the test only records, in `slept`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable


class Timer:
    """What `FakeClock.call_later` returns: cancellable, as an `asyncio.TimerHandle` is."""

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled


class FakeClock:
    def __init__(self, now: float = 1000.0, *, autojump: bool = False) -> None:
        self.now = now
        self.autojump = autojump
        self.slept: list[float] = []  # every sleep asked for, in order
        self.reads = 0  # how often the code read the time: a loop that re-checks it shows here
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def time(self) -> float:
        """The event loop's spelling of the clock (for code that takes a loop-like `timer`)."""
        return self()

    def call_later(self, delay: float, callback: Callable[[], object]) -> Timer:
        """`loop.call_later` on this clock: `callback` runs inside the `advance` that reaches its time."""
        handle = Timer(callback)
        heapq.heappush(self._timers, (self.now + delay, next(self._order), handle))
        return handle

    def advance(self, seconds: float) -> None:
        """Move the time on by `seconds`: run every timer and wake every sleeper whose time is reached, in
        order of their time (a timer scheduled by a timer runs too, if it falls within `seconds`)."""
        if seconds < 0:
            raise ValueError("time does not go back")
        end = self.now + seconds
        while self._timers and self._timers[0][0] <= end:
            at, _, handle = heapq.heappop(self._timers)
            self.now = max(self.now, at)
            if not handle.cancelled():
                handle.callback()
        self.now = end
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleeping(self) -> int:
        """Sleepers not yet woken (cancelled ones left out)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

    @property
    def timers(self) -> int:
        """Timers (`call_later`) not yet run nor cancelled."""
        return sum(1 for _, _, handle in self._timers if not handle.cancelled())

    def next_wake(self) -> float | None:
        """Seconds from now to the earliest sleeper's end, or None with nobody asleep."""
        ends = [end for end, _, future in self._sleepers if not future.done()]
        return min(ends) - self.now if ends else None

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.autojump:
            self.now += max(0.0, seconds)
        if seconds <= 0 or self.autojump:
            await asyncio.sleep(0)  # still a turn of the loop, as asyncio.sleep(0) is
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future
