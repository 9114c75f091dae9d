"""The judges' keywords under verl's own loader (tests/integrations/verl_judge_cases.py), in an interpreter
with verl's antlr4 4.9 first on the path, as test_verl_trainer_code.py runs verl's cases."""

from __future__ import annotations

from tests.integrations.test_verl_trainer_code import run_verl_cases


def test_verl_judge_cases_in_their_own_interpreter() -> None:
    run_verl_cases("tests/integrations/verl_judge_cases.py", at_least=3)
