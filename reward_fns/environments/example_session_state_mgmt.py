"""NeMo Gym's `example_session_state_mgmt`: a counter per session, seeded, incremented, read, then checked.

Same tools, bodies and reward as NeMo Gym's resources server of that name, so its recorded rollouts replay
here unchanged: `increment_counter {count}` answers `{"success": true}`, `get_counter_value {}` answers
`{"count": n}`, and the reward is 1.0 when the counter equals the verify body's `expected_count`, else 0.0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from rewardfleet.services.environments import Environment, Session, Verdict, tool


class CounterTask(BaseModel):
    initial_count: int = 0


class CounterVerify(BaseModel):
    expected_count: int


class SessionCounter(Environment):
    name = "example_session_state_mgmt"
    Task = CounterTask

    async def seed(self, session: Session, task: CounterTask) -> None:
        session.state["count"] = task.initial_count

    @tool
    async def increment_counter(self, session: Session, count: int) -> dict[str, Any]:
        """Adds count to the session's counter."""
        session.state["count"] = session.state.get("count", 0) + count
        return {"success": True}

    @tool
    async def get_counter_value(self, session: Session) -> dict[str, Any]:
        """The session's counter."""
        return {"count": session.state.get("count", 0)}

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        expected = CounterVerify.model_validate(body).expected_count
        return Verdict(reward=float(session.state.get("count", 0) == expected))
