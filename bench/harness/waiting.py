"""One way for tests to wait: poll a condition until it holds, within a bounded time, or fail saying what.

Tests synchronise on a signal they can observe (a metric, a file, a queue length, an HTTP answer), never on a
fixed sleep that guesses how long something takes: on a loaded 2-core machine every guess is sometimes wrong.
`eventually` polls from a thread that may block; `eventually_async` polls from the event loop and accepts a
check that is a coroutine function.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

RETRY_ON: tuple[type[BaseException], ...] = (Exception,)


class _Poll:
    """The bookkeeping both helpers share: the deadline, the last value and the last exception seen."""

    def __init__(self, what: str, timeout_s: float, detail: Callable[[], str] | None) -> None:
        self.what = what
        self.detail = detail
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.last_value: Any = None
        self.last_error: BaseException | None = None
        self.tries = 0

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def failure(self) -> AssertionError:
        last = f"last error {self.last_error!r}" if self.last_error else f"last value {self.last_value!r}"
        more = f"\n{self.detail()}" if self.detail else ""
        return AssertionError(
            f"timed out after {self.timeout_s:g}s ({self.tries} tries) waiting for {self.what}: {last}{more}"
        )


def _name(check: Callable[..., Any], what: str | None) -> str:
    return what or str(getattr(check, "__qualname__", repr(check)))


def eventually(
    check: Callable[[], T],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.02,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = RETRY_ON,
    detail: Callable[[], str] | None = None,
) -> T:
    """Call `check` until it returns a truthy value and return that value.

    An exception of a type in `retry_on` counts as "not yet" (a server still starting refuses connections, an
    `assert` inside `check` fails); any other propagates at once. After `timeout_s` it raises AssertionError
    naming `what` (default: the check's name) with the last value or exception, and `detail()` (a log tail,
    say) when given."""
    poll = _Poll(_name(check, what), timeout_s, detail)
    while True:
        poll.tries += 1
        try:
            value = check()
        except retry_on as exc:
            poll.last_error = exc
        else:
            if value:
                return value
            poll.last_value, poll.last_error = value, None
        if poll.expired():
            raise poll.failure() from poll.last_error
        time.sleep(interval_s)  # the polling interval, not a guess of how long the event takes


async def eventually_async(
    check: Callable[[], T | Awaitable[T]],
    *,
    timeout_s: float = 10.0,
    interval_s: float = 0.01,
    what: str | None = None,
    retry_on: tuple[type[BaseException], ...] = RETRY_ON,
    detail: Callable[[], str] | None = None,
) -> T:
    """`eventually` for the event loop: `check` may be sync or return an awaitable; between tries it yields to
    the loop for `interval_s` (0: one scheduler pass, for state the loop's own tasks change)."""
    poll = _Poll(_name(check, what), timeout_s, detail)
    while True:
        poll.tries += 1
        try:
            value = check()
            if inspect.isawaitable(value):
                value = await value
        except retry_on as exc:
            poll.last_error = exc
        else:
            if value:
                return value
            poll.last_value, poll.last_error = value, None
        if poll.expired():
            raise poll.failure() from poll.last_error
        await asyncio.sleep(interval_s)  # the polling interval, not a guess of how long the event takes
