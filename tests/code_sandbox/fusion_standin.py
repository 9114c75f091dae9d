"""A stand-in for a Sandbox Fusion service (a container image that cannot run here): `POST /run_code` with
the real request and response models (validated with the `sandbox-fusion` package's own pydantic models),
running the posted Python program with our bubblewrap sandbox, and answering as Sandbox Fusion does:
status Success / Failed (non-zero exit, with `run_result.status` Finished, or TimeLimitExceeded at
`run_timeout`)."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp import web
from sandbox_fusion.models import RunCodeRequest, RunCodeResponse

from rewardfleet.reward_fns._sandbox.bubblewrap import HARNESS, bwrap_command
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings


def _write_readable(program: Path, code: str) -> None:
    """The program file, readable by the sandbox's unprivileged uid."""
    program.write_text(code)
    program.chmod(0o644)
    program.parent.chmod(0o755)


async def _run(body: RunCodeRequest, settings: SandboxSettings) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        await asyncio.to_thread(_write_readable, program, body.code)
        argv = [str(program) if a == str(HARNESS) else a for a in bwrap_command(settings, slot=500)]
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            stdout, stderr = await asyncio.wait_for(
                proc.communicate((body.stdin or "").encode()), body.run_timeout
            )
        except TimeoutError:
            proc.kill()
            await proc.wait()
            run = {"status": "TimeLimitExceeded", "execution_time": body.run_timeout, "return_code": None,
                   "stdout": "", "stderr": ""}  # fmt: skip
            return {"status": "Failed", "message": "", "compile_result": None, "run_result": run}
    run = {
        "status": "Finished",
        "execution_time": time.perf_counter() - started,
        "return_code": proc.returncode,
        "stdout": stdout.decode(errors="replace"),
        "stderr": stderr.decode(errors="replace"),
    }
    status = "Success" if proc.returncode == 0 else "Failed"
    return {"status": status, "message": "", "compile_result": None, "run_result": run, "files": {}}


def make_app(
    settings: SandboxSettings, requests: list[dict[str, Any]], fault: dict[str, Any]
) -> web.Application:
    async def run_code(request: web.Request) -> web.Response:
        payload = await request.json()
        requests.append(payload)
        if fault.get("http_status"):
            return web.Response(status=fault["http_status"], text="stand-in failure")
        if fault.get("sandbox_error"):
            return web.json_response({"status": "SandboxError", "message": "executor pod gone"})
        body = RunCodeRequest(**payload)  # the client package's own model: our request must fit it
        answer = await _run(body, settings)
        RunCodeResponse(**answer)  # and our answer must fit its response model
        return web.json_response(answer)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/run_code", run_code)
    return app


@contextlib.asynccontextmanager
async def serving(
    settings: SandboxSettings, fault: dict[str, Any] | None = None
) -> AsyncIterator[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
    """(run_code URL, the requests received, a mutable fault switch)."""
    requests: list[dict[str, Any]] = []
    switch: dict[str, Any] = dict(fault or {})
    runner = web.AppRunner(make_app(settings, requests, switch))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}/run_code", requests, switch
    finally:
        await runner.cleanup()
