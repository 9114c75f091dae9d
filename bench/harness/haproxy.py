"""HAProxy as tests and benchmarks run it in front of gateway replicas: where the binary is, and a round-robin
config over loopback ports."""

from __future__ import annotations

import shutil

HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def haproxy_config(port: int, backends: list[int]) -> str:
    servers = "\n".join(f"    server g{i} 127.0.0.1:{p}" for i, p in enumerate(backends))
    return f"""global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend balancer
    bind 127.0.0.1:{port}
    default_backend gateways
backend gateways
    balance roundrobin
{servers}
"""
