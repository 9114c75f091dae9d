"""A clock a test moves by hand, for code that takes `clock=` (and `sleep=`) instead of reading the time.

`FakeClock()` is the clock (`clock()` reads it); `clock.sleep` is the matching `asyncio.sleep`: a sleeper
wakes when `advance` moves the time to or past its end, never on its own, so a test of a lease, a window, a
drain or a backoff runs in no wall time and says exactly how much time passed. With `autojump=True` a sleep
moves the clock itself (for a loop whose waits the test only records, in `slept`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools


class FakeClock:
    def __init__(self, now: float = 1000.0, *, autojump: bool = False) -> None:
        self.now = now
        self.autojump = autojump
        self.slept: list[float] = []  # every sleep asked for, in order
        self.reads = 0  # how often the code read the time: a loop that re-checks it shows here
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the time on by `seconds` and wake every sleeper whose end is now reached."""
        if seconds < 0:
            raise ValueError("time does not go back")
        self.now += seconds
        while self._sleepers and self._sleepers[0][0] <= self.now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleeping(self) -> int:
        """Sleepers not yet woken (cancelled ones left out)."""
        return sum(1 for _, _, future in self._sleepers if not future.done())

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
