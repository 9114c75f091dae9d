"""`rewardfleet status`: pools, replicas, health and addresses of the fleet that `rewardfleet up` runs, and
what the gateway's judge monitors report (`GET /monitors`: spend and caps, master-key probes).

The probes use the standard library's HTTP client: `rewardfleet status` must work in a plain
`pip install reward-fleet` (no extras), where httpx, a test dependency, is not installed.
"""

from __future__ import annotations

import http.client
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from rich.table import Table

from rewardfleet.services.fleet.routable import is_routable, router_workers
from rewardfleet.services.fleet.runner import STATE_FILE


def read_state(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / STATE_FILE
    if not path.is_file():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _probe(url: str, timeout_s: float) -> tuple[str, Any]:
    """("healthy" | "HTTP <status>" | "down", the JSON body or the error's name)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            status, content_type, raw = resp.status, resp.headers.get("content-type", ""), resp.read()
    except urllib.error.HTTPError as exc:  # a non-2xx answer: the service is up and says why
        status, content_type, raw = exc.code, exc.headers.get("content-type", ""), exc.read()
    except (OSError, http.client.HTTPException) as exc:  # refused, timed out, reset, not HTTP
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        return "down", type(reason).__name__
    body: Any = None
    if content_type.startswith("application/json"):
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
    return ("healthy" if status == 200 else f"HTTP {status}"), body


def _usd(value: float | None) -> str:
    return "no cap" if value is None else f"${value:,.4f}"


def monitor_rows(monitors: Any) -> list[tuple[str, str, str, str]]:
    """(part, address, health, detail) rows for the gateway's `GET /monitors` answer."""
    if not isinstance(monitors, dict):
        return []
    rows = []
    for pool, probe in (monitors.get("probes") or {}).items():
        if probe.get("ratio") is None:
            waiting = f"no answered round yet ({probe['errors']} errors)"
            rows.append((f"{pool} probes", "", "waiting", waiting))
            continue
        health = "degraded" if probe.get("degraded") else "ok"
        detail = (
            f"master keys accepted: {probe['false_positives']}/{probe['answered']} "
            f"(false-positive ratio {probe['ratio']:.2f}, round {probe['rounds']})"
        )
        if probe.get("accepted"):
            detail += ": " + ", ".join(repr(key) for key in probe["accepted"][:5])
        rows.append((f"{pool} probes", "", health, detail))
    spend = monitors.get("spend") or {}
    for name, pool in (spend.get("pools") or {}).items():
        cap = pool.get("max_spend_usd")
        health = "exhausted" if cap is not None and pool["spent_usd"] >= cap else "ok"
        detail = f"spent {_usd(pool['spent_usd'])} of {_usd(cap)}"
        rows.append((f"{name} spend", "", health, detail))
    for name, fn in (spend.get("functions") or {}).items():
        cap = fn.get("max_spend_usd")
        health = "exhausted" if cap is not None and fn["spent_usd"] >= cap else "ok"
        rows.append((f"{name} (function) spend", "", health, f"spent {_usd(fn['spent_usd'])} of {_usd(cap)}"))
    return rows


def status_table(state: dict[str, Any], timeout_s: float = 2.0) -> Table:
    table = Table(title=f"Reward Fleet (rewardfleet up pid {state['pid']})")
    for col in ("part", "address", "health", "detail"):
        table.add_column(col, overflow="fold")
    gw = state["gateway"]["url"]
    health, _ = _probe(f"{gw}/health", timeout_s)
    ready, _ = _probe(f"{gw}/ready", timeout_s)
    table.add_row("gateway", gw, health, f"ready: {ready}")
    monitors_health, monitors = _probe(f"{gw}/monitors", timeout_s)
    if monitors_health == "HTTP 401":
        table.add_row("monitors", f"{gw}/monitors", "needs an API key", "or set auth_exempt_metrics")
    for row in monitor_rows(monitors):
        table.add_row(*row)
    for name, pool in state["pools"].items():
        health, body = _probe(f"{pool['router']}/readiness", timeout_s)
        detail = f"{pool['kind']} ({pool['backend']})"
        if isinstance(body, dict) and "healthy_workers" in body:
            detail += f", {body['healthy_workers']}/{body['total_workers']} workers healthy"
        # The pool is ready when its router has a healthy worker to send work to.
        pool_state = "ready" if health == "healthy" else "not ready"
        table.add_row(f"{name} router", pool["router"], health, f"pool {pool_state}: {detail}")
        workers = router_workers(pool["router"], timeout_s=timeout_s)
        for i, url in enumerate(pool["replicas"]):
            health, _ = _probe(f"{url}/health", timeout_s)
            if health == "HTTP 503":  # model servers answer 503 while they load and warm up
                health = "loading"
            elif health == "healthy" and workers is not None:
                # Ready means routable: loaded is not enough until the router sends it work (routable.py).
                # (A router that does not list its workers, e.g. one behind an API key, leaves "healthy".)
                health = "ready" if is_routable(workers, url) else "loaded, not routed yet"
            table.add_row(f"  {name}-{i}", url, health, pool["model_path"])
    return table


def fleet_status(run_dir: Path) -> tuple[int, Table | str]:
    state = read_state(run_dir)
    if state is None:
        return 1, f"no fleet is running from {run_dir} (no {STATE_FILE}); start one with `rewardfleet up`"
    if not _pid_alive(int(state["pid"])):
        return 1, f"the fleet recorded in {run_dir / STATE_FILE} is gone (pid {state['pid']} has exited)"
    return 0, status_table(state)
