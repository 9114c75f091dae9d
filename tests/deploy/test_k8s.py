"""deploy/k8s: rendered by the real kustomize (kubectl), validated against the Kubernetes schemas, and walked
for what schemas cannot see: names, labels, selectors, ports and ConfigMaps that must agree."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from sglang_router.launch_router import parse_router_args

from rewardfleet.services.gateway.config import GatewaySettings
from tests.deploy.helpers import DEPLOY, K8S, tool
from tests.deploy.sglang_flags import load_snapshot, unknown_flags


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc = subprocess.run(
        [tool("kubectl"), "kustomize", str(K8S)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out = tmp_path_factory.mktemp("k8s") / "rendered.yaml"
    out.write_text(proc.stdout)
    return out


@pytest.fixture(scope="module")
def docs(rendered: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(rendered.read_text()) if d]


def by_kind(docs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def container(deploy: dict[str, Any]) -> dict[str, Any]:
    (c,) = deploy["spec"]["template"]["spec"]["containers"]
    return c


def test_schemas(rendered: Path) -> None:
    proc = subprocess.run(
        [tool("kubernetes-validate"), "--strict", "--no-warn", str(rendered)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_kinds(docs: list[dict[str, Any]]) -> None:
    kinds = {d["kind"] for d in docs}
    assert {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "ConfigMap",
            "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor"} <= kinds  # fmt: skip
    assert all(d["metadata"].get("namespace") == "rewardfleet" for d in docs if d["kind"] != "Namespace")


def test_deployments_select_their_pods(docs: list[dict[str, Any]]) -> None:
    for name, deploy in by_kind(docs, "Deployment").items():
        selector = deploy["spec"]["selector"]["matchLabels"]
        assert matches(selector, deploy["spec"]["template"]["metadata"]["labels"]), name


def test_services_select_pods_and_ports(docs: list[dict[str, Any]]) -> None:
    deployments = by_kind(docs, "Deployment").values()
    for name, svc in by_kind(docs, "Service").items():
        targets = [
            d
            for d in deployments
            if matches(svc["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
        ]
        assert len(targets) == 1, f"service {name} selects {len(targets)} deployments"
        port_names = {p["name"] for p in container(targets[0])["ports"]}
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in port_names, f"{name}: targetPort {port['targetPort']}"


def test_configmaps_and_service_accounts_exist(docs: list[dict[str, Any]]) -> None:
    configmaps = by_kind(docs, "ConfigMap")
    accounts = by_kind(docs, "ServiceAccount")
    for name, deploy in by_kind(docs, "Deployment").items():
        pod = deploy["spec"]["template"]["spec"]
        if "serviceAccountName" in pod:
            assert pod["serviceAccountName"] in accounts, name
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                assert volume["configMap"]["name"] in configmaps, (name, volume)
        c = container(deploy)
        for source in c.get("envFrom", []):
            assert source["configMapRef"]["name"] in configmaps, name
        for env in c.get("env", []):
            ref = env.get("valueFrom", {}).get("configMapKeyRef")
            if ref:
                assert ref["key"] in configmaps[ref["name"]]["data"], (name, ref)
        mounts = {m["name"] for m in c.get("volumeMounts", [])}
        assert mounts <= {v["name"] for v in pod.get("volumes", [])}, name


def test_router_rbac(docs: list[dict[str, Any]]) -> None:
    (binding,) = by_kind(docs, "RoleBinding").values()
    role = by_kind(docs, "Role")[binding["roleRef"]["name"]]
    assert binding["roleRef"]["kind"] == "Role"
    (subject,) = binding["subjects"]
    assert subject["kind"] == "ServiceAccount" and subject["name"] in by_kind(docs, "ServiceAccount")
    (rule,) = role["rules"]
    assert rule["resources"] == ["pods"] and set(rule["verbs"]) == {"get", "list", "watch"}


def test_routers_discover_their_pool(docs: list[dict[str, Any]]) -> None:
    deployments = by_kind(docs, "Deployment")
    flags = load_snapshot()
    pools = {}
    for name, deploy in deployments.items():
        c = container(deploy)
        if c["image"].startswith("lmsysorg/sglang:v"):
            assert c["command"] == ["python3", "-m", "sglang.launch_server"]
            assert unknown_flags(c["args"], flags) == [], name
            assert "--enable-metrics" in c["args"]
            pool = deploy["spec"]["template"]["metadata"]["labels"]["rewardfleet.io/pool"]
            assert ("--is-embedding" in c["args"]) == (pool == "reward_model")
            assert c["resources"]["limits"]["nvidia.com/gpu"] == 1
            pools[pool] = deploy
    assert set(pools) == {"judge", "reward_model"}
    routers = [d for d in deployments.values() if container(d)["image"].startswith("rewardfleet/router:")]
    assert len(routers) == 2
    for router in routers:
        c = container(router)
        args = parse_router_args([a.replace("$(POD_NAMESPACE)", "rewardfleet") for a in c["args"]])
        assert args.service_discovery
        selector = dict(args.selector)  # the binary parses `k=v` items into a dict
        (target,) = [
            d for d in pools.values() if matches(selector, d["spec"]["template"]["metadata"]["labels"])
        ]
        assert args.service_discovery_port == container(target)["ports"][0]["containerPort"]
        assert {e["name"] for e in c["env"]} >= {"POD_NAMESPACE"}
        assert c["livenessProbe"]["httpGet"]["path"] == "/liveness"
        assert c["readinessProbe"]["httpGet"]["path"] == "/readiness"
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports["api"] == args.port and ports["metrics"] == args.prometheus_port


def test_gateway(docs: list[dict[str, Any]]) -> None:
    gateway = by_kind(docs, "Deployment")["gateway"]
    c = container(gateway)
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    assert c["readinessProbe"]["httpGet"]["path"] == "/ready"
    pod_labels = gateway["spec"]["template"]["metadata"]["labels"]
    hpa = by_kind(docs, "HorizontalPodAutoscaler")["gateway"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gateway"}
    pdb = by_kind(docs, "PodDisruptionBudget")["gateway"]
    assert matches(pdb["spec"]["selector"]["matchLabels"], pod_labels)
    assert pdb["spec"]["minAvailable"] < hpa["spec"]["minReplicas"] <= gateway["spec"]["replicas"]
    # The gateway config in the ConfigMap loads, and names routers by their Service names and ports.
    config_name = next(v["configMap"]["name"] for v in gateway["spec"]["template"]["spec"]["volumes"]
                       if v["name"] == "config")  # fmt: skip
    text = by_kind(docs, "ConfigMap")[config_name]["data"]["gateway.yaml"]
    assert text == (DEPLOY / "gateway" / "gateway.yaml").read_text(), "k8s and compose gateway configs differ"
    services = by_kind(docs, "Service")
    settings = GatewaySettings(config_file=K8S / "config" / "gateway.yaml")
    for address in settings.pools.routers.values():
        host, port = address.rsplit(":", 1)
        assert int(port) in {p["port"] for p in services[host]["spec"]["ports"]}, address


def test_gateways_share_the_redis_service(docs: list[dict[str, Any]]) -> None:
    """`state_url` names the redis Service and its port; the Deployment behind it runs redis-server without
    persistence (everything in it has a TTL) on that port."""
    settings = GatewaySettings(config_file=K8S / "config" / "gateway.yaml")
    assert settings.state.state_url is not None
    host, port = settings.state.state_url.removeprefix("redis://").split("/")[0].rsplit(":", 1)
    service = by_kind(docs, "Service")[host]
    assert int(port) in {p["port"] for p in service["spec"]["ports"]}
    redis = by_kind(docs, "Deployment")[host]
    assert matches(service["spec"]["selector"], redis["spec"]["template"]["metadata"]["labels"])
    c = container(redis)
    assert c["args"][0] == "redis-server" and "--appendonly" in c["args"]
    assert {p["containerPort"] for p in c["ports"]} == {int(port)}


def test_servicemonitor_scrapes_every_job(docs: list[dict[str, Any]]) -> None:
    (monitor,) = by_kind(docs, "ServiceMonitor").values()
    expression = monitor["spec"]["selector"]["matchExpressions"][0]
    job_label = monitor["spec"]["jobLabel"]
    endpoint_ports = {e["port"] for e in monitor["spec"]["endpoints"]}
    jobs = set()
    for name, svc in by_kind(docs, "Service").items():
        if svc["metadata"]["labels"].get("app.kubernetes.io/component") == "state-store":
            continue  # Redis serves no /metrics; the gateways export its latency and errors themselves
        job = svc["metadata"]["labels"].get(job_label)
        assert job in expression["values"], f"service {name} is not scraped"
        jobs.add(job)
        scraped = endpoint_ports & {p["name"] for p in svc["spec"]["ports"]}
        assert len(scraped) == 1, f"service {name}: scraped ports {scraped}"
    assert jobs == {"gateway", "router", "model_server"}
