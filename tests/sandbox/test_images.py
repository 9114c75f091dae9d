"""The image store: OCI layouts, `docker save` tarballs and Dockerfiles (buildah) resolved to cached root
file systems, digests checked, whiteouts applied, and hostile archives refused or defused."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from bench.harness.image_layouts import (
    Entry,
    layer_from_entries,
    layer_from_folder,
    write_docker_archive,
    write_oci_layout,
)
from rewardfleet.services.sandbox import ImageError, ImageNotFound, ImageUnsafe, SandboxSpec
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider
from tests.support.sandbox import needs_local

BASE = [
    Entry("etc", "dir", mode=0o755),
    Entry("etc/keep", data=b"keep"),
    Entry("etc/gone", data=b"whited out"),
    Entry("opaque", "dir", mode=0o755),
    Entry("opaque/old", data=b"old"),
    Entry("bin", "dir", mode=0o755),
    Entry("bin/tool", data=b"#!/bin/sh\n", mode=0o755),
    Entry("bin/tool-link", "hardlink", target="bin/tool"),
    Entry("bin/alias", "symlink", target="tool"),
]
TOP = [
    Entry("etc/.wh.gone"),
    Entry("opaque/new", data=b"new"),
    Entry("opaque/.wh..wh..opq"),
    Entry("etc/added", data=b"added"),
]


def check_tree(root: Path) -> None:
    assert (root / "etc/keep").read_bytes() == b"keep"
    assert not (root / "etc/gone").exists() and not (root / "etc/.wh.gone").exists()
    assert sorted(os.listdir(root / "opaque")) == ["new"]
    assert (root / "etc/added").read_bytes() == b"added"
    assert os.readlink(root / "bin/alias") == "tool"
    assert (root / "bin/tool").stat().st_ino == (root / "bin/tool-link").stat().st_ino
    assert stat.S_IMODE((root / "bin/tool").stat().st_mode) == 0o755


@pytest.mark.parametrize("gzipped", [False, True], ids=["tar", "tar+gzip"])
def test_oci_layout_is_unpacked_once_with_whiteouts(tmp_path: Path, gzipped: bool) -> None:
    layout = write_oci_layout(
        tmp_path / "layout", [layer_from_entries(BASE), layer_from_entries(TOP)], gzipped=gzipped
    )
    store = ImageStore(tmp_path / "cache")
    root = store.resolve_sync(f"oci:{layout}")
    check_tree(root)
    marker = root / "etc/keep"
    inode = marker.stat().st_ino
    assert store.resolve_sync(f"oci:{layout}:latest") == root
    assert marker.stat().st_ino == inode  # cached, not unpacked again
    assert root.name.startswith("sha256-")
    with pytest.raises(ImageNotFound):
        store.resolve_sync(f"oci:{layout}:other-tag")


def test_oci_blob_that_does_not_match_its_digest_is_refused(tmp_path: Path) -> None:
    layout = write_oci_layout(tmp_path / "layout", [layer_from_entries(BASE)])
    index = json.loads((layout / "index.json").read_text())
    manifest = json.loads(
        (layout / "blobs/sha256" / index["manifests"][0]["digest"].split(":")[1]).read_text()
    )
    blob = layout / "blobs/sha256" / manifest["layers"][0]["digest"].split(":")[1]
    data = bytearray(blob.read_bytes())
    data[600] ^= 1  # inside the first file's content: still a valid tar
    blob.write_bytes(bytes(data))
    store = ImageStore(tmp_path / "cache")
    with pytest.raises(ImageUnsafe, match="digest"):
        store.resolve_sync(f"oci:{layout}")
    assert os.listdir(tmp_path / "cache/rootfs") == []  # nothing half-unpacked is kept


def test_docker_archive_is_checked_against_its_diff_ids(tmp_path: Path) -> None:
    layers = [layer_from_entries(BASE), layer_from_entries(TOP)]
    archive = write_docker_archive(tmp_path / "image.tar", layers)
    store = ImageStore(tmp_path / "cache")
    check_tree(store.resolve_sync(f"docker-archive:{archive}"))
    forged = write_docker_archive(tmp_path / "forged.tar", layers, diff_ids=["sha256:" + "0" * 64] * 2)
    with pytest.raises(ImageUnsafe, match="digest"):
        store.resolve_sync(f"docker-archive:{forged}")
    with pytest.raises(ImageNotFound):
        store.resolve_sync(f"docker-archive:{tmp_path / 'absent.tar'}")


@pytest.mark.parametrize(
    "entries",
    [
        [Entry("../escaped", data=b"x")],
        [Entry("/abs-escaped", data=b"x")],
        [Entry("ok/../../escaped", data=b"x")],
        [Entry("link", "hardlink", target="../../escaped-target")],
        [Entry("link", "hardlink", target="/etc/passwd")],
    ],
    ids=["dotdot", "absolute", "inner-dotdot", "hardlink-out", "hardlink-absolute"],
)
def test_hostile_names_are_refused(tmp_path: Path, entries: list[Entry]) -> None:
    layout = write_oci_layout(tmp_path / "layout", [layer_from_entries(entries)])
    (tmp_path / "escaped-target").write_text("host file")
    with pytest.raises(ImageUnsafe):
        ImageStore(tmp_path / "cache").resolve_sync(f"oci:{layout}")
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "abs-escaped").exists()
    assert not Path("/abs-escaped").exists()


def test_links_cannot_carry_later_entries_out_and_nothing_privileged_is_made(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    entries = [
        Entry("etc", "symlink", target="/"),
        Entry("etc/planted-via-absolute", data=b"x"),
        Entry("null", "chr"),
        Entry("pipe", "fifo"),
        Entry("suid", data=b"#!/bin/sh\n", mode=0o4755),
        Entry("sgid", data=b"#!/bin/sh\n", mode=0o2755),
    ]
    layout = write_oci_layout(tmp_path / "layout", [layer_from_entries(entries)])
    root = ImageStore(tmp_path / "cache").resolve_sync(f"oci:{layout}")
    assert os.listdir(outside) == [] and not Path("/planted-via-absolute").exists()
    assert (root / "planted-via-absolute").exists()  # the link resolved inside the image
    assert not (root / "null").exists() and not (root / "pipe").exists()
    assert stat.S_IMODE((root / "suid").stat().st_mode) == 0o755
    assert stat.S_IMODE((root / "sgid").stat().st_mode) == 0o755


def test_a_link_leading_outside_cannot_be_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    entries = [
        Entry("up", "symlink", target="../../../../../../../../" + str(outside).lstrip("/")),
        Entry("up/planted-via-relative", data=b"x"),
    ]
    layout = write_oci_layout(tmp_path / "layout", [layer_from_entries(entries)])
    with pytest.raises(ImageUnsafe, match="leads nowhere"):
        ImageStore(tmp_path / "cache").resolve_sync(f"oci:{layout}")
    assert os.listdir(outside) == []


def test_not_a_tar_and_unknown_schemes(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "cache")
    with pytest.raises(ImageNotFound):
        store.resolve_sync(f"dir:{tmp_path / 'absent'}")
    with pytest.raises(ImageNotFound):
        store.resolve_sync("registry:debian")
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar at all" * 100)
    with pytest.raises(ImageError, match="not a docker save archive"):
        store.resolve_sync(f"docker-archive:{bad}")


@needs_local
async def test_a_sandbox_runs_from_an_oci_image(
    provider: LocalProvider, tiny_rootfs: Path, tmp_path: Path
) -> None:
    layers = [
        layer_from_folder(tiny_rootfs),
        layer_from_entries([Entry("app", "dir", mode=0o755), Entry("app/hello", data=b"hi\n")]),
    ]
    layout = write_oci_layout(tmp_path / "layout", layers)
    sandbox = await provider.create(SandboxSpec(f"oci:{layout}", workdir="/app"), owner="test")
    result = await sandbox.exec("cat hello /etc/image-marker", timeout_s=10)
    assert result.stdout == b"hi\nfrom the image\n"


@needs_local
@pytest.mark.skipif(
    shutil.which("buildah") is None, reason="buildah is not installed (apt-get install buildah)"
)
async def test_a_dockerfile_is_built_once_with_buildah(
    provider: LocalProvider, tiny_rootfs: Path, tmp_path: Path
) -> None:
    context = tmp_path / "task"
    context.mkdir()
    (context / "rootfs.tar").write_bytes(layer_from_folder(tiny_rootfs))
    (context / "Dockerfile").write_text(
        "FROM scratch\nADD rootfs.tar /\nRUN echo built > /built\nWORKDIR /app\n"
    )
    spec = SandboxSpec(f"dockerfile:{context}", workdir="/app")
    sandbox = await provider.create(spec, owner="test")
    result = await sandbox.exec("cat /built /etc/image-marker", timeout_s=10)
    assert result.stdout == b"built\nfrom the image\n"
    builds = os.listdir(provider.images.cache / "builds")
    again = await provider.create(spec, owner="test")
    assert (await again.exec("cat /built", timeout_s=10)).stdout == b"built\n"
    assert os.listdir(provider.images.cache / "builds") == builds  # the same context is not rebuilt
