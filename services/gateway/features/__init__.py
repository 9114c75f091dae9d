"""Rewards built from other rewards: `composites`, judge `fallbacks`, group-wise scoring (`groups`, over the
`GroupStore` protocol of `group_store`, kept in process by `group_memory`), declarative `graders`; the judge
monitors `probes` (master-key probes) and `shadow` (a reference judge); `build` assembles them over the
loaded functions and `reload` swaps them at run time."""
