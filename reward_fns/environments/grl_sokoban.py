"""NeMo Gym's `grl_sokoban`: push the box onto its target, one move a step.

Same rooms (dealt from the task's `seed`, `_sokoban_rooms`), moves, texts and rewards as NeMo Gym's server
of that name (gym-sokoban's: -0.1 a step, +1 for a box onto a target, -1 off it, +10 when every box is on
one; the episode ends then or after `max_steps`). A move is `<action>Up</action>` (Down, Left, Right, or
1-4), else the first such word in the text; text without one is a `ToolError` and the board is unchanged.
The task's `grid_lookup`, `action_lookup` and `render_mode` overrides of NeMo Gym are not taken: the board
is always text in the default symbols.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from typing import Annotated, Any

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments import _sokoban_rooms as rooms
from rewardfleet.reward_fns.environments._gymnasium import Observation, StepBody, StepResult, episode_verdict
from rewardfleet.services.environments import Environment, Session, ToolError, Verdict, tool

SYMBOLS = {0: "#", 1: "_", 2: "O", 3: "√", 4: "X", 5: "P", 6: "S"}
ACTIONS = {1: "Up", 2: "Down", 3: "Left", 4: "Right"}
_BY_LABEL = {label.lower(): number for number, label in ACTIONS.items()}
_TAGGED = re.compile(r"<action>\s*(up|down|left|right|[1-4])\s*</action>", re.IGNORECASE)
_BARE = re.compile(r"\b(up|down|left|right|[1-4])\b", re.IGNORECASE)
_SEED_RETRIES = 8
_LEGEND = (
    "Legend: #=wall, _=floor, O=target, X=box, √=box on target, P=player, S=player on target.\n"
    "Respond with exactly one move using <action>Up</action>, <action>Down</action>, "
    "<action>Left</action>, or <action>Right</action>."
)


class SokobanTask(BaseModel):
    seed: int | None = Field(default=None, ge=0, lt=2**32)  # None: a random room
    # Bounded so one room costs at most a few seconds of CPU: the backwards search grows steeply with both.
    dim_room: tuple[Annotated[int, Field(ge=4, le=10)], Annotated[int, Field(ge=4, le=10)]] = (6, 6)
    num_boxes: int = Field(default=1, ge=1, le=2)
    max_steps: int = Field(default=100, ge=1, le=10_000)
    search_depth: int = Field(default=100, ge=1, le=300)


def render(fixed: rooms.Grid, state: rooms.Grid) -> str:
    return "\n".join(
        "".join(
            SYMBOLS[6 if cell == rooms.PLAYER and fixed[r][c] == rooms.TARGET else cell]
            for c, cell in enumerate(row)
        )
        for r, row in enumerate(state)
    )


def _framed(board: str) -> str:
    return f"Sokoban board:\n{board}\n\n{_LEGEND}"


def parse_move(text: str) -> int:
    found = _TAGGED.search(text) or _BARE.search(text)
    if found is None:
        shown = repr(text[:80]) + ("..." if len(text) > 80 else "")
        raise ToolError(f"no move found in {shown}: answer <action>Up</action>, Down, Left or Right")
    token = found.group(1).lower()
    return int(token) if token.isdigit() else _BY_LABEL[token]


def _boxes_on_targets(state: dict[str, Any]) -> int:
    uncovered = sum(
        cell == rooms.TARGET or (cell == rooms.PLAYER and state["fixed"][r][c] == rooms.TARGET)
        for r, row in enumerate(state["room"])
        for c, cell in enumerate(row)
    )
    return state["num_boxes"] - uncovered


class GrlSokoban(Environment):
    name = "grl_sokoban"
    Task = SokobanTask

    async def seed(self, session: Session, task: SokobanTask) -> None:
        seed = secrets.randbelow(2**32) if task.seed is None else task.seed
        for _ in range(_SEED_RETRIES):
            try:  # off the event loop: the search is CPU work
                fixed, room = await asyncio.to_thread(
                    rooms.generate_room, seed, task.dim_room, task.num_boxes, task.search_depth
                )
                break
            except rooms.RoomGenerationFailed:
                seed = rooms.fallback_seed(seed)
        else:
            raise ToolError(
                f"dim_room {list(task.dim_room)} with {task.num_boxes} box(es): "
                f"no room in {_SEED_RETRIES} seeds"
            )
        session.state.update(
            fixed=fixed,
            room=room,
            num_boxes=task.num_boxes,
            max_steps=task.max_steps,
            steps=0,
            boxes_on_target=0,
            total_reward=0.0,
            terminated=False,
            info={},
            observation=_framed(render(fixed, room)),
        )

    @tool
    async def observe(self, session: Session) -> Observation:
        """The board as the player sees it."""
        return Observation(observation=session.state["observation"])

    @tool
    async def step(self, session: Session, body: StepBody) -> StepResult:
        """Plays one move, `<action>Up</action>` (Down, Left, Right): the new board and its reward."""
        state = session.state
        if state["terminated"]:
            raise ToolError("the puzzle is over: no move is left to play")
        action = parse_move(body.text())
        moved = _move(state, action)
        state["steps"] += 1
        reward = -0.1
        on_target = _boxes_on_targets(state)
        if on_target > state["boxes_on_target"]:
            reward += 1
        elif on_target < state["boxes_on_target"]:
            reward += -1
        solved = on_target == state["num_boxes"]
        if solved:
            reward += 10
        state["boxes_on_target"] = on_target
        state["total_reward"] += reward
        done = solved or state["steps"] == state["max_steps"]
        info = {
            "action_is_effective": moved,
            "action_is_valid": True,
            "success": solved,
            "action_id": action,
            "action_label": ACTIONS[action],
            "total_reward": state["total_reward"],
        }
        board = render(state["fixed"], state["room"])
        state.update(info=info, terminated=done, observation=board if done else _framed(board))
        return StepResult(observation=state["observation"], reward=reward, terminated=done, info=info)

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return episode_verdict(session.state)


def _move(state: dict[str, Any], action: int) -> bool:
    """gym-sokoban's push-or-move, in place: whether the player moved."""
    room, fixed = state["room"], state["fixed"]
    (r, c), (dr, dc) = rooms.cells(room, rooms.PLAYER)[0], rooms.MOVES[action - 1]
    ahead, beyond = (r + dr, c + dc), (r + 2 * dr, c + 2 * dc)
    inside = 0 <= beyond[0] < len(room) and 0 <= beyond[1] < len(room[0])
    if not inside:
        return False
    if room[ahead[0]][ahead[1]] in (rooms.BOX_ON_TARGET, rooms.BOX) and room[beyond[0]][beyond[1]] in (
        rooms.FLOOR,
        rooms.TARGET,
    ):
        room[beyond[0]][beyond[1]] = (
            rooms.BOX_ON_TARGET if fixed[beyond[0]][beyond[1]] == rooms.TARGET else rooms.BOX
        )
    elif room[ahead[0]][ahead[1]] not in (rooms.FLOOR, rooms.TARGET):
        return False
    room[ahead[0]][ahead[1]] = rooms.PLAYER
    room[r][c] = fixed[r][c]
    return True
