"""The zygote: one warm interpreter per sandbox that forks a fresh, namespaced process per test case.

Runs *inside* the bubblewrap sandbox (standard library only, like `harness.py`, which it loads from
`/sandbox/case_runner.py` with everything the runner and prime_code's preamble import, so a case pays a
fork instead of an interpreter start). The host (`zygote_run.py`) talks to it over one Unix socket, and
sends per case only three descriptors, never data: the case's stdin pipe (the job: program and input,
never the expected output), its stdout pipe and a status pipe. Nothing the zygote receives or keeps depends
on what a program did (but process ids: see docs/reward_fns.md), so a case has nothing to read in it
and nothing to leave in it.

Per case (`_case_parent`, a fork of the zygote): new user, mount, pid and IPC namespaces, a fresh `/proc`
and size-capped tmpfs, every other mount read-only, no capability, no_new_privs; the runner is pid 2 under the
case's init, and the status is written only once nothing of the case remains (the steps in full:
docs/architecture.md, "Notes moved from module docstrings").

The case parent and the zygote are outside the case's pid namespace: a program cannot name them (signal,
ptrace, /proc/<pid>/mem or fd), and the zygote is also non-dumpable.

Argv: the control socket's fd number, then the per-case tmpfs size in bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import re
import socket
import sys
import traceback
import types

CASE_RUNNER = "/sandbox/case_runner.py"
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID, _CLONE_NEWIPC = 0x20000, 0x10000000, 0x20000000, 0x08000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 0x400, 0x800, 0x200000
_LOCKABLE = {"nosuid": _MS_NOSUID, "nodev": _MS_NODEV, "noexec": _MS_NOEXEC, "noatime": _MS_NOATIME}
_LOCKABLE |= {"nodiratime": _MS_NODIRATIME, "relatime": _MS_RELATIME}
_PR_SET_DUMPABLE, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 4, 24, 38
_CAPABILITY_VERSION_3 = 0x20080522
EXIT_SETUP_FAILED = 70
_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes space, tab, newline, backslash so

_libc = ctypes.CDLL(None, use_errno=True)


def _load_runner() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("case_runner", CASE_RUNNER)
    if spec is None or spec.loader is None:
        raise ImportError(CASE_RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # What every program imports first (prime_code's preamble): imported once here, then forked warm.
    exec(compile(module.PREAMBLE, "<preamble>", "exec"), {"__name__": "preamble"})
    return module


runner = _load_runner()


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(), target.encode(), fstype.encode() if fstype else None, flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )  # fmt: skip


def _read_only_everywhere() -> None:
    """Every mount the case inherited becomes read-only (keeping the flags the kernel locked on it)."""
    targets = []
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields = line.split()
            options = fields[5].split(",")
            flags = sum(flag for name, flag in _LOCKABLE.items() if name in options)
            targets.append((_OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4]), flags))
    for target, flags in targets:
        if target == "/proc" or target.startswith("/proc/"):
            continue
        _mount("none", target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags)


def _fresh_mounts(tmp_bytes: int) -> None:
    _mount("none", "/", None, _MS_REC | _MS_PRIVATE)
    _read_only_everywhere()
    secure = _MS_NOSUID | _MS_NODEV
    _mount("tmpfs", "/tmp", "tmpfs", secure, f"size={tmp_bytes},mode=1777")
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", secure | _MS_NOEXEC, f"size={tmp_bytes},mode=1777")
    try:
        _mount("proc", "/proc", "proc", secure | _MS_NOEXEC)
    except PermissionError:
        # The kernel refuses a new proc where the sandbox's own /proc has locked mounts over it (a
        # container's masked paths, bwrap's read-only /proc/sys inside another runtime): then the case
        # gets no /proc at all rather than one showing the zygote's pid namespace.
        _mount("tmpfs", "/proc", "tmpfs", _MS_RDONLY | secure | _MS_NOEXEC, "size=4096,mode=555")


def _drop_privileges() -> None:
    """No capability left (effective, permitted, inheritable, bounding) and no way to gain one."""
    for cap in range(64):
        _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability: ignored
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _exit_code(status: int) -> int:
    return 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _run_case(job_fd: int, out_fd: int) -> None:
    """The runner's process: fds 0-2 are the job, the output pipe and /dev/null, nothing else."""
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # as a fresh process is (its init stays non-dumpable)
    os.dup2(job_fd, 0)
    os.dup2(out_fd, 1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 2)
    os.closerange(3, 1 << 16)
    sys.modules["random"].seed()  # fresh per case, as a fresh interpreter would be
    os.chdir("/tmp")
    runner.main()
    os._exit(0)


def _case_init(job_fd: int, out_fd: int, tmp_bytes: int) -> None:
    """Pid 1 of the case's namespace: sets up its mounts, drops privileges, runs and reaps the runner."""
    try:
        _fresh_mounts(tmp_bytes)
        _drop_privileges()
        # Non-dumpable: the program (same uid, no capability) cannot ptrace its init or open its /proc files.
        _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        child = os.fork()
    except BaseException:
        traceback.print_exc()  # on the sandbox's stderr: the host reports it as a sandbox failure
        os._exit(EXIT_SETUP_FAILED)
    if child == 0:
        _run_case(job_fd, out_fd)
    # The init keeps nothing a program could reach through /proc/1/fd: /dev/null on 0-2, nothing else.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, 1 << 16)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(EXIT_SETUP_FAILED)
        if pid == child:
            os._exit(_exit_code(status))


def _case_parent(job_fd: int, out_fd: int, status_fd: int, tmp_bytes: int) -> None:
    """Outside the case's namespaces: creates them, waits for its init, writes its exit status."""
    try:
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc/self/*_map must stay writable
        uid, gid = os.getuid(), os.getgid()
        _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWIPC), "unshare")
        for name, text in (
            ("setgroups", "deny"),
            ("uid_map", f"{uid} {uid} 1"),
            ("gid_map", f"{gid} {gid} 1"),
        ):
            with open(f"/proc/self/{name}", "w") as file:
                file.write(text)
        init = os.fork()
        if init == 0:
            os.close(status_fd)
            _case_init(job_fd, out_fd, tmp_bytes)
        os.close(job_fd)
        os.close(out_fd)
        _, status = os.waitpid(init, 0)
        os.write(status_fd, str(_exit_code(status)).encode())
    except BaseException:
        traceback.print_exc()
    os._exit(0)


def main() -> None:
    control = socket.socket(fileno=int(sys.argv[1]))
    tmp_bytes = int(sys.argv[2])
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    while True:
        message, fds, _, _ = socket.recv_fds(control, 16, 3)
        if not message:
            return  # the host closed the socket: the sample is done
        # The previous case's parent wrote its status (the host sends a case only after reading it) and is
        # exiting: reaped first, so it never counts against the next case's process limit.
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, 0):
                pass
        if message == b"case" and len(fds) == 3 and os.fork() == 0:
            control.close()
            _case_parent(fds[0], fds[1], fds[2], tmp_bytes)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main()
