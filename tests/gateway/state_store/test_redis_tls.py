"""`rediss://` with a password, against a real redis-server on its TLS port (a self-signed certificate made
by the test with openssl): the store connects, verifies the server, and refuses a wrong password."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import free_port
from bench.harness.redis_server import RedisServer
from rewardfleet.services.gateway.cache.choose_store import results_for
from rewardfleet.services.gateway.errors import StateStoreUnavailable
from tests.gateway.state_store.helpers import CountingCompute, request
from tests.support.state_store import make_backend


@pytest.fixture
def tls_redis(tmp_path: Path) -> Iterator[tuple[RedisServer, Path]]:
    openssl = shutil.which("openssl")
    if openssl is None:  # Debian's openssl is part of the base system; say so loudly if it is missing
        raise RuntimeError("openssl is needed to make the test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subject = ["-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            *subject,
        ],
        check=True,
        capture_output=True,
    )
    tls_port = free_port()
    server = RedisServer(
        tmp_path,
        extra_args=(
            "--tls-port",
            str(tls_port),
            "--tls-cert-file",
            str(cert),
            "--tls-key-file",
            str(key),
            "--tls-ca-cert-file",
            str(cert),
            "--tls-auth-clients",
            "no",
            "--requirepass",
            "pw-123",
        ),
    ).start()
    server.tls_port = tls_port  # type: ignore[attr-defined]
    try:
        yield server, cert
    finally:
        server.stop()


async def test_rediss_url_with_password(tls_redis: tuple[RedisServer, Path]) -> None:
    server, cert = tls_redis
    port = server.tls_port  # type: ignore[attr-defined]
    backend = make_backend(f"rediss://:pw-123@127.0.0.1:{port}/0?ssl_ca_certs={cert}", "tls:")
    await backend.start()
    try:
        cache = results_for(backend, "uid", 10, 60.0)
        req = request("tls")
        compute = CountingCompute()
        await cache.run(cache.key(req, "judge", "v1"), req, compute.bind(req))
        assert (await cache.run(cache.key(req, "judge", "v1"), req, compute.bind(req))).cached
    finally:
        await backend.close()
    wrong = make_backend(f"rediss://:nope@127.0.0.1:{port}/0?ssl_ca_certs={cert}", "tls:")
    with pytest.raises(StateStoreUnavailable, match="cannot reach Redis"):
        await wrong.start()
    await wrong.close()
