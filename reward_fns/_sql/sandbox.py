"""One bubblewrap sandbox per sample running `runner.py` on the task's database.

One bubblewrap sandbox per sample running `runner.py` on the task's database (bound read-only) or on an
inline schema: the job on stdin, one JSON line per query on stdout, the host's own deadline and output cap.

The sandbox is the `code` reward's (`reward_fns/_sandbox/bubblewrap.py`: namespaces, no network, no host
files but `/usr` and the database, rlimits, an unprivileged uid per slot) and shares its slots. Only SQL runs
in it, through a stdlib runner, so its stdout is the runner's: a query that crashes SQLite ends the lines
early (that query and the ones after it get `crashed`), it cannot write lines of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

from rewardfleet.reward_fns._sandbox.bubblewrap import UNAVAILABLE_HELP, BubblewrapRun, bwrap_command
from rewardfleet.reward_fns._sandbox.errors import SandboxCrashed, SandboxUnavailable
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings

RUNNER = Path(__file__).with_name("runner.py")
SANDBOX_DB = "/sandbox/db.sqlite"
_STDERR_KEPT = 2048


class SqlRun(BubblewrapRun):
    """The queries of one sample in one sandbox."""

    def __init__(self, settings: SandboxSettings, slot: int, database: Path | None) -> None:
        super().__init__(settings, slot)
        self._database = database

    def command(self) -> list[str]:
        binds = [(str(self._database), SANDBOX_DB)] if self._database is not None else []
        return bwrap_command(self._settings, self._slot, runner=RUNNER, ro_binds=binds)

    async def run_queries(self, job: dict[str, Any], deadline_s: float, max_output_bytes: int) -> list[dict]:
        """One result per query in `job["queries"]`; queries the sandbox never answered (deadline, crash,
        output over the cap) get `{"ok": False, "error": "timeout" | "crashed" | "too_many_bytes"}`."""
        if self._database is not None:
            job = {**job, "db": SANDBOX_DB}
        proc = await self._spawn()
        stdout, stderr = bytearray(), bytearray()
        timed_out = over_cap = False
        try:
            async with asyncio.timeout(deadline_s):
                if proc.stdin is None or proc.stdout is None or proc.stderr is None:
                    raise RuntimeError("the sandbox has no pipes")
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(json.dumps(job).encode())
                    await proc.stdin.drain()
                    proc.stdin.close()
                stderr_task = asyncio.create_task(proc.stderr.read(_STDERR_KEPT))
                while chunk := await proc.stdout.read(1 << 16):
                    stdout += chunk
                    if len(stdout) > max_output_bytes:
                        over_cap = True
                        break
                if not over_cap:
                    await proc.wait()
                    stderr += await stderr_task
        except TimeoutError:
            timed_out = True
        finally:
            await self.close()
        # Up to MBs of JSON: parsed off the event loop.
        lines = await asyncio.to_thread(_complete_lines, bytes(stdout), len(job["queries"]))
        if not lines and not timed_out and not over_cap:
            text = stderr.decode(errors="replace").strip()
            if text.startswith("bwrap:"):
                raise SandboxUnavailable(UNAVAILABLE_HELP.format(reason=text[:300]))
            raise SandboxCrashed(f"the SQL sandbox exited with status {proc.returncode}: {text[-300:]}")
        missing = "timeout" if timed_out else "too_many_bytes" if over_cap else "crashed"
        while len(lines) < len(job["queries"]):
            lines.append(
                {"ok": False, "error": missing, "message": f"the sandbox gave no result ({missing})"}
            )
        return lines


def _complete_lines(stdout: bytes, limit: int) -> list[dict[str, Any]]:
    """The runner's whole JSON lines, in order (a line cut by the output cap or a kill is not one)."""
    out: list[dict[str, Any]] = []
    for line in stdout.split(b"\n")[:-1][:limit]:
        try:
            value = json.loads(line)
        except ValueError:
            break
        if not isinstance(value, dict):
            break
        out.append(value)
    return out
