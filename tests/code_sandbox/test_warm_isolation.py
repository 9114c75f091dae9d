"""The warm sandbox (one sandbox per pass, a zygote forking each case): what a warm process could offer a
program, tried. Programs that hunt for the expected output (their own memory, which is the zygote's, every
process's memory, environment and command line, every inherited descriptor, every file, ptrace) score
exactly what an honest wrong program scores; programs that leave state for the next case (files in every
writable place, SysV shared memory, a daemonised child, sleeping children, modified modules of the shared
interpreter, signals and ptrace to every pid) leave the next case, the next pass and the next sample as if
they had never run.

The expected outputs are `RFSECRET<random digits>`: a thief that found one anywhere prints it and passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.harness.waiting import eventually_async
from rewardfleet.reward_fns import code
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings
from rewardfleet.reward_fns._sandbox.zygote_run import ZygoteRun, check_zygote

SANDBOX: dict[str, Any] = {"case_timeout_s": 5.0, "retry_case_timeout_s": 5.0, "retry_cases": 4, "slots": 1}
SANDBOX["sample_timeout_s"] = 90.0

# Prints the first `RFSECRET<digits>` in `blob` (the program's own text never has digits after the marker).
_THIEF_HEAD = (
    "import posix, re, sys, io\nsys.modules.pop('ctypes', None)\nimport ctypes\n"
    "PATTERN = re.compile(b'RFSEC' + b'RET[0-9]{6,}')\nfound = []\n"
    "def look(blob):\n    m = PATTERN.search(blob)\n"
    "    if m and not found:\n        found.append(m.group().decode())\n"
    "def memory(pid):\n    try:\n        maps = io.open(f'/proc/{pid}/maps').read().splitlines()\n"
    "        mem = io.open(f'/proc/{pid}/mem', 'rb', buffering=0)\n    except OSError:\n        return\n"
    "    for line in maps:\n        lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
    "        if 'r' not in line.split()[1] or hi - lo > 64 << 20:\n            continue\n"
    "        try:\n            mem.seek(lo)\n            look(mem.read(hi - lo))\n"
    "        except (OSError, ValueError, OverflowError):\n"
    "            pass\n"
    "pids = [p for p in posix.listdir('/proc') if p.isdigit()]\n"
)
_THIEF_TAIL = "print(found[0] if found else 'nothing')\n"
THIEVES: dict[str, str] = {
    "own_memory_is_the_zygotes": "memory('self')\n",
    "every_process_memory_environ_cmdline": (
        "for pid in pids + ['1', '2']:\n    memory(pid)\n"
        "    for name in ('environ', 'cmdline'):\n        try:\n"
        "            look(io.open(f'/proc/{pid}/{name}', 'rb').read())\n"
        "        except OSError:\n            pass\n"
        "look(repr(dict(posix.environ)).encode())\n"
    ),
    "inherited_descriptors": (
        "import socket\nfor fd in range(1024):\n    try:\n        look(posix.read(fd, 1 << 20))\n"
        "    except OSError:\n        pass\n    try:\n"
        "        s = socket.socket(fileno=posix.dup(fd))\n        s.setblocking(False)\n"
        "        msg, fds, _, _ = socket.recv_fds(s, 1 << 16, 16)\n        look(msg)\n"
        "        for extra in fds:\n            look(posix.read(extra, 1 << 20))\n"
        "    except Exception:\n        pass\n"
        "for pid in pids:\n    for fd in range(64):\n        try:\n"
        "            f = io.open(f'/proc/{pid}/fd/{fd}', 'rb', buffering=0)\n"
        "            posix.set_blocking(f.fileno(), False)\n"
        "            look(f.read(1 << 20) or b'')\n        except Exception:\n            pass\n"
    ),
    "every_file_it_can_read": (
        "SKIP = {'proc', 'sys', 'usr', 'lib', 'lib64', 'bin', 'sbin'}\nseen = 0\n"
        "for top in ('/', '/proc/1/root', '/proc/1/cwd', '/proc/self/cwd'):\n    stack = [(top, 0)]\n"
        "    while stack and seen < 5000:\n        path, depth = stack.pop()\n        seen += 1\n"
        "        try:\n            st = posix.stat(path)\n        except OSError:\n            continue\n"
        "        if st.st_mode & 0o170000 == 0o040000 and depth < 6:\n            try:\n"
        "                names = [n for n in posix.listdir(path) if n not in SKIP]\n"
        "                stack += [(path.rstrip('/') + '/' + n, depth + 1) for n in names]\n"
        "            except OSError:\n                pass\n"
        "        elif st.st_mode & 0o170000 == 0o100000 and st.st_size < 1 << 20:\n            try:\n"
        "                look(io.open(path, 'rb').read())\n"
        "            except OSError:\n                pass\n"
    ),
    "ptrace_every_pid": (
        "libc = ctypes.CDLL(None, use_errno=True)\nlibc.ptrace.restype = ctypes.c_long\n"
        "for pid in range(1, 400):\n    if pid != posix.getpid() and libc.ptrace(16, pid, 0, 0) == 0:\n"
        "        found.append('attached')\n        memory(str(pid))\n"
    ),
}


def _secret_truth(cases: int = 3) -> dict[str, Any]:
    outputs = [f"RFSECRET{10**8 + secrets.randbelow(9 * 10**8)}\n" for _ in range(cases)]
    return {"inputs": [f"{i}\n" for i in range(cases)], "outputs": outputs}


async def _score(program: str, truth: dict[str, Any], sandbox: dict[str, Any] = SANDBOX) -> dict[str, Any]:
    return await code.compute_score(
        data_source="apps", solution_str=f"```python\n{program}\n```", ground_truth=truth, sandbox=sandbox
    )


async def test_the_warm_sandbox_runs_a_case_and_passes_its_check() -> None:
    """The control: the default backend is the warm one, a known answer passes, and the check passes."""
    assert SandboxSettings().warm is True
    check_zygote(SandboxSettings())
    truth = _secret_truth()
    table = {str(i): o.strip() for i, o in enumerate(truth["outputs"])}
    result = await _score(f"print({table!r}[input()])", truth)
    assert result == {"score": 1.0, "all_passed": True, "verdicts": ["pass"] * 3}, result


@pytest.mark.parametrize("thief", list(THIEVES))
async def test_hunting_the_expected_output_scores_as_an_honest_wrong_program(thief: str) -> None:
    honest = await _score("print('nothing')", _secret_truth())
    result = await _score(_THIEF_HEAD + THIEVES[thief] + _THIEF_TAIL, _secret_truth())
    print(thief, result)
    assert result == honest == {"score": 0.0, "all_passed": False, "verdicts": ["wrong_answer"] * 3}


# Prints "clean" only when nothing of an earlier case is visible, then leaves everything it can behind.
LITTERBUG = """import posix, sys, io, json, time
sys.modules.pop('ctypes', None)
import ctypes
case = input()
libc = ctypes.CDLL(None, use_errno=True)
PATHS = ['/tmp/rf_mark', '/dev/shm/rf_mark', '/sandbox/rf_mark', '/rf_mark', '/dev/rf_mark', 'rf_mark']
dirty = [p for p in PATHS if posix.access(p, posix.F_OK)]
if libc.shmget(0x5246, 0, 0) != -1:
    dirty.append('sysv_shm')
others = sorted(set(int(p) for p in posix.listdir('/proc') if p.isdigit()) - {1, posix.getpid()})
if others:
    dirty.append(f'processes {others}')
if getattr(json, 'rf_mark', None) or getattr(sys, 'rf_mark', None) or 'rf_mark' in posix.environ:
    dirty.append('interpreter')
if json.dumps(1) != '1':
    dirty.append('json patched')
kids = []
for _ in range(32):  # the case's own process budget is whole again (max_processes 64)
    pid = posix.fork()
    if pid == 0:
        posix._exit(0)
    kids.append(pid)
for pid in kids:
    posix.waitpid(pid, 0)
for sig in (19, 9):
    for pid in range(1, 2000):
        if pid != posix.getpid():
            try:
                posix.kill(pid, sig)
            except OSError:
                pass
for pid in range(1, 400):
    libc.ptrace(16, pid, 0, 0)
for p in PATHS:
    try:
        io.open(p, 'wb').write(b'x')
    except OSError:
        pass
libc.shmget(0x5246, 4096, 0o1666)
json.rf_mark = sys.rf_mark = True
posix.environ[b'rf_mark'] = b'1'
json.dumps = lambda *a, **k: 'patched'
for _ in range(8):
    if posix.fork() == 0:
        posix.setsid()
        for _ in range(300):
            for p in PATHS:
                try:
                    io.open(p, 'wb').write(b'x')
                except OSError:
                    pass
            time.sleep(0.01)  # the hostile child's own pace (the behaviour), not a wait
        posix._exit(0)
for _ in range(200):  # a fork bomb's worth of sleeping children, up to the process limit
    try:
        if posix.fork() == 0:
            time.sleep(30)  # a child that outlives its run (the behaviour): the sandbox must kill it
            posix._exit(0)
    except OSError:
        break
print('clean' if not dirty else 'dirty ' + ' '.join(dirty))
"""


async def test_state_left_behind_does_not_reach_the_next_case_of_a_pass() -> None:
    """Three cases in one warm sandbox, each after one that littered: all clean, so all pass."""
    truth = {"inputs": ["0\n", "1\n", "2\n"], "outputs": ["clean\n"] * 3}
    result = await _score(LITTERBUG, truth)
    assert result == {"score": 1.0, "all_passed": True, "verdicts": ["pass"] * 3}, result


async def test_state_left_behind_does_not_reach_the_retry_pass_or_the_next_sample() -> None:
    """Case 1 cannot pass, so the retry pass re-runs case 0 after the first pass littered: still clean.
    Then an honest sample on the same slot scores as it would alone, and nothing is left running."""
    truth = {"inputs": ["0\n", "1\n", "2\n", "3\n"], "outputs": ["clean\n", "never\n", "clean\n", "clean\n"]}
    before = set(_descendants(os.getpid()))  # servers other test modules of this worker keep running
    result = await _score(LITTERBUG, truth)
    assert result == {
        "score": 0.75,
        "all_passed": False,
        "verdicts": ["pass", "wrong_answer", "pass", "pass"],
    }
    honest = await _score("print(int(input()) * 2)", {"inputs": ["4\n", "5\n"], "outputs": ["8\n", "10\n"]})
    assert honest == {"score": 1.0, "all_passed": True, "verdicts": ["pass", "pass"]}
    # Our own descendants, not every slot-uid process: other test runs on this machine use the same uids.
    await eventually_async(  # the kernel reaps them: no event to wait on
        lambda: not set(_descendants(os.getpid())) - before,
        timeout_s=10,
        interval_s=0.1,
        what="no descendant left",
    )


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        children = []
        for task in Path(f"/proc/{parent}/task").glob("*"):  # children are listed per thread
            with contextlib.suppress(OSError):
                children += [int(c) for c in (task / "children").read_text().split()]
        found += children
        stack += children
    return found


VIEW = """import posix, io, json, stat, sys
def kind(fd):
    mode = posix.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode):
        return 'pipe' if stat.S_ISFIFO(mode) else 'null' if stat.S_ISCHR(mode) else 'socket'
    return 'other'
lines = io.open('/proc/self/status').read().splitlines()
status = dict(line.split(':\\t', 1) for line in lines if ':\\t' in line)
def init_fds():
    try:
        fds = posix.listdir('/proc/1/fd')
    except OSError:
        return 'denied'
    kinds = set()
    for f in fds:
        try:
            kinds.add(kind(posix.open(f'/proc/1/fd/{f}', posix.O_RDONLY)))
        except OSError:
            kinds.add('denied')
    return sorted(kinds)
places = ('/', '/sandbox', '/dev', '/usr', '/tmp', '/dev/shm', '/proc/1/root')
writable = [p for p in places if posix.access(p, posix.W_OK)]
fds = {}
for fd in range(64):
    try:
        fds[fd] = kind(fd)
    except OSError:
        pass
pids = sorted(int(p) for p in posix.listdir('/proc') if p.isdigit())
print(json.dumps({'pid': posix.getpid(), 'ppid': posix.getppid(), 'pids': pids,
    'cap_eff': status['CapEff'].strip(), 'cap_bnd': status['CapBnd'].strip(),
    'no_new_privs': status['NoNewPrivs'].strip(),
    'fds': fds, 'init_fds': init_fds(),
    'writable': writable, 'env': sorted(k.decode() for k in posix.environ), 'cwd': posix.getcwd()}))
"""


async def test_what_a_case_process_sees() -> None:
    """Its own pid namespace (init 1, itself 2), no capability, only its own output pipe and /dev/null, an
    init holding only /dev/null, writable only its own /tmp and /dev/shm, no environment but PATH."""
    run = ZygoteRun(SandboxSettings(), slot=0)
    try:
        job = {"solution": VIEW, "fn_name": None, "timeout_s": 5.0, "input": ""}
        outcome = await run.run_case(job, False, 20.0)
    finally:
        await run.close()
    assert outcome["verdict"] == "ok", outcome
    seen = json.loads(outcome["output"])
    print(seen)
    assert (seen["pid"], seen["ppid"], seen["pids"]) == (2, 1, [1, 2])
    assert seen["cap_eff"] == seen["cap_bnd"] == "0000000000000000" and seen["no_new_privs"] == "1"
    assert set(seen["fds"].values()) <= {"pipe", "null"} and list(seen["fds"].values()).count("pipe") == 1
    assert seen["init_fds"] == "denied"  # the init is not dumpable (and holds only /dev/null anyway)
    assert sorted(seen["writable"]) == ["/dev/shm", "/tmp"]
    # PWD from bwrap's --chdir, LC_CTYPE from Python's C-locale coercion, OMP_NUM_THREADS from the runner.
    assert set(seen["env"]) <= {"PATH", "PWD", "LC_CTYPE", "OMP_NUM_THREADS"} and seen["cwd"] == "/tmp"


async def test_a_timeout_kills_the_warm_sandbox_and_the_next_case_starts_fresh() -> None:
    truth = {"inputs": ["0\n", "1\n"], "outputs": ["clean\n", "clean\n"]}
    # 3 s: time for a fresh sandbox to start and answer on a loaded host (1 s failed under load average 9).
    sandbox = {**SANDBOX, "case_timeout_s": 3.0, "retry_case_timeout_s": 3.0}
    program = LITTERBUG.replace(
        "case = input()\n", "case = input()\nif case == '0':\n    while True:\n        pass\n"
    )
    result = await _score(program, truth, sandbox)
    assert result == {"score": 0.5, "all_passed": False, "verdicts": ["timeout", "pass"]}, result


def test_zygote_fds_are_closed_in_the_host() -> None:
    """The host keeps no descriptor of a finished sample's sandbox (sockets and pipes are per case)."""
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        asyncio.run(_score("print(1)", {"inputs": ["0\n"], "outputs": ["1\n"]}))
    assert len(os.listdir("/proc/self/fd")) <= before


async def test_each_pass_gets_its_own_sandbox() -> None:
    """The retry pass re-runs first-pass cases: it must not share the first pass's zygote, whose history
    (how many cases it ran) would say which of the program's answers failed."""
    zygotes: list[int] = []

    class Watched(ZygoteRun):
        async def _start(self) -> None:
            await super()._start()
            if self._proc is not None:
                zygotes.append(self._proc.pid)

    run = Watched(SandboxSettings(**{k: v for k, v in SANDBOX.items() if k != "slots"}), slot=0)
    job = {
        "solution": "print(input())",
        "fn_name": None,
        "inputs": ["a\n", "b\n", "c\n"],
        "case_timeout_s": 5.0,
        "retry_case_timeout_s": 5.0,
        "each_cases": 3,
    }
    try:
        result = await code.judge(run, job, ["a\n", "x\n", "c\n"], True, 60.0)
    finally:
        await run.close()
    assert result["verdicts"] == ["pass", "wrong_answer", "pass"]
    assert len(zygotes) == len(set(zygotes)) == 2  # the first pass's two cases shared one, the retry its own


NESTED_SCRIPT = """
import asyncio, json
from rewardfleet.reward_fns import code
from tests.code_sandbox.test_warm_isolation import LITTERBUG
code.startup_check({})
clean = {"inputs": ["0\\n", "1\\n", "2\\n"], "outputs": ["clean\\n"] * 3}
print(json.dumps(asyncio.run(code.compute_score("apps", LITTERBUG, clean, sandbox={"slots": 1}))))
"""


def test_the_warm_sandbox_inside_another_runtime() -> None:
    """The gateway itself in a user namespace (uid 10001) under an outer bwrap, as in a container: the
    kernel refuses the case a new /proc there, so the case gets an empty one, and still nothing leaks."""
    repo = Path(__file__).resolve().parents[2]
    outer = ["bwrap", "--unshare-user", "--uid", "10001", "--gid", "10001", "--ro-bind", "/", "/"]
    outer += ["--bind", "/proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    outer += ["--ro-bind", str(repo), str(repo), "--chdir", str(repo)]  # the checkout may be under /tmp
    outer += ["--setenv", "PYTHONPATH", f"{os.environ.get('PYTHONPATH', '')}:{repo}"]
    done = subprocess.run(
        [*outer, "--", sys.executable, "-c", NESTED_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"score": 1.0, "all_passed": True, "verdicts": ["pass"] * 3}, result
