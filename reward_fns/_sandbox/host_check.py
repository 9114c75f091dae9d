"""Which host setting keeps bubblewrap from building a sandbox here.

Which setting keeps bubblewrap from building a sandbox here: bwrap's own message read against what this
process can see of its host (sysctls, its seccomp mode, its AppArmor label, /proc's mounts).

Each cause maps to the setting that lifts it, for Docker and for Kubernetes (docs/deploy.md, "What the
gateway container is allowed"). `classify` is a pure function of the message and `HostFacts`, so every
mapping is testable on any host; `host_facts()` reads the facts of this process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
from dataclasses import dataclass
from pathlib import Path

# What each cause needs, in the deploy files' own terms.
FIXES = {
    "bubblewrap": "install bubblewrap (Debian: apt-get install bubblewrap; the gateway image ships it)",
    "util-linux": "install util-linux (prlimit, setpriv; the gateway image ships it)",
    "kernel.unprivileged_userns_clone": "on the host: sysctl -w kernel.unprivileged_userns_clone=1",
    "user.max_user_namespaces": "on the host: sysctl -w user.max_user_namespaces=15000 (any value > 0)",
    "kernel.apparmor_restrict_unprivileged_userns": (
        "on the host (Ubuntu 23.10+): sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an "
        "AppArmor profile for the gateway that allows `userns`"
    ),
    "seccomp": (
        "the container's seccomp profile refuses the namespace calls bwrap makes: run the gateway with our "
        "profile (docker: --security-opt seccomp=deploy/seccomp/gateway.json; Kubernetes: seccompProfile "
        "Localhost profiles/rewardfleet-gateway.json, installed by deploy/k8s/seccomp-profile.yaml)"
    ),
    "apparmor": (
        "an AppArmor profile refuses bwrap's mounts inside its own namespaces: docker --security-opt "
        "apparmor=unconfined; Kubernetes appArmorProfile: {type: Unconfined}"
    ),
    "proc_masked": (
        "/proc has masked paths, so the kernel refuses the sandbox its own /proc: docker --security-opt "
        "systempaths=unconfined; Kubernetes procMount: Unmasked (with hostUsers: false)"
    ),
    "chroot": (
        "the process runs in a chroot, where the kernel refuses new user namespaces: use a container runtime "
        "that pivot_roots (Docker, containerd, CRI-O do)"
    ),
    "user_namespaces": (
        "user namespaces cannot be created here and no single cause was found: check the host's "
        "user.max_user_namespaces, the container's seccomp and AppArmor profiles (docs/deploy.md)"
    ),
    "unknown": "see bwrap's message; docs/deploy.md lists what the sandbox needs",
}
_NAMESPACE_FAILURES = (
    "create new namespace",
    "Creating new namespace failed",
    "unshare user ns",
    "setting up uid map",
    "setting up gid map",
    "loopback:",
)
_MOUNT_FAILURES = (
    "Failed to make / slave",
    "pivot_root",
    "Can't set hostname",
    "unmount old root",
    "Can't mount",
)
_UNSHARE = {"x86_64": 272, "aarch64": 97}


@dataclass(frozen=True)
class HostFacts:
    """What this process can see of why namespaces may fail; None where it cannot tell."""

    unprivileged_userns_clone: int | None = None
    max_user_namespaces: int | None = None
    apparmor_restrict_userns: int | None = None
    seccomp_mode: int | None = None  # 0 none, 1 strict, 2 filter (/proc/self/status)
    unshare_blocked: bool | None = None  # unshare(0), a no-op the kernel always allows, refused: seccomp
    apparmor_label: str | None = None
    proc_masked: bool | None = None  # something mounted over a path inside /proc
    chrooted: bool | None = None


@dataclass(frozen=True)
class Diagnosis:
    missing: str  # a key of FIXES
    fix: str
    message: str  # bwrap's own words

    def __str__(self) -> str:
        return f"missing setting: {self.missing}: {self.fix} (bwrap said: {self.message})"


def classify(message: str, facts: HostFacts) -> Diagnosis:
    """The setting that most likely keeps bwrap from starting, given its message and the host's facts."""
    if "is not installed" in message:
        missing = "bubblewrap" if message.startswith("bwrap ") else "util-linux"
    elif any(m in message for m in _NAMESPACE_FAILURES):
        missing = _namespace_cause(facts)
    elif "Can't mount proc" in message:
        missing = "proc_masked"
    elif any(m in message for m in _MOUNT_FAILURES):
        if facts.apparmor_label not in (None, "", "unconfined"):
            missing = "apparmor"
        elif facts.seccomp_mode == 2:
            missing = "seccomp"
        else:
            missing = "unknown"
    else:
        missing = "unknown"
    return Diagnosis(missing, FIXES[missing], message)


def _namespace_cause(facts: HostFacts) -> str:
    if facts.unprivileged_userns_clone == 0:
        return "kernel.unprivileged_userns_clone"
    if facts.max_user_namespaces == 0:
        return "user.max_user_namespaces"
    if facts.unshare_blocked:
        return "seccomp"
    if facts.apparmor_restrict_userns == 1 and facts.apparmor_label in (None, "", "unconfined"):
        return "kernel.apparmor_restrict_unprivileged_userns"
    if facts.chrooted:
        return "chroot"
    if facts.seccomp_mode == 2:
        return "seccomp"  # a filter that refuses clone's namespace flags (Docker's default does)
    return "user_namespaces"


def host_facts() -> HostFacts:
    """The facts of this process (each read is cheap; none needs privileges)."""
    return HostFacts(
        unprivileged_userns_clone=_read_int("/proc/sys/kernel/unprivileged_userns_clone"),
        max_user_namespaces=_read_int("/proc/sys/user/max_user_namespaces"),
        apparmor_restrict_userns=_read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
        seccomp_mode=_seccomp_mode(),
        unshare_blocked=_unshare_blocked(),
        apparmor_label=_apparmor_label(),
        proc_masked=_proc_masked(),
        chrooted=_chrooted(),
    )


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _seccomp_mode() -> int | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Seccomp:"):
                return int(line.split()[1])
    return None


def _unshare_blocked() -> bool | None:
    """unshare(0) changes nothing and the kernel always allows it; only a seccomp filter refuses it."""
    number = _UNSHARE.get(os.uname().machine)
    if number is None:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(ctypes.c_long(number), ctypes.c_long(0)) == 0:
        return False
    return ctypes.get_errno() in (errno.EPERM, errno.EACCES, errno.ENOSYS)


def _apparmor_label() -> str | None:
    for path in ("/proc/self/attr/apparmor/current", "/proc/self/attr/current"):
        with contextlib.suppress(OSError):
            return Path(path).read_text().strip().rstrip("\x00").split(" (")[0] or None
    return None


def _proc_masked() -> bool | None:
    """A mount over a path inside /proc (Docker masks /proc/kcore, /proc/acpi, ... so), binfmt_misc aside."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    points = [line.split()[4] for line in lines if len(line.split()) > 4]
    return any(p.startswith("/proc/") and p != "/proc/sys/fs/binfmt_misc" for p in points)


def _chrooted() -> bool | None:
    """Our root is not our mount namespace's root (what the kernel refuses user namespaces for)."""
    try:
        ours, init = os.stat("/"), os.stat("/proc/1/root/")
    except OSError:
        return None
    return (ours.st_dev, ours.st_ino) != (init.st_dev, init.st_ino)
