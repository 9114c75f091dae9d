"""The keys that moved into a section (`limits`, `admission`, `cache`, `body`, `sync_pool`, `state`, `auth`,
`loading`, `pools`) keep their flat spelling in every source: YAML, the environment, `GatewayConfig(...)`, a
fleet's `gateway:` section (config/sections.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rewardfleet.services.fleet.config import FleetConfig
from rewardfleet.services.gateway.config import GatewayConfig, GatewaySettings, format_validation_error
from rewardfleet.services.gateway.config.sections import FLAT_KEYS
from rewardfleet.services.gateway.pools.config import ExternalPoolConfig


def test_flat_and_nested_keys_are_the_same_setting() -> None:
    flat = GatewayConfig(max_uid_chars=9, max_inflight_requests=3, idempotency="off")
    nested = GatewayConfig(
        limits={"max_uid_chars": 9}, admission={"max_inflight_requests": 3}, cache={"idempotency": "off"}
    )
    assert flat == nested
    assert (flat.limits.max_uid_chars, flat.admission.max_inflight_requests, flat.cache.idempotency) == (
        9,
        3,
        "off",
    )


# A valid value other than the default, where `default + 1` is none.
OTHER_VALUES: dict[str, object] = {
    "state_url": "redis://127.0.0.1:6379/1",
    "state_key_prefix": "other:",
    "pool_chunking": False,
    "worker_memory_limit_bytes": 128 * 1024 * 1024,
    "builtin_package": None,
    "reward_fns_dirs": [Path(__file__).parent.resolve()],
    "on_load_error": "skip",
    "reward_model_tokenizer": "/models/rm",
    "routers": {"j": "127.0.0.1:30000"},
    "external_pools": {"p": ExternalPoolConfig(base_url="https://api.example/v1", model="m")},
}


def test_every_flat_key_still_sets_its_section() -> None:
    for key, section in FLAT_KEYS.items():
        if section == "auth" or key == "default_router":
            continue  # secrets and a file, a router's name: tested below, each with what it needs
        default = getattr(getattr(GatewayConfig(), section), key)
        value = (
            OTHER_VALUES[key]
            if key in OTHER_VALUES
            else ["a.example"]
            if isinstance(default, list)
            else "inputs"
            if key == "idempotency"
            else default + 1
        )
        if key == "max_inflight_body_bytes":
            value = default * 2
        assert getattr(getattr(GatewayConfig(**{key: value}), section), key) == value, key


def test_a_flat_key_beside_its_section_wins() -> None:
    config = GatewayConfig(max_uid_chars=5, limits={"max_uid_chars": 7, "max_prompt_chars": 11})
    assert (config.limits.max_uid_chars, config.limits.max_prompt_chars) == (5, 11)


def test_a_bad_flat_key_is_named_by_its_section() -> None:
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(max_messages=0)
    assert format_validation_error(caught.value).startswith("limits.max_messages:")


def test_yaml_and_environment_flat_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text("gateway:\n  max_uid_chars: 4\n  max_json_depth: 3\n  admission: {retry_after_s: 2}\n")
    monkeypatch.setenv("REWARDFLEET_GATEWAY_MAX_UID_CHARS", "9")  # the environment wins over the file
    monkeypatch.setenv("REWARDFLEET_GATEWAY_ALLOWED_IMAGE_URL_HOSTS", '["img.example"]')
    monkeypatch.setenv("REWARDFLEET_GATEWAY_CACHE__RESULT_CACHE_SIZE", "11")
    settings = GatewaySettings(config_file=path)
    assert settings.limits.max_uid_chars == 9
    assert settings.limits.allowed_image_url_hosts == ["img.example"]
    assert (settings.limits.max_json_depth, settings.admission.retry_after_s) == (3, 2)
    assert settings.cache.result_cache_size == 11


def test_a_fleet_gateway_section_keeps_flat_keys() -> None:
    fleet = FleetConfig.model_validate({"gateway": {"max_inflight_requests": 5, "max_solution_chars": 10}})
    assert (fleet.gateway.admission.max_inflight_requests, fleet.gateway.limits.max_solution_chars) == (5, 10)


def test_body_pool_and_state_keys_keep_their_flat_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flat = GatewayConfig(
        workers=3, max_body_bytes=2048, state_url="redis://127.0.0.1:6379/0", state_lease_s=4
    )
    nested = GatewayConfig(
        sync_pool={"workers": 3},
        body={"max_body_bytes": 2048},
        state={"state_url": "redis://127.0.0.1:6379/0", "state_lease_s": 4},
    )
    assert flat == nested
    assert (flat.sync_pool.workers, flat.body.max_body_bytes, flat.state.state_lease_s) == (3, 2048, 4)
    path = tmp_path / "gateway.yaml"
    path.write_text("gateway:\n  workers: 2\n  pool_chunking: false\n  max_batch_samples: 7\n")
    monkeypatch.setenv("REWARDFLEET_GATEWAY_WORKERS", "5")  # the environment wins over the file
    monkeypatch.setenv("REWARDFLEET_GATEWAY_STATE_URL", "unix:///tmp/r.sock")
    monkeypatch.setenv("REWARDFLEET_GATEWAY_BODY__BODY_READ_TIMEOUT_S", "9")
    settings = GatewaySettings(config_file=path)
    assert (settings.sync_pool.workers, settings.sync_pool.pool_chunking) == (5, False)
    assert (settings.body.max_batch_samples, settings.body.body_read_timeout_s) == (7, 9)
    assert settings.state.state_url == "unix:///tmp/r.sock"
    assert GatewaySettings(config_file=path, workers=1).sync_pool.workers == 1  # a flag wins over both
    fleet = FleetConfig.model_validate({"gateway": {"workers": 2, "state_lease_s": 3}})
    assert (fleet.gateway.sync_pool.workers, fleet.gateway.state.state_lease_s) == (2, 3)


def test_bad_moved_keys_are_named_by_their_section() -> None:
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(state_url="http://redis:6379")
    assert format_validation_error(caught.value).startswith("state.state_url:")
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(workers=0)
    assert format_validation_error(caught.value).startswith("sync_pool.workers:")
    with pytest.raises(ValidationError) as caught:  # the body budget still checked against the moved key
        GatewayConfig(max_body_bytes=4096, max_inflight_body_bytes=2048)
    assert "must be at least max_body_bytes (4096)" in format_validation_error(caught.value)


KEY_A, KEY_B = "flat-key-0123456789abcdef", "other-key-0123456789abcdef"


def test_auth_keys_keep_their_flat_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_text(KEY_B + "\n")
    flat = GatewayConfig(api_keys=[KEY_A], api_keys_file=keys_file, auth_exempt_metrics=True)
    nested = GatewayConfig(
        auth={"api_keys": [KEY_A], "api_keys_file": keys_file, "auth_exempt_metrics": True}
    )
    assert flat == nested
    assert [k.get_secret_value() for k in flat.auth.api_keys] == [KEY_A] and flat.auth.auth_exempt_metrics
    monkeypatch.setenv("REWARDFLEET_GATEWAY_API_KEYS", f"{KEY_A}, {KEY_B}")  # comma-separated, as documented
    monkeypatch.setenv("REWARDFLEET_GATEWAY_AUTH_EXEMPT_METRICS", "true")
    settings = GatewaySettings()
    assert [k.get_secret_value() for k in settings.auth.api_keys] == [KEY_A, KEY_B]
    assert settings.auth.auth_exempt_metrics is True
    fleet = FleetConfig.model_validate({"gateway": {"api_keys": [KEY_A]}})
    assert [k.get_secret_value() for k in fleet.gateway.auth.api_keys] == [KEY_A]


def test_weak_or_misplaced_flat_keys_are_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(api_keys=["short"])
    assert format_validation_error(caught.value).startswith("auth.api_keys:")
    empty = tmp_path / "empty"
    empty.write_text("")
    with pytest.raises(ValidationError, match="holds no key"):
        GatewayConfig(api_keys_file=empty)
    tenant = {"api_keys": [KEY_B]}
    with pytest.raises(ValidationError, match="every key belongs to a tenant"):
        GatewayConfig(api_keys=[KEY_A], tenants={"a": tenant})


def test_loading_and_pools_keys_keep_their_flat_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fns = tmp_path / "fns"
    fns.mkdir()
    routers = {"judge": "127.0.0.1:30000", "rm": "127.0.0.1:30001"}
    flat = GatewayConfig(
        builtin_package=None,
        reward_fns_dirs=[fns],
        on_load_error="skip",
        reward_model_tokenizer="/models/rm",
        routers=routers,
        default_router="rm",
        http_max_connections=7,
        ready_check_timeout_s=2.5,
    )
    nested = GatewayConfig(
        loading={
            "builtin_package": None,
            "reward_fns_dirs": [fns],
            "on_load_error": "skip",
            "reward_model_tokenizer": "/models/rm",
        },
        pools={
            "routers": routers,
            "default_router": "rm",
            "http_max_connections": 7,
            "ready_check_timeout_s": 2.5,
        },
    )
    assert flat == nested
    assert flat.loading.reward_fns_dirs == [fns.resolve()] and flat.loading.builtin_package is None
    assert (flat.pools.default_router, flat.reward_router_address) == ("rm", "127.0.0.1:30001")
    assert GatewayConfig(routers={"only": "h:1"}).pools.default_router == "only"  # the one router, as before

    path = tmp_path / "gateway.yaml"
    path.write_text(
        "gateway:\n  routers: {judge: '127.0.0.1:1'}\n  on_load_error: skip\n"
        "  external_pools: {p: {base_url: 'https://api.example/v1', model: m}}\n"
    )
    monkeypatch.setenv("REWARDFLEET_GATEWAY_REWARD_MODEL_TOKENIZER", "/models/tok")  # as deploy/ sets it
    monkeypatch.setenv("REWARDFLEET_GATEWAY_ROUTERS", '{"judge": "127.0.0.1:2"}')  # the environment wins
    monkeypatch.setenv("REWARDFLEET_GATEWAY_POOLS__HTTP_MAX_CONNECTIONS", "9")
    settings = GatewaySettings(config_file=path)
    assert settings.loading.reward_model_tokenizer == "/models/tok"
    assert settings.pools.routers == {"judge": "127.0.0.1:2"} and settings.pools.http_max_connections == 9
    assert (settings.loading.on_load_error, settings.pools.external_pools["p"].model) == ("skip", "m")
    assert GatewaySettings(config_file=path, routers={"x": "h:3"}).pools.routers == {
        "x": "h:3"
    }  # a flag wins

    fleet = FleetConfig.model_validate(
        {"gateway": {"reward_model_tokenizer": "/t", "http_max_connections": 3}}
    )
    assert (fleet.gateway.loading.reward_model_tokenizer, fleet.gateway.pools.http_max_connections) == (
        "/t",
        3,
    )


def test_bad_loading_and_pools_keys_are_named_by_their_section(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(routers={"j": "http://127.0.0.1:1"})
    assert format_validation_error(caught.value).startswith("pools.routers:")
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(routers={"j": "127.0.0.1:1"}, default_router="k")
    assert "default_router: 'k' is not one of routers ['j']" in format_validation_error(caught.value)
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(reward_fns_dirs=[tmp_path / "absent"])
    assert format_validation_error(caught.value).startswith("loading.reward_fns_dirs:")
    with pytest.raises(ValidationError) as caught:
        GatewayConfig(on_load_error="ignore")
    assert format_validation_error(caught.value).startswith("loading.on_load_error:")


def test_the_gateway_config_has_at_most_25_direct_fields() -> None:
    assert len(GatewayConfig.model_fields) <= 25, sorted(GatewayConfig.model_fields)
