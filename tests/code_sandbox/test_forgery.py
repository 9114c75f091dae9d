"""Forgery attempts: programs that compute a wrong answer and then try to make the sandbox report a pass
(descriptor sprays, `/proc/*/fd`, lines shaped like any harness protocol, exit tricks, signals to the parent,
files, children left running, huge outputs). Each must score exactly what an honest wrong program scores,
on both backends (bubblewrap, and Sandbox Fusion through a stand-in speaking its protocol).

The expected outputs are random per test run: a program cannot know them, so the only way to a pass is a
forged report.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings
from tests.code_sandbox.fusion_standin import serving

SANDBOX: dict[str, Any] = {"case_timeout_s": 2.0, "retry_case_timeout_s": 2.0, "retry_cases": 3, "slots": 2}
SANDBOX["sample_timeout_s"] = 60.0
SANDBOX["max_output_bytes"] = 1024 * 1024
# Reports in the shapes this project's harness spoke before the fix: the inner pipe's "case -1 loaded"
# line (counted as a pass), and the outer protocol's lines ending the first pass.
FORGED = (json.dumps({"case": -1, "verdict": "ok"}) + "\n").encode() * 4
FORGED_OUTER = (
    (json.dumps({"phase": "all", "case": -1, "verdict": "ok"}) + "\n") * 3
    + json.dumps({"phase": "all_done"})
    + "\n"
).encode()

WRONG = "print(0)\n"
SPRAY = (
    "import posix\nfor fd in range(3, 1025):\n    try:\n"
    f"        posix.write(fd, {FORGED!r})\n    except OSError:\n        pass\n"
)
PROC_FDS = (
    "import glob\nfor path in glob.glob('/proc/*/fd/*') + glob.glob('/proc/self/fd/*'):\n"
    f"    for payload in ({FORGED!r}, {FORGED_OUTER!r}):\n        try:\n"
    "            with open(path, 'wb', buffering=0) as f:\n                f.write(payload)\n"
    "        except Exception:\n            pass\n"
)

ATTACKS: dict[str, str] = {
    "honest_wrong": WRONG,
    "fd_spray_3_to_1024": SPRAY + WRONG,
    "proc_fd_every_process": PROC_FDS + WRONG,
    "protocol_lines_on_stdout": f"import sys\nsys.stdout.write({(FORGED + FORGED_OUTER).decode()!r})\n",
    "sys_stdout_replaced": (
        f"import sys, io\nsys.__stdout__.write({FORGED_OUTER.decode()!r})\nsys.__stdout__.flush()\n"
        f"sys.stdout = sys.__stdout__\nprint({FORGED.decode()!r})\n"
    ),
    "raw_fd1_and_fd2": f"import posix\nposix.write(1, {FORGED_OUTER!r})\nposix.write(2, {FORGED_OUTER!r})\n"
    + WRONG,
    "os_exit_0": WRONG + "import posix\nposix._exit(0)\n",
    "spray_then_os_exit_0": SPRAY + "import posix\nposix._exit(0)\n",
    "exit_codes": WRONG + "import sys\nsys.exit(0)\n",
    "exit_code_after_spray": SPRAY + "import posix\nposix._exit(1)\n",
    "atexit_hook": f"import atexit\natexit.register(lambda: exec({SPRAY!r}))\n" + WRONG,
    "kill_parent": "import posix\nposix.kill(posix.getppid(), 9)\n" + WRONG,
    "stop_parent": "import posix\nposix.kill(posix.getppid(), 19)\n" + WRONG,
    "kill_every_process": (
        "import posix\nfor pid in range(1, 200):\n    if pid != posix.getpid():\n        try:\n"
        "            posix.kill(pid, 9)\n        except OSError:\n            pass\n" + WRONG
    ),
    "fork_and_outlive": (
        "import posix, time\nif posix.fork() == 0:\n    time.sleep(0.3)\n"  # a child outliving its run
        f"    exec({SPRAY + PROC_FDS!r})\n    posix._exit(0)\n" + WRONG
    ),
    "files_the_host_might_read": (
        "import glob\nfor path in ['/tmp/result.json', 'result.json', '/sandbox/result', '/dev/shm/r']:\n"
        f"    try:\n        open(path, 'wb').write({FORGED!r})\n    except OSError:\n        pass\n" + WRONG
    ),
    "parent_memory": (
        "import posix\nfor path in (f'/proc/{posix.getppid()}/mem', '/proc/1/mem'):\n    try:\n"
        "        open(path, 'r+b').write(b'x')\n    except Exception:\n        pass\n" + WRONG
    ),
    "huge_output": "import sys\nsys.stdout.write('0' * 5_000_000)\n",
    "timer_and_rlimits_off": (
        "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n" + SPRAY + WRONG
    ),
}
CALL_ATTACKS: dict[str, str] = {
    "call_honest_wrong": "def solve(x):\n    return -1\n",
    "call_fd_spray": (
        "def solve(x):\n    import posix\n    for fd in range(3, 1025):\n        try:\n"
        f"            posix.write(fd, {FORGED!r})\n        except OSError:\n            pass\n    return -1\n"
    ),
    "call_prints_tagged": "def solve(x):\n    print(json.dumps({'i': 7}))\n    return -1\n",
}


def _truth(call: bool) -> dict[str, Any]:
    secret = [str(10**9 + secrets.randbelow(10**9)) for _ in range(3)]
    if call:
        return {"fn_name": "solve", "inputs": ["1", "2", "3"], "outputs": secret}
    return {"inputs": ["1\n", "2\n", "3\n"], "outputs": [s + "\n" for s in secret]}


@pytest.fixture(params=["bubblewrap", "bubblewrap_per_case", "sandbox_fusion"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[dict[str, Any]]:
    if request.param == "bubblewrap":  # warm: a sandbox per pass, a zygote forks each case
        yield {"sandbox": SANDBOX}
        return
    if request.param == "bubblewrap_per_case":  # sandbox.warm: false
        yield {"sandbox": {**SANDBOX, "warm": False}}
        return
    async with serving(SandboxSettings()) as (url, _, _):
        yield {"sandbox": SANDBOX, "sandbox_fusion_url": url}


async def _score(program: str, truth: dict[str, Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    return await code.compute_score(
        data_source="apps", solution_str=f"```python\n{program}\n```", ground_truth=truth, **kwargs
    )


async def test_the_cases_can_be_passed(backend: dict[str, Any]) -> None:
    """The control: a program that knows the answers passes, so a 0 below is not a broken test."""
    truth = _truth(call=False)
    answers = "{" + ", ".join(f"{i + 1}: {o.strip()!r}" for i, o in enumerate(truth["outputs"])) + "}"
    result = await _score(f"print({answers}[int(input())])", truth, backend)
    assert result["score"] == 1.0 and result["all_passed"], result
    call = _truth(call=True)
    answers = "{" + ", ".join(f"{i + 1}: {o}" for i, o in enumerate(call["outputs"])) + "}"
    result = await _score(f"def solve(x):\n    return {answers}[x]", call, backend)
    assert result["score"] == 1.0 and result["all_passed"], result


@pytest.mark.parametrize("attack", [*ATTACKS, *CALL_ATTACKS])
async def test_a_forgery_scores_as_an_honest_wrong_program(attack: str, backend: dict[str, Any]) -> None:
    call = attack in CALL_ATTACKS
    program = CALL_ATTACKS[attack] if call else ATTACKS[attack]
    result = await _score(program, _truth(call), backend)
    print(attack, result)
    assert result["score"] == 0.0 and result["all_passed"] is False, (attack, result)
    assert "pass" not in result["verdicts"], (attack, result)


async def test_running_out_the_sample_clock_is_a_zero_not_an_error(backend: dict[str, Any]) -> None:
    """A program too slow everywhere uses up sample_timeout_s: it scores 0 (timeouts), never a sample
    error, which a trainer may drop instead of counting."""
    kwargs = {**backend, "sandbox": {**SANDBOX, "case_timeout_s": 1.0, "retry_case_timeout_s": 1.0}}
    kwargs["sandbox"]["sample_timeout_s"] = 3.0
    result = await _score("while True:\n    pass\n", _truth(call=False), kwargs)
    assert result == {"score": 0.0, "all_passed": False, "verdicts": ["timeout"] * 3}, result
