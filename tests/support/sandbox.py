"""Whether this host can run the local sandbox provider (probed once), and the skip mark for tests that
need it."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from rewardfleet.services.sandbox import SandboxUnavailable
from rewardfleet.services.sandbox.cgroups import Cgroups
from rewardfleet.services.sandbox.images import ImageStore
from rewardfleet.services.sandbox.local import LocalProvider


@functools.cache
def local_provider_missing() -> str | None:
    """Why this host cannot run the local provider, or None."""
    if os.geteuid() != 0:
        return "the local sandbox provider mounts overlays: these tests run as root (CI does)"
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if Cgroups.detect() is None:
        return "no writable cgroups (v2 delegated or v1 pids+memory) on this host"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            LocalProvider(Path(tmp), ImageStore(Path(tmp) / "images")).check()
        except SandboxUnavailable as exc:
            return f"the local provider cannot run here: {exc}"
    return None


needs_local = pytest.mark.skipif(local_provider_missing() is not None, reason=str(local_provider_missing()))
