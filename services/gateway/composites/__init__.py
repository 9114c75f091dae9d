"""Rewards built from other rewards: composites and fallbacks.

`composites` (weighted, gated), `fallbacks` (judge -> rule when a pool is down), and their config sections
`composites:` / `fallbacks:` (`config`)."""
