"""Built-in environments: each module here that defines `Environment` subclasses is found by the gateway
as the modules of `environments.folders` are (docs/environments.md). They are plain modules a user could
have written, importing only `services/environments` (and `services/sandbox`, `services/common`).

    example_session_state_mgmt   NeMo Gym's stateful counter: increment_counter, get_counter_value
"""
