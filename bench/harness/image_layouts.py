"""Image archives made by hand for tests: layer tars (from entries or a folder), an OCI image layout and a
`docker save` tarball holding them, each laid out as the real tools write them."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    """One tar member: `kind` is file, dir, symlink, hardlink, chr or fifo."""

    name: str
    kind: str = "file"
    data: bytes = b""
    target: str = ""
    mode: int = 0o644


def layer_from_entries(entries: Sequence[Entry]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mode = entry.mode
            types = {
                "file": tarfile.REGTYPE,
                "dir": tarfile.DIRTYPE,
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "chr": tarfile.CHRTYPE,
                "fifo": tarfile.FIFOTYPE,
            }
            info.type = types[entry.kind]
            info.linkname = entry.target
            if entry.kind == "chr":
                info.devmajor, info.devminor = 1, 3
            info.size = len(entry.data) if entry.kind == "file" else 0
            tar.addfile(info, io.BytesIO(entry.data) if entry.kind == "file" else None)
    return buffer.getvalue()


def layer_from_folder(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for child in sorted(folder.iterdir()):
            tar.add(child, arcname=child.name)
    return buffer.getvalue()


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _config(layers: Sequence[bytes]) -> bytes:
    return json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Cmd": ["/bin/sh"]},
            "rootfs": {"type": "layers", "diff_ids": [_sha(layer) for layer in layers]},
        }
    ).encode()


def write_oci_layout(
    dest: Path, layers: Sequence[bytes], *, gzipped: bool = False, ref: str = "latest"
) -> Path:
    """An OCI image layout at `dest` with one manifest (tagged `ref`) of `layers`."""
    blobs = dest / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> str:
        digest = _sha(data)
        (blobs / digest.split(":")[1]).write_bytes(data)
        return digest

    config = _config(layers)
    stored = [gzip.compress(layer, mtime=0) if gzipped else layer for layer in layers]
    media = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if gzipped else "")
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": put(config),
                "size": len(config),
            },
            "layers": [{"mediaType": media, "digest": put(s), "size": len(s)} for s in stored],
        }
    ).encode()
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "digest": put(manifest),
                "size": len(manifest),
                "annotations": {"org.opencontainers.image.ref.name": ref},
            }
        ],
    }
    (dest / "index.json").write_text(json.dumps(index))
    (dest / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    return dest


def write_docker_archive(
    dest: Path, layers: Sequence[bytes], *, diff_ids: Sequence[str] | None = None
) -> Path:
    """A `docker save` tarball (legacy layout: <id>/layer.tar, <config>.json, manifest.json)."""
    config = json.loads(_config(layers))
    if diff_ids is not None:
        config["rootfs"]["diff_ids"] = list(diff_ids)
    config_bytes = json.dumps(config).encode()
    config_name = _sha(config_bytes).split(":")[1] + ".json"
    names = [
        f"{hashlib.sha256(str(i).encode() + layer).hexdigest()}/layer.tar" for i, layer in enumerate(layers)
    ]
    manifest = [{"Config": config_name, "RepoTags": ["task:latest"], "Layers": names}]
    with tarfile.open(dest, "w") as tar:
        for name, data in [(config_name, config_bytes), *zip(names, layers, strict=True)]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        data = json.dumps(manifest).encode()
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return dest
