"""The gateway container's sandbox settings as shipped: compose's security options and the Kubernetes pod's
securityContext name our seccomp profile (deploy/seccomp/gateway.json) and nothing more than the `code`
sandbox needs; the DaemonSet installs that same profile where the kubelet looks for it; the Sandbox
Fusion alternative renders and validates. Schemas: tests/deploy/test_compose.py and test_k8s.py check the
whole files; this file renders the optional Sandbox Fusion kustomization through the same checks."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.helpers import DEPLOY, K8S, tool

PROFILE = DEPLOY / "seccomp" / "gateway.json"
KUBELET_SECCOMP_ROOT = "/var/lib/kubelet/seccomp"


def _render(folder: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [tool("kubectl"), "kustomize", str(folder)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


@pytest.fixture(scope="module")
def k8s() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in _render(K8S)}


def test_compose_gateway_gets_our_profile_and_no_capability() -> None:
    gateway = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]["gateway"]
    options = dict(opt.split("=", 1) for opt in gateway["security_opt"])
    assert (DEPLOY / options["seccomp"]).resolve() == PROFILE.resolve()  # compose resolves it from deploy/
    assert options == {
        "seccomp": "./seccomp/gateway.json",
        "apparmor": "unconfined",
        "systempaths": "unconfined",
        "no-new-privileges": "true",
    }
    assert gateway["cap_drop"] == ["ALL"]
    assert "cap_add" not in gateway and not gateway.get("privileged") and "user" not in gateway
    # No other service is loosened.
    others = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())["services"]
    assert [n for n, s in others.items() if "security_opt" in s or "cap_add" in s] == ["gateway"]


def test_k8s_gateway_pod_settings(k8s: dict[tuple[str, str], dict[str, Any]]) -> None:
    pod = k8s[("Deployment", "gateway")]["spec"]["template"]["spec"]
    assert pod["hostUsers"] is False  # Kubernetes allows procMount Unmasked only then
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"] == {
        "type": "Localhost",
        "localhostProfile": "profiles/rewardfleet-gateway.json",
    }
    assert pod["securityContext"]["appArmorProfile"] == {"type": "Unconfined"}
    (gateway,) = pod["containers"]
    assert gateway["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "procMount": "Unmasked",
    }


def test_daemonset_installs_the_same_profile_where_the_gateway_names_it(
    k8s: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """Runs the init container's own command against a temporary kubelet directory: the file it leaves is
    byte for byte deploy/seccomp/gateway.json, at the gateway's localhostProfile path."""
    pod = k8s[("DaemonSet", "seccomp-profile")]["spec"]["template"]["spec"]
    (install,) = pod["initContainers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in install["volumeMounts"]}
    assert volumes["host-seccomp"]["hostPath"]["path"] == KUBELET_SECCOMP_ROOT
    config_map = k8s[("ConfigMap", volumes["profile"]["configMap"]["name"])]
    (key,) = config_map["data"]
    assert config_map["data"][key] == PROFILE.read_text()
    assert (K8S / "seccomp" / "rewardfleet-gateway.json").read_bytes() == PROFILE.read_bytes()

    profile_dir, kubelet_dir = tmp_path / "profile", tmp_path / "kubelet-seccomp"
    profile_dir.mkdir()
    (profile_dir / key).write_text(config_map["data"][key])
    script = install["command"][2]
    script = script.replace(f"{mounts['profile']}/", f"{shlex.quote(str(profile_dir))}/")
    script = script.replace(f"{mounts['host-seccomp']}/", f"{shlex.quote(str(kubelet_dir))}/")
    subprocess.run(["sh", "-c", script], check=True, timeout=30)
    gateway_pod = k8s[("Deployment", "gateway")]["spec"]["template"]["spec"]
    installed = kubelet_dir / gateway_pod["securityContext"]["seccompProfile"]["localhostProfile"]
    assert installed.read_bytes() == PROFILE.read_bytes()
    assert oct(installed.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in installed.parent.iterdir()] == [installed.name]  # no temporary file left
    assert install["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert install["securityContext"]["readOnlyRootFilesystem"] is True


def test_sandbox_fusion_alternative_renders_validates_and_is_reachable_only_from_gateways(
    k8s: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    docs = _render(K8S / "sandbox-fusion")
    rendered = tmp_path / "fusion.yaml"
    rendered.write_text(yaml.safe_dump_all(docs))
    proc = subprocess.run(
        [tool("kubernetes-validate"), "--strict", "--no-warn", str(rendered)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    objects = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    service, policy = objects[("Service", "sandbox-fusion")], objects[("NetworkPolicy", "sandbox-fusion")]
    assert all(d["metadata"]["namespace"] == "rewardfleet" for d in docs)
    # The URL the kustomization tells users to set: http://sandbox-fusion:8080/run_code
    assert (
        "sandbox_fusion_url:\n# http://sandbox-fusion:8080/run_code"
        in (K8S / "sandbox-fusion" / "kustomization.yaml").read_text()
    )
    assert service["spec"]["ports"][0]["port"] == 8080
    gateway_labels = k8s[("Deployment", "gateway")]["spec"]["template"]["metadata"]["labels"]
    (rule,) = policy["spec"]["ingress"]
    selector = rule["from"][0]["podSelector"]["matchLabels"]
    assert all(gateway_labels.get(k) == v for k, v in selector.items())
    assert policy["spec"]["egress"] == [] and "Egress" in policy["spec"]["policyTypes"]
