"""NeMo Gym's `calendar`: schedule the events a user describes; the answer is the calendar as a JSON list.

No tools: the episode is the conversation, and `verify` grades the response's last output item's text
against the task's expected events (`_calendar_grading`, NeMo Gym's rules). A response whose last item has
no text (a reasoning model cut off while thinking) scores 0.0, as upstream. The expected events come from
the session's task, never from the verify body.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from rewardfleet.reward_fns.environments._calendar_grading import grade
from rewardfleet.reward_fns.environments._responses import response_output
from rewardfleet.services.environments import Environment, Session, Verdict


class CalendarTask(BaseModel):
    exp_cal_state: dict[str, dict[str, Any]] = Field(max_length=200)


class CalendarScheduling(Environment):
    name = "calendar"
    Task = CalendarTask

    async def seed(self, session: Session, task: CalendarTask) -> None:
        session.state["exp_cal_state"] = task.exp_cal_state

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        answer = last_text(body)
        if not answer:
            return Verdict(reward=0.0, extras={"reason": "no_answer"})
        reward, reason = await asyncio.to_thread(grade, answer, session.state["exp_cal_state"])
        return Verdict(reward=reward, extras={"reason": reason})


def last_text(body: dict[str, Any]) -> str:
    """The first text part of the response's last output item ('' when it has none)."""
    output = response_output(body)
    content = output[-1].get("content") if output else None
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = content[0].get("text")
        return text if isinstance(text, str) else ""
    return ""
