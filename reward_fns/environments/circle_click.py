"""NeMo Gym's `circle_click`: click the centre of the circle of the task's colour in an image.

Same tool and reward as NeMo Gym's server of that name: `click {x, y}` echoes its arguments (what the agent
sent, even when it is not a pixel, as upstream: the verify then finds no click); the reward is 1.0 when the
session's first click, read as integers, falls inside the first circle of `target_color` among the task's
`circles` (`{"x", "y", "radius", "color"}`). NeMo Gym reads the first click from the verify body's response;
here it is the session's own first call. Unlike upstream, whose `click` takes any JSON, a coordinate that is
not a number, a short string or a short list of them is refused (422) and so is not a click.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, Field, StrictInt

from rewardfleet.services.environments import Environment, Session, Verdict, tool

Scalar = (
    StrictInt
    | Annotated[float, Field(strict=True, allow_inf_nan=False)]
    | Annotated[str, Field(max_length=64)]
)
Coordinate = Scalar | Annotated[list[Scalar], Field(max_length=16)] | None


class Circle(BaseModel):
    x: float
    y: float
    radius: float
    color: str


class CircleClickTask(BaseModel):
    circles: list[Circle] = Field(default=[], max_length=1000)
    target_color: str = ""


class Click(BaseModel):
    x: Coordinate
    y: Coordinate


def _pixel(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return None


class CircleClick(Environment):
    name = "circle_click"
    Task = CircleClickTask

    async def seed(self, session: Session, task: CircleClickTask) -> None:
        session.state.update(task.model_dump(), first_click=None)

    @tool
    async def click(self, session: Session, x: Coordinate, y: Coordinate) -> Click:
        """Click at pixel (x, y) of the image."""
        if session.state["first_click"] is None:
            session.state["first_click"] = {"x": x, "y": y}
        return Click(x=x, y=y)

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        first = session.state["first_click"] or {}
        x = _pixel(first.get("x"))
        y = (
            _pixel(first.get("y")) if x is not None else None
        )  # upstream reads x, then y, and stops at a failure
        hit = False
        if x is not None and y is not None:
            target = next(
                (c for c in session.state["circles"] if c["color"] == session.state["target_color"]), None
            )
            hit = (
                target is not None
                and math.sqrt((x - target["x"]) ** 2 + (y - target["y"]) ** 2) <= target["radius"]
            )
        return Verdict(reward=float(hit), extras={"clicked_x": x, "clicked_y": y, "hit": hit})
