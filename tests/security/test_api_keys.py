"""An empty or short API key is a key anyone can guess: every service refuses to start with one, and says
which setting holds it (never the key itself).

The attacks: a YAML `api_keys: [""]` would turn auth on with a key that `Authorization: Bearer ` (an empty
token) matches, and `serve-model --api-key ""` would silently turn auth off. Each case runs the real
command line and waits for it to exit; a service that starts instead fails the test as soon as its /health
answers.
"""

from __future__ import annotations

import contextlib
import http.client
import subprocess
from pathlib import Path

import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_llama
from bench.harness.waiting import eventually
from rewardfleet.services.common.api_keys import MIN_API_KEY_CHARS

GOOD = "k" * MIN_API_KEY_CHARS
SHORT = "k" * (MIN_API_KEY_CHARS - 1)
START_WAIT_S = 90.0
BARE: dict[str, object] = {"builtin_package": None, "reward_fns_dirs": []}


def _empty_bearer_status(port: int) -> int:
    """Status of GET /metrics with an empty Bearer token (sent with http.client: httpx refuses to)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics", headers={"Authorization": "Bearer "})
        return conn.getresponse().status
    finally:
        conn.close()


def _refused_at_start(cmd: list[str], log: Path, env: dict[str, str] | None = None, port: int = 0) -> str:
    """Run `cmd` until it exits; its output. Fails if it serves /health on `port` instead."""
    child = ChildProcess(cmd, log, env=env)
    try:

        def exited() -> bool:
            if child.proc.poll() is not None:
                return True
            try:
                resp = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0)
            except httpx.HTTPError:
                return False
            pytest.fail(
                f"started with a weak key (health {resp.status_code}; an empty Bearer token got "
                f"{_empty_bearer_status(port)})"
            )

        with contextlib.suppress(AssertionError):
            eventually(exited, timeout_s=START_WAIT_S, interval_s=0.1, what="the refusal", retry_on=())
        assert child.proc.poll() is not None, "did not exit"
        assert child.proc.returncode != 0
        return child.log()
    finally:
        child.stop()


@pytest.mark.parametrize(
    ("config", "env", "named"),
    [
        ({"api_keys": [""]}, {}, "api_keys"),
        ({"api_keys": [GOOD, ""]}, {}, "api_keys[1]"),
        ({"api_keys": ["   "]}, {}, "api_keys"),
        ({"api_keys": [SHORT]}, {}, "api_keys"),
        ({"api_keys": [f" {GOOD} "]}, {}, "api_keys"),
        ({}, {"REWARDFLEET_GATEWAY_API_KEYS": f"{GOOD},{SHORT}"}, "api_keys[1]"),
    ],
    ids=["empty", "empty-among-good", "blank", "short", "padded", "env-short"],
)
def test_gateway_refuses_a_weak_key(
    tmp_path: Path, config: dict[str, object], env: dict[str, str], named: str
) -> None:
    port = free_port()
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(yaml.safe_dump({**BARE, **config}))
    out = _refused_at_start(
        rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg)), tmp_path / "gw.log", env, port
    )
    assert named in out and "API key" in out, out[-3000:]
    assert SHORT not in out and GOOD not in out


@pytest.mark.parametrize(
    ("lines", "named"),
    [("# only a comment\n\n", "holds no key"), (f"{GOOD}\n{SHORT}\n", "key[1]")],
    ids=["no-key", "short-line"],
)
def test_gateway_refuses_a_weak_keys_file(tmp_path: Path, lines: str, named: str) -> None:
    port = free_port()
    keys = tmp_path / "keys.txt"
    keys.write_text(lines)
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(yaml.safe_dump({**BARE, "api_keys_file": str(keys)}))
    out = _refused_at_start(
        rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg)), tmp_path / "gw.log", port=port
    )
    assert "api_keys_file" in out and named in out, out[-3000:]


def test_a_good_key_still_starts_the_gateway(tmp_path: Path) -> None:
    """The refusals above are about the key: the same config with a strong key serves, and checks it."""
    port = free_port()
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(yaml.safe_dump({**BARE, "api_keys": [GOOD]}))
    cmd = rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg))
    child = ChildProcess(cmd, tmp_path / "gw.log")
    try:
        url = f"http://127.0.0.1:{port}"
        child.wait_http(f"{url}/health", timeout_s=START_WAIT_S)
        assert _empty_bearer_status(port) == 401
        ok = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {GOOD}"}, timeout=5)
        assert ok.status_code == 200
    finally:
        child.stop()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_llama(tmp_path_factory.mktemp("api-keys") / "llama-rm", kind="seq_cls")


@pytest.mark.parametrize("key", ["", "   ", SHORT], ids=["empty", "blank", "short"])
def test_model_server_refuses_a_weak_key(tiny_model: Path, tmp_path: Path, key: str) -> None:
    port = free_port()
    cmd = rewardfleet_cmd("serve-model", "--model-path", str(tiny_model), "--port", str(port))
    cmd += ["--api-key", key]
    out = _refused_at_start(cmd, tmp_path / "ms.log", port=port)
    assert "api_key" in out and "API key" in out, out[-3000:]
    if key.strip():
        assert key not in out


def test_fleet_refuses_a_weak_key_before_starting_anything(tmp_path: Path) -> None:
    """`rewardfleet up` validates the whole file first: gateway keys, replicas' --api-key, router api_key."""
    cases = {
        "gateway.api_keys": {"gateway": {"api_keys": [""]}},
        "server_args.api-key": {"pools": {"rm": {"kind": "reward_model", "model_path": "builtin:minilm",
                                                 "server_args": {"api-key": SHORT}}}},
        "router.api_key": {"pools": {"rm": {"kind": "reward_model", "model_path": "builtin:minilm",
                                            "router": {"api_key": ""}}}},
    }  # fmt: skip
    for named, fleet in cases.items():
        path = tmp_path / f"{named}.yaml"
        path.write_text(yaml.safe_dump(fleet))
        cmd = rewardfleet_cmd("up", "--config", str(path), "--dry-run")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and "API key" in out, (named, out[-3000:])
        assert named.split(".")[-1] in out, (named, out[-3000:])
