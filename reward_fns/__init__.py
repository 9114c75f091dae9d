"""Built-in reward functions. Every module here that defines `compute_score` is a reward function, named
after its file, with verl's signature; the gateway discovers them (docs/reward_fns.md).

At the top level, only reward functions, and:

    contract.py  what a server relies on (injected keywords, step aggregation, score checks): the one module
                 the gateway imports besides the functions
    overlong.py  the DAPO overlong penalty, a wrapper for a function (no `compute_score` of its own)
    judging/     the judge family: templates, verdicts, settings, guards, answer matching, steps; public API
    groups/      group functions (`groups.builtin_package`)
    _sandbox/, _prime_math_*.py, _similarity_baseline.py, _instructions/, _sql/, _task_text.py
                 private helpers of `code` (and `sql`), `prime_math`, `similarity`, `instruction_following`,
                 `sql`, and the NeMo Gym task built-ins (`mcqa`, `json_schema`, ...)

A built-in may declare `DATA_SOURCES: tuple[str, ...]`: verl `data_source` names (exact, or fnmatch
globs such as `"aime*"`) it answers for in the gateway's dispatch table.
"""
