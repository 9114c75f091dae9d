"""`execution/contain.py` in-process: what it contains and what it must let through (a cancellation from
outside: timeouts and clients that go away depend on it)."""

from __future__ import annotations

import asyncio

import pytest

from rewardfleet.services.gateway.execution.contain import UserCodeExit, awaited, call, in_thread


class Custom(BaseException):
    pass


def _raise(exc: BaseException) -> None:
    raise exc


async def _araise(exc: BaseException) -> None:
    raise exc


@pytest.mark.parametrize("exc", [SystemExit(0), KeyboardInterrupt(), GeneratorExit(), Custom("x")])
async def test_every_non_exception_raise_is_contained_on_each_path(exc: BaseException) -> None:
    with pytest.raises(UserCodeExit) as caught:
        call(_raise, exc)
    assert caught.value.type == type(exc).__name__
    with pytest.raises(UserCodeExit) as caught:
        await in_thread(_raise, exc)
    assert caught.value.type == type(exc).__name__
    with pytest.raises(UserCodeExit) as caught:
        await awaited(_araise(exc))
    assert caught.value.type == type(exc).__name__ and "only this sample failed" in str(caught.value)


async def test_exceptions_pass_unchanged() -> None:
    with pytest.raises(ValueError):
        await awaited(_araise(ValueError("x")))
    with pytest.raises(ValueError):
        await in_thread(_raise, ValueError("x"))


async def test_a_cancellation_from_outside_still_cancels() -> None:
    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(awaited(slow()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    with pytest.raises(TimeoutError):  # asyncio.timeout turns its own cancellation into TimeoutError
        async with asyncio.timeout(0):
            await awaited(slow())


async def test_a_cancelled_error_the_code_raised_itself_is_contained() -> None:
    with pytest.raises(UserCodeExit) as caught:
        await awaited(_araise(asyncio.CancelledError()))
    assert caught.value.type == "CancelledError"
