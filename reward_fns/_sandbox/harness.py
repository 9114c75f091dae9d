"""The program that runs *inside* the sandbox: it executes one solution against test-case inputs.

Standard library only, and nothing from the fleet: the sandbox sees this file and a Python interpreter,
nothing else. It never sees the expected outputs: it reports what the program printed or returned, and the
caller (`rewardfleet.reward_fns._sandbox.apps_compare`, outside the sandbox) decides pass/fail. A program that
forges this harness's output therefore gains nothing it could not get by printing the right answer.

It reproduces how verl 0.9.1's prime_code runner executes a solution, so that scores match verl's:

- the same import preamble (`from math import *`, ...) and recursion limit before the solution;
- stdin programs: a trailing `if __name__ == '__main__':` block is unwrapped, leading import lines stay at
  module level and the rest becomes the body of `def code():` (indented with a tab), called once per case
  with `open`, `sys.stdin` and its `read`/`readline`/`readlines` patched exactly as prime_code patches
  them; `SystemExit` ends the case normally; what went to `sys.stdout` is the output;
- call-based programs (`fn_name`): each input line is JSON, the function (or `Solution().<fn_name>`) is
  called with them; a result `json.dumps` cannot encode is a runtime error (as in prime_code);
- the same destructive functions are disabled before the solution is loaded (`os.kill`, `os.fork`,
  `subprocess`, ... — not a security measure, the sandbox is; they are disabled because verl disables them
  and a program that calls them must score the same);
- phase `all`: one process runs every case in order with a per-case timer and stops at the first error;
  phase `each` (only when the caller asks): the first cases again, each in a fresh process and, as in
  prime_code, as a stdin program even when the job names a `fn_name`.

Protocol: stdin line 1 is the job as JSON (`solution`, `fn_name`, `inputs`, `case_timeout_s`,
`retry_case_timeout_s`, `each_cases`, `max_output_bytes`, optional `first_pass: false`); stdout gets one
JSON line per case result, then
`{"phase": "all_done"}`; a second stdin line `each` starts phase `each`, ended by `{"phase": "done"}`.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import os
import resource
import select
import signal
import sys
import time
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
_DETAIL_CHARS = 300


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


def _run_case(method: Any, job: dict[str, Any], raw_inputs: Any, timer_s: float) -> dict[str, Any]:
    signal.setitimer(signal.ITIMER_REAL, timer_s)
    try:
        if not isinstance(raw_inputs, str):
            # prime_code truncates every input for its report and asserts it is a string first.
            raise TypeError(f"test case input must be a string, got {type(raw_inputs).__name__}")
        if job.get("fn_name") is None:
            with _Capture() as captured:
                _call_with_stdin(method, raw_inputs)
            return {"verdict": "ok", "output": captured[0]}
        args = [json.loads(line) for line in raw_inputs.split("\n")]
        if args and isinstance(args[0], dict):
            with contextlib.suppress(Exception):  # JSON keys back to ints where they all are
                args = [{int(k): v for k, v in args[0].items()}]
        result = method(*args)
        json.dumps(result)  # prime_code serialises the result first; what it cannot encode is an error
        if isinstance(result, tuple):
            result = list(result)
        return {"verdict": "ok", "output": _encode(result)}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _child(job: dict[str, Any], indices: list[int], timer_s: float, write_fd: int) -> None:
    """Runs in a forked process: loads the solution once, runs `indices` in order, one line per case."""
    os.setpgid(0, 0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    sys.stdin = open(os.devnull)  # noqa: SIM115 - the solution's `stdin` global is this object, as in prime_code
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    # The phase ends at timer_s + 1 wall seconds anyway; CPU time cannot exceed that.
    cpu_s = math.ceil(timer_s) + 2
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if hard != resource.RLIM_INFINITY:
        cpu_s = min(cpu_s, hard)  # never above the sandbox's own limit (raising it is not allowed)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    _disable_destructive_functions()

    def send(case: int, result: dict[str, Any]) -> None:
        os.write(write_fd, (json.dumps({"case": case, **result}) + "\n").encode())

    try:
        method = _load(job, timer_s)
    except BaseException as exc:
        send(indices[0] if indices else -1, {"verdict": "compile_error", "detail": repr(exc)[:_DETAIL_CHARS]})
        os._exit(0)
    if not indices:
        send(-1, {"verdict": "ok", "detail": "loaded"})
    for index in indices:
        try:
            send(index, _run_case(method, job, job["inputs"][index], timer_s))
        except BaseException as exc:
            send(index, {"verdict": "error", "detail": repr(exc)[:_DETAIL_CHARS]})
            os._exit(0)
    os._exit(0)


def _signal_name(status: int) -> str:
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.waitstatus_to_exitcode(status)}"


def _collect(pid: int, read_fd: int, expected: list[int], deadline: float, cap: int) -> list[dict[str, Any]]:
    """Result lines from the child until it is done, dies, floods or runs past `deadline`.

    Stops at the first result that is not "ok" (the child stops there too) and never waits for the pipe to
    close: a grandchild the program left behind may hold it open.
    """
    results: list[dict[str, Any]] = []
    buffer = b""
    status: int | None = None
    while len(results) < len(expected):
        case = expected[len(results)]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            results.append({"case": case, "verdict": "timeout", "detail": "phase deadline"})
            break
        ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.05))
        chunk = os.read(read_fd, 1 << 20) if ready else b""
        buffer += chunk
        while b"\n" in buffer and len(results) < len(expected):
            line, buffer = buffer.split(b"\n", 1)
            results.append(json.loads(line))
            if results[-1]["verdict"] != "ok":
                return results
        if len(buffer) > cap:
            results.append({"case": case, "verdict": "output_limit", "detail": f"over {cap} bytes"})
            break
        if chunk or len(results) == len(expected):
            continue
        if status is not None:  # exited earlier and the pipe holds nothing more
            detail = _signal_name(status)
            verdict = "timeout" if detail in ("SIGALRM", "SIGXCPU") else "crashed"
            results.append({"case": case, "verdict": verdict, "detail": detail})
            break
        waited, wait_status = os.waitpid(pid, os.WNOHANG)
        if waited:
            status = wait_status
    return results


def _fork(patience_s: float) -> int | None:
    """fork(), waiting out EAGAIN for a while: after a fork bomb the killed processes take a moment to be
    reaped by the namespace's init, and until then they still count against the process limit."""
    deadline = time.monotonic() + patience_s
    while True:
        try:
            return os.fork()
        except BlockingIOError:
            if time.monotonic() > deadline:
                return None
            time.sleep(0.05)


def _run_phase(job: dict[str, Any], indices: list[int], timer_s: float) -> list[dict[str, Any]]:
    read_fd, write_fd = os.pipe()
    pid = _fork(patience_s=timer_s + 1)
    if pid is None:
        os.close(read_fd)
        os.close(write_fd)
        case = indices[0] if indices else -1
        return [
            {"case": case, "verdict": "crashed", "detail": "fork failed: the process limit is still in use"}
        ]
    if pid == 0:
        os.close(read_fd)
        try:
            _child(job, indices, timer_s, write_fd)
        finally:
            os._exit(70)
    os.close(write_fd)
    # prime_code's outer timeout: the per-case timer plus one second, for the whole phase.
    deadline = time.monotonic() + timer_s + 1
    try:
        # With no cases the child still loads the program and reports that (case -1).
        return _collect(pid, read_fd, indices or [-1], deadline, int(job["max_output_bytes"]))
    finally:
        os.close(read_fd)
        _kill_group(pid)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def main() -> None:
    job = json.loads(sys.stdin.readline())
    count = len(job["inputs"])
    emit = sys.stdout.write
    if job.get("first_pass", True):
        for result in _run_phase(job, list(range(count)), float(job["case_timeout_s"])):
            emit(json.dumps({"phase": "all", **result}) + "\n")
    emit(json.dumps({"phase": "all_done"}) + "\n")
    sys.stdout.flush()
    if sys.stdin.readline().strip() != "each":
        return
    # prime_code's one-by-one pass builds its cases without `fn_name`: every program runs as a stdin program.
    retry_job = {**job, "fn_name": None}
    for index in range(min(count, int(job["each_cases"]))):
        for result in _run_phase(retry_job, [index], float(job["retry_case_timeout_s"])):
            emit(json.dumps({"phase": "each", **result}) + "\n")
        sys.stdout.flush()
    emit(json.dumps({"phase": "done"}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
