"""A small blocking client for a running sglang-router's own routes, for the router tests and benchmarks:
`/readiness` and `/workers`. (The fleet supervises routers as processes and needs none of this.)

Shapes, as the 0.3.2 binary answers them:
- `GET /readiness` → 200 `{"status":"ready","healthy_workers":H,"total_workers":T}`, or 503
  `{"status":"not ready","reason":"insufficient healthy workers"}` when no worker is healthy.
- `GET /workers` → `{"workers":[{"id","url","model_id","is_healthy","load","worker_type",...}],"total",
  "stats"}`.
- `POST /workers {"url": ...}` → 202 `{"status":"accepted","worker_id","url","location","message"}`; the
  registration runs in the background (probes, then health), so callers poll `GET /workers`.
- `DELETE /workers/{id}` → 202 `{"status":"accepted","worker_id","message"}`; 404 `{"error","code":
  "WORKER_NOT_FOUND"}` for an unknown id, 400 for an id that is not a UUID.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from pydantic import BaseModel, ConfigDict

from bench.harness.waiting import eventually


class RouterAdminError(RuntimeError):
    """The router answered an admin call with an unexpected status or could not be reached."""


class Readiness(BaseModel):
    model_config = ConfigDict(extra="allow")

    ready: bool
    status: str
    healthy_workers: int = 0
    total_workers: int = 0
    reason: str | None = None


class WorkerInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    url: str
    model_id: str | None = None
    is_healthy: bool = False
    load: int = 0
    worker_type: str | None = None


class RouterAdmin:
    """Calls to one router's admin routes, `base_url` like `http://127.0.0.1:30000`."""

    def __init__(self, base_url: str, timeout_s: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            raise RouterAdminError(f"{method} {self.base_url}{path}: {exc}") from exc
        try:
            payload = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            payload = raw.decode(errors="replace")
        return status, payload

    def readiness(self) -> Readiness:
        status, payload = self._call("GET", "/readiness")
        if not isinstance(payload, dict):
            raise RouterAdminError(f"/readiness answered {status} with {payload!r}")
        return Readiness(ready=status == 200, **payload)

    def is_live(self) -> bool:
        try:
            status, _ = self._call("GET", "/liveness")
        except RouterAdminError:
            return False
        return status == 200

    def list_workers(self) -> list[WorkerInfo]:
        status, payload = self._call("GET", "/workers")
        if status != 200 or not isinstance(payload, dict):
            raise RouterAdminError(f"GET /workers answered {status}: {payload!r}")
        return [WorkerInfo.model_validate(w) for w in payload.get("workers", [])]

    def find_worker(self, url: str) -> WorkerInfo | None:
        url = url.rstrip("/")
        return next((w for w in self.list_workers() if w.url == url), None)

    def add_worker(self, url: str, wait_healthy_s: float | None = 30.0) -> str:
        """Register `url`; with `wait_healthy_s`, wait until the router lists it healthy. Returns its id."""
        url = url.rstrip("/")
        status, payload = self._call("POST", "/workers", {"url": url})
        if status not in (200, 201, 202) or not isinstance(payload, dict):
            raise RouterAdminError(f"POST /workers {url} answered {status}: {payload!r}")
        worker_id = str(payload.get("worker_id", ""))
        if wait_healthy_s is not None:
            eventually(lambda: (w := self.find_worker(url)) is not None and w.is_healthy,
                       timeout_s=wait_healthy_s, interval_s=0.1, what=f"worker {url} to become healthy",
                       retry_on=(RouterAdminError,))  # fmt: skip
        return worker_id

    def remove_worker(self, url_or_id: str, wait_gone_s: float | None = 30.0) -> None:
        """Remove a worker given its URL or id; with `wait_gone_s`, wait until it is no longer listed."""
        workers = self.list_workers()
        target = next((w for w in workers if url_or_id.rstrip("/") in (w.url, w.id)), None)
        if target is None:
            raise RouterAdminError(f"no worker {url_or_id!r} in {[w.url for w in workers]}")
        status, payload = self._call("DELETE", f"/workers/{target.id}")
        if status not in (200, 202, 204):
            raise RouterAdminError(f"DELETE /workers/{target.id} answered {status}: {payload!r}")
        if wait_gone_s is not None:
            eventually(lambda: all(w.id != target.id for w in self.list_workers()),
                       timeout_s=wait_gone_s, interval_s=0.1, what=f"worker {target.url} to be removed",
                       retry_on=(RouterAdminError,))  # fmt: skip
