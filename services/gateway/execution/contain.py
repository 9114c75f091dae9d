"""Keeping user code's non-`Exception` raises inside its own sample.

A reward function, python grader or group function may raise what is not an `Exception`: `SystemExit` (also
`SystemExit(0)`), `KeyboardInterrupt`, `GeneratorExit`, a class of its own derived from `BaseException`, or a
`CancelledError` nobody asked for. Left alone, these stop whatever runs the call: a worker process's task loop
(the pool is then "not active" for every later sample), the event loop (asyncio re-raises `SystemExit` and
`KeyboardInterrupt` out of `run_forever`), or the request (a plain-text 500 from the server). Every place that
calls user code calls it through this module, and the raise becomes `UserCodeExit`, an ordinary `Exception`
whose `type` is the name of what was raised: the sample fails with that type, as any exception would.

Not contained: a cancellation that comes from outside the call (a timeout, a client that went away), which
must go on cancelling. Standard library only: worker processes import this.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def exit_message(exc: BaseException) -> str:
    """What the sample's `error.message` says about a contained raise."""
    return (
        f"user code raised {exc!r}, which is not an Exception; it may not stop the gateway, only this sample "
        "failed"
    )


class UserCodeExit(Exception):
    """A `BaseException` that is not an `Exception`, raised by user code and contained. `type` is its class
    name (what the sample's `error.type` says)."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(exit_message(exc))
        self.type = type(exc).__name__


def call(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`; a `BaseException` that is not an `Exception` arrives as `UserCodeExit`."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        raise
    except BaseException as exc:
        raise UserCodeExit(exc) from None


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread(fn, ...)` with the raise contained in the thread, before it reaches the loop."""
    return await asyncio.to_thread(call, fn, *args, **kwargs)


async def awaited(awaitable: Awaitable[T]) -> T:
    """`await awaitable` (a user coroutine); its own `BaseException`s arrive as `UserCodeExit`. A
    cancellation of the awaiting task (timeout, client gone) is not the user's raise and passes through."""
    try:
        return await awaitable
    except BaseException as exc:
        contained = user_exit(exc)
        if contained is exc:
            raise
        raise contained from None


def user_exit(exc: BaseException) -> BaseException:
    """What a raise out of awaited user code becomes: `exc` itself when it is an `Exception` or a cancellation
    of the awaiting task (it must go on cancelling), else `UserCodeExit`. For callers that await user code in
    their own frame instead of `awaited`'s (a post in flight holds one frame fewer)."""
    if isinstance(exc, Exception):
        return exc
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            return exc
    return UserCodeExit(exc)
