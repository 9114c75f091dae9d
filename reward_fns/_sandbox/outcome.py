"""A test case's outcome, derived by the host from what it observed of the sandboxed process.

The host trusts nothing the program writes except as "the program's output": the verdict comes from the
process's exit status, the host's own deadline and the host's own count of output bytes; the case index
comes from the host's loop. The program can choose its exit status, so it can choose which failure label a
failing case gets, but only `ok` (a clean exit) lets the output be compared with the expected output
(`apps_compare`), which never enters the sandbox.

The exit codes are the runner's (`harness.py` cannot import this package, so they are written twice).
"""

from __future__ import annotations

import json
import signal
from typing import Any

from rewardfleet.reward_fns._sandbox.apps_compare import decode

EXIT_ERROR = 1
EXIT_COMPILE_ERROR = 3
STARTED = b"\x06"
# Killed by its own per-case timer or by the CPU rlimit: the program ran out of time.
_TIMER_SIGNALS = frozenset({signal.SIGALRM, signal.SIGXCPU})


def _signal_of(returncode: int) -> int | None:
    """The signal that ended the process: asyncio reports -N; bwrap (and shells) exit with 128 + N."""
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return None


def verdict_of(returncode: int | None, *, timed_out: bool, over_limit: bool) -> str:
    """`ok`, `timeout`, `output_limit`, `compile_error`, `error` or `crashed`."""
    if over_limit:
        return "output_limit"
    if timed_out or returncode is None:
        return "timeout"
    if returncode == 0:
        return "ok"
    if returncode == EXIT_COMPILE_ERROR:
        return "compile_error"
    number = _signal_of(returncode)
    if number is None:
        return "error"
    return "timeout" if number in _TIMER_SIGNALS else "crashed"


def started_output(stdout: bytes) -> bytes | None:
    """The program's output after the runner's `STARTED` byte, or None when the runner never started (the
    sandbox failed before any of the program could run: an infrastructure error, not a verdict)."""
    return stdout[1:] if stdout.startswith(STARTED) else None


def case_outcome(
    returncode: int | None, stdout: bytes, *, call_based: bool, timed_out: bool, over_limit: bool
) -> dict[str, Any]:
    """`{"verdict", "output"?}` for one case: the output only when the process exited cleanly."""
    verdict = verdict_of(returncode, timed_out=timed_out, over_limit=over_limit)
    if verdict != "ok":
        return {"verdict": verdict}
    try:
        text = stdout.decode("utf-8", "surrogatepass")
        if not call_based:
            return {"verdict": "ok", "output": text}
        # A returned value is one tagged JSON document (kept tagged: `apps_compare.case_passes` decodes it);
        # anything else on stdout is a value no function returns.
        value = json.loads(text)
        decode(value)
    except (ValueError, TypeError, KeyError, RecursionError):
        return {"verdict": "error"}
    return {"verdict": "ok", "output": value}
