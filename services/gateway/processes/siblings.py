"""The processes of one gateway find and merge each other's metrics.

The processes of one gateway find each other's metrics: each serves its own exposition on a unix socket in
the group's folder, and the one Prometheus scraped reads them all and merges them (`metrics_merge.py`).

A unix socket per process rather than shared files: a scrape sees every process's counts as of that moment,
nothing is written on the hot path, and a process that died simply stops answering (its socket is removed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from fastapi import FastAPI

from rewardfleet.services.gateway.processes.metrics_merge import merged_exposition

logger = logging.getLogger(__name__)

READ_TIMEOUT_S = 2.0
MAX_EXPOSITION_BYTES = 64 * 1024 * 1024


class Siblings:
    """This process's place in the group: `serve` its own exposition, `exposition` the merged one."""

    def __init__(self, folder: Path, own: Callable[[], bytes]) -> None:
        self.folder = folder
        self.own = own
        self.socket = folder / f"metrics-{os.getpid()}.sock"
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        self.socket.unlink(missing_ok=True)
        self._server = await asyncio.start_unix_server(self._answer, path=str(self.socket))
        self.socket.chmod(0o600)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        self.socket.unlink(missing_ok=True)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(self.own())
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _read(self, path: Path) -> bytes | None:
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_EXPOSITION_BYTES)
                try:
                    return await reader.read(-1)
                finally:
                    writer.close()
        except (ConnectionRefusedError, FileNotFoundError):
            path.unlink(missing_ok=True)  # noqa: ASYNC240 (one unlink of a dead process's socket)
            return None
        except (TimeoutError, OSError) as exc:
            logger.warning("metrics of gateway process %s not read: %s", path.name, exc)
            return None

    async def exposition(self) -> tuple[bytes, int]:
        """The merged exposition and how many processes it covers."""
        others = [p for p in sorted(self.folder.glob("metrics-*.sock")) if p != self.socket]
        read = await asyncio.gather(*(self._read(p) for p in others))
        texts = [self.own().decode(), *(body.decode() for body in read if body is not None)]
        return merged_exposition(texts), len(texts)

    def attach(self, app: FastAPI) -> None:
        """Serve from the app's lifespan (after the app's own start, closed before its stop)."""
        inner = app.router.lifespan_context

        @contextlib.asynccontextmanager
        async def lifespan(app: FastAPI) -> AsyncIterator[None]:
            async with inner(app):
                await self.start()
                try:
                    yield
                finally:
                    await self.close()

        app.router.lifespan_context = lifespan
        app.state.siblings = self
