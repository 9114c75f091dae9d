"""The keys that moved into a section (`limits`, `admission`, `cache`) keep their flat spelling in every
source: YAML, the environment, `GatewayConfig(...)`, a fleet's `gateway:` section (config/sections.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rewardfleet.services.fleet.config import FleetConfig
from rewardfleet.services.gateway.config import GatewayConfig, GatewaySettings, format_validation_error
from rewardfleet.services.gateway.config.sections import FLAT_KEYS


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


def test_every_flat_key_still_sets_its_section() -> None:
    for key, section in FLAT_KEYS.items():
        default = getattr(getattr(GatewayConfig(), section), key)
        value = (
            ["a.example"]
            if isinstance(default, list)
            else ("inputs" if key == "idempotency" else default + 1)
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
