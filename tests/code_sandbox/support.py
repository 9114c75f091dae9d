"""What the sandbox tests share: the processes still running under a sandbox slot's uid."""

from __future__ import annotations

import os

from rewardfleet.reward_fns._sandbox.bubblewrap import SLOT_UID_BASE


def sandbox_processes() -> list[int]:
    """Pids running under a slot uid (bwrap drops to SLOT_UID_BASE + slot when the tests run as root)."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if SLOT_UID_BASE <= entry.stat().st_uid < SLOT_UID_BASE + 1000:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids
