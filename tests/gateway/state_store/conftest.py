"""State-store test fixtures; the session's redis-server and the three-replica backends are the root
conftest's (tests/conftest.py), shared with the spend tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    return tmp_path
