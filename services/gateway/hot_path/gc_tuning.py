"""The cyclic garbage collector's settings for a process that is the gateway's own (the CLI's), applied once
start-up is done. In someone else's process (a test, an embedding app) they would change that process too, so
`create_app` applies them only when asked (`freeze_startup`).

- **Freeze what start-up built** (100,000+ objects that live as long as the process), so full collections
  stop walking it again; frozen cyclic garbage is never collected, hence the gateway's own process only.
- **Collect young objects every 50,000 allocations instead of 700, and the oldest generation 10 times less
  often**, so the objects of thousands of requests awaiting a judge die before a collection sees them instead
  of being promoted and walked by full collections.

What each change saved, measured: docs/reliability.md (the state-backend ratio) and docs/BENCHMARKS.md.
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
