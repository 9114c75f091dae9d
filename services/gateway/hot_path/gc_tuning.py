"""The cyclic garbage collector's settings for the gateway's own process, applied once start-up is done.

They freeze what start-up built (frozen cyclic garbage is never collected) and collect less often,
process-wide, so `create_app` applies them only when asked (`freeze_startup`: the CLI's own process), never in
a test's or an embedding app's process. Why and what they saved: docs/architecture.md, "The hot path".
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000  # allocations minus deallocations between young collections (CPython: 700)
MIDDLE_THRESHOLD = 20  # young collections per middle one (CPython: 10)
OLD_THRESHOLD = 100  # middle collections per full one, at most (CPython: 10)


def tune_for_own_process() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
