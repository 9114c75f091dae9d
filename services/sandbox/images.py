"""The image store: an image reference resolved to a root file system folder, unpacked once and cached by
digest, for sandboxes to overlay (read-only; many sandboxes share one folder).

- `dir:PATH`: a root file system folder, used in place (the operator's own folder: not copied or checked).
- `oci:PATH[:REF]`: an OCI image layout (`index.json`, `blobs/`); REF picks a manifest by its
  `org.opencontainers.image.ref.name` (else the only one). Every blob's sha256 is checked.
- `docker-archive:PATH`: a `docker save` / `podman save` tarball; each layer checked against the config's
  `rootfs.diff_ids`, cached by the config's digest (the image id).
- `dockerfile:PATH`: a Dockerfile (or a folder holding one, the build context) built with
  `buildah bud --isolation chroot --storage-driver vfs`, pushed to an OCI layout, then as `oci:`. Cached by
  the sha256 of the context's files, so an unchanged task is built once.

Unpacking is hostile-input safe (`unpack.py`).
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rewardfleet.services.sandbox.errors import ImageError, ImageNotFound, ImageUnsafe
from rewardfleet.services.sandbox.unpack import UnpackLimits, apply_layer

_REF_NAME = "org.opencontainers.image.ref.name"
_BLOB_CHUNK = 1 << 20


class ImageStore:
    """Resolves image references to root file systems cached under `cache`."""

    def __init__(
        self,
        cache: Path,
        *,
        limits: UnpackLimits | None = None,
        buildah: str = "buildah",
        build_timeout_s: float = 1800.0,
    ) -> None:
        self.cache = Path(cache)
        self.limits = limits or UnpackLimits()
        self.buildah = buildah
        self.build_timeout_s = build_timeout_s
        for sub in ("rootfs", "locks", "builds"):
            (self.cache / sub).mkdir(parents=True, exist_ok=True, mode=0o700)

    async def resolve(self, ref: str) -> Path:
        """The root file system folder of `ref`; ImageNotFound, ImageUnsafe or ImageError otherwise."""
        return await asyncio.to_thread(self.resolve_sync, ref)

    def resolve_sync(self, ref: str) -> Path:
        scheme, _, rest = ref.partition(":")
        if scheme == "dir":
            folder = Path(rest)
            if not folder.is_absolute() or not folder.is_dir():
                raise ImageNotFound(f"{ref}: no such folder (an absolute path is needed)")
            return folder.resolve()
        if scheme == "oci":
            path, _, name = rest.partition(":") if not Path(rest).exists() else (rest, "", "")
            return self._from_oci(Path(path), name or None)
        if scheme == "docker-archive":
            return self._from_docker_archive(Path(rest))
        if scheme == "dockerfile":
            return self._from_dockerfile(Path(rest))
        raise ImageNotFound(f"{ref}: unknown scheme {scheme!r} (dir:, oci:, docker-archive:, dockerfile:)")

    # --- OCI layout

    def _from_oci(self, layout: Path, name: str | None) -> Path:
        index = _read_json(layout / "index.json", "oci layout index.json")
        manifests = index.get("manifests") or []
        if name is not None:
            manifests = [m for m in manifests if (m.get("annotations") or {}).get(_REF_NAME) == name]
        if len(manifests) != 1:
            raise ImageNotFound(f"oci:{layout}: {len(manifests)} manifests match {name or '(any)'}, need one")
        digest = manifests[0]["digest"]
        manifest = json.loads(_read_blob(layout, digest))
        if "manifests" in manifest:  # an index of per-platform manifests: take the host's
            manifest, digest = _pick_platform(layout, manifest)
        _read_blob(layout, manifest["config"]["digest"])
        layers = manifest.get("layers") or []

        def unpack(dest: Path) -> None:
            for layer in layers:
                with _open_blob(layout, layer["digest"]) as blob:
                    apply_layer(blob, dest, self.limits)

        return self._cached(digest, unpack)

    # --- docker save

    def _from_docker_archive(self, archive: Path) -> Path:
        if not archive.is_file():
            raise ImageNotFound(f"docker-archive:{archive}: no such file")
        try:
            with tarfile.open(archive) as tar:
                manifest = json.load(_member(tar, "manifest.json"))
                if not isinstance(manifest, list) or len(manifest) != 1:
                    raise ImageError(f"{archive}: manifest.json must list exactly one image")
                config_name = manifest[0]["Config"]
                config_bytes = _member(tar, config_name).read()
                digest = "sha256:" + hashlib.sha256(config_bytes).hexdigest()
                if (
                    config_name.startswith("blobs/sha256/")
                    and digest != "sha256:" + config_name.split("/")[-1]
                ):
                    raise ImageUnsafe(f"{archive}: the config's digest does not match its name")
                diff_ids = json.loads(config_bytes)["rootfs"]["diff_ids"]
                layer_names = manifest[0]["Layers"]
        except (tarfile.TarError, KeyError, ValueError, TypeError) as exc:
            raise ImageError(f"docker-archive:{archive}: not a docker save archive ({exc})") from None
        if len(diff_ids) != len(layer_names):
            raise ImageUnsafe(f"{archive}: {len(layer_names)} layers but {len(diff_ids)} diff_ids")

        def unpack(dest: Path) -> None:
            with tarfile.open(archive) as tar:
                for name, diff_id in zip(layer_names, diff_ids, strict=True):
                    layer = _member(tar, name)
                    checked = _HashingReader(layer, diff_id, f"{archive}:{name}")
                    apply_layer(checked, dest, self.limits)
                    checked.verify()

        return self._cached(digest, unpack)

    # --- Dockerfile via buildah

    def _from_dockerfile(self, path: Path) -> Path:
        dockerfile = path / "Dockerfile" if path.is_dir() else path
        if not dockerfile.is_file():
            raise ImageNotFound(f"dockerfile:{path}: no Dockerfile there")
        context = dockerfile.parent
        key = _tree_digest(context)
        layout = self.cache / "builds" / key.split(":")[1]
        with self._lock(key):
            if not (layout / "index.json").exists():
                self._build(dockerfile, context, layout, key)
        return self._from_oci(layout, None)

    def _build(self, dockerfile: Path, context: Path, layout: Path, key: str) -> None:
        tag = f"localhost/rewardfleet-task:{key.split(':')[1][:32]}"
        base = [self.buildah, "--storage-driver", "vfs"]
        steps = [
            [
                *base,
                "bud",
                "--isolation",
                "chroot",
                "--network",
                "host",
                "-f",
                str(dockerfile),
                "-t",
                tag,
                str(context),
            ],
            [*base, "push", tag, f"oci:{layout.with_suffix('.tmp')}"],
        ]
        shutil.rmtree(layout.with_suffix(".tmp"), ignore_errors=True)
        for step in steps:
            try:
                done = subprocess.run(step, capture_output=True, text=True, timeout=self.build_timeout_s)
            except FileNotFoundError:
                raise ImageError("buildah is not installed (Debian: apt-get install buildah)") from None
            except subprocess.TimeoutExpired:
                raise ImageError(f"building {dockerfile} took over {self.build_timeout_s} s") from None
            if done.returncode != 0:
                raise ImageError(f"buildah {step[3]} of {dockerfile} failed: {done.stderr.strip()[-800:]}")
        os.replace(layout.with_suffix(".tmp"), layout)

    # --- the cache

    @contextmanager
    def _lock(self, digest: str) -> Iterator[None]:
        with open(self.cache / "locks" / digest.replace(":", "-"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _cached(self, digest: str, unpack: Any) -> Path:
        """The rootfs for `digest`, unpacking it (once, under a lock other processes share) if absent."""
        final = self.cache / "rootfs" / digest.replace(":", "-")
        if final.is_dir():
            return final
        with self._lock(digest):
            if final.is_dir():
                return final
            tmp = final.with_name(final.name + ".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(mode=0o755)
            try:
                unpack(tmp)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.replace(tmp, final)
        return final


class _HashingReader:
    """A file object that hashes what is read through it, to check a layer against its digest."""

    def __init__(self, raw: Any, digest: str, what: str) -> None:
        self._raw = raw
        self._hash = hashlib.sha256()
        self._digest = digest
        self._what = what

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._hash.update(data)
        return bytes(data)

    def verify(self) -> None:
        while self.read(_BLOB_CHUNK):
            pass
        if "sha256:" + self._hash.hexdigest() != self._digest:
            raise ImageUnsafe(f"{self._what}: content does not match its digest {self._digest}")


def _member(tar: tarfile.TarFile, name: str) -> Any:
    file = tar.extractfile(name)
    if file is None:
        raise ImageError(f"{name} is not a file in the archive")
    return file


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ImageNotFound(f"{path}: no {what}") from None
    except (OSError, ValueError) as exc:
        raise ImageError(f"{path}: unreadable {what} ({exc})") from None
    if not isinstance(data, dict):
        raise ImageError(f"{path}: {what} is not a JSON object")
    return data


def _blob_path(layout: Path, digest: str) -> Path:
    algorithm, _, hexdigest = digest.partition(":")
    if algorithm != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
        raise ImageUnsafe(f"{layout}: unsupported or malformed digest {digest!r}")
    return layout / "blobs" / "sha256" / hexdigest


@contextmanager
def _open_blob(layout: Path, digest: str) -> Iterator[Any]:
    """A blob opened for reading, its digest checked when it has been read to its end."""
    path = _blob_path(layout, digest)
    if not path.is_file():
        raise ImageNotFound(f"{layout}: missing blob {digest}")
    with open(path, "rb") as raw:
        reader = _HashingReader(raw, digest, f"{layout} blob")
        yield reader
        reader.verify()


def _read_blob(layout: Path, digest: str) -> bytes:
    with _open_blob(layout, digest) as blob:
        return bytes(blob.read())


def _pick_platform(layout: Path, index: dict[str, Any]) -> tuple[dict[str, Any], str]:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
    for entry in index["manifests"]:
        platform = entry.get("platform") or {}
        if platform.get("os", "linux") == "linux" and platform.get("architecture") == arch:
            return json.loads(_read_blob(layout, entry["digest"])), entry["digest"]
    raise ImageNotFound(f"{layout}: no manifest for linux/{arch}")


def _tree_digest(context: Path) -> str:
    """sha256 over the context's file names, modes and contents (the Dockerfile's build cache key)."""
    digest = hashlib.sha256()
    for dirpath, dirs, files in os.walk(context):
        dirs.sort()
        for name in sorted(files):
            full = Path(dirpath, name)
            digest.update(str(full.relative_to(context)).encode() + b"\0")
            if full.is_symlink():
                digest.update(b"L" + os.readlink(full).encode())
            elif full.is_file():
                digest.update(b"F%o" % (full.stat().st_mode & 0o777) + full.read_bytes())
            digest.update(b"\0")
    return "sha256:" + digest.hexdigest()
