"""Built-in environments, found by the gateway as the modules of `environments.folders` are.

Each module with `Environment` subclasses is found; NeMo Gym's ports keep its names (docs/environments.md):

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
    workplace_assistant            WorkBench's 27 tools; the tables the ground truth leaves (`data_dir`)
    harbor                         Harbor task folders (harbor_tasks/, _harbor/), verified by tests/test.sh
    _workplace_base                workplace_assistant's settings, task, sessions' change log and verify
    _workplace_common              what its tools share: search patterns, timestamps, pages, minted ids
    _workplace_mail                its company directory, mailbox and calendar tools
    _workplace_records             its web analytics, project board and CRM tools
    _workplace_tables              its CSV tables, read from `data_dir`, and the tables a session sees

Private helpers of the others: `_gymnasium` (the two games' step body and verdict), `_sokoban_rooms` (seeded
rooms, as NeMo Gym deals them), `_calendar_grading` (the calendar's rules), `_responses` (a verify's output).
"""
