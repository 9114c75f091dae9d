"""The ported games' rules beyond what the recorded rows exercise: NumPy's stream rebuilt without NumPy,
Sokoban's rewards for a push onto and off a target, blackjack's aces and random cards, calendar times."""

from __future__ import annotations

import pytest

from rewardfleet.reward_fns.environments import _calendar_grading, _sokoban_rooms
from rewardfleet.reward_fns.environments.blackjack import RANKS, Blackjack, hand_value
from rewardfleet.reward_fns.environments.grl_sokoban import GrlSokoban
from tests.reward_fns.environments.replay import ToolFailure, call, open_session


@pytest.mark.parametrize("seed", [0, 1, 84810, 2**31, 2**32 - 1])
def test_the_legacy_numpy_stream_is_numpys(seed: int) -> None:
    numpy = pytest.importorskip("numpy")
    theirs, ours = numpy.random.RandomState(seed), _sokoban_rooms.LegacyNumpyRandom(seed)
    for bound in (1, 2, 3, 7, 13, 36, 1000, 2**31 + 5):
        assert [int(theirs.randint(bound)) for _ in range(50)] == [ours.randint(bound) for _ in range(50)]


async def test_sokoban_rewards_a_push_onto_the_target_and_the_solve() -> None:
    env = GrlSokoban()
    session = await open_session(env, {"seed": 84810, "dim_room": [5, 5]})
    rewards = []
    for move in ("<action>Up</action>", "right", "go 1", "<action>left</action>"):
        result = await call(env, session, "step", {"action": move})
        assert not isinstance(result, ToolFailure)
        rewards.append(result["reward"])
    assert rewards == [-0.1, -0.1, -0.1, -0.1 + 1 + 10]
    assert (
        result["terminated"]
        and result["info"]["success"]
        and result["observation"] == "#####\n#√P_#\n#___#\n#___#\n#####"
    )
    verdict = await env.verify(session, {})
    assert verdict.reward == -0.1 + -0.1 + -0.1 + (-0.1 + 1 + 10)
    assert verdict.extras == {"terminated": True, "truncated": False, "info": result["info"]}


async def test_sokoban_penalises_a_push_off_the_target_and_stops_at_max_steps() -> None:
    env = GrlSokoban()
    session = await open_session(env, {"seed": 84810, "dim_room": [5, 5], "max_steps": 2})
    #######      two targets (O), two boxes (X): the first push puts a box on one, the second pushes it off
    # X____#
    # _OXP_#
    # ____O#
    #######
    w, f, t, b, p = (
        _sokoban_rooms.WALL,
        _sokoban_rooms.FLOOR,
        _sokoban_rooms.TARGET,
        _sokoban_rooms.BOX,
        _sokoban_rooms.PLAYER,
    )
    fixed = [[w] * 7, [w, f, f, f, f, f, w], [w, f, t, f, f, f, w], [w, f, f, f, f, t, w], [w] * 7]
    room = [[w] * 7, [w, b, f, f, f, f, w], [w, f, t, b, p, f, w], [w, f, f, f, f, t, w], [w] * 7]
    session.state.update(fixed=fixed, room=room, num_boxes=2)
    onto = await call(env, session, "step", {"action": "Left"})
    assert (onto["reward"], onto["terminated"]) == (-0.1 + 1, False)
    off = await call(env, session, "step", {"action": "Left"})
    assert (off["reward"], off["terminated"], off["info"]["success"]) == (-0.1 + -1, True, False)
    assert off["observation"] == "#######\n#X____#\n#XS___#\n#____O#\n#######"


def test_hand_values_count_an_ace_as_one_when_eleven_busts() -> None:
    assert [hand_value(h) for h in (["A", "K"], ["A", "A", "9"], ["A", "K", "5"], ["Q", "K", "2"])] == [
        21,
        21,
        16,
        22,
    ]


async def test_blackjack_deals_the_given_cards_then_random_ones() -> None:
    env = Blackjack()
    fixed = await open_session(env, {"deck": ["2", "3", "K", "9"]})
    assert (fixed.state["player"], fixed.state["dealer"]) == (["2", "3"], ["K", "9"])
    hit = await call(env, fixed, "step", {"action": "<ACTION> Hit </ACTION>"})
    assert hit["terminated"] is False and fixed.state["player"][2] in RANKS
    drawn = await open_session(env, {})
    assert all(card in RANKS for card in drawn.state["player"] + drawn.state["dealer"])
    assert (await call(env, drawn, "observe", {}))["observation"].startswith("Your hand: [")


def test_calendar_times_and_reasons() -> None:
    assert [_calendar_grading.minutes(t) for t in ("10am", "12am", "12pm", "2:15pm", "09:30", " 1pm ")] == [
        600,
        0,
        720,
        855,
        570,
        780,
    ]
    with pytest.raises(ValueError):
        _calendar_grading.minutes("10:am")
    event = {"event_id": 0, "duration": 60, "constraint": "at 11am", "min_time": "10:00", "max_time": "16:00"}
    grade = _calendar_grading.grade
    assert grade('[{"event_id": 0, "start_time": "11:00", "duration": 60}]', {"0": event}) == (1.0, "pass")
    assert grade('[{"event_id": 0, "start_time": "12:00", "duration": 60}]', {"0": event}) == (
        0.0,
        "constraint_violated",
    )
    assert grade('[{"event_id": 0, "start_time": 11, "duration": 60}]', {"0": event}) == (
        0.0,
        "error_in_grading",
    )
    two = (
        '[{"event_id": 0, "start_time": "11:00", "duration": 60}, '
        + '{"event_id": 1, "start_time": "11:30", "duration": 30}]'
    )
    assert grade(two, {"0": event, "1": {**event, "duration": 30}}) == (0.0, "conflicting_events")
    assert grade("<think>[]</think>", {"0": event}) == (0.0, "think_found")
