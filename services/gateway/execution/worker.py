"""What runs inside a sync-pool worker process: the pool's initializer and the call itself.

Workers get a picklable `FunctionRef` and import the function on first use (or in `preload`), caching it for
the life of the process. This module must stay importable without FastAPI so workers start quickly.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from rewardfleet.services.gateway.errors import InvalidReturn
from rewardfleet.services.gateway.execution.contain import exit_message
from rewardfleet.services.gateway.execution.isolation import detach, limit_memory
from rewardfleet.services.gateway.execution.loader import FunctionRef, load_ref
from rewardfleet.services.gateway.execution.results import error_location, extra_too_large, normalise_return

logger = logging.getLogger(__name__)


# Per-process caches. They live only in worker processes (the gateway process never fills them).
_functions: dict[FunctionRef, Callable[..., Any]] = {}
_tokenizers: dict[str, Any] = {}
# Largest `extra` a call may send back (sizes.json_size); set once by `init_worker`. A larger one never
# crosses the pipe: the call's result is a ResultTooLarge error instead.
_max_extra_size: list[int | None] = [None]


def _worker_tokenizer(path: str) -> Any:
    if path not in _tokenizers:
        from rewardfleet.services.gateway.execution.tokenizer import load_tokenizer

        _tokenizers[path] = load_tokenizer(path)
    return _tokenizers[path]


def preload(refs: tuple[FunctionRef, ...]) -> None:
    """Pool initializer: import every sync function once per worker, so the first call is not slow."""
    for ref in refs:
        try:
            _functions[ref] = load_ref(ref)
        except BaseException:  # the gateway already imported it once; a failure here shows on the call
            logger.exception("worker could not preload %s:%s", ref.module, ref.attr)


def init_worker(
    refs: tuple[FunctionRef, ...], memory_limit_bytes: int | None, max_extra_size: int | None = None
) -> None:
    """The pool's initializer: isolate the process, import the functions, then cap its memory."""
    _max_extra_size[0] = max_extra_size
    detach()
    preload(refs)
    limit_memory(memory_limit_bytes)


WorkerResult = tuple[str, Any, float, float]


def run_call(ref: FunctionRef, kwargs: dict[str, Any], tokenizer_path: str | None) -> WorkerResult:
    """Runs in a worker. Returns `(kind, payload, started, finished)` with `time.monotonic()` stamps (the
    same clock in every process on Linux): kind "ok" → payload is `(score, extra)` from `normalise_return`;
    kind "error" → payload is `(type, message)`. Exceptions are caught here so an unpicklable exception
    cannot break the pool's result channel, and so are the `BaseException`s that are not exceptions
    (`SystemExit`...): pebble's worker loop would end on them and take the pool with it (see contain.py)."""
    started = time.monotonic()
    try:
        fn = _functions.get(ref)
        if fn is None:
            fn = _functions[ref] = load_ref(ref)
        if tokenizer_path is not None:
            kwargs["reward_model_tokenizer"] = _worker_tokenizer(tokenizer_path)
        outcome = normalise_return(fn(**kwargs))
        problem = extra_too_large(outcome[1], _max_extra_size[0])
        if problem is not None:
            return "error", ("ResultTooLarge", problem), started, time.monotonic()
    except InvalidReturn as exc:
        return "error", ("InvalidReturn", str(exc)), started, time.monotonic()
    except Exception as exc:
        return "error", (type(exc).__name__, f"{exc}{error_location(exc)}"), started, time.monotonic()
    except BaseException as exc:  # SystemExit, KeyboardInterrupt...: would end the worker's task loop
        return "error", (type(exc).__name__, exit_message(exc)), started, time.monotonic()
    return "ok", outcome, started, time.monotonic()


def run_calls(
    ref: FunctionRef, kwargs_list: list[dict[str, Any]], tokenizer_path: str | None
) -> list[WorkerResult]:
    """Runs in a worker: several calls of one function as one pool task, each result as `run_call`'s."""
    return [run_call(ref, kwargs, tokenizer_path) for kwargs in kwargs_list]
