"""Built-in environments: each module here that defines `Environment` subclasses is found by the gateway
as the modules of `environments.folders` are (docs/environments.md). They are plain modules a user could
have written, importing only `services/environments` (and `services/sandbox`, `services/common`).

    example_session_state_mgmt   NeMo Gym's stateful counter: increment_counter, get_counter_value
    harbor                       Harbor task folders (harbor_tasks/, _harbor/): bash, read_file, write_file,
                                 verify by the task's tests/test.sh in the session's sandbox
"""
