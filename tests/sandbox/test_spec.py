"""Every field of a spec, an exec and a verifier mount is checked once, for every provider, and a bad one
names itself (`SandboxSpecInvalid.field`), so a route can answer 4xx with it."""

from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.services.sandbox import Resources, SandboxSpec, SandboxSpecInvalid, VerifierMounts
from rewardfleet.services.sandbox.spec import check_exec


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"image": "debian:12"}, "image"),
        ({"image": "dir:/x\0"}, "image"),
        ({"workdir": "relative"}, "workdir"),
        ({"workdir": "/app/../etc"}, "workdir"),
        ({"files": {"/a/../../etc/passwd": b""}}, "files['/a/../../etc/passwd']"),
        ({"files": {"/a": "text, not bytes"}}, "files['/a']"),
        ({"files": {"/big": b"x" * (64 << 20), "/more": b"x"}}, "files"),
        ({"env": {"BAD-NAME": "1"}}, "env['BAD-NAME']"),
        ({"env": {"OK": "nul\0"}}, "env['OK']"),
        ({"network": "yes"}, "network"),
        ({"ttl_s": 0}, "ttl_s"),
        ({"ttl_s": float("nan")}, "ttl_s"),
    ],
)
def test_bad_spec_fields_are_named(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(SandboxSpecInvalid) as bad:
        SandboxSpec(**{"image": "dir:/rootfs", **kwargs})
    assert bad.value.field == field


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cpus": 0}, "resources.cpus"),
        ({"memory_mb": 1.5}, "resources.memory_mb"),
        ({"disk_mb": -1}, "resources.disk_mb"),
        ({"pids": True}, "resources.pids"),
        ({"pids": 10**9}, "resources.pids"),
    ],
)
def test_bad_resources_are_named(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(SandboxSpecInvalid) as bad:
        Resources(**kwargs)
    assert bad.value.field == field


def test_a_good_spec_is_normalised_and_frozen() -> None:
    spec = SandboxSpec("oci:/images/task:latest", workdir="/app//src/", files={"/app/x": bytearray(b"1")})
    assert spec.workdir == "/app/src"
    assert dict(spec.files) == {"/app/x": b"1"}
    with pytest.raises(TypeError):
        spec.files["/other"] = b""  # type: ignore[index]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (([], 1.0, None, 10), "cmd"),
        (([1, 2], 1.0, None, 10), "cmd"),
        ((["a\0b"], 1.0, None, 10), "cmd"),
        ((["true"], 0, None, 10), "timeout_s"),
        ((["true"], 1.0, "tmp", 10), "cwd"),
        ((["true"], 1.0, None, -1), "max_output_bytes"),
    ],
)
def test_bad_exec_arguments_are_named(args: tuple[Any, ...], field: str) -> None:
    with pytest.raises(SandboxSpecInvalid) as bad:
        check_exec(*args)
    assert bad.value.field == field


def test_a_shell_string_runs_under_sh() -> None:
    assert check_exec("echo $HOME", 1.0, None, 10) == ["/bin/sh", "-c", "echo $HOME"]


def test_verifier_mount_targets_are_checked() -> None:
    with pytest.raises(SandboxSpecInvalid) as bad:
        VerifierMounts(fresh=["logs"])
    assert bad.value.field == "fresh['logs']"
    with pytest.raises(SandboxSpecInvalid) as bad:
        VerifierMounts(read_only={"/tests/../etc": "/host"})
    assert bad.value.field == "read_only['/tests/../etc']"
