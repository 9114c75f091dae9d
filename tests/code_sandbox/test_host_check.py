"""Whether the code sandbox works on the gateway's host, and if not which setting is missing: the gateway's
start-up log, `/ready`'s `startup_checks` and `rewardfleet status --gateway` say it.

Reproduced here for real: a seccomp filter that refuses bwrap's `unshare` (our profile without it, loaded
as a runtime loads it: tests/deploy/seccomp_profile.py) and a /proc with a masked path (as Docker masks
/proc/acpi). The causes this machine cannot produce (AppArmor, the Debian and Ubuntu sysctls, a chroot) are
checked through `classify` with the facts such a host shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from bench.harness.processes import REPO_ROOT, ChildProcess, free_port, rewardfleet_cmd
from rewardfleet.reward_fns._sandbox.host_check import HostFacts, classify, host_facts
from tests.deploy import seccomp_profile as sp
from tests.support.gateway import gateway_cmd, write_config

CLONE_REFUSED = (
    "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
    "non-privileged user namespaces."
)
CODE_SAMPLE = {
    "data_source": "codecontests",
    "reward_fn": "code",
    "solution_str": "```python\nprint(int(input()) * 2)\n```",
    "ground_truth": {"inputs": ["21\n"], "outputs": ["42\n"]},
}


@pytest.mark.parametrize(
    ("message", "facts", "missing"),
    [
        ("bwrap is not installed", HostFacts(), "bubblewrap"),
        ("prlimit is not installed", HostFacts(), "util-linux"),
        (CLONE_REFUSED, HostFacts(unprivileged_userns_clone=0, seccomp_mode=2),
         "kernel.unprivileged_userns_clone"),
        ("bwrap: Creating new namespace failed: No space left on device", HostFacts(max_user_namespaces=0),
         "user.max_user_namespaces"),
        (CLONE_REFUSED, HostFacts(seccomp_mode=2, unshare_blocked=True), "seccomp"),
        # A filter on clone's namespace flags only (Docker's default has one):
        (CLONE_REFUSED, HostFacts(seccomp_mode=2, unshare_blocked=False), "seccomp"),
        ("bwrap: setting up uid map: Permission denied",
         HostFacts(apparmor_restrict_userns=1, apparmor_label="unconfined"),
         "kernel.apparmor_restrict_unprivileged_userns"),
        (CLONE_REFUSED, HostFacts(seccomp_mode=0, chrooted=True), "chroot"),
        (CLONE_REFUSED, HostFacts(seccomp_mode=0), "user_namespaces"),
        ("bwrap: Can't mount proc on /newroot/proc: Operation not permitted", HostFacts(proc_masked=True),
         "proc_masked"),
        ("bwrap: Failed to make / slave: Permission denied", HostFacts(apparmor_label="docker-default"),
         "apparmor"),
        ("bwrap: pivot_root: Operation not permitted", HostFacts(apparmor_label="unconfined", seccomp_mode=2),
         "seccomp"),
        ("bwrap: something new", HostFacts(), "unknown"),
    ],
)  # fmt: skip
def test_each_cause_names_its_setting(message: str, facts: HostFacts, missing: str) -> None:
    diagnosis = classify(message, facts)
    assert diagnosis.missing == missing
    assert str(diagnosis).startswith(f"missing setting: {missing}: ") and message in str(diagnosis)


def test_this_hosts_facts_are_read() -> None:
    facts = host_facts()
    assert (
        facts.seccomp_mode in (0, 1, 2) and facts.unshare_blocked is False and facts.proc_masked is not None
    )


def _gateway_under(profile: Path, tmp_path: Path, name: str) -> tuple[ChildProcess, str]:
    port = free_port()
    config = write_config(tmp_path / f"{name}.yaml", {"workers": 1})
    launcher = [sys.executable, "-m", "tests.deploy.seccomp_profile", str(profile), "--"]
    child = ChildProcess(
        [*launcher, *gateway_cmd("--port", str(port), "--config", str(config))], tmp_path / name
    )
    url = f"http://127.0.0.1:{port}"
    child.wait_http(f"{url}/health", timeout_s=120)
    return child, url


def test_a_seccomp_profile_refusing_unshare_is_named_by_ready_the_log_and_status(tmp_path: Path) -> None:
    """The whole gateway under our profile less `unshare` (a filter as Docker's default is for it): it starts,
    scores what needs no sandbox, and says the code sandbox is missing the seccomp setting."""
    profile = sp.load()
    profile["syscalls"] = [
        {**r, "names": [n for n in r["names"] if n != "unshare"]} for r in profile["syscalls"]
    ]
    narrowed = tmp_path / "no-unshare.json"
    narrowed.write_text(json.dumps(profile))
    child, url = _gateway_under(narrowed, tmp_path, "narrowed.log")
    try:
        ready = httpx.get(f"{url}/ready", timeout=10).json()
        gsm8k = httpx.post(f"{url}/score", json={"data_source": "openai/gsm8k", "solution_str": "#### 4",
                                                 "ground_truth": "4"}, timeout=30)  # fmt: skip
        code = httpx.post(f"{url}/score", json=CODE_SAMPLE, timeout=60)
        status = subprocess.run(
            [*rewardfleet_cmd("status", "--gateway", url)], cwd=REPO_ROOT, capture_output=True, text=True,
            timeout=60, env={**os.environ, "COLUMNS": "400"},
        )  # fmt: skip
        log = child.log()
    finally:
        child.stop()
    check = ready["startup_checks"]["code"]
    assert ready["ready"] is True and check["ok"] is False, ready
    assert check["detail"].startswith("SandboxUnavailable: bubblewrap cannot create a sandbox on this host")
    assert "missing setting: seccomp: " in check["detail"] and "unshare user ns" in check["detail"], check
    assert "code: start-up check failed: SandboxUnavailable" in log
    assert gsm8k.json()["score"] == 1.0, gsm8k.text
    assert code.json()["status"] == "error" and code.json()["error"]["type"] == "SandboxUnavailable", (
        code.text
    )
    assert status.returncode == 0, status.stderr
    assert "code start-up check" in status.stdout and "FAILED" in status.stdout
    assert "missing setting: seccomp" in status.stdout, status.stdout


def test_under_our_profile_the_gateway_reports_and_scores_code(tmp_path: Path) -> None:
    child, url = _gateway_under(sp.PROFILE, tmp_path, "profile.log")
    try:
        ready = httpx.get(f"{url}/ready", timeout=10).json()
        right = httpx.post(f"{url}/score", json=CODE_SAMPLE, timeout=60)
        log = child.log()
    finally:
        child.stop()
    assert ready["startup_checks"]["code"]["ok"] is True, ready
    assert "bubblewrap, warm (a trial case ran" in ready["startup_checks"]["code"]["detail"]
    assert "code: start-up check passed: sandbox backend: bubblewrap" in log
    assert right.json()["score"] == 1.0 and right.json()["extra"]["verdicts"] == ["pass"], right.text


def test_a_masked_proc_is_named(tmp_path: Path) -> None:
    """A read-only tmpfs over a directory of /proc, as Docker masks /proc/acpi: bwrap cannot mount the
    sandbox its own /proc, and the check names systempaths / procMount."""
    masked = next(
        (d for d in ("/proc/acpi", "/proc/scsi", "/proc/bus", "/proc/fs") if Path(d).is_dir()), None
    )
    if masked is None:
        pytest.skip("no directory under /proc to mask")
    check = "from rewardfleet.reward_fns import code; code.startup_check({})"
    script = f"mount -t tmpfs -o ro tmpfs {masked} && exec {sys.executable} -c '{check}'"
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "missing setting: proc_masked: " in done.stderr and "systempaths=unconfined" in done.stderr, (
        done.stderr
    )
    assert "Can't mount proc" in done.stderr
