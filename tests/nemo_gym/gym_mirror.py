"""NeMo Gym's files at one pinned commit, read at test time (nothing of them is committed here): the list of
resources servers, their recorded rollouts, task files, configs and prompt templates.

From NeMo Gym's GitHub snapshot (`NEMO_GYM_MIRROR`, a bare clone) when it is present; else from NeMo Gym's
wheel that .ci/setup downloads (tests/nemo_gym/nemo_gym_source.py), but only a file whose git blob id is the
one the pinned commit holds (tests/nemo_gym/pinned_manifest.json, written by `python -m
tests.nemo_gym.pin_manifest`): both sources give the pinned commit's bytes or nothing. A file neither gives
raises `Unavailable`, whose message (the path and why) the tests skip with.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.nemo_gym import nemo_gym_source

COMMIT = "07d6b0d07b22fcf530b4c211dae2ee23100428e4"
MIRROR = Path(os.environ.get("NEMO_GYM_MIRROR", "/work/.mirror/NVIDIA-NeMo+Gym/repo"))
MANIFEST = Path(__file__).with_name("pinned_manifest.json")
SERVERS = "resources_servers"


class Unavailable(LookupError):
    """A file of the pinned commit that neither the snapshot nor the wheel gives (the message says why)."""


@functools.cache
def missing() -> str | None:
    """Why the snapshot cannot be read (None: it can). Without it, files come from the wheel."""
    if not MIRROR.exists():
        return f"NeMo Gym's snapshot is not at {MIRROR} (set NEMO_GYM_MIRROR to a clone of NVIDIA-NeMo/Gym)"
    done = subprocess.run(
        ["git", "-C", str(MIRROR), "cat-file", "-e", f"{COMMIT}^{{commit}}"], capture_output=True
    )
    if done.returncode != 0:
        return f"NeMo Gym's snapshot at {MIRROR} lacks commit {COMMIT}"
    return None


@functools.cache
def manifest() -> dict[str, Any]:
    value = json.loads(MANIFEST.read_text())
    if value.get("commit") != COMMIT:
        raise ValueError(f"{MANIFEST} is of commit {value.get('commit')}, not {COMMIT}")
    return value


def blob_id(data: bytes) -> str:
    """Git's id of a file of these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def folder_of(inner: str) -> str:
    """The top folder of a path inside a server's folder; "." for a file at its top."""
    return inner.split("/", 1)[0] if "/" in inner else "."


def pinned_blob(path: str) -> str | None:
    """The blob id of `path` at the pinned commit (None: no such file there), from the manifest;
    Unavailable for a path outside what the manifest covers."""
    root, _, rest = path.partition("/")
    server, _, inner = rest.partition("/")
    files = manifest()["servers"].get(server) if root == SERVERS else None
    if files is None or folder_of(inner) not in manifest()["covered"]:
        raise Unavailable(
            f"{path} at NeMo Gym {COMMIT[:12]}: {missing() or 'read from the wheel'}, and {MANIFEST.name}"
            " does not cover it (only the folders it lists as covered)"
        )
    return files.get(inner)


@functools.cache
def _wheel() -> zipfile.ZipFile:
    return zipfile.ZipFile(nemo_gym_source.wheel_path())


def from_wheel(path: str) -> bytes | None:
    """The bytes of `path` at the pinned commit read from the wheel (None: no such file there);
    Unavailable when the wheel lacks it or holds other bytes than the pinned blob."""
    blob = pinned_blob(path)
    if blob is None:
        return None
    why = f"{path} at NeMo Gym {COMMIT[:12]}: {missing() or 'read from the wheel'}, and"
    try:
        wheel = _wheel()
    except FileNotFoundError as error:
        raise Unavailable(f"{why} {error}") from None
    where = f"{why} NeMo Gym {nemo_gym_source.VERSION}'s wheel"
    try:
        data = wheel.read(path)
    except KeyError:
        raise Unavailable(f"{where} lacks it") from None
    if blob_id(data) != blob:
        got = blob_id(data)
        raise Unavailable(f"{where} holds another version of it (blob {got[:12]}, pinned {blob[:12]})")
    return data


@functools.lru_cache(maxsize=1024)
def read(path: str) -> bytes | None:
    """The bytes of `path` at the pinned commit, or None when it does not exist there."""
    if missing() is None:
        done = subprocess.run(
            ["git", "-C", str(MIRROR), "show", f"{COMMIT}:{path}"], capture_output=True, timeout=60
        )
        return done.stdout if done.returncode == 0 else None
    return from_wheel(path)


def show(path: str) -> str | None:
    """The text of `path` at the pinned commit, or None when it does not exist there."""
    data = read(path)
    return None if data is None else data.decode()


def exists(path: str) -> bool:
    """Whether `path` is a file at the pinned commit (from the manifest: it needs neither source)."""
    return pinned_blob(path) is not None


def listing(path: str) -> list[str]:
    """The names in folder `path` at the pinned commit."""
    if missing() is None:
        done = subprocess.run(
            ["git", "-C", str(MIRROR), "ls-tree", "--name-only", f"{COMMIT}:{path}"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout.split() if done.returncode == 0 else []
    path = path.strip("/")
    if path == SERVERS:
        return list(manifest()["servers"])
    pinned_blob(f"{path}/")  # Unavailable outside the folders the manifest covers
    _, server, inner = path.split("/", 2)
    files = manifest()["servers"][server]
    return sorted({f[len(inner) + 1 :].split("/", 1)[0] for f in files if f.startswith(f"{inner}/")})


def servers() -> list[str]:
    """Every resources server at the pinned commit (a folder of `resources_servers/`)."""
    return sorted(n for n in listing(SERVERS) if not n.startswith("."))


def data(server: str, name: str) -> list[dict[str, Any]]:
    """The JSON rows of `resources_servers/<server>/data/<name>`; lines that are not JSON (the placeholder
    rows some servers ship) are left out."""
    rows = []
    for line in (show(f"{SERVERS}/{server}/data/{name}") or "").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def rollouts(server: str) -> list[dict[str, Any]]:
    return data(server, "example_rollouts.jsonl")


def config(server: str, name: str) -> dict[str, Any]:
    """One config file of the server, parsed (its settings, prompt template paths and defaults)."""
    import yaml

    text = show(f"{SERVERS}/{server}/configs/{name}")
    if text is None:
        raise FileNotFoundError(f"{server}: no configs/{name} at {COMMIT}")
    return dict(yaml.safe_load(text))


def prompt_text(row: dict[str, Any]) -> str:
    """The prompt of a row, as one string (joins a rollout to its task row)."""
    raw = row.get("responses_create_params", {}).get("input")
    if isinstance(raw, str):
        return raw
    return "\n".join(str(m.get("content")) for m in raw or [] if isinstance(m, dict))


@contextlib.contextmanager
def skip_unavailable() -> Iterator[None]:
    """In a test: a file neither source gives skips the test with the reason."""
    import pytest

    try:
        yield
    except Unavailable as unavailable:
        pytest.skip(str(unavailable))
