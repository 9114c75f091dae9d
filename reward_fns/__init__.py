"""Built-in reward functions. Every module here that defines `compute_score` is a reward function, named
after its file, with verl's signature; modules whose name starts with `_` are helpers. A built-in may declare
`DATA_SOURCES` (verl `data_source` names or fnmatch globs) it answers for in the gateway's dispatch table.
See docs/reward_fns.md.

- Rules, as verl scores them: `gsm8k`, `math`, `math_dapo`, `prime_math`, `geo3k`, `search_r1`; and
  `math_verify`, `exact_match`, `regex_match`, `format_check`. `code` runs programs in `_sandbox`.
- Models behind a pool: `judge` (GenRM), `rule_then_judge`, `reward_model` (DisRM), `prm` (process reward
  model), `similarity` (encoder), `image_text_score` (CLIP-style).
- Trajectories: `tool_use`, `step_judge` (docs/trajectories.md). Group functions: `groups`.
- No `compute_score`: `overlong` (DAPO's overlong penalty) and `guards` (answers with nothing to judge).
- Helpers: `_answers` (answer extraction), `_options` (per-sample overrides), `_steps` (step splitting and
  aggregation), `_prime_math_grade` and `_prime_math_equal` (prime_math's graders), `_similarity_baseline`;
  for the judges `_judge_settings`, `_judge_templates`, `_judge_images`, `_verdicts`, `_verdict_grammar`
  and `_answer_match`.
"""
