"""The mounts of a local sandbox's root: a size-capped tmpfs holding its writable layer and an overlay of
the image's root file system under it, made with mount(2) directly (no `mount` process per sandbox).

Both are `nosuid,nodev`: the sandbox's root is host root inside a user namespace, so a setuid file it
writes must mean nothing anywhere. Needs CAP_SYS_ADMIN in the host's mount namespace (the gateway as root).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from pathlib import Path

from rewardfleet.services.sandbox.errors import SandboxFailed, SandboxUnavailable

MS_NOSUID = 2
MS_NODEV = 4
MNT_DETACH = 2
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(source: str, target: Path, fstype: str, flags: int, data: str) -> None:
    done = _libc.mount(source.encode(), str(target).encode(), fstype.encode(), flags, data.encode())
    if done != 0:
        code = ctypes.get_errno()
        message = f"mount {fstype} on {target}: {os.strerror(code)}"
        if code in (errno.EPERM, errno.EACCES):
            raise SandboxUnavailable(f"{message}: the local provider needs CAP_SYS_ADMIN (run as root)")
        raise SandboxFailed(message)


def mount_layer(lower: Path, layer: Path, disk_bytes: int) -> Path:
    """Mounts `layer/disk` (tmpfs of `disk_bytes`) and `layer/root` (overlay: `lower` below, the tmpfs's
    upper folder above); returns the merged root."""
    disk, root = layer / "disk", layer / "root"
    disk.mkdir(mode=0o700)
    root.mkdir(mode=0o755)
    _mount("tmpfs", disk, "tmpfs", MS_NOSUID | MS_NODEV, f"size={disk_bytes},mode=0700")
    try:
        (disk / "upper").mkdir(mode=0o755)
        (disk / "work").mkdir(mode=0o700)
        mount_overlay(lower, layer)
    except BaseException:
        unmount(disk)
        raise
    return root


def mount_overlay(lower: Path, layer: Path) -> None:
    """The overlay of `layer/root`: `lower` below, `layer/disk/upper` above."""
    disk = layer / "disk"
    options = f"lowerdir={lower},upperdir={disk / 'upper'},workdir={disk / 'work'}"
    _mount("overlay", layer / "root", "overlay", MS_NOSUID | MS_NODEV, options)


def unmount(target: Path) -> None:
    """Unmounts `target` if it is mounted (detached when busy: nothing can enter it again)."""
    if _libc.umount2(str(target).encode(), 0) == 0:
        return
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOENT):  # not a mount point (any more), or gone
        return
    if _libc.umount2(str(target).encode(), MNT_DETACH) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOENT):
            raise SandboxFailed(f"umount {target}: {os.strerror(code)}")


def unmount_layer(layer: Path) -> None:
    """Undoes `mount_layer` (the overlay first, then the tmpfs under it); safe to repeat."""
    unmount(layer / "root")
    unmount(layer / "disk")


def mounts_under(folder: Path) -> list[str]:
    """Mount points at or below `folder` in this mount namespace (what a stop must leave none of)."""
    prefix = str(folder).rstrip("/") + "/"
    found = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            point = line.split()[4].replace("\\040", " ")
            if point == prefix[:-1] or point.startswith(prefix):
                found.append(point)
    return found
