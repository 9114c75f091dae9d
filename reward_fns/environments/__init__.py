"""Built-in environments, found by the gateway as the modules of `environments.folders` are.

Each module here that defines `Environment` subclasses is found (docs/environments.md). They are plain
modules a user could have written, importing only `services/environments` (and `services/sandbox`,
`services/common`).

    example_session_state_mgmt   NeMo Gym's stateful counter: increment_counter, get_counter_value
"""
