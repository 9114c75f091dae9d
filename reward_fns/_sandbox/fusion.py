"""Cluster backend: the same harness, run by a Sandbox Fusion service through its `/run_code` API.

Request (what verl 0.9.1's `sandbox_fusion` sends, and the `sandbox-fusion` client's `RunCodeRequest`):
`{"code", "stdin", "language": "python", "compile_timeout", "run_timeout", "memory_limit_MB", "files": {},
"fetch_files": []}` posted as JSON to `sandbox_fusion_url` (verl's setting: the full run_code URL).
Response (`RunCodeResponse`): `{"status": "Success" | "Failed" | "SandboxError", "message",
"compile_result", "run_result": {"status": "Finished" | "Error" | "TimeLimitExceeded", "execution_time",
"return_code", "stdout", "stderr"}}`.

The harness's stdout is parsed exactly as the bubblewrap backend parses it, so both score alike. Sandbox
Fusion runs a program to completion (no conversation over stdin), so the first pass and the retry pass are
two requests. We speak the protocol with aiohttp on the gateway's shared session (declared `http_client`)
instead of the `sandbox-fusion` package: its async client opens a new session per request, retries every
failure up to five times, and its request model has no `memory_limit_MB` (which verl sends).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from rewardfleet.reward_fns._sandbox.bubblewrap import HARNESS
from rewardfleet.reward_fns._sandbox.errors import SandboxCrashed, SandboxFusionError, SandboxTimeout
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


def parse_harness_stdout(stdout: str, end: str) -> list[dict[str, Any]]:
    """The harness's result lines up to the `end` marker; SandboxCrashed if the marker never came."""
    results: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            raise SandboxCrashed(f"the sandbox wrote a line that is not JSON: {line[:80]!r}") from None
        if not isinstance(record, dict):
            raise SandboxCrashed(f"the sandbox wrote {line[:80]!r}")
        if record.get("phase") == end:
            return results
        if record.get("phase") != "all_done":
            results.append(record)
    raise SandboxCrashed(f"the sandbox stopped before {end!r}")


class FusionRun:
    """One sample on Sandbox Fusion: up to two run_code requests."""

    def __init__(self, settings: SandboxSettings, job: dict[str, Any], session: aiohttp.ClientSession | None):
        if not settings.sandbox_fusion_url:
            raise ValueError("sandbox.sandbox_fusion_url is required for the sandbox_fusion backend")
        self._settings = settings
        self._url = settings.sandbox_fusion_url
        self._job = job
        self._session = session
        self._own_session: aiohttp.ClientSession | None = None

    async def first_pass(self) -> list[dict[str, Any]]:
        stdout = await self._run(json.dumps({**self._job, "first_pass": True}) + "\n")
        return parse_harness_stdout(stdout, "all_done")

    async def retry_pass(self) -> list[dict[str, Any]]:
        stdout = await self._run(json.dumps({**self._job, "first_pass": False}) + "\neach\n")
        return parse_harness_stdout(stdout, "done")

    async def close(self) -> None:
        if self._own_session is not None:
            await self._own_session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is not None:
            return self._session
        if self._own_session is None:
            self._own_session = aiohttp.ClientSession()
        return self._own_session

    async def _run(self, stdin: str) -> str:
        body = run_code_request(self._settings, stdin, self._settings.sample_timeout_s)
        timeout = aiohttp.ClientTimeout(
            total=self._settings.sample_timeout_s + self._settings.fusion_request_timeout_s
        )
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
            return _stdout_of(payload)
        raise SandboxFusionError(
            f"Sandbox Fusion kept answering {_RETRY_STATUSES} after {_ATTEMPTS} attempts"
        )


def _stdout_of(payload: Any) -> str:
    if not isinstance(payload, dict) or "status" not in payload:
        raise SandboxFusionError(f"not a run_code response: {str(payload)[:200]}")
    status = payload["status"]
    run = payload.get("run_result") or {}
    if status == "SandboxError":
        raise SandboxFusionError(f"Sandbox Fusion reported SandboxError: {payload.get('message', '')[:200]}")
    if run.get("status") == "TimeLimitExceeded":
        raise SandboxTimeout("Sandbox Fusion stopped the sample at its run_timeout")
    if status != "Success":
        stderr = str(run.get("stderr") or "")[-300:]
        raise SandboxCrashed(
            f"the harness failed in Sandbox Fusion ({run.get('status')}, "
            f"return code {run.get('return_code')}): {stderr}"
        )
    stdout = run.get("stdout")
    if not isinstance(stdout, str):
        raise SandboxFusionError("run_code response without run_result.stdout")
    return stdout
