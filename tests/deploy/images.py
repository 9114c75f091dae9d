"""Build and run the three images without a Docker engine: Debian's buildah (chroot isolation, vfs storage).

No registry image can be pulled here, so the pinned Python base (`FROM python:3.11.x-slim-bookworm`) is
replaced by a stand-in made with debootstrap from the Debian mirror apt uses on this machine: Debian's own
python3 and pip, a `python` link, and no EXTERNALLY-MANAGED marker (as in the official image, pip installs
into the system interpreter). It is imported under the base's name, so the Dockerfiles build unchanged.
Everything in the images is verified except that base image itself.

The debootstrap tree is cached under `REWARDFLEET_IMAGE_CACHE` (default /var/cache/rewardfleet), so only the
first run on a machine pays for it (~5 min); buildah's own storage lives there too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.processes import REPO_ROOT
from bench.harness.waiting import eventually

CACHE = Path(os.environ.get("REWARDFLEET_IMAGE_CACHE", "/var/cache/rewardfleet"))
BASE_ROOTFS = CACHE / "debootstrap-bookworm"
STORAGE = CACHE / "buildah-storage"
DEBIAN_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-pip", "ca-certificates")
_FROM_RE = re.compile(r"^FROM\s+(\S+)", re.MULTILINE)


def apt_mirror() -> str:
    """The Debian mirror apt uses here (deb822 `URIs:` or a one-line `deb` entry), for debootstrap."""
    sources = [*sorted(Path("/etc/apt").glob("sources.list.d/*.sources")), Path("/etc/apt/sources.list")]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text()
        for uri in re.findall(r"^URIs:\s*(\S+)", text, re.MULTILINE) + re.findall(
            r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+", text, re.MULTILINE
        ):
            if "security" not in uri and "debian" in uri:
                return uri
    return "http://deb.debian.org/debian"


def base_image_name(dockerfile: Path) -> str:
    (name,) = set(_FROM_RE.findall(dockerfile.read_text()))
    # buildah resolves a short name to docker.io/library/...; the stand-in must carry that full name.
    return name if "/" in name else f"docker.io/library/{name}"


def _run(cmd: list[str], *, timeout_s: float, log: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    if log is not None:
        log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:4])} ... exited {proc.returncode}:\n{(proc.stdout + proc.stderr)[-6000:]}"
        )
    return proc.stdout


def ensure_base_rootfs() -> Path:
    """The debootstrap tree (cached), shaped like the official slim image's Python layout."""
    if not (BASE_ROOTFS / "usr/bin/python3").is_file():
        tmp = BASE_ROOTFS.with_name(BASE_ROOTFS.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                DEBIAN_SUITE,
                str(tmp),
                apt_mirror(),
            ],
            timeout_s=1800,
        )
        tmp.rename(BASE_ROOTFS)
    # This machine reaches its package registries through a TLS proxy whose CA the host trusts (extra
    # certificates in /usr/local/share/ca-certificates); the stand-in base trusts the same, as a company's
    # base image would. The images themselves are built unchanged.
    local_cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
    if local_cas:
        target = BASE_ROOTFS / "usr/local/share/ca-certificates"
        target.mkdir(parents=True, exist_ok=True)
        for ca in local_cas:
            shutil.copy2(ca, target / ca.name)
        _run(["chroot", str(BASE_ROOTFS), "update-ca-certificates"], timeout_s=300)
    for marker in BASE_ROOTFS.glob("usr/lib/python3*/EXTERNALLY-MANAGED"):
        marker.unlink()
    link = BASE_ROOTFS / "usr/bin/python"
    if not link.exists():
        link.symlink_to("python3")
    return BASE_ROOTFS


@dataclass(frozen=True)
class Buildah:
    """buildah with its own storage root, the vfs driver and chroot isolation (no daemon, no user ns)."""

    exe: str
    root: Path = STORAGE

    def cmd(self, *args: str) -> list[str]:
        return [
            self.exe,
            "--root",
            str(self.root),
            "--runroot",
            str(self.root) + "-run",
            "--storage-driver",
            "vfs",
            *args,
        ]

    def run(self, *args: str, timeout_s: float = 600, log: Path | None = None) -> str:
        return _run(self.cmd(*args), timeout_s=timeout_s, log=log)

    def has_image(self, name: str) -> bool:
        proc = subprocess.run(self.cmd("inspect", "--type", "image", name), capture_output=True, timeout=60)
        return proc.returncode == 0

    def import_rootfs(self, rootfs: Path, name: str) -> None:
        """Commit a directory tree as image `name` (what `docker import` does)."""
        ctr = self.run("from", "scratch").strip()
        try:
            mnt = Path(self.run("mount", ctr).strip())
            _run(["cp", "-a", f"{rootfs}/.", str(mnt)], timeout_s=600)
            self.run("umount", ctr)
            self.run(
                "config",
                "--env",
                "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "--env",
                "LANG=C.UTF-8",
                "--cmd",
                "python3",
                ctr,
            )
            self.run("commit", ctr, name, timeout_s=900)
        finally:
            subprocess.run(self.cmd("rm", ctr), capture_output=True, timeout=120)

    def build(self, dockerfile: Path, tag: str, log: Path, *extra: str) -> None:
        self.run(
            "bud",
            "--isolation",
            "chroot",
            "--network",
            "host",
            "--pull-never",
            "--layers=false",
            "-f",
            str(dockerfile),
            "-t",
            tag,
            *extra,
            str(REPO_ROOT),
            timeout_s=1800,
            log=log,
        )

    def config(self, image: str) -> dict[str, Any]:
        """The image's OCI config: Entrypoint, Cmd, User, Env, ..."""
        out = self.run("inspect", "--type", "image", image)
        config: dict[str, Any] = json.loads(out)["OCIv1"]["config"]
        return config

    @contextmanager
    def container(self, image: str) -> Iterator[str]:
        ctr = self.run("from", "--pull-never", image).strip()
        try:
            yield ctr
        finally:
            subprocess.run(self.cmd("rm", ctr), capture_output=True, timeout=300)

    @contextmanager
    def mounted(self, ctr: str) -> Iterator[Path]:
        """The container's root file system on the host, for as long as the block runs."""
        mnt = Path(self.run("mount", ctr).strip())
        try:
            yield mnt
        finally:
            subprocess.run(self.cmd("umount", ctr), capture_output=True, timeout=120)

    def start(
        self,
        ctr: str,
        argv: list[str],
        log: Path,
        env: dict[str, str] | None = None,
        volumes: tuple[str, ...] = (),
    ) -> subprocess.Popen[bytes]:
        """`buildah run` the command in the container, in the host's network namespace, as a child process."""
        opts = [a for k, v in (env or {}).items() for a in ("--env", f"{k}={v}")]
        opts += [a for v in volumes for a in ("--volume", v)]
        cmd = self.cmd("run", "--isolation", "chroot", "--network", "host", *opts, ctr, "--", *argv)
        return subprocess.Popen(cmd, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def start_unconfined(
    rootfs: Path,
    config: dict[str, Any],
    argv: list[str],
    log: Path,
    env: dict[str, str] | None = None,
    seccomp_bpf_fd: int | None = None,
) -> subprocess.Popen[bytes]:
    """Run `argv` from an image's root file system as a container runtime that lets it create user
    namespaces would: pivot_root (bwrap) instead of buildah's chroot, the image's user, Env and WorkingDir,
    the host's network, and an unmasked /proc. With `seccomp_bpf_fd` (a compiled filter, see
    seccomp_profile.bpf_fd), bwrap loads it just before it executes `argv`, where a runtime loads the
    container's seccomp profile.

    What `docker run --security-opt seccomp=unconfined --security-opt systempaths=unconfined` grants (plus
    `apparmor=unconfined` on hosts whose AppArmor restricts user namespaces). buildah's chroot isolation
    cannot stand in: the kernel refuses to create a user namespace from a chroot (EPERM), and a masked /proc
    (Docker's default) makes bwrap's `--proc` fail ("Can't mount proc", reported upstream: bubblewrap
    issues 284 and 505; not reproduced here).
    """
    uid = int(config.get("User") or 0)
    gid = next(
        (int(f[3]) for line in (rootfs / "etc/passwd").read_text().splitlines()
         if len(f := line.split(":")) > 3 and f[2] == str(uid)),
        uid,
    )  # fmt: skip
    variables = dict(item.split("=", 1) for item in config.get("Env") or []) | (env or {})
    cmd = ["bwrap", "--bind", str(rootfs), "/", "--dev-bind", "/dev", "/dev", "--bind", "/proc", "/proc"]
    cmd += ["--tmpfs", "/tmp", "--unshare-user", "--uid", str(uid), "--gid", str(gid), "--unshare-ipc"]
    cmd += ["--unshare-uts", "--die-with-parent", "--chdir", config.get("WorkingDir") or "/", "--clearenv"]
    cmd += [a for k, v in variables.items() for a in ("--setenv", k, v)]
    cmd += ["--seccomp", str(seccomp_bpf_fd)] if seccomp_bpf_fd is not None else []
    return subprocess.Popen(
        [*cmd, "--", *argv],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=() if seccomp_bpf_fd is None else (seccomp_bpf_fd,),
    )


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 20.0) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, 15)
        with contextlib.suppress(AssertionError):
            eventually(lambda: proc.poll() is not None, timeout_s=timeout_s, interval_s=0.1, what="the exit")
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


def local_torch_wheels(version: str) -> Path | None:
    """The folder pip takes `torch==version` from on this machine (a `find-links` folder holding a CPU build),
    found the way pip finds it: `pip config list` and PIP_FIND_LINKS."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout
    places = re.findall(r"find-links='([^']*)'", out) + os.environ.get("PIP_FIND_LINKS", "").split()
    for place in places:
        for entry in place.split():
            folder = Path(entry.removeprefix("file://"))
            if folder.is_dir() and any(folder.glob(f"torch-{version}*.whl")):
                return folder
    return None
