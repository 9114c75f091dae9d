"""What a sync-pool worker process sets up before it runs reward functions (the pool's initializer).

- Its own process group: a SIGTERM sent to the gateway's group (a supervisor stopping it) must not kill the
  calls the gateway is still draining. The pool stops its workers itself when the gateway shuts down.
- Death with its parent (Linux `PR_SET_PDEATHSIG`): if the gateway is killed outright, no worker outlives it.
- An address-space limit (`RLIMIT_AS`, `worker_memory_limit_bytes`): a function that allocates too much gets
  `MemoryError` (its sample fails with that type) or dies (its sample fails with `WorkerCrashed`); either way
  the worker is replaced and the other samples are untouched. Set after the functions are imported, so the
  limit applies to calls, not to loading.

Light on purpose (standard library only): workers import this before any reward function. `worker.init_worker`
calls `detach()` first and `limit_memory()` after the functions are imported.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def detach() -> None:
    """Own process group, and death with the parent (see the module docstring)."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    _die_with_parent()


def limit_memory(memory_limit_bytes: int | None) -> None:
    """`RLIMIT_AS` for the rest of the worker's life (never above the hard limit it inherited)."""
    if memory_limit_bytes is None:
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = memory_limit_bytes if hard == resource.RLIM_INFINITY else min(memory_limit_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
