"""The external pools' forwarding route, attacked. A reward function reaches an external pool through
`host:port/pools/<token>/<pool>/<function>/v1/...`, and the gateway adds the provider's API key.

Before the fix: judge errors (a 4xx from the provider, a connect error, a timeout) put the whole forwarding
URL, token included, in the sample's `error.message` and the log; with the token, a client without an API
key could call the provider with the operator's key, under any function name (a fresh RPM/TPM budget and new
metric labels for each), and `%2e%2e` segments reached other provider paths. Now: the token is masked in
every error and log line, only configured functions and the OpenAI routes the pools serve are forwarded
(anything else is the same 404, and creates no budget or label), and a caller from another host needs an
API key as well. Every network peer is a real process on 127.0.0.1; "another host" is a client behind a
reverse proxy on this host, which uvicorn recognises by `X-Forwarded-For` from 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port
from tests.support.gateway import gateway_cmd, write_config

ATTACK_FILES = Path(__file__).parent / "attack_files"
PROVIDER_KEY = "sk-provider-0123456789abcdef"
GATEWAY_KEY = "gw-key-for-the-trainer"
AUTH = {"Authorization": f"Bearer {GATEWAY_KEY}"}
REFUSED = (404, {"error": {"message": "no such pool", "type": "pool_error"}})
CHAT = {"model": "x", "messages": [{"role": "user", "content": "hello there"}]}


@dataclass
class Setup:
    url: str
    port: int
    proc: ChildProcess
    token: str
    provider: str

    def score(self, fn: str) -> dict[str, Any]:
        resp = httpx.post(
            f"{self.url}/score",
            json={
                "data_source": "d",
                "prompt": "What is y?",
                "solution_str": "x",
                "ground_truth": "y",
                "reward_fn": fn,
            },
            headers=AUTH,
            timeout=60,
        )
        assert resp.status_code == 200, resp.text
        return dict(resp.json())

    def forward(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """POST to a raw path, sent byte for byte (httpx would normalise `..` and percent-escapes):
        `(status, JSON body)`."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", path, body=json.dumps(CHAT),
                     headers={"content-type": "application/json", **(headers or {})})  # fmt: skip
        resp = conn.getresponse()
        body = json.loads(resp.read() or b"null")
        conn.close()
        return resp.status, body

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", headers=AUTH, timeout=10).text


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("pools")
    folder = tmp / "fns"
    folder.mkdir()
    shutil.copy(ATTACK_FILES / "leak_addresses.py", folder / "leak_addresses.py")
    provider_port = free_port()
    provider = ChildProcess(
        [
            sys.executable,
            "-m",
            "tests.openai_standin",
            "--port",
            str(provider_port),
            "--api-key",
            PROVIDER_KEY,
        ],
        tmp / "provider.log",
    )
    silent = socket.socket()  # accepts connections (the kernel does) and never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)
    provider_url = f"http://127.0.0.1:{provider_port}"
    judge = "rewardfleet.reward_fns.judge:compute_score"
    config = {
        "workers": 1,
        "api_keys": [GATEWAY_KEY],
        "external_pools": {
            "hosted": {"base_url": f"{provider_url}/v1", "model": "m", "api_key_env": "PROVIDER_KEY",
                       "rpm": 1000},
            "wrong_key": {"base_url": f"{provider_url}/v1", "model": "m", "api_key_env": "WRONG_KEY"},
            "down": {"base_url": f"http://127.0.0.1:{free_port()}/v1", "model": "m"},
            "silent": {"base_url": f"http://127.0.0.1:{silent.getsockname()[1]}/v1", "model": "m",
                       "timeout_s": 3},
        },
        "functions": {
            "judge_ok": {"path": judge, "reward_kwargs": {"pool": "hosted", "timeout_s": 30}},
            "judge_4xx": {"path": judge, "reward_kwargs": {"pool": "wrong_key", "timeout_s": 30}},
            "judge_down": {"path": judge, "reward_kwargs": {"pool": "down", "timeout_s": 30}},
            "judge_timeout": {"path": judge, "timeout_s": 10,
                              "reward_kwargs": {"pool": "silent", "timeout_s": 0.5}},
        },
    }  # fmt: skip
    port = free_port()
    cfg = write_config(tmp / "gateway.yaml", config)
    env = {"PROVIDER_KEY": PROVIDER_KEY, "WRONG_KEY": "sk-not-the-key"}
    args = ["--port", str(port), "--config", str(cfg), "--reward-fns", str(folder), "--access-log"]
    proc = ChildProcess(gateway_cmd(*args), tmp / "gateway.log", env=env)
    try:
        provider.wait_http(f"{provider_url}/standin/log", timeout_s=60)
        url = f"http://127.0.0.1:{port}"
        proc.wait_http(f"{url}/health", timeout_s=90)
        resp = httpx.post(f"{url}/score", headers=AUTH, timeout=30,
                          json={"data_source": "d", "solution_str": "x", "ground_truth": "y",
                                "reward_fn": "leak_addresses"})  # fmt: skip
        address = resp.json()["extra"]["addresses"]["hosted"]  # 127.0.0.1:port/pools/<token>/hosted/<fn>
        token = address.split("/pools/")[1].split("/")[0]
        yield Setup(url, port, proc, token, provider_url)
    finally:
        proc.stop()
        provider.stop()
        silent.close()


def _path(setup: Setup, rest: str, function: str = "judge_ok", pool: str = "hosted") -> str:
    return f"/pools/{setup.token}/{pool}/{function}/{rest}"


def test_the_forwarding_route_works_for_its_functions(setup: Setup) -> None:
    result = setup.score("judge_ok")
    assert result["status"] == "ok", result["error"]
    for rest in ("v1/chat/completions", "chat/completions"):
        assert setup.forward(_path(setup, rest))[0] == 200


@pytest.mark.parametrize("fn", ["judge_4xx", "judge_down", "judge_timeout"])
def test_judge_errors_never_carry_the_token(setup: Setup, fn: str) -> None:
    result = setup.score(fn)
    assert result["status"] == "error", result
    message = result["error"]["message"]
    assert setup.token not in message, message
    assert "/pools/<token>/" in message, message  # the address is still shown, its secret masked
    assert setup.token not in setup.proc.log()  # nor in the failure log, nor in the access log


def test_a_function_name_that_is_not_configured_is_refused_without_a_budget(setup: Setup) -> None:
    before = setup.metrics()
    for fn in ("attacker_fresh_budget", "judge_ok_", "x" * 200):
        assert setup.forward(_path(setup, "v1/chat/completions", function=fn)) == REFUSED, fn
    after = setup.metrics()
    assert "attacker_fresh_budget" not in after and 'reward_fn="xxxx' not in after
    assert after.count("rewardfleet_pool_requests_total{") == before.count("rewardfleet_pool_requests_total{")


@pytest.mark.parametrize(
    "rest",
    [
        "v1/%2e%2e/standin/log",  # percent-encoded dot segments
        "v1/%2E%2E/%2e%2e/standin/log",
        "v1/../standin/log",
        "v1/chat/completions/../../standin/log",
        "v1/chat/completions/%2e%2e/%2e%2e/standin/log",
        "v1//chat/completions",
        "v1/./chat/completions",
        "v1/chat%5Ccompletions",  # a backslash
        "v1\\chat\\completions",
        "v1/chat/completions%2F..%2F..%2Fstandin%2Flog",
        "v1/%252e%252e/standin/log",  # double encoding
        "v1/models",  # a provider route the pools do not forward
        "v1/files",
        "standin/log",
    ],
)
def test_forwarded_paths_are_confined_to_the_pool_routes(setup: Setup, rest: str) -> None:
    # The gateway's own refusal: nothing reached the provider (whose 404/405 would say {"detail": ...}).
    assert setup.forward(_path(setup, rest)) == REFUSED, rest


def test_a_caller_from_another_host_needs_an_api_key(setup: Setup) -> None:
    remote = {"X-Forwarded-For": "203.0.113.9"}  # a trainer behind a reverse proxy on this host
    path = _path(setup, "v1/chat/completions")
    assert setup.forward(path, remote)[0] == 401
    assert setup.forward(path, {**remote, "Authorization": "Bearer wrong"})[0] == 401
    assert setup.forward(path, {**remote, **AUTH})[0] == 200
    assert setup.forward(path)[0] == 200  # reward functions call from this host, with no key


def test_the_gateways_other_routes_still_need_the_key_from_this_host(setup: Setup) -> None:
    assert httpx.post(f"{setup.url}/score", json={}, timeout=10).status_code == 401
    assert os.environ.get("PROVIDER_KEY") is None  # the key only ever reached the gateway's process
