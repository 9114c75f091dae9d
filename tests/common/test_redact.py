"""Redaction by shape: secret-named keys and flags, URL passwords, secret query parameters; nothing else."""

from __future__ import annotations

import pytest

from rewardfleet.services.common.redact import (
    REDACTED,
    is_secret_name,
    redact_argv,
    redact_text,
    redact_value,
)


@pytest.mark.parametrize(
    "name", ["api_key", "api_keys", "apiKey", "hf_token", "HF_TOKEN", "password", "redis_password",
             "client_secret", "Authorization", "X-API-Key", "--api-key", "--hf-token"],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["api_keys_file", "max_tokens", "tokens_per_minute", "reward_model_tokenizer",
             "auth_exempt_metrics", "port", "keyboard", "--skip-tokenizer-init", ""],
)  # fmt: skip
def test_names_that_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("redis://:pw@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("https://user:p@ss@host/v1", "https://user:***@host/v1"),
        ("postgresql://me:pw@db:5432/x", "postgresql://me:***@db:5432/x"),
        ("see http://h/x?token=abc&page=2", "see http://h/x?token=***&page=2"),
        ("http://127.0.0.1:31000", "http://127.0.0.1:31000"),
        ("redis://user@host:6379", "redis://user@host:6379"),
        ("127.0.0.1:8000", "127.0.0.1:8000"),
        ("a?token=plain-text-not-a-url", "a?token=plain-text-not-a-url"),
    ],
)
def test_redact_text(text: str, shown: str) -> None:
    assert redact_text(text) == shown


def test_redact_value_keeps_the_shape_and_hides_only_secrets() -> None:
    config = {
        "api_keys": ["k1", "k2"],
        "api_keys_file": "/etc/keys",
        "auth_exempt_metrics": True,
        "functions": {"j": {"reward_kwargs": {"api_key": "sk", "max_tokens": 5, "url": "redis://:pw@h"}}},
        "headers": [{"Authorization": "Bearer x"}],
        "token": None,
    }
    assert redact_value(config) == {
        "api_keys": [REDACTED, REDACTED],
        "api_keys_file": "/etc/keys",
        "auth_exempt_metrics": True,
        "functions": {
            "j": {"reward_kwargs": {"api_key": REDACTED, "max_tokens": 5, "url": "redis://:***@h"}}
        },
        "headers": [{"Authorization": REDACTED}],
        "token": None,
    }
    assert config["api_keys"] == ["k1", "k2"]  # a copy: the original is untouched


def test_redact_argv() -> None:
    argv = ["sglang-router", "--api-key", "sk", "--hf-token=hf", "--redis", "redis://:pw@h", "--port", "1"]
    assert redact_argv(argv) == [
        "sglang-router", "--api-key", REDACTED, "--hf-token=***", "--redis", "redis://:***@h", "--port", "1",
    ]  # fmt: skip
    # A secret-named flag with no value does not swallow the next flag.
    assert redact_argv(["x", "--api-key", "--port", "1"]) == ["x", "--api-key", "--port", "1"]
