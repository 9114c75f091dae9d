"""NeMo Gym's `blackjack`: one hand against the dealer; the agent hits or stands until the hand ends.

Same rules, texts and rewards as NeMo Gym's server of that name: an infinite deck (each card drawn uniformly
from the 13 ranks), an ace counts 11 or 1, the dealer draws to 17; reward +1 win, 0 draw, -1 loss or bust.
A move is `<action>hit</action>` or `<action>stand</action>` anywhere in the text (case-insensitive); text
without one stands, as upstream.

NeMo Gym draws from an unseeded generator, so its recorded hands cannot be dealt again from a seed. Here the
task may fix the cards instead: `deck` lists them in the order they are dealt (the player's two, the
dealer's two, then every draw); cards past its end, or all of them without it, are drawn at random.
"""

from __future__ import annotations

import re
import secrets
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments._gymnasium import Observation, StepBody, StepResult, episode_verdict
from rewardfleet.services.environments import Environment, Session, ToolError, Verdict, tool

Rank = Literal["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"]
RANKS: tuple[str, ...] = get_args(Rank)
_MOVE = re.compile(r"<action>\s*(hit|stand)\s*</action>", re.IGNORECASE)
_PROMPT = "Respond with <action>hit</action> or <action>stand</action>."


class BlackjackTask(BaseModel):
    deck: list[Rank] | None = Field(default=None, max_length=64)


def hand_value(hand: list[str]) -> int:
    total = sum(10 if card in ("J", "Q", "K") else 11 if card == "A" else int(card) for card in hand)
    soft_aces = hand.count("A")
    while total > 21 and soft_aces:
        total -= 10
        soft_aces -= 1
    return total


def _shown(hand: list[str]) -> str:
    return "[" + ", ".join(hand) + "]"


def _table(player: list[str], dealer_up: str) -> str:
    return f"Your hand: {_shown(player)} = {hand_value(player)}\nDealer shows: {dealer_up}\n{_PROMPT}"


def _draw(state: dict[str, Any]) -> str:
    deck: list[str] = state["deck"]
    return deck.pop(0) if deck else secrets.choice(RANKS)


class Blackjack(Environment):
    name = "blackjack"
    Task = BlackjackTask

    async def seed(self, session: Session, task: BlackjackTask) -> None:
        state: dict[str, Any] = {"deck": list(task.deck or ())}
        state["player"] = [_draw(state), _draw(state)]
        state["dealer"] = [_draw(state), _draw(state)]
        state.update(
            total_reward=0.0,
            terminated=False,
            info={},
            observation=_table(state["player"], state["dealer"][0]),
        )
        session.state.update(state)

    @tool
    async def observe(self, session: Session) -> Observation:
        """The table as the player sees it: your hand and the dealer's face-up card (None once it is over)."""
        return Observation(observation=session.state["observation"])

    @tool
    async def step(self, session: Session, body: StepBody) -> StepResult:
        """Plays `<action>hit</action>` or `<action>stand</action>`: the new table, or the hand's result."""
        state = session.state
        if state["terminated"]:
            raise ToolError("the hand is over: no move is left to play")
        move = _MOVE.search(body.text())
        player: list[str] = state["player"]
        dealer: list[str] = state["dealer"]
        if move is not None and move.group(1).lower() == "hit":
            player.append(_draw(state))
            value = hand_value(player)
            if value > 21:
                return _finish(state, -1.0, {"result": "bust", "player": _shown(player), "value": value})
            state["observation"] = _table(player, dealer[0])
            return StepResult(observation=state["observation"], reward=0.0, terminated=False)
        while hand_value(dealer) < 17:
            dealer.append(_draw(state))
        mine, theirs = hand_value(player), hand_value(dealer)
        reward, result = (
            (1.0, "win")
            if theirs > 21 or mine > theirs
            else (0.0, "draw")
            if mine == theirs
            else (-1.0, "loss")
        )
        info = {
            "result": result,
            "player": _shown(player),
            "player_value": mine,
            "dealer": _shown(dealer),
            "dealer_value": theirs,
        }
        return _finish(state, reward, info)

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return episode_verdict(session.state)


def _finish(state: dict[str, Any], reward: float, info: dict[str, Any]) -> StepResult:
    state.update(total_reward=state["total_reward"] + reward, terminated=True, info=info, observation=None)
    return StepResult(observation=None, reward=reward, terminated=True, info=info)
