"""Files of a sandbox's root read and written from the host without following the sandbox's symlinks out
of it: every path is resolved by openat2(2) with RESOLVE_IN_ROOT (as if the root were `/`), and only
regular files are read or replaced (a FIFO the sandbox left cannot block the host).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import posixpath
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from rewardfleet.services.sandbox.errors import FileTooLarge, SandboxFailed, SandboxSpecInvalid

_SYS_OPENAT2 = 437  # the same number on x86_64 and aarch64
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_IN_ROOT = 0x10
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_NOFOLLOW = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def open_in_root(root_fd: int, path: str, flags: int, mode: int = 0) -> int:
    """An fd for `path` resolved inside the folder `root_fd` (symlinks and '..' cannot leave it)."""
    how = _OpenHow(flags | os.O_CLOEXEC, mode, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(_SYS_OPENAT2, root_fd, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), path)
    return int(fd)


@contextlib.contextmanager
def _root_fd(root: Path) -> Iterator[int]:
    try:
        fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxFailed(f"the sandbox's root file system is gone: {exc}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def is_dir(root: Path, path: str) -> bool:
    """Whether `path` is a folder inside the root (links followed inside it)."""
    with _root_fd(root) as root_fd:
        try:
            os.close(open_in_root(root_fd, path, os.O_PATH | os.O_DIRECTORY))
        except OSError:
            return False
    return True


def read_file(root: Path, path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file `path`; FileNotFoundError, IsADirectoryError or FileTooLarge."""
    if max_bytes < 0:
        raise SandboxSpecInvalid("max_bytes", "must be >= 0")
    with _root_fd(root) as root_fd:
        fd = open_in_root(root_fd, path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a folder", path)
            if not stat.S_ISREG(info.st_mode):
                raise FileNotFoundError(errno.ENOENT, "not a regular file", path)
            if info.st_size > max_bytes:
                raise FileTooLarge(path, info.st_size, max_bytes)
            data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(path, None, max_bytes)
    return data


def write_file(root: Path, path: str, data: bytes, mode: int, disk_bytes: int) -> None:
    """Creates or replaces the regular file `path` (making its parent folders); what is at `path` when it
    is not a regular file is an error, never followed. A full writable layer is FileTooLarge naming
    `disk_bytes`."""
    parent, name = posixpath.split(path)
    if not name:
        raise SandboxSpecInvalid("path", f"{path!r} names a folder, not a file")
    with _root_fd(root) as root_fd:
        dir_fd = make_dirs_at(root_fd, parent)
        try:
            tmp = f".{name}.rewardfleet-{os.getpid()}-{id(data)}"
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode & 0o777, dir_fd=dir_fd
            )
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(data)
                    os.fchmod(file.fileno(), mode & 0o777)
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                raise FileTooLarge(path, len(data), disk_bytes) from None
            raise
        finally:
            os.close(dir_fd)


def make_dirs_at(root_fd: int, folder: str) -> int:
    """An fd of `folder` inside the root, each missing component made (mode 755). Every prefix is
    resolved from the root itself, so a symlink inside the sandbox is followed as the sandbox sees it."""
    parts = [p for p in folder.split("/") if p]
    fd = os.dup(root_fd)
    try:
        for depth, part in enumerate(parts, 1):
            prefix = "/".join(parts[:depth])
            try:
                next_fd = open_in_root(root_fd, prefix, os.O_PATH | os.O_DIRECTORY)
            except FileNotFoundError:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:  # a dangling symlink: not followed to make its target
                    raise FileNotFoundError(errno.ENOENT, "a dangling symlink on the way", folder) from None
                next_fd = open_in_root(root_fd, prefix, os.O_PATH | os.O_DIRECTORY)
            os.close(fd)
            fd = next_fd
        return fd
    except BaseException:
        os.close(fd)
        raise


def make_dirs(root: Path, folder: str) -> None:
    """Makes `folder` (and its parents) inside the root."""
    with _root_fd(root) as root_fd:
        os.close(make_dirs_at(root_fd, folder))


def replace_with_empty(root: Path, path: str, *, folder: bool) -> None:
    """Whatever is at `path` inside the root (a file, a folder, a symlink) is removed and an empty folder
    (or empty file) made in its place: the mount point of a verifier's bind. Every folder on the way is made
    a real folder (a symlink or file there is replaced), so the path bwrap mounts on is the path named, not
    wherever a link the sandbox planted points."""
    parts = [p for p in path.split("/") if p]
    if not parts:
        raise SandboxSpecInvalid("path", f"{path!r}: a verifier mount cannot replace the root")
    with _root_fd(root) as root_fd:
        dir_fd = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=root_fd)
        try:
            for part in parts[:-1]:
                info = _lstat_at(dir_fd, part)
                if info is None or not stat.S_ISDIR(info.st_mode):
                    _remove_at(dir_fd, part, info)
                    os.mkdir(part, 0o755, dir_fd=dir_fd)
                next_fd = os.open(
                    part, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd
                )
                os.close(dir_fd)
                dir_fd = next_fd
            name = parts[-1]
            _remove_at(dir_fd, name, _lstat_at(dir_fd, name))
            if folder:
                os.mkdir(name, 0o755, dir_fd=dir_fd)
            else:
                os.close(os.open(name, NEW_FILE, 0o644, dir_fd=dir_fd))
        finally:
            os.close(dir_fd)


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _remove_at(dir_fd: int, name: str, info: os.stat_result | None) -> None:
    if info is None:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)


def collect_files(folder: Path, max_bytes: int, prefix: str) -> dict[str, bytes]:
    """The regular files under `folder` (a host folder a sandbox wrote), keyed `prefix/relative/path`,
    read without following links; stops adding files once `max_bytes` would be passed."""
    found: dict[str, bytes] = {}
    total = 0
    for dirpath, _dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(files):
            full = os.path.join(dirpath, name)
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as file:
                info = os.fstat(file.fileno())
                if not stat.S_ISREG(info.st_mode) or total + info.st_size > max_bytes:
                    continue
                data = file.read(max_bytes - total + 1)
            if total + len(data) <= max_bytes:
                total += len(data)
                found[posixpath.join(prefix, os.path.relpath(full, folder))] = data
    return found
