"""The autoscalers' metrics exist and move: a real Prometheus scrapes a real gateway and a real CPU model
server with the labels the ServiceMonitor gives in a cluster (namespace, pod, job, pool), and the
prometheus-adapter rules (templated as the adapter does) and the KEDA queries of deploy/k8s run against it.
Judge calls held by an SGLang stand-in answering late show up as in-flight requests of that pod."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd, running
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from tests.deploy.helpers import DEPLOY, K8S, tool
from tests.deploy.test_k8s_autoscaling import adapter_rules, render_adapter_query

NAMESPACE = "rewardfleet"
GATEWAY_POD = "gateway-5d8f7c9b6-x2k4p"
POOL_PODS = {"judge": "sglang-judge-7c4b9d-q8w2e", "reward_model": "sglang-reward-model-6f5d8-m3n7r"}
HELD_CALLS = 8
JUDGE_DELAY_S = 10.0
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
METRIC_RE = re.compile(r"\b((?:rewardfleet)_[a-z0-9_]+|sglang:[a-z0-9_]+)\b")


def keda_queries() -> dict[str, str]:
    docs = yaml.safe_load_all((K8S / "autoscaling" / "keda" / "scaledobjects.yaml").read_text())
    return {
        d["metadata"]["name"]: t["metadata"]["query"]
        for d in docs
        for t in d["spec"]["triggers"]
        if t["type"] == "prometheus"
    }


def _prometheus_config(tmp: Path, gateway: str, model_server: str) -> Path:
    """What the ServiceMonitor's scrape gives in a cluster: job from the Service label, namespace and pod from
    the target, pool from the pod label. The one model server stands for a pod of each pool."""
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {
                "job_name": "gateway",
                "static_configs": [
                    {"targets": [gateway], "labels": {"namespace": NAMESPACE, "pod": GATEWAY_POD}}
                ],
            },
            {
                "job_name": "model_server",
                "static_configs": [
                    {"targets": [model_server], "labels": {"namespace": NAMESPACE, "pod": pod, "pool": pool}}
                    for pool, pod in POOL_PODS.items()
                ],
            },
        ],
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("autoscaling-metrics")
    model = build_tiny_qwen2(tmp / "rm", kind="seq_cls")
    gw_port, ms_port, judge_port, prom_port = (free_port() for _ in range(4))
    judge = ChildProcess(
        [sys.executable, "-m", "tests.sglang_standin", "--port", str(judge_port), "--mode", "judge",
         "--canned-text", "Verdict: correct", "--health-delay-s", "0",
         "--delay-ms", str(JUDGE_DELAY_S * 1000)],
        tmp / "judge.log",
    )  # fmt: skip
    config = tmp / "gateway.yaml"
    config.write_text(yaml.safe_dump({
        "routers": {"judge": f"127.0.0.1:{judge_port}"},
        "functions": {"judge": {"reward_kwargs": {"pool": "judge", "generation": {"max_tokens": 32}}}},
    }))  # fmt: skip
    gateway = ChildProcess(
        rewardfleet_cmd("gateway", "--port", str(gw_port), "--workers", "1", "--config", str(config),
                        "--reward-fns", str(DEPLOY / "reward_fns")),
        tmp / "gateway.log",
    )  # fmt: skip
    model_server = ChildProcess(
        rewardfleet_cmd("serve-model", "--model-path", str(model), "--port", str(ms_port), "--is-embedding",
                        "--served-model-name", "tiny-rm", "--torch-num-threads", "1"),
        tmp / "model-server.log", env=SERVER_ENV,
    )  # fmt: skip
    children = [judge, gateway, model_server]
    try:
        judge.wait_http(f"http://127.0.0.1:{judge_port}/health", timeout_s=60)
        gateway.wait_http(f"http://127.0.0.1:{gw_port}/health", timeout_s=60)
        model_server.wait_http(f"http://127.0.0.1:{ms_port}/health", timeout_s=120)
        prom_config = _prometheus_config(tmp, f"127.0.0.1:{gw_port}", f"127.0.0.1:{ms_port}")
        prom_cmd = [tool("prometheus"), f"--config.file={prom_config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                    f"--web.listen-address=127.0.0.1:{prom_port}"]  # fmt: skip
        with running(prom_cmd, tmp / "prometheus.log") as prom:
            prom.wait_http(f"http://127.0.0.1:{prom_port}/-/ready", timeout_s=60)
            yield {
                "gateway": f"http://127.0.0.1:{gw_port}",
                "model_server": f"http://127.0.0.1:{ms_port}",
                "prometheus": f"http://127.0.0.1:{prom_port}",
            }
    finally:
        for child in children:
            child.stop()


def _query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    resp = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    body = resp.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _wait_for(prometheus: str, expr: str, ok: Any, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Poll the query until `ok(result)`; fail with the last result after `timeout_s`."""
    last: list[list[dict[str, Any]]] = []

    def answered() -> bool:
        last[:] = [_query(prometheus, expr)]
        return bool(ok(last[0]))

    eventually(
        answered, timeout_s=timeout_s, interval_s=0.5, what=expr, retry_on=(), detail=lambda: str(last)
    )
    return last[0]


def _at_least(n: float) -> Any:
    return lambda r: len(r) == 1 and float(r[0]["value"][1]) >= n


def _exposed(text: str) -> set[str]:
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")
    }


def test_real_metrics_expose_what_the_autoscalers_read(fleet: dict[str, Any]) -> None:
    exposed = _exposed(httpx.get(f"{fleet['gateway']}/metrics", timeout=10).text)
    exposed |= _exposed(httpx.get(f"{fleet['model_server']}/metrics", timeout=10).text)
    read = {r["name"]["matches"].strip("^$") for r in adapter_rules()}
    for query in keda_queries().values():
        read |= set(METRIC_RE.findall(query))
    assert read == {"rewardfleet_gateway_inflight_requests", "sglang:num_queue_reqs"}
    assert read <= exposed, read - exposed


def test_adapter_rules_give_one_value_per_pod(fleet: dict[str, Any]) -> None:
    prometheus = fleet["prometheus"]
    for rule in adapter_rules():
        series = _wait_for(prometheus, rule["seriesQuery"], bool)
        names = {s["metric"]["__name__"] for s in series}
        assert all(re.fullmatch(rule["name"]["matches"], n) for n in names), names
        for label in rule["resources"]["overrides"]:
            assert all(s["metric"].get(label) for s in series), (label, series)
        (name,) = names
        pods = [GATEWAY_POD] if name.startswith("rewardfleet_gateway") else list(POOL_PODS.values())
        want = len(pods)
        result = _wait_for(prometheus, render_adapter_query(rule, name, pods), lambda r, n=want: len(r) == n)
        assert {r["metric"]["pod"] for r in result} == set(pods)
        assert all(float(r["value"][1]) >= 0 for r in result)


def test_keda_queries_give_one_number(fleet: dict[str, Any]) -> None:
    for name, query in keda_queries().items():
        (sample,) = _wait_for(fleet["prometheus"], query, lambda r: len(r) == 1)
        assert float(sample["value"][1]) >= 0, name


def test_held_judge_calls_are_in_flight_on_that_pod(fleet: dict[str, Any]) -> None:
    """HELD_CALLS judge posts wait JUDGE_DELAY_S on the stand-in: both the adapter's per-pod value and KEDA's
    query see at least that many, and the count falls back once they are answered."""
    (rule,) = [r for r in adapter_rules() if r["name"]["as"] == "rewardfleet_gateway_inflight_requests"]
    per_pod = render_adapter_query(rule, "rewardfleet_gateway_inflight_requests", [GATEWAY_POD])
    keda = keda_queries()["gateway"]
    statuses: list[int] = []

    def post(i: int) -> None:
        resp = httpx.post(f"{fleet['gateway']}/score", timeout=60, json={
            "data_source": "x", "reward_fn": "judge", "solution_str": "56", "ground_truth": "56",
            "extra_info": {"question": "What is 7 * 8?"}, "uid": f"held-{i}",
        })  # fmt: skip
        statuses.append(resp.status_code)

    threads = [threading.Thread(target=post, args=(i,)) for i in range(HELD_CALLS)]
    for t in threads:
        t.start()
    try:
        _wait_for(fleet["prometheus"], per_pod, _at_least(HELD_CALLS), timeout_s=JUDGE_DELAY_S)
        _wait_for(fleet["prometheus"], keda, _at_least(HELD_CALLS), timeout_s=JUDGE_DELAY_S)
    finally:
        for t in threads:
            t.join(timeout=60)
    assert statuses == [200] * HELD_CALLS
    _wait_for(fleet["prometheus"], per_pod, lambda r: len(r) == 1 and float(r[0]["value"][1]) < HELD_CALLS)
