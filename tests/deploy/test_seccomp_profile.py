"""Our gateway seccomp profile (deploy/seccomp/gateway.json), loaded as a runtime loads it
(tests/deploy/seccomp_profile.py), lets bubblewrap build the `code` sandbox and still refuses what a reward
gateway never needs.

Probes run as uid 10001 (the image's user, no capabilities) or as root with every capability, each under the
filter and, as a control, without it: a denial is the filter's doing only when the same call gets another
answer without it.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT
from tests.deploy import seccomp_profile as sp

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="seccomp is Linux's")

UID = 10001
BWRAP_NAMESPACE_CALLS = {"clone", "unshare", "mount", "umount2", "pivot_root", "sethostname"}
# The same namespaces and mounts as the `code` sandbox (reward_fns/_sandbox/bubblewrap.py).
SANDBOX = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/usr", "/usr"]
SANDBOX += [a for d in ("lib", "lib64", "bin", "sbin") for a in ("--symlink", f"usr/{d}", f"/{d}")]
SANDBOX += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--hostname", "sandbox"]
SANDBOX += ["--uid", "65534", "--gid", "65534", "/usr/bin/python3", "-c"]
INSIDE = "import os, socket; print(os.getuid(), socket.gethostname(), [n for _, n in socket.if_nameindex()])"

# One syscall with harmless arguments; prints the errno name, or "ok". The numbers come from libseccomp.
PROBE = """
import ctypes, errno, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ret = libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    return "ok" if ret >= 0 else errno.errorcode[ctypes.get_errno()]
name, nr = sys.argv[1], int(sys.argv[2])
if name == "ptrace":
    child = os.fork()
    if child == 0:
        time.sleep(5)  # a process to attach to
        os._exit(0)
    print(call(nr, 16, child, 0, 0))  # PTRACE_ATTACH to another process of the same user
    os.kill(child, 9)
elif name == "mount":
    target = ctypes.c_char_p(b"/tmp")
    print(call(nr, ctypes.cast(ctypes.c_char_p(b"none"), ctypes.c_void_p).value,
               ctypes.cast(target, ctypes.c_void_p).value,
               ctypes.cast(ctypes.c_char_p(b"tmpfs"), ctypes.c_void_p).value, 0, 0))
elif name == "keyctl":
    print(call(nr, 0, -3, 0))  # KEYCTL_GET_KEYRING_ID of the session keyring
elif name == "bpf":
    print(call(nr, 5, 0, 0))  # BPF_PROG_LOAD with no attributes
elif name == "open_by_handle_at":
    print(call(nr, -100, 0, 0))
else:
    print(call(nr, 0, 0, 0, 0))
"""


def _run(argv: list[str], *, confined: bool, uid: int | None, profile: Path = sp.PROFILE) -> str:
    if confined:
        launcher = [sys.executable, "-m", "tests.deploy.seccomp_profile", str(profile)]
        launcher += ["--uid", str(uid)] if uid is not None else []
        argv = [*launcher, "--", *argv]
    elif uid is not None:
        argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv]
    done = subprocess.run(argv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False)
    return (done.stdout + done.stderr).strip()


def _probe(name: str, *, confined: bool, uid: int | None) -> str:
    return _run(
        ["/usr/bin/python3", "-c", PROBE, name, str(sp.syscall_number(name))], confined=confined, uid=uid
    )


def test_bubblewrap_builds_the_code_sandbox_under_the_profile_as_the_image_user() -> None:
    out = _run([*SANDBOX, INSIDE], confined=True, uid=UID)
    assert out == "65534 sandbox ['lo']", out


def test_without_the_namespace_calls_bubblewrap_cannot_start(tmp_path: Path) -> None:
    """The calls added beyond a default container are each needed: without them (what Docker's default
    gives a container without CAP_SYS_ADMIN) bwrap fails before the program runs."""
    profile = sp.load()
    for name in sorted(BWRAP_NAMESPACE_CALLS):
        narrowed = dict(profile)
        narrowed["syscalls"] = [
            {**rule, "names": [n for n in rule["names"] if n != name]} for rule in profile["syscalls"]
        ]
        narrowed["syscalls"] = [rule for rule in narrowed["syscalls"] if rule["names"]]
        path = tmp_path / f"without-{name}.json"
        path.write_text(json.dumps(narrowed))
        out = _run([*SANDBOX, INSIDE], confined=True, uid=UID, profile=path)
        assert out.startswith("bwrap:") and "65534 sandbox" not in out, (name, out)


@pytest.mark.parametrize(
    "name", ["kexec_load", "bpf", "init_module", "keyctl", "open_by_handle_at", "ptrace"]
)
def test_the_profile_denies_what_a_gateway_never_needs_even_to_root(name: str) -> None:
    """Root with every capability, under the filter: EPERM; the same call without the filter is answered
    by the kernel (another errno, or success), so the denial is the profile's."""
    assert name not in sp.allowed_names(sp.load())
    assert _probe(name, confined=True, uid=None) == "EPERM"
    assert _probe(name, confined=False, uid=None) != "EPERM"


def test_mount_works_only_inside_a_new_namespace() -> None:
    """The profile allows `mount` for bwrap; the image's user has no CAP_SYS_ADMIN in the container's
    namespaces, so the kernel refuses it there, and allows it only inside a user namespace of its own."""
    assert _probe("mount", confined=True, uid=UID) == "EPERM"
    inside = ["unshare", "--user", "--map-root-user", "--mount", "--"]
    inside += ["/usr/bin/python3", "-c", PROBE, "mount", str(sp.syscall_number("mount"))]
    assert _run(inside, confined=True, uid=UID) == "ok"


def test_clone3_answers_enosys_so_glibc_uses_clone() -> None:
    """clone3's flags are in memory a filter cannot read; ENOSYS (as Docker's default answers) makes glibc
    fall back to clone, and threads still start."""
    threads = (
        "import threading; t = threading.Thread(target=print, args=('thread ran',)); t.start(); t.join()"
    )
    assert _run(["/usr/bin/python3", "-c", threads], confined=True, uid=UID) == "thread ran"
    rule = next(r for r in sp.load()["syscalls"] if r["names"] == ["clone3"])
    assert rule["action"] == "SCMP_ACT_ERRNO" and rule["errnoRet"] == errno.ENOSYS


def test_the_profile_is_default_deny_without_32_bit_entry_points() -> None:
    profile = sp.load()
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and profile["defaultErrnoRet"] == errno.EPERM
    assert all(not entry["subArchitectures"] for entry in profile["archMap"])
    for rule in profile["syscalls"]:
        assert rule["action"] in {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"} and rule.get("comment"), rule
    never = set(
        [
            "kexec_load",
            "kexec_file_load",
            "bpf",
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "init_module",
            "finit_module",
            "delete_module",
            "open_by_handle_at",
            "name_to_handle_at",
            "keyctl",
            "add_key",
            "request_key",
            "setns",
            "io_uring_setup",
            "userfaultfd",
            "perf_event_open",
            "reboot",
            "swapon",
            "acct",
            "settimeofday",
            "clock_settime",
            "chroot",
            "fsopen",
            "move_mount",
            "open_tree",
            "personality",
            "quotactl",
            "syslog",
            "lookup_dcookie",
            "mount_setattr",
        ]
    )
    assert not never & sp.allowed_names(profile)
