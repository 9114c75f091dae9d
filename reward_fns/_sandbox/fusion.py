"""Cluster backend: the same harness, run by a Sandbox Fusion service through its `/run_code` API.

Request (what verl 0.9.1's `sandbox_fusion` sends, and the `sandbox-fusion` client's `RunCodeRequest`):
`{"code", "stdin", "language": "python", "compile_timeout", "run_timeout", "memory_limit_MB", "files": {},
"fetch_files": []}` posted as JSON to `sandbox_fusion_url` (verl's setting: the full run_code URL).
Response (`RunCodeResponse`): `{"status": "Success" | "Failed" | "SandboxError", "message",
"compile_result", "run_result": {"status": "Finished" | "Error" | "TimeLimitExceeded", "execution_time",
"return_code", "stdout", "stderr"}}`.

As verl's own sandbox_fusion path, one request per test case: the runner (`harness.py`) as `code`, the
case's job as `stdin`. The host judges the case itself from `run_result.stdout`, `return_code` and the
status (`outcome.case_outcome`, as the bubblewrap backend does), so both score alike; the program's
stdout is only ever its output, never a report.

We speak the protocol with aiohttp on the gateway's shared session (declared `http_client`)
instead of the `sandbox-fusion` package: its async client opens a new session per request, retries every
failure up to five times, and its request model has no `memory_limit_MB` (which verl sends).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from rewardfleet.reward_fns._sandbox.bubblewrap import HARNESS
from rewardfleet.reward_fns._sandbox.errors import SandboxFusionError
from rewardfleet.reward_fns._sandbox.outcome import case_outcome, started_output
from rewardfleet.reward_fns._sandbox.settings import SandboxSettings

_RETRY_STATUSES = frozenset({502, 503, 504})
_ATTEMPTS = 3
_BACKOFF_S = 0.5


def run_code_request(settings: SandboxSettings, stdin: str, run_timeout_s: float) -> dict[str, Any]:
    return {
        "code": HARNESS.read_text(),
        "stdin": stdin,
        "language": "python",
        "compile_timeout": 10,
        "run_timeout": run_timeout_s,
        "memory_limit_MB": settings.memory_limit_mb,
        "files": {},
        "fetch_files": [],
    }


class FusionRun:
    """One sample on Sandbox Fusion: one run_code request per test case."""

    def __init__(self, settings: SandboxSettings, session: aiohttp.ClientSession | None):
        if not settings.sandbox_fusion_url:
            raise ValueError("sandbox.sandbox_fusion_url is required for the sandbox_fusion backend")
        self._settings = settings
        self._url = settings.sandbox_fusion_url
        self._session = session
        self._own_session: aiohttp.ClientSession | None = None

    async def run_case(self, job: dict[str, Any], call_based: bool, deadline_s: float) -> dict[str, Any]:
        """`{"verdict", "output"?}` of one case (`job` is the runner's job, see `harness.py`); the
        service stops it at `deadline_s` (`run_timeout`), which is the verdict `timeout`."""
        run = _run_result_of(await self._run(json.dumps(job), deadline_s))
        timed_out = run.get("status") == "TimeLimitExceeded"
        returncode = run.get("return_code")
        stdout = run.get("stdout")
        if not timed_out and (not isinstance(returncode, int) or not isinstance(stdout, str)):
            raise SandboxFusionError(f"run_code response without return_code and stdout: {str(run)[:200]}")
        output = started_output((stdout or "").encode("utf-8", "surrogatepass"))
        if output is None and not timed_out:
            raise SandboxFusionError(f"the runner did not start in Sandbox Fusion: {str(run)[:300]}")
        data = output or b""
        return case_outcome(
            returncode if isinstance(returncode, int) else None,
            data,
            call_based=call_based,
            timed_out=timed_out,
            over_limit=len(data) > self._settings.max_output_bytes,
        )

    async def close(self) -> None:
        if self._own_session is not None:
            await self._own_session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is not None:
            return self._session
        if self._own_session is None:
            self._own_session = aiohttp.ClientSession()
        return self._own_session

    async def _run(self, stdin: str, run_timeout_s: float) -> Any:
        body = run_code_request(self._settings, stdin, run_timeout_s)
        timeout = aiohttp.ClientTimeout(total=run_timeout_s + self._settings.fusion_request_timeout_s)
        for attempt in range(_ATTEMPTS):
            try:
                async with self._client().post(self._url, json=body, timeout=timeout) as response:
                    if response.status in _RETRY_STATUSES and attempt + 1 < _ATTEMPTS:
                        await asyncio.sleep(_BACKOFF_S * 2**attempt)
                        continue
                    if response.status != 200:
                        text = (await response.text())[:300]
                        raise SandboxFusionError(f"Sandbox Fusion answered HTTP {response.status}: {text}")
                    payload = await response.json(content_type=None)
            except aiohttp.ClientError as exc:
                raise SandboxFusionError(f"Sandbox Fusion at {self._url} is unreachable: {exc}") from None
            return payload
        raise SandboxFusionError(
            f"Sandbox Fusion kept answering {_RETRY_STATUSES} after {_ATTEMPTS} attempts"
        )


def _run_result_of(payload: Any) -> dict[str, Any]:
    """The response's `run_result`; SandboxFusionError when the service, not the program, failed."""
    if not isinstance(payload, dict) or "status" not in payload:
        raise SandboxFusionError(f"not a run_code response: {str(payload)[:200]}")
    if payload["status"] == "SandboxError":
        raise SandboxFusionError(f"Sandbox Fusion reported SandboxError: {payload.get('message', '')[:200]}")
    run = payload.get("run_result")
    if not isinstance(run, dict):
        raise SandboxFusionError(f"run_code response without run_result: {str(payload)[:200]}")
    if run.get("status") not in ("Finished", "TimeLimitExceeded"):
        # "Error": the service could not run the process at all.
        raise SandboxFusionError(f"Sandbox Fusion could not run the program: {str(run)[:200]}")
    return run
