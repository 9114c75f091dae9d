"""Built-in reward functions: each module here that defines `compute_score`, named after its file.

Each has verl's signature; the gateway discovers them (docs/reward_fns.md, "The built-ins by kind"):

- Rules: `gsm8k`, `math`, `math_dapo`, `prime_math`, `geo3k`, `search_r1`, `math_verify`, `exact_match`,
  `regex_match`, `format_check`; `code` runs programs in `_sandbox`.
- Verifiable tasks: `instruction_following`, `sql`, `mcqa`, `json_schema`, `equivalence_rule`,
  `format_verification`, `gpqa_diamond`, `circle_count`, `mrcr`, `graphwalks`, `imo_gradingbench`,
  `math_proof_judgement`, `proof_genselect`, `arc_agi`, `solution_choice`, `spartqa`, `ragtruth`,
  `gui_coordinate`, `calendar_schedule`, `ruler2`, `equivalence_llm_judge`, `xstest`, `labbench2_vlm`,
  `hotpotqa_qa`, `nvarc`, `bunsenbench_chemistry_mcq`, `structeval`, `asr_with_pc`.
- Models behind a pool: `judge`, `rule_then_judge` (both thin: judging/ holds them), `rubric`, `likelihood`,
  `reward_model`, `prm`, `similarity`, `image_text_score`. Trajectories: `tool_use`, `step_judge`.
- NeMo Gym's judge servers, replayed: `aalcr`, `text_to_sql`, `math_with_autograder`, `terminus_judge`,
  `simpleqa`, `omniscience`, `frontierscience_judge`, `abstention`, `longmemeval`, `imo_proofbench_judge`,
  `physics_judge`, `ugphysics_judge`, `inverse_if`, `arena_judge`.
Besides them:
    contract.py  what a server relies on (injected keywords, step aggregation, score checks)
    overlong.py  the DAPO overlong penalty, a wrapper for a function (no `compute_score` of its own)
    judging/     the judge family: templates, verdicts, settings, guards, answer matching, steps; public API
    groups/      group functions (`groups.builtin_package`)
    environments/  built-in environments (sessions with tools; docs/environments.md)
    _sandbox/, _prime_math_grade.py, _prime_math_equal.py, _similarity_baseline.py, _instructions/, _sql/,
    _task_text.py, _rubric_spec.py, _rubric_prompt.py: private helpers of `code` (and `sql`), `prime_math`,
    `similarity`, `instruction_following`, `sql`, the NeMo Gym task built-ins (`mcqa`, ...) and `rubric`
"""
