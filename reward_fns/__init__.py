"""Built-in reward functions: each module here that defines `compute_score`, named after its file.

Each has verl's signature; the gateway discovers them (docs/reward_fns.md). At the top level:

- Rules, as verl scores them: `gsm8k`, `math`, `math_dapo`, `prime_math`, `geo3k`, `search_r1`; and
  `math_verify`, `exact_match`, `regex_match`, `format_check`. `code` runs programs in `_sandbox`.
- Verifiable tasks: `instruction_following`, `sql`, and NeMo Gym's `mcqa`, `json_schema`, `equivalence_rule`,
  `format_verification`, `gpqa_diamond`, `circle_count`, `mrcr`, `graphwalks`, `imo_gradingbench`,
  `math_proof_judgement`, `proof_genselect`, `arc_agi`, `solution_choice`, `spartqa`, `ragtruth`,
  `gui_coordinate`, `calendar_schedule`, `ruler2`, and its judges `equivalence_llm_judge`, `xstest`,
  `labbench2_vlm` (docs/verifiable_tasks.md, docs/nemo_gym.md); and NeMo Gym's `hotpotqa_qa`, `nvarc`,
  `bunsenbench_chemistry_mcq`, `structeval`, `asr_with_pc`.
- Models behind a pool: `judge` (GenRM), `rule_then_judge` (both thin: judging/ holds them), `rubric`,
  `likelihood` (docs/rubric.md), `reward_model` (DisRM), `prm` (process reward model), `similarity`
  (encoder), `image_text_score` (CLIP-style).
- Trajectories: `tool_use`, `step_judge` (docs/trajectories.md).
- NeMo Gym's judge servers, replayed from their recorded judge calls: `aalcr`, `text_to_sql`,
  `math_with_autograder`, `terminus_judge`, `simpleqa`,
  `omniscience`, `frontierscience_judge`, `abstention`,
  `longmemeval`, `imo_proofbench_judge`, `physics_judge`,
  `ugphysics_judge`, `inverse_if`, `arena_judge`
  (docs/nemo_gym.md).

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
