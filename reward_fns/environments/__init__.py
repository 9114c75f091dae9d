"""Built-in environments, found by the gateway as the modules of `environments.folders` are.

Each module here that defines `Environment` subclasses is found (docs/environments.md). They are plain
modules a user could have written, importing only `services/environments` (and `services/sandbox`,
`services/common`). Ports of NeMo Gym's resources servers, each named as NeMo Gym names it and checked
against its recorded rollouts (docs/environments.md, 'Parity with NeMo Gym's recorded rollouts'):

    example_session_state_mgmt     the stateful counter: increment_counter, get_counter_value
    example_single_tool_call       get_weather; always 1.0
    example_multi_step             get_synonym_value, extract_synonym_values; the extracted list in order
    example_tool_call_multireward  get_weather; reward_components correctness, schema_valid, format
    example_mcp_weather            get_weather; the expected city asked and its sentence answered
    math_advanced_calculations     eleven alternate-universe calculators; every expected value computed
    circle_click                   click; the first click inside the target circle
    openenv_echo                   OpenEnv's echo environment (NeMo Gym's `openenv` server, echo config)
    calendar_scheduling            `calendar`: no tools; the answer's JSON calendar meets every constraint
    blackjack                      observe, step (hit / stand); +1 / 0 / -1
    grl_sokoban                    observe, step (Up / Down / Left / Right); gym-sokoban's rewards
    workplace_assistant            27 tools over WorkBench's mailbox, calendar, analytics, tasks and CRM;
                                   the tables the ground truth leaves (its data: the `data_dir` setting)
    harbor                         Harbor task folders (harbor_tasks/, _harbor/): bash, read_file,
                                   write_file, verify by the task's tests/test.sh in the session's sandbox

Private helpers: `_gymnasium` (the two games' step body and verdict), `_sokoban_rooms` (seeded rooms, as
NeMo Gym deals them), `_calendar_grading` (the calendar's rules), `_responses` (a verify body's output),
`_workplace_*` (workplace_assistant's tables, tools and change log).
"""
