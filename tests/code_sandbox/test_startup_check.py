"""The gateway runs the `code` built-in's start-up check: a configured `code` function whose sandbox cannot
be created here stops start-up with a message naming the options; a user function's own `startup_check`
failing is reported the same way; one that is only discovered is logged as an ERROR and the gateway starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port
from tests.support.gateway import gateway_cmd, write_config

NO_SANDBOX = {"sandbox": {"python": "/nonexistent/bin/python3"}}
FAILING_CHECK = (
    "def startup_check(reward_kwargs):\n    raise RuntimeError('needs a GPU sandbox')\n\n"
    "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n"
)


def _run_until_exit(tmp_path: Path, config: dict, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["--port", str(free_port()), "--config", str(write_config(tmp_path / "gw.yaml", config)), *extra]
    return subprocess.run(gateway_cmd(*args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=90)


def test_configured_code_without_a_sandbox_stops_startup_naming_the_options(tmp_path: Path) -> None:
    result = _run_until_exit(tmp_path, {"workers": 1, "functions": {"code": {"reward_kwargs": NO_SANDBOX}}})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "code: start-up check failed: SandboxUnavailable" in output
    assert "not run unsandboxed" in output and "sandbox_fusion_url" in output and "CAP_SYS_ADMIN" in output


def test_a_discovered_function_failing_its_check_is_logged_and_the_gateway_starts(tmp_path: Path) -> None:
    folder = tmp_path / "fns"
    folder.mkdir()
    (folder / "gpu_only.py").write_text(FAILING_CHECK)
    config = write_config(tmp_path / "gw.yaml", {"builtin_package": None, "workers": 1})
    port = free_port()
    cmd = gateway_cmd("--port", str(port), "--config", str(config), "--reward-fns", str(folder))
    child = ChildProcess(cmd, tmp_path / "gw.log")
    try:
        child.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=90)
        assert "gpu_only: start-up check failed: RuntimeError: needs a GPU sandbox" in child.log()
    finally:
        child.stop()


def test_a_configured_function_failing_its_check_stops_startup(tmp_path: Path) -> None:
    folder = tmp_path / "fns"
    folder.mkdir()
    (folder / "gpu_only.py").write_text(FAILING_CHECK)
    config = {"builtin_package": None, "workers": 1, "functions": {"gpu_only": {}}}
    result = _run_until_exit(tmp_path, config, "--reward-fns", str(folder))
    assert result.returncode != 0
    assert (
        "gpu_only: start-up check failed: RuntimeError: needs a GPU sandbox" in result.stdout + result.stderr
    )
