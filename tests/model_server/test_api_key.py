"""`serve-model --api-key`: SGLang's rule, checked against a real server and against SGLang's own source."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rewardfleet.services.model_server.app import OPEN_PREFIXES
from tests.deploy.sglang_flags import SGLANG_VERSION
from tests.support.model_server import RunningServer, start_server

KEY = "sk-test-0123456789"


@pytest.fixture(scope="module")
def keyed(tiny_models: dict[str, Path], log_dir: Path) -> Iterator[RunningServer]:
    server = start_server(tiny_models["llama_lm"], log_dir, "--api-key", KEY, name="keyed")
    yield server
    server.process.stop()


def test_requests_without_the_bearer_key_get_401(keyed: RunningServer) -> None:
    body = {"text": "hello", "sampling_params": {"max_new_tokens": 2, "temperature": 0}}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY}, {"X-Api-Key": KEY}):
        resp = httpx.post(f"{keyed.url}/generate", json=body, headers=headers, timeout=30)
        assert resp.status_code == 401 and resp.json() == {"error": "Unauthorized"}, (headers, resp.text)
    for path in ("/v1/models", "/model_info", "/server_info"):
        assert httpx.get(keyed.url + path, timeout=10).status_code == 401
    ok = httpx.post(
        f"{keyed.url}/generate", json=body, headers={"Authorization": f"bearer {KEY}"}, timeout=30
    )
    assert ok.status_code == 200 and ok.json()["output_ids"], ok.text
    models = httpx.get(f"{keyed.url}/v1/models", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert models.status_code == 200


def test_probes_and_metrics_stay_open(keyed: RunningServer) -> None:
    for path in ("/health", "/health_generate", "/metrics"):
        assert httpx.get(keyed.url + path, timeout=30).status_code == 200, path
    # The key never shows in what the server tells about itself or logs.
    info = httpx.get(f"{keyed.url}/server_info", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    assert KEY not in info.text
    assert KEY not in keyed.process.log()


def test_open_paths_are_sglangs(tmp_path: Path) -> None:
    """Our exemptions are the ones in the pinned SGLang's `decide_request_auth` (read from its wheel)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(tmp_path),
         f"sglang=={SGLANG_VERSION}"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    wheels = sorted(tmp_path.glob("sglang-*.whl"))
    if proc.returncode != 0 or not wheels:
        pytest.skip(f"cannot download sglang=={SGLANG_VERSION}: {proc.stderr.strip()[-300:]}")
    with zipfile.ZipFile(wheels[0]) as zf:
        source = zf.read("sglang/srt/utils/auth.py").decode()
    decide = source[source.index("def decide_request_auth") :]
    decide = decide[: decide.index("\ndef ")]
    for prefix in OPEN_PREFIXES:
        assert f'path.startswith("{prefix}")' in decide
    assert decide.count("path.startswith(") == len(OPEN_PREFIXES)
    assert 'method == "OPTIONS"' in decide and 'parts[0].lower() != "bearer"' in decide
    assert '"Unauthorized"' in source and "status_code=decision.error_status_code" in source
