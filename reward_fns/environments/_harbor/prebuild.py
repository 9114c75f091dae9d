"""Builds the images of every shipped Harbor task ahead of the first session.

CI's set-up runs it:

    python -m rewardfleet.reward_fns.environments._harbor.prebuild [CACHE_DIR]

Prints each task's build time; a task already built costs a few milliseconds. Needs root, buildah and
debootstrap. CACHE_DIR defaults to `$REWARDFLEET_IMAGE_CACHE/harbor` (/var/cache/rewardfleet/harbor).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from rewardfleet.reward_fns.environments._harbor.image import ImageBuilder, default_cache_dir
from rewardfleet.reward_fns.environments._harbor.task import find_tasks

SHIPPED_TASKS = Path(__file__).parent.parent / "harbor_tasks"


async def prebuild(cache_dir: Path) -> None:
    builder = ImageBuilder(cache_dir)
    started = time.monotonic()
    for task in find_tasks(SHIPPED_TASKS).values():
        began = time.monotonic()
        image = await builder.ensure(task)
        print(f"harbor task {task.name}: {image.reference} ({time.monotonic() - began:.1f} s)", flush=True)
    print(f"harbor task images ready in {time.monotonic() - started:.1f} s", flush=True)


if __name__ == "__main__":
    asyncio.run(prebuild(Path(sys.argv[1]) if len(sys.argv) > 1 else default_cache_dir()))
