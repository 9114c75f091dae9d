"""What a sandbox is made from (`SandboxSpec`, `Resources`) and what a command returns (`ExecResult`),
checked on construction: a bad field raises `SandboxSpecInvalid` naming it.

Every field may come from an agent or a task file, so each is bounded here, once, for every provider.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from rewardfleet.services.sandbox.errors import SandboxSpecInvalid

MAX_SPEC_FILES_BYTES = 64 << 20
MAX_PATH_BYTES = 4096
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_IMAGE_SCHEMES = ("dir:", "oci:", "docker-archive:", "dockerfile:")


def check_path(name: str, path: str) -> str:
    """`path` as a normalised absolute sandbox path; raises SandboxSpecInvalid(`name`) otherwise."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise SandboxSpecInvalid(name, f"must be an absolute path, got {path!r}")
    if "\0" in path or len(path.encode()) > MAX_PATH_BYTES:
        raise SandboxSpecInvalid(name, "must not hold NUL and must be under 4096 bytes")
    if any(part == ".." for part in path.split("/")):
        raise SandboxSpecInvalid(name, f"must not contain '..', got {path!r}")
    return posixpath.normpath(path).replace("//", "/")


def check_env(name: str, env: Mapping[str, str]) -> dict[str, str]:
    """Environment variables as a plain dict; names are identifiers, values strings without NUL."""
    out: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise SandboxSpecInvalid(f"{name}[{key!r}]", "a variable name is letters, digits and _")
        if not isinstance(value, str) or "\0" in value:
            raise SandboxSpecInvalid(f"{name}[{key!r}]", "a value is a string without NUL")
        out[key] = value
    return out


@dataclass(frozen=True)
class Resources:
    """Limits of one sandbox: `cpus` (fraction of CPUs), `memory_mb`, `disk_mb` (its writable layer),
    `pids` (processes and threads at once)."""

    cpus: float = 1.0
    memory_mb: int = 1024
    disk_mb: int = 1024
    pids: int = 256

    def __post_init__(self) -> None:
        _positive("resources.cpus", self.cpus, 0.01, 64)
        _positive("resources.memory_mb", self.memory_mb, 16, 1 << 20, integer=True)
        _positive("resources.disk_mb", self.disk_mb, 1, 1 << 20, integer=True)
        _positive("resources.pids", self.pids, 8, 1 << 16, integer=True)


def _positive(name: str, value: object, low: float, high: float, integer: bool = False) -> None:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise SandboxSpecInvalid(name, f"must be {kind} in [{low}, {high}], got {value!r}")


@dataclass(frozen=True)
class SandboxSpec:
    """A sandbox to create: the image reference (`dir:`, `oci:`, `docker-archive:`, `dockerfile:`), the
    working directory, files written before the first exec, environment, limits, network (off unless
    asked) and `ttl_s`, after which the reaper stops it."""

    image: str
    workdir: str = "/"
    files: Mapping[str, bytes] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    network: bool = False
    ttl_s: float = 3600.0

    def __post_init__(self) -> None:
        if not isinstance(self.image, str) or not self.image.startswith(_IMAGE_SCHEMES):
            raise SandboxSpecInvalid("image", f"must start with one of {', '.join(_IMAGE_SCHEMES)}")
        if "\0" in self.image or len(self.image) > MAX_PATH_BYTES:
            raise SandboxSpecInvalid("image", "must not hold NUL and must be under 4096 characters")
        object.__setattr__(self, "workdir", check_path("workdir", self.workdir))
        files: dict[str, bytes] = {}
        total = 0
        for path, data in self.files.items():
            if not isinstance(data, bytes | bytearray):
                raise SandboxSpecInvalid(f"files[{path!r}]", "content must be bytes")
            files[check_path(f"files[{path!r}]", path)] = bytes(data)
            total += len(data)
        if total > MAX_SPEC_FILES_BYTES:
            raise SandboxSpecInvalid("files", f"{total} bytes in all, over {MAX_SPEC_FILES_BYTES}")
        object.__setattr__(self, "files", MappingProxyType(files))
        object.__setattr__(self, "env", MappingProxyType(check_env("env", self.env)))
        if not isinstance(self.resources, Resources):
            raise SandboxSpecInvalid("resources", "must be a Resources")
        if not isinstance(self.network, bool):
            raise SandboxSpecInvalid("network", "must be true or false")
        _positive("ttl_s", self.ttl_s, 1, 7 * 24 * 3600)


@dataclass(frozen=True)
class VerifierMounts:
    """Verifier-only additions to one exec, never passed by an agent's tools: `read_only` maps a sandbox
    path to a host file or folder visible read-only for this exec only; each of `fresh` is a sandbox folder
    that starts empty for this exec (hiding whatever the sandbox held there) and whose regular files come
    back in `ExecResult.collected` (at most `max_collected_bytes` in all)."""

    read_only: Mapping[str, str] = field(default_factory=dict)
    fresh: Sequence[str] = ()
    max_collected_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        ro = {check_path(f"read_only[{k!r}]", k): v for k, v in self.read_only.items()}
        object.__setattr__(self, "read_only", MappingProxyType(ro))
        object.__setattr__(self, "fresh", tuple(check_path(f"fresh[{p!r}]", p) for p in self.fresh))
        _positive("max_collected_bytes", self.max_collected_bytes, 0, 1 << 30, integer=True)


@dataclass(frozen=True)
class ExecResult:
    """What a command did. A nonzero exit or a timeout is a result, not an exception. `exit_code` is
    -N for a command killed by signal N (and for every timed-out command); `truncated` says stdout or stderr
    was cut at the exec's `max_output_bytes`; `collected` holds the files of `VerifierMounts.fresh`."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    collected: Mapping[str, bytes] = field(default_factory=dict)


def check_exec(
    cmd: Sequence[str] | str, timeout_s: float, cwd: str | None, max_output_bytes: int
) -> list[str]:
    """The argv to run (a str is run by `/bin/sh -c`); raises SandboxSpecInvalid naming the bad argument."""
    if isinstance(cmd, str):
        argv = ["/bin/sh", "-c", cmd]
    elif isinstance(cmd, Sequence) and cmd and all(isinstance(a, str) for a in cmd):
        argv = list(cmd)
    else:
        raise SandboxSpecInvalid("cmd", "must be a non-empty list of strings or a shell string")
    if any("\0" in a for a in argv) or sum(len(a) for a in argv) > 1 << 20:
        raise SandboxSpecInvalid("cmd", "must not hold NUL and must be under 1 MiB")
    _positive("timeout_s", timeout_s, 0.001, 24 * 3600)
    if cwd is not None:
        check_path("cwd", cwd)
    _positive("max_output_bytes", max_output_bytes, 0, 1 << 30, integer=True)
    return argv
