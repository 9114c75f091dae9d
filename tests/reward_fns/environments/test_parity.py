"""Parity with NeMo Gym's recorded rollouts: every row of each ported server's `example_rollouts.jsonl`
(NeMo Gym at `nemo_gym_mirror.COMMIT`), replayed in process against our environment of that name: each tool
answer as recorded, then the same reward and recorded extras (replay.py). docs/environments.md reports the
counts ('Parity with NeMo Gym's recorded rollouts').
"""

from __future__ import annotations

from typing import Any

import pytest

from rewardfleet.reward_fns.environments.example_multi_step import MultiStep, SynonymValue
from rewardfleet.reward_fns.environments.grl_sokoban import GrlSokoban
from rewardfleet.services.environments import Session, tool
from tests.reward_fns.environments import nemo_gym_mirror
from tests.reward_fns.environments.ports import PORTS, Port, by_input, rows
from tests.reward_fns.environments.replay import InProcess, Replay, replay_gymnasium_row, replay_tool_row


async def replay_row(port: Port, index: int) -> Replay:
    row, task = rows(port)[index]
    if port.gymnasium:
        return await replay_gymnasium_row(InProcess(port.make()), row, task)
    return await replay_tool_row(InProcess(port.make()), row, task, port.verify_keys, port.output_view)


def _cases() -> list[Any]:
    cases = []
    for port in PORTS:
        try:
            count = len(nemo_gym_mirror.jsonl(port.server, "example_rollouts.jsonl"))
        except nemo_gym_mirror.MirrorMissing as missing:
            cases.append(pytest.param(port, -1, id=port.server, marks=pytest.mark.skip(reason=str(missing))))
            continue
        cases.extend(pytest.param(port, i, id=f"{port.server}-{i}") for i in range(count))
    return cases


@pytest.mark.parametrize(("port", "index"), _cases())
async def test_recorded_row_replays_equal(port: Port, index: int) -> None:
    try:
        replay = await replay_row(port, index)
    except nemo_gym_mirror.MirrorMissing as missing:  # a port's settings need more of NeMo Gym's files
        pytest.skip(str(missing))
    assert replay.mismatches == []


class _OffByOne(MultiStep):
    name = "example_multi_step"

    @tool
    async def get_synonym_value(self, session: Session, synonym: str) -> SynonymValue:
        return SynonymValue(synonym_value=sum(map(ord, synonym)) + 1)


async def test_the_replay_notices_a_different_answer_and_a_different_reward() -> None:
    try:
        row = nemo_gym_mirror.jsonl("example_multi_step", "example_rollouts.jsonl")[0]
        task = by_input("example_multi_step")(row)
        sokoban_row = nemo_gym_mirror.jsonl("grl_sokoban", "example_rollouts.jsonl")[1]
    except nemo_gym_mirror.MirrorMissing as missing:
        pytest.skip(str(missing))
    wrong_answer = await replay_tool_row(InProcess(_OffByOne()), row, task, PORTS[1].verify_keys)
    assert [m.split(":")[0] for m in wrong_answer.mismatches] == [
        "get_synonym_value#1 output",
        "get_synonym_value#2 output",
    ]
    wrong_board = await replay_gymnasium_row(
        InProcess(GrlSokoban()), sokoban_row, {"seed": 1, "dim_room": [6, 6]}
    )
    assert wrong_board.mismatches[0].startswith("first observation")
    assert any(m.startswith("step #1 observation") for m in wrong_board.mismatches)
    winning_row = nemo_gym_mirror.jsonl("grl_sokoban", "example_rollouts.jsonl")[0]
    unsolved = await replay_gymnasium_row(
        InProcess(GrlSokoban()), winning_row, {"seed": 1, "dim_room": [5, 5]}
    )
    assert any(m.startswith("reward") for m in unsolved.mismatches)
