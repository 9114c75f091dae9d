"""Our seccomp profile (`deploy/seccomp/gateway.json`, Docker's JSON format) compiled with libseccomp, as a
container runtime would load it: the test's stand-in for Docker/containerd applying `seccomp=<file>`.

Only what a runtime does for this profile's shape: the host's entry of `archMap` (its sub-architectures
added), `defaultAction` / `defaultErrnoRet`, per-syscall `action` / `errnoRet` and `args` comparisons.
Names this architecture lacks are skipped, as runc does. Keys a runtime would act on that we do not
implement (`includes`, `excludes`, `listenerPath`, ...) raise, so the loader never silently drops a rule.

`python -m tests.deploy.seccomp_profile PROFILE [--uid N] -- ARGV...` runs ARGV under the filter, after
dropping to uid/gid N (a container's non-root user: no capabilities) when given.
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any

import pyseccomp as sc

from bench.harness.processes import REPO_ROOT

PROFILE = REPO_ROOT / "deploy" / "seccomp" / "gateway.json"

_ARCHES = {"SCMP_ARCH_X86_64": sc.Arch.X86_64, "SCMP_ARCH_AARCH64": sc.Arch.AARCH64,
           "SCMP_ARCH_X86": sc.Arch.X86, "SCMP_ARCH_X32": sc.Arch.X32,
           "SCMP_ARCH_ARM": sc.Arch.ARM}  # fmt: skip
_HOST_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}
_OPS = {"SCMP_CMP_EQ": sc.EQ, "SCMP_CMP_NE": sc.NE, "SCMP_CMP_LT": sc.LT, "SCMP_CMP_LE": sc.LE,
        "SCMP_CMP_GT": sc.GT, "SCMP_CMP_GE": sc.GE, "SCMP_CMP_MASKED_EQ": sc.MASKED_EQ}  # fmt: skip
_PR_CAPBSET_DROP = 24
_RULE_KEYS = {"names", "action", "errnoRet", "args", "comment"}


def load(path: Path = PROFILE) -> dict[str, Any]:
    profile: dict[str, Any] = json.loads(path.read_text())
    return profile


def allowed_names(profile: dict[str, Any]) -> set[str]:
    """Every syscall some rule allows (with or without argument conditions)."""
    return {n for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW" for n in rule["names"]}


def _action(name: str, errno_ret: int | None) -> int:
    if name == "SCMP_ACT_ALLOW":
        return int(sc.ALLOW)
    if name == "SCMP_ACT_ERRNO":
        return int(sc.ERRNO(errno.EPERM if errno_ret is None else errno_ret))
    if name == "SCMP_ACT_KILL_PROCESS":
        return int(sc.KILL_PROCESS)
    raise ValueError(f"action {name!r} is not supported by this loader")


def _arches(profile: dict[str, Any]) -> list[int]:
    host = _HOST_ARCH.get(platform.machine())
    for entry in profile.get("archMap") or []:
        if entry["architecture"] == host:
            return [
                _ARCHES[entry["architecture"]],
                *(_ARCHES[a] for a in entry.get("subArchitectures") or []),
            ]
    raise ValueError(f"the profile has no archMap entry for this host ({platform.machine()})")


def build_filter(profile: dict[str, Any]) -> sc.SyscallFilter:
    """The libseccomp filter a runtime would load for this profile on this host."""
    filt = sc.SyscallFilter(_action(profile["defaultAction"], profile.get("defaultErrnoRet")))
    arches = _arches(profile)
    for arch in arches[1:]:
        filt.add_arch(arch)
    for rule in profile["syscalls"]:
        unknown = set(rule) - _RULE_KEYS
        if unknown:
            raise ValueError(
                f"rule for {rule['names']}: keys {sorted(unknown)} are not supported by this loader"
            )
        action = _action(rule["action"], rule.get("errnoRet"))
        args = [
            sc.Arg(a["index"], _OPS[a["op"]], a["value"], a.get("valueTwo", 0))
            for a in rule.get("args") or []
        ]
        for name in rule["names"]:
            if sc.resolve_syscall(arches[0], name) < 0:
                continue  # not a syscall of this architecture (e.g. `open` on aarch64)
            filt.add_rule(action, name, *args)
    return filt


def bpf_fd(profile: dict[str, Any], directory: Path) -> int:
    """A descriptor of the compiled BPF program, for `bwrap --seccomp FD` (inheritable, at offset 0)."""
    path = directory / "gateway-seccomp.bpf"
    with path.open("wb") as out:
        build_filter(profile).export_bpf(out)
    fd = os.open(path, os.O_RDONLY)
    os.set_inheritable(fd, True)
    return fd


def syscall_number(name: str) -> int:
    return int(sc.resolve_syscall(sc.Arch.NATIVE, name))


def _drop_to(uid: int) -> None:
    """A container's non-root user with `cap_drop: [ALL]`: an empty capability bounding set, supplementary
    groups cleared, gid and uid set (which clears every capability of a process that was root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        raise SystemExit("usage: python -m tests.deploy.seccomp_profile PROFILE [--uid N] -- ARGV...")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--uid", type=int, default=None)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1 :]
    filt = build_filter(load(args.profile))  # built before dropping privileges: it reads the profile
    program = shutil.which(command[0]) or command[0]
    if args.uid is not None:
        _drop_to(args.uid)
    filt.load()  # sets no_new_privs, as runtimes do for a non-privileged container
    os.execv(program, command)


if __name__ == "__main__":
    sys.exit(main())
