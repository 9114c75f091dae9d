"""The cyclic garbage collector's settings for a process that is the gateway's own (the CLI's), applied once
start-up is done. In someone else's process (a test, an embedding app) they would change that process too, so
`create_app` applies them only when asked (`freeze_startup`).

- **Freeze what start-up built** (FastAPI, pydantic, the libraries, the functions' modules: 100,000+ objects
  that live as long as the process): otherwise every full collection walks all of it again, about 60-90 ms
  each on a 2-core host (docs/reliability.md, bench/state_backend). Frozen cyclic garbage is never
  collected, which is why this is for the gateway's own process only.
- **Collect young objects every 50,000 allocations instead of 700, and the oldest generation 10 times less
  often.** A whole GRPO step in flight is thousands of requests, each awaiting a judge for seconds with its
  coroutine, its connections and its parsed sample alive. With the default thresholds those objects are
  examined again and again and promoted to the oldest generation, whose full collections then walk all of
  them: in a step of 4096 judge posts (bench/trainer_view) full collections took 3.2 s of the gateway's
  10.6 s of CPU (18 of them, ~180 ms each). With these thresholds: 0.9 s of GC, 7.1 s of CPU. Most of a
  request's objects now die before any collection sees them; cycles still go at the next young collection,
  or at a full one (still triggered by CPython's own rule: a quarter more long-lived objects than at the
  last one).
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
