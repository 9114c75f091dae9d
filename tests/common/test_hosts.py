"""`connect_host`: the address to dial for a bind address, IPv4 and IPv6."""

from __future__ import annotations

import pytest

from rewardfleet.services.common.hosts import connect_host, is_wildcard


@pytest.mark.parametrize(
    ("host", "dial"),
    [
        ("0.0.0.0", "127.0.0.1"),
        ("", "127.0.0.1"),
        ("::", "[::1]"),
        ("[::]", "[::1]"),
        ("::1", "[::1]"),
        ("[::1]", "[::1]"),
        ("fe80::2", "[fe80::2]"),
        ("127.0.0.1", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("reward-gateway", "reward-gateway"),
    ],
)
def test_connect_host(host: str, dial: str) -> None:
    assert connect_host(host) == dial


def test_wildcards() -> None:
    assert all(is_wildcard(h) for h in ("0.0.0.0", "::", "[::]", ""))
    assert not any(is_wildcard(h) for h in ("127.0.0.1", "::1", "localhost"))
