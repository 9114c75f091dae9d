"""The local provider: each sandbox is an overlay of its image's root file system (shared, read-only) under
a size-capped tmpfs writable layer, plus cgroups for its limits; each exec is a bubblewrap process over it
(`bwrap_exec.py`). A sandbox is a folder `<root>/<id>/` (its record, its mounts), so any process of the host
can attach to it by id, and the reaper can stop it after its owner died.

No process belongs to an idle sandbox: every exec has its own pid namespace, so nothing a command starts
outlives the exec (a daemon started by one exec is gone before the next). Needs root (overlay and tmpfs
mounts, cgroups); `LocalProvider.check()` says what is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from rewardfleet.services.sandbox import bwrap_exec, mounts, safe_files
from rewardfleet.services.sandbox.api import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_OUTPUT_BYTES
from rewardfleet.services.sandbox.cgroups import Cgroups
from rewardfleet.services.sandbox.errors import (
    SandboxFailed,
    SandboxNotFound,
    SandboxSpecInvalid,
    SandboxUnavailable,
)
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.spec import (
    ExecResult,
    SandboxSpec,
    VerifierMounts,
    check_env,
    check_exec,
    check_path,
)
from rewardfleet.services.sandbox.state import SandboxRecord, process_start_ticks

_ID = re.compile(r"[0-9a-f]{32}\Z")
_STOPPING = ".stopping-"
# A folder without a readable record this long after it was made is a create that crashed.
_HALF_MADE_AFTER_S = 60.0
MAX_SNAPSHOTS = 8


class LocalSandbox:
    """One sandbox of a `LocalProvider` (see `Sandbox` for each method's contract)."""

    def __init__(self, provider: LocalProvider, record: SandboxRecord) -> None:
        self.id = record.id
        self._provider = provider
        self._record = record

    @property
    def record(self) -> SandboxRecord:
        return self._record

    def _root(self) -> Path:
        folder = self._provider.folder(self.id)
        if not (folder / "sandbox.json").exists():
            raise SandboxNotFound(self.id)
        root = folder / "root"
        if not os.path.ismount(root):
            raise SandboxFailed(f"sandbox {self.id}: its root file system is not mounted any more")
        return root

    async def exec(
        self,
        cmd: Sequence[str] | str,
        *,
        timeout_s: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: bytes | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        verifier: VerifierMounts | None = None,
    ) -> ExecResult:
        argv = check_exec(cmd, timeout_s, cwd, max_output_bytes)
        extra_env = check_env("env", env or {})
        root = self._root()
        binds: list[bwrap_exec.Bind] = []
        fresh: dict[str, Path] = {}
        try:
            if verifier is not None:
                binds, fresh = await asyncio.to_thread(self._verifier_binds, root, verifier)
            workdir = check_path("cwd", cwd) if cwd is not None else self._record.workdir
            if not safe_files.is_dir(root, workdir):
                raise SandboxSpecInvalid("cwd", f"{workdir!r} is not a folder in the sandbox")
            command = bwrap_exec.bwrap_argv(
                str(root),
                argv,
                cwd=workdir,
                env={**self._record.env, **extra_env},
                network=self._record.network,
                binds=binds,
            )
            try:
                result = await bwrap_exec.run(
                    command,
                    procs_files=self._provider.cgroups.procs_files(self.id),
                    timeout_s=timeout_s,
                    stdin=stdin,
                    max_output_bytes=max_output_bytes,
                )
            except (SandboxFailed, FileNotFoundError):
                self._root()  # SandboxNotFound when a stop raced this exec
                raise
            self._root()  # a stop that killed the command: SandboxNotFound, not its exit status
            if fresh and verifier is not None:
                collected = await asyncio.to_thread(_collect, fresh, verifier.max_collected_bytes)
                result = ExecResult(**{**result.__dict__, "collected": collected})
            return result
        finally:
            for folder in fresh.values():
                await asyncio.to_thread(shutil.rmtree, folder, True)

    def _verifier_binds(
        self, root: Path, verifier: VerifierMounts
    ) -> tuple[list[bwrap_exec.Bind], dict[str, Path]]:
        """Binds for a verifier exec. Whatever the sandbox holds at each target is removed first (from the
        host, resolving inside the root), so a symlink planted there cannot redirect the mount."""
        binds: list[bwrap_exec.Bind] = []
        fresh: dict[str, Path] = {}
        for target, source in verifier.read_only.items():
            host = Path(source)
            if not host.exists():
                raise SandboxFailed(f"verifier read_only source {source!r} does not exist")
            safe_files.replace_with_empty(root, target, folder=host.is_dir())
            binds.append(bwrap_exec.Bind(str(host), target))
        for target in verifier.fresh:
            safe_files.replace_with_empty(root, target, folder=True)
            host = self._provider.folder(self.id) / f"fresh-{secrets.token_hex(8)}"
            host.mkdir(mode=0o755)
            fresh[target] = host
            binds.append(bwrap_exec.Bind(str(host), target, writable=True))
        return binds, fresh

    async def read_file(self, path: str, *, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
        path = check_path("path", path)
        return await asyncio.to_thread(safe_files.read_file, self._root(), path, max_bytes)

    async def write_file(self, path: str, data: bytes, *, mode: int = 0o644) -> None:
        path = check_path("path", path)
        disk = self._record.disk_mb << 20
        await asyncio.to_thread(safe_files.write_file, self._root(), path, bytes(data), mode, disk)

    async def stop(self) -> None:
        await self._provider.stop(self.id)

    async def snapshot(self) -> str:
        """Saves the sandbox's writable layer (everything written since it was made) and names the copy.
        At most `MAX_SNAPSHOTS` per sandbox, each at most its `disk_mb`, kept on the host's disk."""
        self._root()
        folder = self._provider.folder(self.id) / "snapshots"
        folder.mkdir(mode=0o700, exist_ok=True)
        if len(os.listdir(folder)) >= MAX_SNAPSHOTS:
            raise SandboxSpecInvalid("snapshot", f"a sandbox keeps at most {MAX_SNAPSHOTS} snapshots")
        name = secrets.token_hex(8)
        upper = self._provider.folder(self.id) / "disk" / "upper"
        await _copy_tree(upper, folder / name)
        return name

    async def restore(self, name: str) -> None:
        """Puts the writable layer back as `snapshot()` saved it. Every process of the sandbox is killed
        first (an exec running meanwhile ends as if stopped)."""
        root = self._root()
        folder = self._provider.folder(self.id)
        saved = folder / "snapshots" / name
        if not re.fullmatch(r"[0-9a-f]{16}", name) or not saved.is_dir():
            raise SandboxSpecInvalid("snapshot", f"no snapshot {name!r} of this sandbox")
        await asyncio.to_thread(self._provider.cgroups.kill, self.id)
        await asyncio.to_thread(mounts.unmount, root)
        disk = folder / "disk"
        for part in ("upper", "work"):
            await asyncio.to_thread(shutil.rmtree, disk / part)
        (disk / "work").mkdir(mode=0o700)
        await _copy_tree(saved, disk / "upper")
        await asyncio.to_thread(mounts.mount_overlay, Path(self._record.lower), folder)


async def _copy_tree(source: Path, dest: Path) -> None:
    """`cp -a` (owners, modes, links, the overlay's whiteout devices and xattrs kept)."""
    proc = await asyncio.create_subprocess_exec(
        "cp", "-a", "--", str(source), str(dest), stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        shutil.rmtree(dest, ignore_errors=True)
        raise SandboxFailed(f"copying the writable layer: {err.decode(errors='replace')[-300:]}")


def _collect(fresh: dict[str, Path], max_bytes: int) -> dict[str, bytes]:
    collected: dict[str, bytes] = {}
    for target, host in fresh.items():
        collected.update(
            safe_files.collect_files(host, max_bytes - sum(map(len, collected.values())), target)
        )
    return collected


class LocalProvider:
    """Sandboxes on this host under `root` (a folder only root can read), from images `images` resolves."""

    name = "local"

    def __init__(
        self,
        root: Path,
        images: ImageStore,
        *,
        cgroups: Cgroups | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = Path(root)
        self.images = images
        found = cgroups or Cgroups.detect()
        if found is None:
            raise SandboxUnavailable(
                "the local provider needs cgroups for its pids and memory limits: neither a cgroup v2 "
                "subtree delegating pids and memory nor writable v1 pids/memory hierarchies were found"
            )
        self.cgroups = found
        self._clock = clock
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)

    def check(self) -> None:
        """Raises SandboxUnavailable naming what this host lacks (root, bwrap, namespaces, overlay and
        tmpfs mounts)."""
        if os.geteuid() != 0:
            raise SandboxUnavailable("the local provider mounts overlays and tmpfs: run it as root")
        if shutil.which("bwrap") is None:
            raise SandboxUnavailable("bwrap is not installed (Debian: apt-get install bubblewrap)")
        probe = subprocess.run(
            ["bwrap", "--unshare-all", "--uid", "0", "--ro-bind", "/", "/", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode != 0:
            raise SandboxUnavailable(f"bwrap cannot make namespaces here: {probe.stderr.strip()[:300]}")
        probe_folder = Path(tempfile.mkdtemp(prefix=".probe-", dir=self.root))
        try:
            (probe_folder / "lower").mkdir()
            mounts.mount_layer(probe_folder / "lower", probe_folder, 1 << 20)
        finally:
            mounts.unmount_layer(probe_folder)
            shutil.rmtree(probe_folder, ignore_errors=True)

    def folder(self, sandbox_id: str) -> Path:
        if not _ID.match(sandbox_id):
            raise SandboxNotFound(sandbox_id)
        return self.root / sandbox_id

    async def create(self, spec: SandboxSpec, *, owner: str) -> LocalSandbox:
        lower = await self.images.resolve(spec.image)
        sandbox_id = secrets.token_hex(16)
        pid = os.getpid()
        record = SandboxRecord(
            id=sandbox_id,
            image=spec.image,
            lower=str(lower),
            workdir=spec.workdir,
            env=dict(spec.env),
            network=spec.network,
            cpus=spec.resources.cpus,
            memory_mb=spec.resources.memory_mb,
            disk_mb=spec.resources.disk_mb,
            pids=spec.resources.pids,
            owner=owner,
            owner_pid=pid,
            owner_start=process_start_ticks(pid) or 0,
            deadline=self._clock() + spec.ttl_s,
        )
        try:
            await asyncio.to_thread(self._make, record, spec)
        except BaseException:
            await asyncio.shield(self.stop(sandbox_id))
            raise
        return LocalSandbox(self, record)

    def _make(self, record: SandboxRecord, spec: SandboxSpec) -> None:
        folder = self.folder(record.id)
        folder.mkdir(mode=0o700)
        record.write(folder)  # first, so a crash from here on leaves something the reaper finds
        self.cgroups.create(record.id, spec.resources)
        root = mounts.mount_layer(Path(record.lower), folder, spec.resources.disk_mb << 20)
        safe_files.make_dirs(root, spec.workdir)
        for path, data in spec.files.items():
            safe_files.write_file(root, path, data, 0o644, spec.resources.disk_mb << 20)

    async def attach(self, sandbox_id: str) -> LocalSandbox:
        folder = self.folder(sandbox_id)
        try:
            record = await asyncio.to_thread(SandboxRecord.read, folder)
        except (OSError, ValueError, TypeError):
            raise SandboxNotFound(sandbox_id) from None
        return LocalSandbox(self, record)

    async def stop(self, sandbox_id: str) -> None:
        """Stops one sandbox: its processes killed, its mounts and cgroups gone, its folder removed.
        Idempotent; the first caller does the work (the folder is renamed away first)."""
        folder = self.folder(sandbox_id)
        away = self.root / f"{_STOPPING}{sandbox_id}-{secrets.token_hex(4)}"
        try:
            folder.rename(away)
        except FileNotFoundError:
            return
        await asyncio.to_thread(self._teardown, sandbox_id, away)

    def _teardown(self, sandbox_id: str, folder: Path) -> None:
        self.cgroups.destroy(sandbox_id)
        mounts.unmount_layer(folder)
        if mounts.mounts_under(folder):
            raise SandboxFailed(f"sandbox {sandbox_id}: mounts left under {folder}")
        shutil.rmtree(folder, ignore_errors=True)

    def ids(self) -> list[str]:
        """Ids of the sandboxes under this provider's root (running or abandoned)."""
        return sorted(e.name for e in os.scandir(self.root) if _ID.match(e.name))

    async def reap(self) -> int:
        """Stops sandboxes past their ttl or whose owner process is gone, and finishes stops a crash
        interrupted; returns how many sandboxes it stopped."""
        stopped = 0
        now = self._clock()
        for entry in list(os.scandir(self.root)):
            if entry.name.startswith((".probe-", _STOPPING)) and not _older_than(entry, _HALF_MADE_AFTER_S):
                continue  # another process's check() or stop() under way
            if entry.name.startswith(".probe-"):  # a check() that crashed half-way
                mounts.unmount_layer(Path(entry.path))
                shutil.rmtree(entry.path, ignore_errors=True)
                continue
            if entry.name.startswith(_STOPPING):
                sandbox_id = entry.name[len(_STOPPING) :].split("-")[0]
                await asyncio.to_thread(self._teardown, sandbox_id, Path(entry.path))
                continue
            if not _ID.match(entry.name):
                continue
            try:
                record = SandboxRecord.read(Path(entry.path))
            except (OSError, ValueError, TypeError):
                record = None  # a create that crashed before its record was whole, or one under way
            if record is None:
                if _older_than(entry, _HALF_MADE_AFTER_S):
                    await self.stop(entry.name)
                    stopped += 1
                continue
            if record.abandoned(now) is not None:
                await self.stop(entry.name)
                stopped += 1
        return stopped

    async def stop_owned(self) -> int:
        """Stops every sandbox this process owns (a gateway's stop); returns how many."""
        pid, stopped = os.getpid(), 0
        for sandbox_id in self.ids():
            with contextlib.suppress(SandboxNotFound):
                record = (await self.attach(sandbox_id)).record
                if record.owner_pid == pid:
                    await self.stop(sandbox_id)
                    stopped += 1
        return stopped


def _older_than(entry: os.DirEntry[str], seconds: float) -> bool:
    try:
        return time.time() - entry.stat(follow_symlinks=False).st_mtime > seconds
    except FileNotFoundError:
        return False
