"""The address a client on this machine dials for a server bound to `host`.

A wildcard bind address (`0.0.0.0`, `::`, `[::]`, empty) is not an address to connect to: IPv4 wildcards
become `127.0.0.1`, IPv6 wildcards `[::1]`. An IPv6 literal gets the brackets a URL needs; anything else (a
name, an IPv4 address) is returned as it is.
"""

from __future__ import annotations

import ipaddress

IPV4_WILDCARDS = frozenset({"0.0.0.0", ""})
IPV6_WILDCARDS = frozenset({"::", "[::]"})
WILDCARDS = IPV4_WILDCARDS | IPV6_WILDCARDS


def is_wildcard(host: str) -> bool:
    return host in WILDCARDS


def connect_host(host: str) -> str:
    """`0.0.0.0` -> `127.0.0.1`, `::` -> `[::1]`, `::1` -> `[::1]`, `example.org` -> `example.org`."""
    if host in IPV4_WILDCARDS:
        return "127.0.0.1"
    if host in IPV6_WILDCARDS:
        return "[::1]"
    bare = host.strip("[]")
    try:
        if ipaddress.ip_address(bare).version == 6:
            return f"[{bare}]"
    except ValueError:
        pass
    return host
