"""One image layer (a tar stream, plain or gzip/bzip2/xz) applied onto a root file system folder, treating
the archive as hostile.

- Every path is resolved inside the folder (openat2 RESOLVE_IN_ROOT, `safe_files`), so a symlink an
  earlier entry made cannot carry a later entry out of it; `..` components and absolute names are refused
  (`ImageUnsafe`); a hard link's target must already be inside.
- No device nodes or FIFOs are made (they are skipped); setuid and setgid bits are cleared; extended
  attributes (file capabilities) are not applied.
- OCI whiteouts: `.wh.NAME` removes NAME of the layers below; `.wh..wh..opq` empties its folder of what the
  layers below put there.
- `UnpackLimits` bound the entries, the bytes written and a name's length.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import shutil
import stat
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rewardfleet.services.sandbox.errors import ImageError, ImageUnsafe
from rewardfleet.services.sandbox.safe_files import make_dirs_at, open_in_root

WHITEOUT = ".wh."
OPAQUE = ".wh..wh..opq"
_COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class UnpackLimits:
    """Bounds on one image: entries, bytes of file content, and a name's length in bytes."""

    max_entries: int = 1_000_000
    max_bytes: int = 16 << 30
    max_name_bytes: int = 4096


def _clean(name: str, what: str) -> str:
    """An archive name as a relative path inside the root; ImageUnsafe for one that would leave it."""
    if name.startswith("/"):
        raise ImageUnsafe(f"{what}: absolute path {name!r} in a layer")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ImageUnsafe(f"{what}: path {name!r} leaves the image's root")
    return "/".join(parts)


def apply_layer(fileobj: IO[bytes] | Any, root: Path, limits: UnpackLimits) -> None:
    """Applies one layer read from `fileobj` onto the folder `root`."""
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    created: set[str] = set()
    written = entries = 0
    try:
        with tarfile.open(fileobj=fileobj, mode="r|*") as tar:
            for member in tar:
                entries += 1
                if entries > limits.max_entries:
                    raise ImageUnsafe(f"a layer holds over {limits.max_entries} entries")
                if len(member.name.encode()) > limits.max_name_bytes:
                    raise ImageUnsafe(f"a name of {len(member.name)} characters in a layer")
                name = _clean(member.name, "layer")
                if not name:
                    continue
                written += max(0, member.size) if member.isreg() else 0
                if written > limits.max_bytes:
                    raise ImageUnsafe(f"a layer's files are over {limits.max_bytes} bytes")
                _apply(tar, member, name, root_fd, created)
    except tarfile.ReadError as exc:
        raise ImageError(f"a layer is not a (gzip, bzip2 or xz) tar stream: {exc}") from None
    finally:
        os.close(root_fd)


def _apply(tar: tarfile.TarFile, member: tarfile.TarInfo, name: str, root_fd: int, created: set[str]) -> None:
    parent, base = posixpath.split(name)
    try:
        dir_fd = make_dirs_at(root_fd, parent)
    except (FileNotFoundError, NotADirectoryError):
        raise ImageUnsafe(f"{name!r} goes through a link that leads nowhere inside the image") from None
    try:
        if base == OPAQUE:
            _empty_below(dir_fd, parent, created)
            return
        if base.startswith(WHITEOUT):
            _remove(dir_fd, base[len(WHITEOUT) :])
            return
        if member.ischr() or member.isblk() or member.isfifo():
            return  # device nodes and FIFOs are never made
        existing = _lstat(dir_fd, base)
        if existing is not None and not (member.isdir() and stat.S_ISDIR(existing.st_mode)):
            _remove(dir_fd, base)
        if member.isdir():
            if existing is None or not stat.S_ISDIR(existing.st_mode):
                os.mkdir(base, 0o755, dir_fd=dir_fd)
        elif member.isreg():
            source = tar.extractfile(member)
            fd = os.open(
                base,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=dir_fd,
            )
            with os.fdopen(fd, "wb") as out:
                if source is not None:
                    shutil.copyfileobj(source, out, _COPY_CHUNK)
        elif member.issym():
            os.symlink(member.linkname, base, dir_fd=dir_fd)
        elif member.islnk():
            _hard_link(root_fd, _clean(member.linkname, "hard link"), dir_fd, base)
        else:
            return
        created.add(name)
        if member.islnk():
            return  # the same inode as its target, which has its owner and mode already
        if os.geteuid() == 0:
            os.chown(base, member.uid, member.gid, dir_fd=dir_fd, follow_symlinks=False)
        if not member.issym():
            os.chmod(base, member.mode & 0o1777, dir_fd=dir_fd)  # never setuid or setgid
    finally:
        os.close(dir_fd)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _remove(dir_fd: int, name: str) -> None:
    info = _lstat(dir_fd, name)
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def _empty_below(dir_fd: int, folder: str, created: set[str]) -> None:
    """The opaque whiteout: what the layers below put in `folder` goes; this layer's own entries stay."""
    list_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        names = os.listdir(list_fd)
    finally:
        os.close(list_fd)
    for entry in names:
        if posixpath.join(folder, entry) not in created:
            _remove(dir_fd, entry)


def _hard_link(root_fd: int, target: str, dir_fd: int, name: str) -> None:
    parent, base = posixpath.split(target)
    try:
        src_fd = open_in_root(root_fd, parent or ".", os.O_PATH | os.O_DIRECTORY)
    except OSError:
        raise ImageUnsafe(f"hard link {name!r} to {target!r}, which is not in the image") from None
    try:
        info = _lstat(src_fd, base)
        if info is None or stat.S_ISDIR(info.st_mode):
            raise ImageUnsafe(f"hard link {name!r} to {target!r}, which is not a file of the image")
        with contextlib.suppress(FileExistsError):
            os.link(base, name, src_dir_fd=src_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        os.close(src_fd)
