"""Every Grafana panel expression, run against a REAL Prometheus scraping a real fleet on loopback.

Prometheus (Debian's binary) runs deploy/prometheus/prometheus.yml with its targets pointed at 127.0.0.1 and
the deploy alert rules loaded. Behind it: the gateway (`rewardfleet gateway`, loading deploy/reward_fns), one
real sglang-router whose workers are our CPU model server (tiny random-weight reward model) and an SGLang
stand-in that answers 503 (so retries and circuit-breaker outcomes happen). For the judge-monitor panels the
gateway also has an SGLang stand-in judge pool, priced, probed with master keys and shadowed by a reference
pool. After some /score and /v1/embeddings traffic every expression must parse and return data — a panel
that shows nothing fails.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd, running
from bench.harness.router_process import RouterProcess
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from rewardfleet.router.config import RouterConfig
from tests.deploy.helpers import DASHBOARD, DEPLOY, tool

RATE_INTERVAL = "20s"  # what Grafana's $__rate_interval becomes with a 1 s scrape interval (and some slack)
SERVER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
TEAM_KEY = "dashboard-team-key-0123456789"
TIGHT_KEY = "dashboard-tight-key-0123456789"
METRIC_RE = re.compile(r"\b((?:rewardfleet|smg)_[a-z0-9_]+|sglang:[a-z0-9_]+)\b")


def panel_expressions() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((f"{panel['title']} [{target['refId']}]", target["expr"]))
    return out


def test_dashboard_shape() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] == "rewardfleet"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "prometheus" and panel["targets"], panel["title"]
    provisioned = yaml.safe_load((DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text())
    assert provisioned["datasources"][0]["uid"] == "prometheus"
    provider = yaml.safe_load((DEPLOY / "grafana/provisioning/dashboards/rewardfleet.yml").read_text())
    compose = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    mounts = dict(v.split(":")[:2] for v in compose["services"]["grafana"]["volumes"])
    assert mounts["./grafana/dashboards"] == provider["providers"][0]["options"]["path"]
    titles = " ".join(p["title"] for p in dashboard["panels"])
    for word in ("Requests/s", "p99", "outcomes", "Score distribution", "Worker health", "Retries",
                 "Circuit-breaker", "Queued", "Batch size",
                 "Master-key", "kappa", "drift", "spend"):  # fmt: skip
        assert word in titles, word


def _prometheus_config(tmp: Path, targets: dict[str, str]) -> Path:
    """deploy/prometheus/prometheus.yml with each compose target replaced by its loopback address
    (targets not running here are dropped), a 1 s scrape interval and the deploy rules by absolute path."""
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"}
    config["rule_files"] = [str(DEPLOY / "prometheus" / f) for f in config["rule_files"]]
    for job in config["scrape_configs"]:
        statics = []
        for static in job["static_configs"]:
            mapped = [targets[t] for t in static["targets"] if t in targets]
            if mapped:
                statics.append({**static, "targets": mapped})
        job["static_configs"] = statics
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("dashboard")
    model = build_tiny_qwen2(tmp / "rm", kind="seq_cls")
    gw_port, ms_port, standin_port, router_port, router_prom_port, prom_port, judge_port = (
        free_port() for _ in range(7)
    )
    judge = ChildProcess(
        [sys.executable, "-m", "tests.sglang_standin", "--port", str(judge_port), "--mode", "judge",
         "--canned-text", "Verdict: correct", "--health-delay-s", "0"],
        tmp / "judge.log",
    )  # fmt: skip
    judge_address = f"127.0.0.1:{judge_port}"
    gateway_config = tmp / "gateway.yaml"
    gateway_config.write_text(yaml.safe_dump({
        "routers": {"judge": judge_address, "reference": judge_address},
        "pool_prices": {"judge": {"input_usd_per_million_tokens": 1.0, "output_usd_per_million_tokens": 4.0}},
        "functions": {"judge": {"reward_kwargs": {"pool": "judge", "generation": {"max_tokens": 32}},
                                "shadow": {"pool": "reference", "sample_rate": 1.0}, "max_concurrency": 4}},
        # Tenants (the tenant row): the traffic is one team's; a second, tight one gets 429s.
        "tenants": {"team": {"api_keys": [TEAM_KEY]},
                    "tight": {"api_keys": [TIGHT_KEY], "quotas": {"requests_per_minute": 1}}},
        "auth_exempt_metrics": True,
        "judge_probes": {"functions": ["judge"], "answers": [":"], "interval_s": 5,
                         "questions": [{"question": "What is 7 * 8?", "answer": "56"}]},
    }))  # fmt: skip
    gateway = ChildProcess(
        rewardfleet_cmd("gateway", "--port", str(gw_port), "--workers", "1", "--config", str(gateway_config),
                        "--reward-fns", str(DEPLOY / "reward_fns")),
        tmp / "gateway.log",
    )  # fmt: skip
    model_server = ChildProcess(
        rewardfleet_cmd("serve-model", "--model-path", str(model), "--port", str(ms_port), "--is-embedding",
                        "--served-model-name", "tiny-rm", "--torch-num-threads", "1"),
        tmp / "model-server.log", env=SERVER_ENV,
    )  # fmt: skip
    standin = ChildProcess(
        [sys.executable, "-m", "tests.sglang_standin", "--port", str(standin_port), "--mode", "reward",
         "--fail-rate", "1.0", "--fail-status", "503"],
        tmp / "standin.log",
    )  # fmt: skip
    children = [judge, gateway, model_server, standin]
    try:
        judge.wait_http(f"http://127.0.0.1:{judge_port}/health", timeout_s=60)
        gateway.wait_http(f"http://127.0.0.1:{gw_port}/health", timeout_s=60)
        model_server.wait_http(f"http://127.0.0.1:{ms_port}/health", timeout_s=120)
        standin.wait_http(f"http://127.0.0.1:{standin_port}/health", timeout_s=60)
        cfg = RouterConfig(
            port=router_port, prometheus_port=router_prom_port, policy="round_robin",
            worker_urls=[f"http://127.0.0.1:{ms_port}", f"http://127.0.0.1:{standin_port}"],
            health_check_interval_secs=5, cb_failure_threshold=3,
        )  # fmt: skip
        with RouterProcess(cfg, tmp / "router.log") as router:
            router.wait_ready(timeout_s=60, min_healthy_workers=2)
            targets = {
                "gateway:8000": f"127.0.0.1:{gw_port}",
                "reward-model-router:29002": f"127.0.0.1:{router_prom_port}",
                "reward-model:30000": f"127.0.0.1:{ms_port}",
            }
            config = _prometheus_config(tmp, targets)
            prom_cmd = [tool("prometheus"), f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
                        f"--web.listen-address=127.0.0.1:{prom_port}"]  # fmt: skip
            with running(prom_cmd, tmp / "prometheus.log") as prom:
                prom.wait_http(f"http://127.0.0.1:{prom_port}/-/ready", timeout_s=60)
                yield {
                    "gateway": f"http://127.0.0.1:{gw_port}",
                    "router": router.url,
                    "prometheus": f"http://127.0.0.1:{prom_port}",
                    "logs": tmp,
                }
    finally:
        for child in children:
            child.stop()


def _query(prometheus: str, expr: str) -> dict[str, Any]:
    resp = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10)
    body = resp.json()
    assert body["status"] == "success", f"{expr}: {body.get('error')}"
    return body["data"]


def _traffic(fleet: dict[str, Any], round_no: int) -> None:
    with httpx.Client(timeout=30, headers={"Authorization": f"Bearer {TEAM_KEY}"}) as client:
        for _ in range(2):  # the second within the minute is refused: a quota refusal for the tenant row
            client.post(f"{fleet['gateway']}/score", headers={"Authorization": f"Bearer {TIGHT_KEY}"}, json={
                "data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1"})  # fmt: skip
        for i in range(6):
            answer = "42" if i % 2 else "41"
            resp = client.post(f"{fleet['gateway']}/score", json={
                "data_source": "openai/gsm8k", "solution_str": f"so #### {answer}", "ground_truth": "42",
                "uid": f"{round_no}-{i}",
            })  # fmt: skip
            assert resp.status_code == 200 and resp.json()["status"] == "ok", resp.text
        judged = client.post(f"{fleet['gateway']}/score", json={
            "data_source": "x", "reward_fn": "judge", "solution_str": "56", "ground_truth": "56",
            "extra_info": {"question": "What is 7 * 8?"}, "uid": f"judge-{round_no}",
        })  # fmt: skip
        assert judged.status_code == 200 and judged.json()["status"] == "ok", judged.text
        for i in range(4):
            client.post(f"{fleet['router']}/v1/embeddings", json={"model": "tiny-rm", "input": f"text {i}"})


def test_every_panel_expression_returns_data(fleet: dict[str, Any]) -> None:
    prometheus = fleet["prometheus"]
    exprs = [(title, expr.replace("$__rate_interval", RATE_INTERVAL)) for title, expr in panel_expressions()]
    # Every expression parses (the query API answers "success") before any data exists.
    for _title, expr in exprs:
        _query(prometheus, expr)
    rounds: list[list[str]] = []  # the panels still without data after each round of traffic

    def every_panel_has_data() -> bool:
        _traffic(fleet, len(rounds))
        rounds.append([title for title, expr in exprs if not _query(prometheus, expr)["result"]])
        return not rounds[-1]

    # A round of traffic a second (Prometheus scrapes each second) until every panel has data.
    with contextlib.suppress(AssertionError):
        eventually(every_panel_has_data, timeout_s=120, interval_s=1.0, retry_on=())
    empty = rounds[-1]
    assert empty == [], f"panels without data after {len(rounds)} rounds of traffic: {empty}"
    # Gateway numbers are not just present but plausible.
    scored = _query(prometheus, 'sum(rewardfleet_reward_fn_outcomes_total{reward_fn="gsm8k",outcome="ok"})')
    assert float(scored["result"][0]["value"][1]) >= 6


def test_every_metric_name_exists(fleet: dict[str, Any]) -> None:
    """Names in both halves of an `a or b` panel: ours and the router's must be scraped here (a typo in one
    half would otherwise hide behind the other); SGLang's `sglang:` names are checked against the wheel."""
    names = set(httpx.get(f"{fleet['prometheus']}/api/v1/label/__name__/values", timeout=10).json()["data"])
    used = {m for _t, expr in panel_expressions() for m in METRIC_RE.findall(expr)}
    missing = sorted(n for n in used if not n.startswith("sglang:") and n not in names)
    assert missing == [], missing


def test_deploy_rules_load_in_the_real_server(fleet: dict[str, Any]) -> None:
    body = httpx.get(f"{fleet['prometheus']}/api/v1/rules", timeout=10).json()
    rules = [r for g in body["data"]["groups"] for r in g["rules"]]
    assert len(rules) >= 9 and all(r["health"] != "err" for r in rules), rules
