"""Built-in reward functions. Every module here that defines `compute_score` is a reward function,
named after its file, with verl's signature. Modules whose name starts with `_` are helpers.

A built-in may declare `DATA_SOURCES: tuple[str, ...]`: verl `data_source` names (exact, or fnmatch
globs such as `"aime*"`) it answers for in the gateway's dispatch table. Rule-based built-ins:
`gsm8k`, `math`, `math_dapo` (each scoring exactly as verl's function of that name), `math_verify`,
`exact_match`, `regex_match`, `format_check`; trajectories: `tool_use`, `step_judge`
(docs/trajectories.md; `_steps` splits steps and aggregates step scores); verifiable tasks:
`instruction_following`, `sql` (docs/verifiable_tasks.md); `overlong` is a helper (DAPO
overlong penalty) with no `compute_score`. See docs/reward_fns.md.
"""
