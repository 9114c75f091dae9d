"""`raise_open_files_limit` in a child process (the test process keeps its own limits): the soft limit is
raised to what is needed, never past the hard limit (then a warning names the settings), never lowered."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, resource, sys
from rewardfleet.services.common.open_files import raise_open_files_limit

logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(levelname)s %(message)s")
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 2048))
print("soft", raise_open_files_limit(int(sys.argv[1]), "the settings"))
print("now", resource.getrlimit(resource.RLIMIT_NOFILE))
"""


def _run(needed: int) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(needed)], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout


def test_the_soft_limit_is_raised_to_what_is_needed() -> None:
    out = _run(1000)
    assert "soft 1000" in out and "now (1000, 2048)" in out and "WARNING" not in out


def test_past_the_hard_limit_it_stops_there_and_warns() -> None:
    out = _run(5000)
    assert "soft 2048" in out and "now (2048, 2048)" in out
    assert "WARNING open-files limit 2048 is below the 5000 sockets the settings may hold" in out


def test_a_higher_limit_is_never_lowered() -> None:
    out = _run(100)
    assert "soft 256" in out and "now (256, 2048)" in out and "WARNING" not in out
