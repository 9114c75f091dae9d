"""The pooling engine in its own process: SGLang's split of an HTTP front and a scheduler process.

The front process (uvicorn, FastAPI, request parsing, JSON answers, the batchers) never touches the model.
For reward models and encoders the model lives in one engine process started with `spawn`; each batch the
batchers form goes over a pipe to it as `(op, items)` and comes back as one result per item. Why: a tiny
model's forward is mostly Python (module calls), so in one process it holds the GIL against the event loop,
and HTTP work and forwards take turns on one core. Split, they run on two (bench/batching.py measures both).

The forward thread of `ModelServer` is the only caller, so one request is on the pipe at a time: no ids, no
locking. Items and results are pickled; an `InvalidRequest` result keeps its place (exceptions pickle with
their attributes). Generation stays in the front process (its constraint objects and the decode loop are
not pipe-shaped yet).

If the engine dies, every batch waiting on it fails with `EngineDied` (503), `alive` turns false and
`/health` answers 503, so sglang-router stops sending here and an orchestrator restarts the server.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.errors import ModelServerError

logger = logging.getLogger(__name__)

_POLL_S = 1.0  # how often a waiting caller checks that the engine is still there


class EngineDied(ModelServerError):
    status_code = 503
    error_type = "ServiceUnavailableError"


@dataclass(frozen=True)
class RunnerInfo:
    """What the front knows of the loaded runner (routes read these; the model stays in the engine)."""

    kind: str
    architectures: list[str]
    model_type: str
    context_length: int
    id2label: dict[int, str]
    operations: tuple[str, ...]
    warmup_inputs: dict[str, list[Any]]


def _engine_main(settings: ModelServerSettings, conn: Connection) -> None:
    """The engine process: load the runner, report it, then run `(op, items)` batches until told to stop."""
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s engine %(levelname)s %(message)s"
    )
    from rewardfleet.services.model_server.runners.deterministic import serving_operations
    from rewardfleet.services.model_server.runners.loader import load_runner

    try:
        runner = load_runner(settings)
        ops = serving_operations(runner, settings.deterministic)
        conn.send(
            (
                "ok",
                RunnerInfo(
                    kind=runner.kind,
                    architectures=runner.architectures,
                    model_type=runner.model_type,
                    context_length=runner.context_length,
                    id2label=dict(getattr(runner, "id2label", {})),
                    operations=tuple(ops),
                    warmup_inputs=runner.warmup_inputs(),
                ),
            )
        )
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            message = conn.recv()
        except EOFError:  # the front went away
            return
        if message[0] == "stop":
            return
        try:
            if message[0] == "warmup":
                runner.warmup()
                payload: Any = None
            else:
                _, op, items = message
                payload = list(ops[op](items))
        except Exception as exc:
            logger.exception("engine: %s failed", message[0])
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
        else:
            conn.send(("ok", payload))


class EngineProcess:
    """Starts the engine, and calls it from one thread at a time (the model server's forward thread)."""

    def __init__(self, settings: ModelServerSettings) -> None:
        ctx = multiprocessing.get_context("spawn")  # fork would copy the front's threads and event loop
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=_engine_main, args=(settings, child), name="model-engine", daemon=True
        )
        self._child_conn = child
        self.alive = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def start(self) -> RunnerInfo:
        """Blocking: spawn the engine and wait until its model is loaded. Raises if it cannot load."""
        self._proc.start()
        self._child_conn.close()
        self.alive = True
        info = self._exchange(None)
        if not isinstance(info, RunnerInfo):
            raise RuntimeError(f"engine answered {info!r} instead of its runner")
        return info

    def run(self, op: str, items: list[Any]) -> list[Any]:
        result: list[Any] = self._exchange(("run", op, items))
        return result

    def warmup(self) -> None:
        self._exchange(("warmup",))

    def _exchange(self, message: tuple[Any, ...] | None) -> Any:
        if not self.alive:
            raise EngineDied("the model engine process is not running")
        try:
            if message is not None:
                self._conn.send(message)
            while not self._conn.poll(_POLL_S):
                if not self._proc.is_alive():
                    raise EOFError
            status, payload = self._conn.recv()
        except (EOFError, OSError):
            self.alive = False
            raise EngineDied(f"the model engine process died (exit code {self._proc.exitcode})") from None
        if status == "error":
            raise RuntimeError(f"model engine: {payload}")
        return payload

    def close(self, timeout_s: float = 10.0) -> None:
        if self._proc.pid is None:
            return
        if self.alive:
            with contextlib.suppress(OSError):
                self._conn.send(("stop",))
        self.alive = False
        self._proc.join(timeout_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout_s)
        self._conn.close()


class EngineRunner:
    """Stands where a `Runner` stands in the front process: its facts, and operations calling the engine."""

    is_generation = False
    tokenizer: Any = None  # only generation routes read it, and generation never runs in an engine

    def __init__(self, info: RunnerInfo, engine: EngineProcess) -> None:
        self.kind = info.kind
        self.architectures = info.architectures
        self.model_type = info.model_type
        self.context_length = info.context_length
        self.id2label = info.id2label
        self.engine = engine
        self._info = info

    def operations(self) -> dict[str, Any]:
        engine = self.engine
        return {op: (lambda items, op=op: engine.run(op, items)) for op in self._info.operations}

    def warmup_inputs(self) -> dict[str, list[Any]]:
        return self._info.warmup_inputs

    def warmup(self) -> None:
        self.engine.warmup()
