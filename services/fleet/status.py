"""`rewardfleet status`: what the fleet that `rewardfleet up` runs is doing.

Pools, replicas, health and addresses of the fleet that `rewardfleet up` runs, and what the gateway's judge
monitors report (`GET /monitors`: spend and caps, master-key probes), and with an admin tenant's key in
$REWARDFLEET_API_KEY every tenant's quotas and usage (`GET /admin/tenants`).

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

API_KEY_ENV = "REWARDFLEET_API_KEY"


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


def _probe(url: str, timeout_s: float, key: str | None = None) -> tuple[str, Any]:
    """("healthy" | "HTTP <status>" | "down", the JSON body or the error's name); `key` as Bearer."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as resp:
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


def startup_check_rows(ready: Any) -> list[tuple[str, str, str, str]]:
    """(part, address, health, detail) rows for the start-up checks in the gateway's `GET /ready` answer:
    for the `code` function, whether its sandbox works on the gateway's host and, if not, which setting is
    missing. Checks that passed without saying anything are left out."""
    if not isinstance(ready, dict):
        return []
    rows = []
    for name, check in sorted((ready.get("startup_checks") or {}).items()):
        if check.get("ok") and not check.get("detail"):
            continue
        health = "ok" if check.get("ok") else "FAILED"
        rows.append((f"  {name} start-up check", "", health, str(check.get("detail") or "")))
    return rows


def _of(used: Any, limit: Any, money: bool = False) -> str:
    shown = _usd(used) if money else str(used)
    if limit is None:
        return shown
    return f"{shown}/{_usd(limit) if money else limit}"


def tenant_rows(summary: Any) -> list[tuple[str, str, str, str]]:
    """(part, address, health, detail) rows of the gateway's `GET /admin/tenants` (docs/tenants.md)."""
    if not isinstance(summary, dict):
        return []
    rows = []
    for name, t in (summary.get("tenants") or {}).items():
        q, u = t["quotas"], t["usage"]
        over = [
            quota
            for quota, used in (
                ("samples_in_flight", u["samples_in_flight"]),
                ("requests_per_minute", u["requests_this_minute"]),
                ("judge_tokens_per_minute", u["judge_tokens_this_minute"]),
                ("usd_per_day", u["usd_today"]),
                ("usd_total", u["usd_total"]),
            )
            if q.get(quota) is not None and used >= q[quota]
        ]
        parts = [
            f"{t['priority']} x{t['weight']:g}",
            f"in flight {_of(u['samples_in_flight'], q['samples_in_flight'])}",
            f"requests this minute {_of(u['requests_this_minute'], q['requests_per_minute'])}",
            f"judge tokens {_of(u['judge_tokens_this_minute'], q['judge_tokens_per_minute'])}",
            f"today {_of(u['usd_today'], q['usd_per_day'], True)}",
            f"total {_of(u['usd_total'], q['usd_total'], True)}",
        ]
        fair = t.get("fair_queues") or {}
        waits = sum(q.get("waits", 0) for q in (fair.get("queues") or {}).values())
        if waits or fair.get("waiting_now"):
            waited_s = sum(q.get("wait_s_total", 0.0) for q in (fair.get("queues") or {}).values())
            parts.append(f"fair queues {fair.get('waiting_now', 0)} waiting, {waits} waits {waited_s:.1f}s")
        detail = ", ".join(parts)
        rows.append((f"tenant {name}", "", "at quota: " + ", ".join(over) if over else "ok", detail))
    return rows


def _new_table(title: str) -> Table:
    table = Table(title=title)
    for col in ("part", "address", "health", "detail"):
        # An address (a URL to copy) and a health word are never broken across lines, however narrow the
        # terminal: the part and detail columns wrap instead.
        table.add_column(col, overflow="fold", no_wrap=col in ("address", "health"))
    return table


def _add_gateway_rows(table: Table, gw: str, timeout_s: float) -> str:
    health, _ = _probe(f"{gw}/health", timeout_s)
    ready, ready_body = _probe(f"{gw}/ready", timeout_s)
    table.add_row("gateway", gw, health, f"ready: {ready}")
    for row in startup_check_rows(ready_body):
        table.add_row(*row)
    return health


def gateway_status(gw: str, timeout_s: float = 2.0) -> tuple[int, Table]:
    """`rewardfleet status --gateway URL`: a gateway not started by `rewardfleet up` (compose, Kubernetes);
    exit status 1 when it does not answer `/health`."""
    table = _new_table(f"Reward Fleet gateway {gw}")
    health = _add_gateway_rows(table, gw, timeout_s)
    return (0 if health == "healthy" else 1), table


def status_table(state: dict[str, Any], timeout_s: float = 2.0) -> Table:
    table = _new_table(f"Reward Fleet (rewardfleet up pid {state['pid']})")
    gw = state["gateway"]["url"]
    _add_gateway_rows(table, gw, timeout_s)
    key = os.environ.get(API_KEY_ENV) or None  # an admin tenant's key also shows every tenant
    monitors_health, monitors = _probe(f"{gw}/monitors", timeout_s, key)
    if monitors_health == "HTTP 401":
        table.add_row(
            "monitors", f"{gw}/monitors", "needs an API key", f"set {API_KEY_ENV}, or auth_exempt_metrics"
        )
    for row in monitor_rows(monitors):
        table.add_row(*row)
    if key:
        _, tenants = _probe(f"{gw}/admin/tenants", timeout_s, key)
        for row in tenant_rows(tenants):
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
