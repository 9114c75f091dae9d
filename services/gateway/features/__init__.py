"""Rewards built from other rewards: `composites`, judge `fallbacks`, group-wise scoring (`groups`),
declarative `graders`; `build` assembles them over the loaded functions and `reload` swaps them at run
time."""
