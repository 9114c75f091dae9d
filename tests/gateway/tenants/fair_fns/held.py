"""Async stand-in for a pool's call that holds its slot until the test says so: on start it leaves a marker
file `<who>-<id>` in `extra_info["started"]` (so the test counts each tenant's calls holding a slot), then
waits until the file `extra_info["until"]` exists (at most 60 s), when given."""

import asyncio
import time
import uuid
from pathlib import Path


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    info = extra_info or {}
    started = Path(info["started"])
    (started / f"{info['who']}-{uuid.uuid4().hex}").touch()
    until = info.get("until")
    deadline = time.monotonic() + 60.0
    # a file the test process creates: polled (a stat is microseconds; no event crosses the processes)
    while until and not Path(until).exists() and time.monotonic() < deadline:  # noqa: ASYNC110, ASYNC240
        await asyncio.sleep(0.02)
    return 1.0
