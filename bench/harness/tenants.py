"""Tenant API keys the tenants tests and bench/fair_worker_pool.py share, their request header, and the
fair-queuing gateway's config over tests/gateway/tenants/fair_fns/."""

from __future__ import annotations

from typing import Any

from bench.harness.processes import REPO_ROOT

FAIR_FNS = REPO_ROOT / "tests" / "gateway" / "tenants" / "fair_fns"
KEY_A = "tenant-a-key-0123456789"
KEY_B = "tenant-b-key-0123456789"
ADMIN = "tenant-ops-key-0123456789"
KEY_E = "tenant-e-key-0123456789"
KEY_HEAVY = "tenant-heavy-key-0123456789"  # weight 3
KEY_LIGHT = "tenant-light-key-0123456789"  # weight 1


def auth(key: str, run: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if run is not None:
        headers["X-Rewardfleet-Run"] = run
    return headers


def fair_pool_config(tenants: bool) -> dict[str, Any]:
    cfg: dict[str, Any] = {"builtin_package": None, "reward_fns_dirs": [str(FAIR_FNS)]}
    if tenants:
        cfg["tenants"] = {
            "a": {"api_keys": [KEY_A], "priority": "train"},
            "b": {"api_keys": [KEY_B], "priority": "train"},
            "e": {"api_keys": [KEY_E], "priority": "eval"},
            "heavy": {"api_keys": [KEY_HEAVY], "priority": "train", "weight": 3},
            "light": {"api_keys": [KEY_LIGHT], "priority": "train"},
            "ops": {"api_keys": [ADMIN], "admin": True},
        }
    return cfg
