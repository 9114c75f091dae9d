"""A real gateway process whose `judge` pools are preference stand-ins (bench/harness/preference_judge.py)
on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.gateway import start_gateway
from tests.support.group_judges import GroupJudgeFleet, group_functions, start_judge


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GroupJudgeFleet]:
    tmp = tmp_path_factory.mktemp("group_judge")
    judge = start_judge(tmp, "judge")
    biased = start_judge(tmp, "biased", "--always-a")
    config = {
        "routers": {"judge": judge.address, "judge_biased": biased.address},
        "groups": {"timeout_s": 3.0, "functions": group_functions()},
    }
    try:
        gateway = start_gateway(tmp, config, None)
    except BaseException:
        judge.proc.stop()
        biased.proc.stop()
        raise
    try:
        yield GroupJudgeFleet(gateway, judge, biased)
    finally:
        gateway.proc.stop()
        judge.proc.stop()
        biased.proc.stop()
