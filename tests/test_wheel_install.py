"""`pip install reward-fleet` with no extras gives a working `rewardfleet`: every command's `--help`,
`rewardfleet status`, and a gateway serving `/score`.

The wheel is built from this checkout and installed into a fresh venv (not `--system-site-packages`, which
would see the test venv's dev dependencies: httpx hid exactly this kind of defect in `rewardfleet status`).
The dependencies come from a wheelhouse kept in the user's cache (`~/.cache/rewardfleet-tests/wheelhouse`):
installing from it with `--no-index` takes seconds; when it lacks something (first run, a dependency
changed) `pip wheel` fills it from the package index, as a user's `pip install` would resolve them. The times
are printed (`pytest -s`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port

COMMANDS = ((), ("gateway",), ("serve-model",), ("up",), ("status",))
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
WHEELHOUSE = CACHE / "rewardfleet-tests" / "wheelhouse"
# Filling the wheelhouse from the index takes minutes on this machine (sdists built, a large resolution).
pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The `bin/` of a fresh venv holding the wheel and its required dependencies only."""
    root = tmp_path_factory.mktemp("wheel-install")
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(root / "dist")],
        cwd=REPO_ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = (root / "dist").glob("*.whl")
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    built = time.monotonic()
    bin_dir = root / "venv" / "bin"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(bin_dir / "pip"), "--disable-pip-version-check"]
    # --no-compile: byte-compiling sympy's thousands of files is most of an install's time; Python compiles
    # what it imports on first use.
    offline = [*pip, "install", "--quiet", "--no-compile", "--no-index", "--find-links", str(WHEELHOUSE)]
    offline.append(str(wheel))
    proc = subprocess.run(offline, capture_output=True, text=True, timeout=600, env=env)
    filled_s = 0.0
    if proc.returncode != 0:  # the wheelhouse lacks a dependency: fill it from the index, then install again
        WHEELHOUSE.mkdir(parents=True, exist_ok=True)
        filling = time.monotonic()
        fill = subprocess.run(
            [*pip, "wheel", "--quiet", "--wheel-dir", str(WHEELHOUSE), str(wheel)],
            capture_output=True, text=True, timeout=1500, env=env,
        )  # fmt: skip
        for ours in WHEELHOUSE.glob("reward_fleet-*.whl"):
            ours.unlink()  # only the dependencies are kept: the wheel under test is always this checkout's
        assert fill.returncode == 0, fill.stdout[-3000:] + fill.stderr[-3000:]
        filled_s = time.monotonic() - filling
        proc = subprocess.run(offline, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(
        f"\nWHEEL_INSTALL build+venv_s={built - started:.1f} wheelhouse_fill_s={filled_s:.1f} "
        f"install_s={time.monotonic() - built - filled_s:.1f}"
    )
    yield bin_dir


def _clean_env(tmp: Path) -> dict[str, str]:
    """No PYTHONPATH (it would reach this checkout) and a working directory outside it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp)
    return env


def _run(bin_dir: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "rewardfleet"), *args], cwd=tmp, env=_clean_env(tmp),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_clean_venv_has_no_dev_dependency(clean_venv: Path) -> None:
    for dev_only in ("httpx", "pytest", "torch"):
        proc = subprocess.run([str(clean_venv / "python"), "-c", f"import {dev_only}"], capture_output=True)
        assert proc.returncode != 0, f"{dev_only} is importable: the venv is not clean"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "rewardfleet")
def test_every_command_has_help(clean_venv: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    proc = _run(clean_venv, tmp_path, *command, "--help")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Usage" in proc.stdout


def test_status_without_a_fleet_says_so(clean_venv: Path, tmp_path: Path) -> None:
    proc = _run(clean_venv, tmp_path, "status", "--run-dir", str(tmp_path / "run"))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "no fleet is running" in proc.stdout and "Traceback" not in proc.stderr


def test_gateway_serves_score_and_status_probes_it(clean_venv: Path, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [str(clean_venv / "rewardfleet"), "gateway", "--port", str(port)]
    child = ChildProcess(cmd, tmp_path / "gateway.log", env={"PYTHONPATH": ""})
    try:
        child.wait_http(f"{url}/health", timeout_s=120)
        sample = {"data_source": "openai/gsm8k", "solution_str": "so #### 42", "ground_truth": "42"}
        resp = httpx.post(f"{url}/score", json=sample, timeout=60)
        assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
        assert resp.json()["score"] == 1.0
        # `rewardfleet status` of a fleet whose only part is this gateway (the state `rewardfleet up` writes).
        run_dir = tmp_path / "run"
        run_dir.mkdir()
        state = {"pid": child.pid, "gateway": {"url": url}, "pools": {}}
        (run_dir / "fleet.json").write_text(json.dumps(state))
        proc = _run(clean_venv, tmp_path, "status", "--run-dir", str(run_dir))
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "healthy" in proc.stdout and url in proc.stdout
    finally:
        child.stop()
    assert "ModuleNotFoundError" not in (tmp_path / "gateway.log").read_text()


def test_the_harbor_tasks_ship_in_the_wheel(clean_venv: Path, tmp_path: Path) -> None:
    """Every file of the shipped Harbor tasks (and the base image's build script) is in the installed package,
    and the environment finds the tasks there."""
    shipped = REPO_ROOT / "reward_fns" / "environments"
    wanted = sorted(
        p.relative_to(shipped).as_posix()
        for p in [*shipped.joinpath("harbor_tasks").rglob("*"), shipped / "_harbor" / "build_base.sh"]
        if p.is_file() and "__pycache__" not in p.parts
    )
    program = (
        "import json, pathlib, rewardfleet.reward_fns.environments.harbor as h\n"
        "root = pathlib.Path(h.__file__).parent\n"
        "files = sorted(p.relative_to(root).as_posix() for p in [*root.joinpath('harbor_tasks').rglob('*'),"
        " root / '_harbor' / 'build_base.sh'] if p.is_file() and '__pycache__' not in p.parts)\n"
        "print(json.dumps([files, sorted(h.Harbor(pathlib.Path('/nonexistent')).tasks())]))\n"
    )
    proc = subprocess.run(
        [str(clean_venv / "python"), "-c", program], cwd=tmp_path, env=_clean_env(tmp_path),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    files, tasks = json.loads(proc.stdout)
    assert files == wanted
    assert tasks == sorted(p.parent.name for p in shipped.joinpath("harbor_tasks").glob("*/task.toml"))
