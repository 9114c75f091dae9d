"""The runner that executes *inside* the sandbox: one solution, one test case, one process.

Standard library only, and nothing from the fleet: the sandbox sees this file and a Python interpreter. The
runner trusts nothing and reports nothing: the host judges a case only by what it observes from outside
(the bytes on stdout after the `STARTED` byte, the exit status, its own deadline), against expected outputs
that never enter the sandbox. It executes a solution as verl 0.9.1's prime_code runner does, so scores
match verl's (one process per case, as prime_code's retry pass).

The threat model, the prime_code parity rules and the stdin/stdout protocol: docs/code_sandbox.md.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import resource
import signal
import sys
from typing import Any
from unittest.mock import mock_open, patch

# The modules prime_code's runner star-imports, then imports by name, before every solution.
_PREAMBLE_STAR = (
    *("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random"),
    *("statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing"),
)
_PREAMBLE_PLAIN = _PREAMBLE_STAR[:16]
PREAMBLE = (
    "".join(f"from {m} import *\n" for m in _PREAMBLE_STAR)
    + "".join(f"import {m}\n" for m in _PREAMBLE_PLAIN)
    + "sys.setrecursionlimit(6*10**5)\n"
)
_DISABLED_OS = (
    *("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir", "setuid", "fork", "forkpty"),
    *("killpg", "rename", "renames", "truncate", "replace", "unlink", "fchmod", "fchown", "chmod", "chown"),
    *("chroot", "lchflags", "lchmod", "lchown", "getcwd", "chdir"),
)
_HIDDEN_MODULES = ("ipdb", "joblib", "resource", "psutil", "tkinter", "subprocess", "ctypes")


def _disable_destructive_functions() -> None:
    import builtins
    import shutil
    import subprocess

    builtins.exit = None  # type: ignore[assignment]
    builtins.quit = None  # type: ignore[assignment]
    builtins.help = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in _DISABLED_OS:
        setattr(os, name, None)
    for name in ("rmtree", "move", "chown"):
        setattr(shutil, name, None)
    subprocess.Popen = None  # type: ignore[assignment,misc]
    for name in _HIDDEN_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]


def stdin_program(solution: str) -> str:
    """The solution turned into module text defining `code()`, as prime_code does it."""
    try:
        tree = ast.parse(solution)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            solution = ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)  # type: ignore[arg-type]
    except Exception:
        pass
    out: list[str] = []
    started = False
    for line in solution.split("\n"):
        is_import = line.startswith(("from ", "import "))
        if not started and not is_import:
            out.append("stdin = sys.stdin\nstdout = sys.stdout\ndef code():\n")
            started = True
        out.append(f"\t{line}\n" if started else f"{line}\n")
    return "".join(out)


def _encode(value: Any) -> Any:
    """JSON that keeps what `==` distinguishes (tuples, non-string dict keys, bool vs int)."""
    if value is None or isinstance(value, bool | str):
        return value if not isinstance(value, str) else str(value)
    if isinstance(value, int):
        return {"i": int(value)}
    if isinstance(value, float):
        return {"f": repr(float(value))}
    if isinstance(value, tuple):
        return {"t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {"d": [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise TypeError(f"cannot encode {type(value).__name__}")


class _Capture(list[str]):
    """`sys.stdout` goes to a StringIO for the duration of a case, as prime_code captures it."""

    def __enter__(self) -> _Capture:
        self._saved = sys.stdout
        self._buffer = io.StringIO()
        sys.stdout = self._buffer
        return self

    def __exit__(self, *exc: object) -> None:
        self.append(self._buffer.getvalue())
        sys.stdout = self._saved


def _call_with_stdin(method: Any, inputs: str) -> None:
    lines = iter(inputs.split("\n"))

    # The same five patches, stacked in the same order, as prime_code's runner (the order decides which
    # object each patch lands on, which programs can observe).
    @patch("builtins.open", mock_open(read_data=inputs))
    @patch("sys.stdin", io.StringIO(inputs))
    @patch("sys.stdin.readline", lambda *args: next(lines))
    @patch("sys.stdin.readlines", lambda *args: inputs.split("\n"))
    @patch("sys.stdin.read", lambda *args: inputs)
    def run(fn: Any) -> None:
        with contextlib.suppress(SystemExit):  # prime_code ends a stdin program's case normally on exit()
            fn()

    run(method)


def _load(job: dict[str, Any], timer_s: float) -> Any:
    """The callable under test: `code` (stdin) or the named function/method (call-based)."""
    solution: str = job["solution"]
    fn_name = job.get("fn_name")
    source = PREAMBLE + (solution if fn_name is not None else stdin_program(solution))
    signal.setitimer(signal.ITIMER_REAL, timer_s)
    module: dict[str, Any] = {"__name__": "tmp_sol"}
    exec(compile(source, "<string>", "exec"), module)
    target: Any = module
    if fn_name is not None and "class Solution" in solution:
        target = module["Solution"]()
    signal.setitimer(signal.ITIMER_REAL, 0)
    name = fn_name if fn_name is not None else "code"
    return target[name] if isinstance(target, dict) else getattr(target, name)


def _run_case(method: Any, job: dict[str, Any], raw_inputs: Any, timer_s: float) -> Any:
    """The case's output: the captured text (stdin programs) or the tagged returned value (call-based)."""
    signal.setitimer(signal.ITIMER_REAL, timer_s)
    try:
        if not isinstance(raw_inputs, str):
            # prime_code truncates every input for its report and asserts it is a string first.
            raise TypeError(f"test case input must be a string, got {type(raw_inputs).__name__}")
        if job.get("fn_name") is None:
            with _Capture() as captured:
                _call_with_stdin(method, raw_inputs)
            return captured[0]
        args = [json.loads(line) for line in raw_inputs.split("\n")]
        if args and isinstance(args[0], dict):
            with contextlib.suppress(Exception):  # JSON keys back to ints where they all are
                args = [{int(k): v for k, v in args[0].items()}]
        result = method(*args)
        json.dumps(result)  # prime_code serialises the result first; what it cannot encode is an error
        if isinstance(result, tuple):
            result = list(result)
        return _encode(result)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


EXIT_ERROR = 1
EXIT_COMPILE_ERROR = 3
# Written before the solution is loaded: the host knows the runner started, and no program can unsend it.
STARTED = b"\x06"


def _isolate_descriptors() -> int:
    """Point fds 0-2 at /dev/null for the program and keep one duplicate of stdout for the result.

    The duplicate is the same pipe as fd 1 (reachable by the program either way): it is not a separate
    channel, only a way to keep stray `os.write(1, ...)` out of the output, as prime_code ignores them."""
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the solution's `stdin` global is this object, as in prime_code
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    return out_fd


def _limit_cpu(timer_s: float) -> None:
    # Loading and the case each get timer_s; CPU time cannot exceed that (the host's wall deadline ends it).
    cpu_s = math.ceil(2 * timer_s) + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        cpu_s = min(cpu_s, hard)  # never above the sandbox's own limit (raising it is not allowed)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def main() -> None:
    job = json.loads(sys.stdin.buffer.read())
    timer_s = float(job["timeout_s"])
    _write_all(1, STARTED)
    out_fd = _isolate_descriptors()
    _limit_cpu(timer_s)
    _disable_destructive_functions()
    try:
        method = _load(job, timer_s)
    except BaseException:
        os._exit(EXIT_COMPILE_ERROR)
    if "input" not in job:
        os._exit(0)
    try:
        output = _run_case(method, job, job["input"], timer_s)
    except BaseException:
        os._exit(EXIT_ERROR)
    if job.get("fn_name") is None:
        data = output.encode("utf-8", "surrogatepass")
    else:
        data = json.dumps(output).encode()
    _write_all(out_fd, data)
    os._exit(0)


if __name__ == "__main__":
    main()
