"""Start-up checks: bad files and bad config stop the gateway with a message naming the problem;
`on_load_error: skip` starts anyway with a loud warning. Also: built-ins as package modules, defaults."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, free_port
from tests.support.gateway import Gateway, gateway_cmd, start_gateway, write_config

BROKEN_IMPORT = (
    "import does_not_exist_anywhere\n\n"
    "def compute_score(data_source, solution_str, ground_truth, extra_info):\n    return 1\n"
)
NEEDS_SECRET = (
    "def compute_score(data_source, solution_str, ground_truth, extra_info, secret):\n    return 1\n"
)
POSITIONAL_ONLY = (
    "def compute_score(data_source, solution_str, ground_truth, extra_info=None, /):\n    return 1\n"
)
SYNC_HTTP = (
    "def compute_score(data_source, solution_str, ground_truth, extra_info, http_client):\n    return 1\n"
)
NO_EXTRA_INFO = "def compute_score(data_source, solution_str, ground_truth):\n    return 1\n"
GOOD = "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.5\n"


def _folder(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "fns"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _run_until_exit(tmp_path: Path, config: dict, folder: Path | None) -> subprocess.CompletedProcess[str]:
    args = ["--port", str(free_port()), "--config", str(write_config(tmp_path / "gw.yaml", config))]
    if folder is not None:
        args += ["--reward-fns", str(folder)]
    return subprocess.run(gateway_cmd(*args), cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


NO_BUILTINS = {"builtin_package": None, "workers": 1}


@pytest.mark.parametrize(
    ("files", "needles"),
    [
        (
            {"broken.py": BROKEN_IMPORT, "needs_secret.py": NEEDS_SECRET, "good.py": GOOD},
            [
                "broken.py: ModuleNotFoundError: No module named 'does_not_exist_anywhere'",
                "needs_secret.py: needs_secret: required parameters ['secret'] are provided by nobody",
            ],
        ),
        (
            {"posonly.py": POSITIONAL_ONLY, "sync_http.py": SYNC_HTTP, "no_extra.py": NO_EXTRA_INFO},
            [
                "posonly.py: posonly: parameters ['data_source', 'solution_str', 'ground_truth', "
                "'extra_info'] are positional-only",
                "sync_http.py: sync_http: a sync function cannot take 'http_client'",
                "no_extra.py: no_extra: does not accept ['extra_info']",
            ],
        ),
    ],
)
def test_bad_files_stop_startup(tmp_path: Path, files: dict[str, str], needles: list[str]) -> None:
    result = _run_until_exit(tmp_path, NO_BUILTINS, _folder(tmp_path, files))
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    for needle in needles:
        assert needle in output, output
    assert "good.py" not in output


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ({"dispatch": {"my/data": "nope"}}, "dispatch.my/data: 'nope' is not a loaded reward function"),
        ({"default_reward_fn": "nope"}, "default_reward_fn: 'nope' is not a loaded reward function"),
        (
            {"functions": {"ghost": {"timeout_s": 3}}},
            "functions.ghost: no reward-function file named ghost.py and no",
        ),
        (
            {"functions": {"bad": {"path": "no_such_module_xyz:compute_score"}}},
            "functions.bad.path 'no_such_module_xyz:compute_score': ModuleNotFoundError",
        ),
        (
            {"functions": {"good": {"reward_kwargs": {"unknown_arg": 1}}}},
            "reward_kwargs ['unknown_arg'] are not parameters",
        ),
    ],
)
def test_bad_config_references_stop_startup(tmp_path: Path, config: dict, needle: str) -> None:
    result = _run_until_exit(tmp_path, {**NO_BUILTINS, **config}, _folder(tmp_path, {"good.py": GOOD}))
    assert result.returncode != 0
    assert needle in result.stdout + result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        (
            {"routers": {"rm": "http://127.0.0.1:30000"}},
            "routers: router 'rm': 'http://127.0.0.1:30000' is not a bare",
        ),
        (
            {"functions": {"good": {"timeout_s": 0}}},
            "functions.good.timeout_s: Input should be greater than 0",
        ),
        ({"on_load_error": "maybe"}, "on_load_error: Input should be 'fail' or 'skip'"),
        (
            {"routers": {"a": "127.0.0.1:1"}, "default_router": "b"},
            "default_router: 'b' is not one of routers",
        ),
        ({"max_body_bytes": "lots"}, "max_body_bytes: Input should be a valid integer"),
    ],
)
def test_invalid_config_values_exit_2_naming_the_key(tmp_path: Path, config: dict, needle: str) -> None:
    result = _run_until_exit(tmp_path, {**NO_BUILTINS, **config}, None)
    assert result.returncode == 2
    assert "invalid configuration" in result.stderr and needle in result.stderr, result.stderr


def test_python_dash_m_is_the_same_command(tmp_path: Path) -> None:
    """`python -m rewardfleet.services.gateway` is `rewardfleet gateway`."""
    config = write_config(tmp_path / "gw.yaml", {"max_body_bytes": "lots"})
    cmd = [sys.executable, "-m", "rewardfleet.services.gateway", "--config", str(config)]
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "max_body_bytes: Input should be a valid integer" in result.stderr


@pytest.fixture(scope="module")
def skipping_gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("skip")
    folder = _folder(tmp, {"broken.py": BROKEN_IMPORT, "needs_secret.py": NEEDS_SECRET, "good.py": GOOD})
    config = {
        "builtin_package": "tests.gateway.fake_builtins",
        "on_load_error": "skip",
        "workers": 1,
        "default_reward_fn": "good",
        "routers": {"down": f"127.0.0.1:{free_port()}"},  # nobody listens there
        "ready_check_timeout_s": 0.5,
    }
    gateway = start_gateway(tmp, config, folder)
    try:
        yield gateway
    finally:
        gateway.proc.stop()


def test_skip_starts_with_loud_warnings(skipping_gw: Gateway) -> None:
    log = skipping_gw.proc.log()
    assert "WARNING" in log and "SKIPPED reward function" in log
    assert "broken.py" in log and "needs_secret.py" in log
    names = {f["name"] for f in httpx.get(f"{skipping_gw.url}/reward_fns").json()["reward_fns"]}
    assert names == {"alpha", "beta", "good"}


def test_default_reward_fn(skipping_gw: Gateway) -> None:
    body = skipping_gw.score(data_source="whatever", solution_str="x").json()
    assert (body["reward_fn"], body["score"], body["status"]) == ("good", 0.5, "ok")


def test_builtins_are_package_modules(skipping_gw: Gateway) -> None:
    """A built-in imports a sibling helper module (`from <package>._shared import ...`) and claims a glob."""
    body = skipping_gw.score(data_source="alpha-2024", solution_str="x").json()
    assert (body["reward_fn"], body["extra"]) == ("alpha", {"prefix": "alpha:"})
    fns = {f["name"]: f for f in httpx.get(f"{skipping_gw.url}/reward_fns").json()["reward_fns"]}
    assert fns["alpha"]["origin"] == "builtin" and fns["alpha"]["data_sources"] == ["alpha*"]
    assert fns["beta"]["kind"] == "async"


def test_ready_is_503_when_a_router_is_down(skipping_gw: Gateway) -> None:
    resp = httpx.get(f"{skipping_gw.url}/ready", timeout=10)
    assert resp.status_code == 503
    body = resp.json()
    assert body["ready"] is False and body["reward_fns"] == 3
    assert body["routers"]["down"]["reachable"] is False and body["routers"]["down"]["error"]
    assert httpx.get(f"{skipping_gw.url}/health").status_code == 200  # liveness is unaffected
