"""deploy/docker-compose.yml: the compose-spec schema, and what the schema cannot see (references, flags)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from sglang_router.launch_router import parse_router_args
from typer.testing import CliRunner

from rewardfleet.services.cli import app
from rewardfleet.services.gateway.config import GatewaySettings
from tests.deploy.helpers import (
    COMPOSE_FILE,
    COMPOSE_VAR_RE,
    DEPLOY,
    ENV_EXAMPLE,
    env_example,
    interpolate,
    load_compose,
    tool,
)
from tests.deploy.sglang_flags import load_snapshot, unknown_flags

MODEL_ALIASES = {"judge", "reward-model"}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_compose()


def _services(compose: dict[str, Any], profile: str | None = None) -> dict[str, dict[str, Any]]:
    """Services that `docker compose --profile <profile> up` starts (no profile: the unprofiled ones)."""
    return {
        name: svc
        for name, svc in compose["services"].items()
        if not svc.get("profiles") or (profile is not None and profile in svc["profiles"])
    }


def _cli_options(*command: str) -> set[str]:
    """Every option a `rewardfleet` command accepts, read from its own --help."""
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", result.output))


def test_schema_valid() -> None:
    exe = tool("check-jsonschema")
    proc = subprocess.run(
        [exe, "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_schema_check_can_fail(tmp_path: Path) -> None:
    """The schema really bites: an unknown depends_on condition is rejected."""
    exe = tool("check-jsonschema")
    broken = tmp_path / "docker-compose.yml"
    good = "judge-router: {condition: service_healthy}"
    broken.write_text(COMPOSE_FILE.read_text().replace(good, "judge-router: {condition: service_up}"))
    proc = subprocess.run(
        [exe, "--builtin-schema", "vendor.compose-spec", str(broken)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode != 0


def test_required_variables_fail_with_a_message() -> None:
    text = COMPOSE_FILE.read_text()
    required = {m.group(1) for m in COMPOSE_VAR_RE.finditer(text) if m.group(2) in (":?", "?")}
    assert required == {"JUDGE_MODEL", "REWARD_MODEL", "GRAFANA_ADMIN_PASSWORD"}
    for m in COMPOSE_VAR_RE.finditer(text):
        if m.group(2) == ":?":
            assert m.group(3).strip(), f"${{{m.group(1)}:?}} has no message"
    with pytest.raises(KeyError, match="GRAFANA_ADMIN_PASSWORD"):
        interpolate(text, {k: v for k, v in env_example().items() if k != "GRAFANA_ADMIN_PASSWORD"})


def test_every_variable_is_in_env_example() -> None:
    documented = env_example()
    used = {m.group(1) for m in COMPOSE_VAR_RE.finditer(COMPOSE_FILE.read_text())}
    assert used - set(documented) == set(), f"add these to {ENV_EXAMPLE.name}"
    assert set(documented) - used - {"COMPOSE_PROFILES"} == set(), "documented but unused"
    assert documented["COMPOSE_PROFILES"] in ("gpu", "cpu")


def test_depends_on_volumes_and_files_resolve(compose: dict[str, Any]) -> None:
    services = compose["services"]
    named_volumes = set(compose.get("volumes") or {})
    for name, svc in services.items():
        deps = svc.get("depends_on") or {}
        for dep, spec in deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps):
            assert dep in services, f"{name}: depends_on {dep!r} is not a service"
            assert spec.get("condition") in (None, "service_started", "service_healthy"), (name, dep)
            if spec.get("condition") == "service_healthy":
                assert "healthcheck" in services[dep] or services[dep].get("build"), (
                    f"{name} waits for {dep} to be healthy but {dep} has no healthcheck"
                )
        for volume in svc.get("volumes") or []:
            source = volume.split(":", 1)[0]
            if source.startswith((".", "/")):
                if source == "./models":  # MODELS_DIR: the user's checkpoints, absent in the repo
                    continue
                assert (DEPLOY / source).exists(), f"{name}: bind source {source} does not exist"
            else:
                assert source in named_volumes, f"{name}: volume {source!r} is not declared"
        build = svc.get("build")
        if build:
            context = (DEPLOY / build["context"]).resolve()
            assert (context / build["dockerfile"]).is_file(), f"{name}: {build['dockerfile']} missing"


def test_profiles_swap_the_model_servers(compose: dict[str, Any]) -> None:
    for profile in ("gpu", "cpu"):
        running = _services(compose, profile)
        aliases: dict[str, str] = {}
        for name, svc in running.items():
            for alias in ((svc.get("networks") or {}).get("default") or {}).get("aliases", []):
                assert alias not in aliases, f"{profile}: alias {alias} on {aliases.get(alias)} and {name}"
                aliases[alias] = name
        assert set(aliases) == MODEL_ALIASES, profile
        # Every hard dependency of a running service runs in this profile too.
        for name, svc in running.items():
            for dep, spec in (svc.get("depends_on") or {}).items():
                if spec.get("required", True):
                    assert dep in running, f"{profile}: {name} needs {dep}, which this profile does not start"
        # The router of each pool waits for that pool's server in this profile.
        for pool in MODEL_ALIASES:
            deps = running[f"{pool}-router"]["depends_on"]
            assert aliases[pool] in deps and deps[aliases[pool]]["condition"] == "service_healthy"


def test_sglang_pools_reserve_gpus_by_id(compose: dict[str, Any]) -> None:
    flags = load_snapshot()
    gpu = _services(compose, "gpu")
    ids = []
    for name in ("judge-sglang", "reward-model-sglang"):
        svc = gpu[name]
        assert svc["image"].startswith("lmsysorg/sglang:v") and not svc["image"].endswith(":latest")
        assert svc["ipc"] == "host"
        assert any(v.startswith("model-cache:") for v in svc["volumes"])
        assert "healthcheck" in svc
        (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
        ids += device["device_ids"]
        cmd = svc["command"]
        assert cmd[:3] == ["python3", "-m", "sglang.launch_server"]
        assert unknown_flags(cmd[3:], flags) == [], name
        assert "--enable-metrics" in cmd
        assert ("--is-embedding" in cmd) == (name == "reward-model-sglang")
    assert len(set(ids)) == 2, "the two pools share a GPU"


def test_sglang_flag_check_bites() -> None:
    flags = load_snapshot()
    assert unknown_flags(["--model-path", "m", "--is-embedding", "--enable-metrics"], flags) == []
    assert unknown_flags(["--model-pth", "m"], flags) != []
    assert unknown_flags(["--port"], flags) == ["--port needs a value"]


def test_cpu_model_servers_use_real_serve_model_flags(compose: dict[str, Any]) -> None:
    options = _cli_options("serve-model")
    for name in ("judge-cpu", "reward-model-cpu"):
        cmd = compose["services"][name]["command"]
        used = {a for a in cmd if a.startswith("--")}
        assert used <= options, f"{name}: {used - options} not in `rewardfleet serve-model --help`"
        assert cmd[cmd.index("--port") + 1] == "30000"
        assert ("--is-embedding" in cmd) == (name == "reward-model-cpu")
    build = compose["services"]["judge-cpu"]["build"]
    dockerfile = (DEPLOY / build["context"] / build["dockerfile"]).resolve()
    assert 'ENTRYPOINT ["rewardfleet", "serve-model"]' in dockerfile.read_text()


def test_router_commands_parse_with_the_binary(compose: dict[str, Any]) -> None:
    services = compose["services"]
    prometheus_ports = set()
    for pool in MODEL_ALIASES:
        name = f"{pool}-router"
        args = parse_router_args([str(a) for a in services[name]["command"]])  # SystemExit on a bad flag
        assert args.host == "0.0.0.0" and args.port == 30000
        assert args.prometheus_host == "0.0.0.0"
        prometheus_ports.add(args.prometheus_port)
        (url,) = args.worker_urls
        parts = urlsplit(url)
        assert parts.hostname == pool and parts.port == 30000
        # The router's healthcheck and port agree with what it listens on.
        assert "127.0.0.1:30000/readiness" in " ".join(services[name]["healthcheck"]["test"])
    assert len(prometheus_ports) == 2, "every router needs its own --prometheus-port"


def test_gateway_service_and_config(compose: dict[str, Any]) -> None:
    gateway = compose["services"]["gateway"]
    cmd = gateway["command"]
    assert cmd[0] == "gateway"
    used = {a for a in cmd if a.startswith("--")}
    assert used <= _cli_options("gateway")
    assert "./reward_fns:/srv/reward_fns:ro" in gateway["volumes"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in gateway["volumes"]}
    config_in_container = cmd[cmd.index("--config") + 1]
    config_file = DEPLOY / mounts[config_in_container]
    settings = GatewaySettings(config_file=config_file)
    # Routers are named by compose service names, on the port the routers listen on.
    for address in settings.pools.routers.values():
        host, port = address.rsplit(":", 1)
        assert host in compose["services"], f"router address {address}: no such service"
        router_args = parse_router_args([str(a) for a in compose["services"][host]["command"]])
        assert router_args.port == int(port)
        assert compose["services"]["gateway"]["depends_on"][host]["condition"] == "service_healthy"
    assert settings.pools.default_router == "reward_model"
    assert (DEPLOY / "reward_fns").is_dir()
    # The shared state store: a compose service the gateway waits for, on the port state_url names.
    assert settings.state.state_url == "redis://redis:6379/0"
    assert gateway["depends_on"]["redis"]["condition"] == "service_healthy"
    assert compose["services"]["redis"]["command"][0] == "redis-server"


def test_prometheus_targets_name_services(compose: dict[str, Any]) -> None:
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    services = compose["services"]
    hosts = set(services) | MODEL_ALIASES
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"gateway", "router", "model_server"}
    for job in jobs.values():
        for static in job["static_configs"]:
            for target in static["targets"]:
                host, port = target.rsplit(":", 1)
                assert host in hosts, f"{job['job_name']}: {target} is not a service"
                if job["job_name"] == "router":
                    args = parse_router_args([str(a) for a in services[host]["command"]])
                    assert args.prometheus_port == int(port), target
                    assert static["labels"]["pool"] in ("judge", "reward_model")
    mounted = {v.split(":")[0] for v in services["prometheus"]["volumes"]}
    for rule_file in config["rule_files"]:
        assert f"./prometheus/{rule_file}" in mounted


def test_healthchecks_use_no_curl(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        check = svc.get("healthcheck")
        if check:
            assert "curl" not in " ".join(check["test"]), name
