"""A tiny root file system for sandbox tests, made from this host's own binaries and the libraries they
load (about 10 MB; no registry, no debootstrap), and helpers counting what a sandbox leaves behind."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

TOOLS = (
    "sh", "bash", "cat", "ls", "sleep", "id", "head", "mkdir", "rm", "touch", "dd", "stat", "grep", "wc",
    "chmod", "ln", "env", "true", "false", "echo", "yes", "tr", "kill", "seq", "mkfifo", "find", "timeout",
    "dirname", "tar",
)  # fmt: skip
_LIB = re.compile(r"(/\S+\.so[.\d]*)")


def make_rootfs(dest: Path) -> Path:
    """`dest` filled with TOOLS under /usr/bin (and /bin -> usr/bin), their libraries, and the usual
    empty top-level folders."""
    for folder in ("usr/bin", "etc", "tmp", "root", "proc", "dev", "app"):
        (dest / folder).mkdir(parents=True, exist_ok=True)
    os.symlink("usr/bin", dest / "bin")
    (dest / "tmp").chmod(0o1777)
    binaries = []
    for tool in TOOLS:
        found = shutil.which(tool, path="/usr/bin:/bin")
        if found:
            shutil.copy2(found, dest / "usr/bin" / tool)
            binaries.append(found)
    libs = set(_LIB.findall(subprocess.run(["ldd", *binaries], capture_output=True, text=True).stdout))
    for lib in libs:
        target = dest / lib.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(lib), target)
    (dest / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
    (dest / "etc/image-marker").write_text("from the image\n")
    return dest


def processes_in(pids: set[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


def host_processes_with(marker: str) -> list[int]:
    """Host pids whose command line starts with `marker` (the sandboxed command, not the bwrap naming it)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmdline.startswith(marker) and entry.name != str(os.getpid()):
                found.append(int(entry.name))
    return found
