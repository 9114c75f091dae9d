"""deploy/k8s autoscaling, both ways: the default HPAs (custom metrics from prometheus-adapter) and the KEDA
component (deploy/k8s-keda), rendered by the real kustomize and validated against the Kubernetes schemas
(kubernetes-validate --strict) and KEDA's CRD schema (cloudcoil-models-keda's pydantic models); the PromQL
parsed by promtool; scale-down drains measured against the gateway config and SGLang's own drain."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewardfleet.services.gateway.admission.config import AdmissionConfig
from rewardfleet.services.gateway.config import GatewaySettings
from tests.deploy.helpers import DEPLOY, K8S, tool
from tests.deploy.test_k8s import by_kind, container, matches
from tests.sglang_conformance import sglang_source as sgl

KEDA_OVERLAY = DEPLOY / "k8s-keda"
ADAPTER_VALUES = K8S / "autoscaling" / "prometheus-adapter-values.yaml"
AUTOSCALED = {"gateway", "sglang-judge", "sglang-reward-model"}


def kustomize(path: Path, out: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [tool("kubectl"), "kustomize", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out.write_text(proc.stdout)
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    tmp = tmp_path_factory.mktemp("autoscaling")
    return {
        "hpa": (tmp / "hpa.yaml", kustomize(K8S, tmp / "hpa.yaml")),
        "keda": (tmp / "keda.yaml", kustomize(KEDA_OVERLAY, tmp / "keda.yaml")),
    }


def adapter_rules() -> list[dict[str, Any]]:
    return yaml.safe_load(ADAPTER_VALUES.read_text())["rules"]["custom"]


def keda_triggers(scaled: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in scaled["spec"]["triggers"] if t["type"] == "prometheus"]


def test_keda_overlay_passes_the_kubernetes_schemas(rendered: dict[str, Any]) -> None:
    """The default render is validated by test_k8s.test_schemas; here the KEDA one (its Deployments carry the
    same drain fields; ScaledObject itself is a CRD the validator has no schema for, next test)."""
    path, _ = rendered["keda"]
    proc = subprocess.run(
        [tool("kubernetes-validate"), "--strict", "--no-warn", str(path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _keda_check(doc: dict[str, Any]) -> None:
    """Validate against KEDA's ScaledObject schema; unknown fields (which pydantic drops) fail too."""
    from cloudcoil.models.keda.v1alpha1 import ScaledObject

    model = ScaledObject.model_validate(doc)
    back = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if back != doc:
        raise ValueError(f"fields KEDA's schema does not know: {doc} != {back}")


def test_scaled_objects_pass_kedas_schema(rendered: dict[str, Any]) -> None:
    _, docs = rendered["keda"]
    scaled = by_kind(docs, "ScaledObject")
    assert set(scaled) == AUTOSCALED
    for doc in scaled.values():
        _keda_check(doc)


def test_keda_schema_check_can_fail(rendered: dict[str, Any]) -> None:
    _, docs = rendered["keda"]
    doc = by_kind(docs, "ScaledObject")["gateway"]
    typo = {**doc, "spec": {**doc["spec"], "minReplicas": 2}}  # an HPA field name, not KEDA's
    with pytest.raises(ValueError, match="minReplicas"):
        _keda_check(typo)
    wrong_type = {**doc, "spec": {**doc["spec"], "maxReplicaCount": "many"}}
    with pytest.raises(ValueError, match="maxReplicaCount"):
        _keda_check(wrong_type)


def test_hpas_target_deployments_and_adapter_metrics(rendered: dict[str, Any]) -> None:
    _, docs = rendered["hpa"]
    hpas = by_kind(docs, "HorizontalPodAutoscaler")
    deployments = by_kind(docs, "Deployment")
    served = {r["name"]["as"] for r in adapter_rules()}
    assert set(hpas) == AUTOSCALED
    for name, hpa in hpas.items():
        spec = hpa["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert name in deployments
        assert 1 <= spec["minReplicas"] < spec["maxReplicas"]
        pods_metrics = [m["pods"] for m in spec["metrics"] if m["type"] == "Pods"]
        assert len(pods_metrics) == 1, name
        assert pods_metrics[0]["metric"]["name"] in served
        assert pods_metrics[0]["target"]["type"] == "AverageValue"
        up, down = spec["behavior"]["scaleUp"], spec["behavior"]["scaleDown"]
        assert up["stabilizationWindowSeconds"] <= 30 < 600 <= down["stabilizationWindowSeconds"], name
        assert down["policies"] == [
            {"type": "Pods", "value": 1, "periodSeconds": down["policies"][0]["periodSeconds"]}
        ]
    assert (
        hpas["gateway"]["spec"]["metrics"][0]["pods"]["metric"]["name"]
        == "rewardfleet_gateway_inflight_requests"
    )
    for pool in ("sglang-judge", "sglang-reward-model"):
        assert hpas[pool]["spec"]["metrics"][0]["pods"]["metric"]["name"] == "sglang_num_queue_reqs"


def test_keda_mirrors_the_hpas(rendered: dict[str, Any]) -> None:
    """Same bounds, behaviour and per-replica targets both ways; the KEDA render has no HPA of its own (KEDA
    makes one per ScaledObject, and two HPAs on one Deployment fight)."""
    hpas = by_kind(rendered["hpa"][1], "HorizontalPodAutoscaler")
    keda_docs = rendered["keda"][1]
    assert by_kind(keda_docs, "HorizontalPodAutoscaler") == {}
    for name, scaled in by_kind(keda_docs, "ScaledObject").items():
        hpa, spec = hpas[name]["spec"], scaled["spec"]
        assert spec["scaleTargetRef"] == {"name": name}
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (hpa["minReplicas"], hpa["maxReplicas"])
        assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"] == hpa["behavior"]
        (trigger,) = keda_triggers(scaled)
        (target,) = [m["pods"]["target"]["averageValue"] for m in hpa["metrics"] if m["type"] == "Pods"]
        assert trigger["metricType"] == "AverageValue" and trigger["metadata"]["threshold"] == target
        cpu = [
            m["resource"]["target"]["averageUtilization"] for m in hpa["metrics"] if m["type"] == "Resource"
        ]
        keda_cpu = [int(t["metadata"]["value"]) for t in spec["triggers"] if t["type"] == "cpu"]
        assert cpu == keda_cpu, name


def test_promql_parses(tmp_path: Path, rendered: dict[str, Any]) -> None:
    """Every KEDA query and every adapter metricsQuery (templated as the adapter does) through promtool."""
    exprs = [t["metadata"]["query"] for s in by_kind(rendered["keda"][1], "ScaledObject").values()
             for t in keda_triggers(s)]  # fmt: skip
    for rule in adapter_rules():
        exprs.append(rule["seriesQuery"])
        exprs.append(
            render_adapter_query(rule, series=rule["name"]["matches"].strip("^$"), pods=["p-1", "p-2"])
        )
    rules = {"groups": [{"name": "autoscaling", "rules": [
        {"record": f"autoscaling:check_{i}", "expr": e} for i, e in enumerate(exprs)]}]}  # fmt: skip
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run(
        [tool("promtool"), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [{"record": "x", "expr": "sum(("}]}]}))
    broken = subprocess.run(
        [tool("promtool"), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert broken.returncode != 0


def render_adapter_query(
    rule: dict[str, Any], series: str, pods: list[str], namespace: str = "rewardfleet"
) -> str:
    """prometheus-adapter's templating of metricsQuery for a Pods metric of `pods` in `namespace`."""
    matchers = f'namespace="{namespace}",pod=~"{"|".join(pods)}"'
    return (
        rule["metricsQuery"]
        .replace("<<.Series>>", series)
        .replace("<<.LabelMatchers>>", matchers)
        .replace("<<.GroupBy>>", "pod")
    )


def _grace_and_prestop(deploy: dict[str, Any]) -> tuple[int, int]:
    pod = deploy["spec"]["template"]["spec"]
    return pod["terminationGracePeriodSeconds"], container(deploy)["lifecycle"]["preStop"]["sleep"]["seconds"]


def test_gateway_scale_down_drains_the_longest_call(
    rendered: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """preStop (the pod leaves the endpoints), then the gateway's drain for shutdown_grace_s, which outlasts
    the longest function timeout_s; the kubelet's SIGKILL comes only after both. The settings are built as
    the pod builds them: the mounted config plus the container's plain env values."""
    for _, docs in rendered.values():
        gateway = by_kind(docs, "Deployment")["gateway"]
        with monkeypatch.context() as m:
            for e in container(gateway)["env"]:
                if "value" in e:
                    m.setenv(e["name"], e["value"])
            settings = GatewaySettings(config_file=K8S / "config" / "gateway.yaml")
        longest_call_s = max(f.timeout_s for f in settings.functions.values())
        assert settings.admission.shutdown_grace_s != AdmissionConfig.model_fields["shutdown_grace_s"].default
        grace_s, prestop_s = _grace_and_prestop(gateway)
        assert settings.admission.shutdown_grace_s > longest_call_s
        assert grace_s > prestop_s + settings.admission.shutdown_grace_s
        pdb = by_kind(docs, "PodDisruptionBudget")["gateway"]
        assert matches(
            pdb["spec"]["selector"]["matchLabels"], gateway["spec"]["template"]["metadata"]["labels"]
        )


def _module_int(module: ast.Module, name: str) -> int:
    for node in module.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return int(ast.literal_eval(node.value))
    raise AssertionError(f"{name} not found")


def _sigterm_drain_poll_s() -> float:
    """SGLang 0.5.23 `TokenizerManager.sigterm_watchdog`: after SIGTERM it loops while `rid_to_state` (the
    requests it holds) is not empty, sleeping this long between checks, with no deadline of its own."""
    (watchdog,) = [n for n in ast.walk(sgl.source(sgl.TOKENIZER_MANAGER))
                   if isinstance(n, ast.AsyncFunctionDef) and n.name == "sigterm_watchdog"]  # fmt: skip
    (drain,) = [n for n in watchdog.body if isinstance(n, ast.While) and ast.unparse(n.test) == "True"]
    text = ast.unparse(drain)
    assert "len(self.rid_to_state)" in text and "monotonic" not in text, "SGLang's drain changed"
    sleeps = [ast.literal_eval(c.args[0]) for c in ast.walk(watchdog)
              if isinstance(c, ast.Call) and ast.unparse(c.func) == "asyncio.sleep"]  # fmt: skip
    return float(max(sleeps))


def test_sglang_scale_down_outlasts_a_judge_call(rendered: dict[str, Any]) -> None:
    """On SIGTERM SGLang turns /ready 503 (is_ready -> is_healthy reads gracefully_exit) and waits for the
    requests it holds; the router keeps sending until the readiness probe marks the pod unready. The grace
    period covers the preStop, that delay, the longest judge call, SGLang's drain poll and its schedulers'
    exit."""
    tokenizer_manager = sgl.source(sgl.TOKENIZER_MANAGER)
    methods = {n.name: ast.unparse(n) for n in ast.walk(tokenizer_manager) if isinstance(n, ast.FunctionDef)}
    assert "self.is_healthy()" in methods["is_ready"] and "not self.gracefully_exit" in methods["is_healthy"]
    scheduler_exit_s = _module_int(tokenizer_manager, "_SCHEDULER_EXIT_TIMEOUT_SECS")
    poll_s = _sigterm_drain_poll_s()
    settings = GatewaySettings(config_file=K8S / "config" / "gateway.yaml")
    longest_call_s = max(f.timeout_s for f in settings.functions.values())
    for _, docs in rendered.values():
        for name in ("sglang-judge", "sglang-reward-model"):
            deploy = by_kind(docs, "Deployment")[name]
            readiness = container(deploy)["readinessProbe"]
            unready_s = readiness["periodSeconds"] * readiness.get("failureThreshold", 3)
            grace_s, prestop_s = _grace_and_prestop(deploy)
            assert grace_s >= prestop_s + unready_s + longest_call_s + poll_s + scheduler_exit_s, name
