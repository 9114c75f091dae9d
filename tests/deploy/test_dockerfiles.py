"""docker/*.Dockerfile: hadolint, plus the properties that matter checked from the parsed instructions."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.cli import app
from tests.deploy.helpers import DOCKER, tool

DOCKERFILES = sorted(DOCKER.glob("*.Dockerfile"))


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        keyword, _, rest = full.partition(" ")
        out.append((keyword.upper(), rest.strip()))
    return out


def dockerignore_keeps(relpath: str) -> bool:
    """Whether `.dockerignore` lets `relpath` into the build context (last matching rule wins)."""
    keep = True
    for raw in (REPO_ROOT / ".dockerignore").read_text().splitlines():
        rule = raw.strip()
        if not rule or rule.startswith("#"):
            continue
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        matches = (
            pattern == "**"
            or fnmatch.fnmatch(relpath, pattern)
            or relpath.startswith(pattern + "/")
            or (pattern.startswith("**/") and fnmatch.fnmatch(Path(relpath).name, pattern[3:]))
        )
        if matches:
            keep = negate
    return keep


def test_three_images() -> None:
    names = [p.name for p in DOCKERFILES]
    assert names == ["gateway.Dockerfile", "model-server.Dockerfile", "router.Dockerfile"]


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_clean(path: Path) -> None:
    exe = tool("hadolint")
    proc = subprocess.run([exe, "--no-color", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_structure(path: Path) -> None:
    ins = instructions(path)
    (base,) = [args for kw, args in ins if kw == "FROM"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base), f"unpinned or non-slim base {base}"
    users = [args for kw, args in ins if kw == "USER"]
    assert users and users[-1] not in ("root", "0"), "the image must end as a non-root user"
    (health,) = [args for kw, args in ins if kw == "HEALTHCHECK"]
    assert "CMD" in health and "python" in health and "curl" not in health and "wget" not in health
    assert ins[-1][0] in ("CMD", "ENTRYPOINT")
    for kw, args in ins:
        if kw == "COPY":
            *sources, _dest = args.split()
            for source in sources:
                assert (REPO_ROOT / source).exists(), f"COPY {source}: not in the repo"
                assert dockerignore_keeps(source.rstrip("/").removeprefix("./")), f"{source} is dockerignored"
        if kw == "RUN" and "pip install" in args:
            assert "--no-compile" in args


def test_model_server_torch_from_cpu_index() -> None:
    text = (DOCKER / "model-server.Dockerfile").read_text()
    # The CPU index is the default of a build argument (tests/deploy/test_images.py builds with another).
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
    assert '--index-url "${TORCH_INDEX_URL}"' in text
    assert re.search(r'"torch==\$\{TORCH_VERSION\}"', text) and re.search(r"ARG TORCH_VERSION=\d", text)


def test_router_pins_sglang_router() -> None:
    assert "ARG SGLANG_ROUTER_VERSION=0.3.2" in (DOCKER / "router.Dockerfile").read_text()


def test_gateway_default_command_is_a_real_cli() -> None:
    ins = instructions(DOCKER / "gateway.Dockerfile")
    entry = json.loads(next(a for k, a in ins if k == "ENTRYPOINT"))
    cmd = json.loads(next(a for k, a in ins if k == "CMD"))
    assert entry == ["rewardfleet"]
    result = CliRunner().invoke(app, [*cmd, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    for flag in (a for a in cmd if a.startswith("--")):
        assert flag in result.output


def test_dockerignore_keeps_context_small() -> None:
    for kept in ("pyproject.toml", "README.md", "services/cli.py", "router/config.py", "reward_fns/gsm8k.py"):
        assert dockerignore_keeps(kept), kept
    for dropped in (".venv/bin/python", ".git/HEAD", "tests/support/gateway.py", "deploy/docker-compose.yml",
                    "services/__pycache__/cli.cpython-311.pyc"):  # fmt: skip
        assert not dockerignore_keeps(dropped), dropped
