"""A checkpoint the server's user cannot read fails at start with the file, its mode and owner, and the uid.

(transformers alone reports an unreadable file as "No such file or directory".) The server runs as an
unprivileged uid through `setpriv` (util-linux), as it does in the image (uid 10001) with a root-only mount.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.processes import rewardfleet_cmd

NOBODY = 65534


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every uid can enter (pytest's tmp_path sits under a 0700 folder)."""
    path = Path(tempfile.mkdtemp(prefix="rewardfleet-perm-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_root_only_model_files_give_a_clear_error(open_dir: Path, minilm_path: Path) -> None:
    if os.getuid() != 0:
        pytest.fail("this test needs root to make files another uid cannot read (CI runs as root)")
    model = open_dir / "model"
    shutil.copytree(minilm_path, model)
    for f in model.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o600)
    cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    cmd += rewardfleet_cmd("serve-model", "--model-path", str(model), "--port", "1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot be read by this process (uid 65534; mode 0600, owner uid 0)" in proc.stderr
    assert str(model) in proc.stderr and "No such file" not in proc.stderr
