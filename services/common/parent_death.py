"""Children that die with the thread that started them (Linux `PR_SET_PDEATHSIG`)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent() -> Callable[[], None] | None:
    """A preexec function asking the kernel to SIGKILL the child when the thread that started it exits (so
    start a child from a thread that lives as long as the child is owned). Everything it calls is resolved
    here, before the fork. None where there is no prctl (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl = libc.prctl
    parent = os.getpid()
    getppid, exit_now, kill = os.getppid, os._exit, signal.SIGKILL

    def preexec() -> None:
        if prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0) != 0:
            exit_now(127)
        if getppid() != parent:  # the owner died before the prctl: nobody would kill this one
            exit_now(127)

    return preexec
