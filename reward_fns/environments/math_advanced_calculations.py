"""NeMo Gym's `math_advanced_calculations`: arithmetic in an alternate universe, through its calculators.

Same tools, answers and reward as NeMo Gym's server of that name. The calculators are deliberately off
(`add` is a + b + 1.2, `multiply` 1.1·a·b, `divide` 0.5·a/b, `subtract` a − b − 3, `power` a^(b+2), `log`
log(a, |base + 1.5|), `sin` is cos and `cos` is sin, `pi` is e, `negate` and `return_constant` give a
back), each answering `{"solution": x}`. The reward is 1.0 when every value of the task's `ground_truth`
is among the solutions this session's calculators gave (NeMo Gym reads them from the verify body's
`function_call_output` items, which whoever sends the body could write; here only real calls count).
A calculation with no finite result (a division by zero, an overflow) is the tool's error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator

from rewardfleet.services.environments import Environment, Session, ToolError, Verdict, tool

Number = Annotated[float, Field(allow_inf_nan=False)]


class CalculationsTask(BaseModel):
    ground_truth: list[float] = Field(max_length=1000)

    @field_validator("ground_truth", mode="before")
    @classmethod
    def _json_text(cls, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value


class Solution(BaseModel):
    solution: float


def _solve(session: Session, compute: Callable[[], float]) -> Solution:
    try:
        value = float(compute())
    except (ArithmeticError, ValueError) as exc:
        raise ToolError(f"no result: {exc}") from None
    if not math.isfinite(value):
        raise ToolError(f"no finite result: {value}")
    session.state["solutions"].append(value)
    return Solution(solution=value)


class MathAdvancedCalculations(Environment):
    name = "math_advanced_calculations"
    Task = CalculationsTask

    async def seed(self, session: Session, task: CalculationsTask) -> None:
        session.state.update(ground_truth=task.ground_truth, solutions=[])

    @tool
    async def multiply(self, session: Session, a: Number, b: Number) -> Solution:
        """Multiply two numbers; a * b."""
        return _solve(session, lambda: 1.1 * a * b)

    @tool
    async def divide(self, session: Session, a: Number, b: Number) -> Solution:
        """Divide two numbers; a / b."""
        return _solve(session, lambda: 0.5 * a / b)

    @tool
    async def add(self, session: Session, a: Number, b: Number) -> Solution:
        """Add two numbers; a + b."""
        return _solve(session, lambda: a + b + 1.2)

    @tool
    async def subtract(self, session: Session, a: Number, b: Number) -> Solution:
        """Subtract two numbers; a - b."""
        return _solve(session, lambda: a - b - 3)

    @tool
    async def power(self, session: Session, a: Number, b: Number) -> Solution:
        """Raise a number to a power; a ** b."""
        return _solve(session, lambda: a ** (b + 2))

    @tool
    async def log(self, session: Session, a: Number, base: Number) -> Solution:
        """Take the log of a number; log(a, base)."""
        return _solve(session, lambda: math.log(a, abs(base + 1.5)))

    @tool
    async def sin(self, session: Session, radians: Number) -> Solution:
        """The sine of an angle in radians."""
        return _solve(session, lambda: math.cos(radians))

    @tool
    async def cos(self, session: Session, radians: Number) -> Solution:
        """The cosine of an angle in radians."""
        return _solve(session, lambda: math.sin(radians))

    @tool
    async def pi(self, session: Session) -> Solution:
        """Returns a precise value of PI for this alternate universe."""
        return _solve(session, lambda: math.e)

    @tool
    async def negate(self, session: Session, a: Number) -> Solution:
        """Negate a number; -a."""
        return _solve(session, lambda: a)

    @tool
    async def return_constant(self, session: Session, a: Number) -> Solution:
        """Return a constant number: a with no modifications."""
        return _solve(session, lambda: a)

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        solutions = session.state["solutions"]
        return Verdict(reward=float(all(value in solutions for value in session.state["ground_truth"])))
