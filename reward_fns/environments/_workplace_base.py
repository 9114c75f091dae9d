"""The machinery of `workplace_assistant`: its settings, task, sessions' change log and verify.

The tools are the environment's own module; see workplace_assistant.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rewardfleet.reward_fns.environments import _workplace_mail as mail
from rewardfleet.reward_fns.environments import _workplace_records as records
from rewardfleet.reward_fns.environments._workplace_tables import Workplace, WorkplaceData
from rewardfleet.services.environments import Environment, Session, SessionLimits, ToolError, Verdict

Text = Annotated[str, Field(max_length=1000)]
LongText = Annotated[str, Field(max_length=20_000)]
Page = Annotated[int, Field(ge=-(10**9), le=10**9)]
PageSize = Annotated[int, Field(ge=1, le=10_000, description="results per page")]
Day = Annotated[str, Field(max_length=1000, description="YYYY-MM-DD")]
Moment = Annotated[str, Field(max_length=1000, description="YYYY-MM-DD HH:MM:SS")]
RECENT_SESSIONS = 256  # sessions whose last tables a process keeps

OPS: dict[str, Callable[..., Any]] = {
    "company_directory_find_email_address": mail.find_email_address,
    "email_get_email_information_by_id": mail.get_email_information_by_id,
    "email_search_emails": mail.search_emails,
    "email_send_email": mail.send_email,
    "email_delete_email": mail.delete_email,
    "email_forward_email": mail.forward_email,
    "email_reply_email": mail.reply_email,
    "calendar_get_event_information_by_id": mail.get_event_information_by_id,
    "calendar_search_events": mail.search_events,
    "calendar_create_event": mail.create_event,
    "calendar_delete_event": mail.delete_event,
    "calendar_update_event": mail.update_event,
    "analytics_get_visitor_information_by_id": records.get_visitor_information_by_id,
    "analytics_create_plot": records.create_plot,
    "analytics_total_visits_count": records.total_visits_count,
    "analytics_engaged_users_count": records.engaged_users_count,
    "analytics_traffic_source_count": records.traffic_source_count,
    "analytics_get_average_session_duration": records.get_average_session_duration,
    "project_management_get_task_information_by_id": records.get_task_information_by_id,
    "project_management_search_tasks": records.search_tasks,
    "project_management_create_task": records.create_task,
    "project_management_delete_task": records.delete_task,
    "project_management_update_task": records.update_task,
    "customer_relationship_manager_search_customers": records.search_customers,
    "customer_relationship_manager_update_customer": records.update_customer,
    "customer_relationship_manager_add_customer": records.add_customer,
    "customer_relationship_manager_delete_customer": records.delete_customer,
}


class WorkplaceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    data_dir: Path | None = Field(
        default=None, description="NeMo Gym's workplace_assistant csv_data folder (processed/, raw/)."
    )


class GroundTruthCall(BaseModel):
    name: str = Field(max_length=100)
    arguments: str = Field(max_length=100_000, description="the call's arguments as JSON text")


class WorkplaceTask(BaseModel):
    """A NeMo Gym row: `ground_truth` is the list of calls that do the task. A string (which NeMo Gym's
    verify iterates character by character, running none) stands for no call."""

    ground_truth: (
        Annotated[list[GroundTruthCall], Field(max_length=100)] | Annotated[str, Field(max_length=100_000)]
    )


class WorkplaceBase(Environment):
    """Everything of the environment but its tools: data, seed, the change log, verify."""

    Task = WorkplaceTask
    Settings = WorkplaceSettings
    limits = SessionLimits(state_bytes=512 * 1024, tool_calls=300)

    def __init__(self, settings: WorkplaceSettings | None = None) -> None:
        super().__init__(settings)
        data_dir = settings.data_dir if settings is not None else None
        self.data = WorkplaceData.load(data_dir) if data_dir is not None else None
        # session id -> (digest of its log, its tables after that log): a cache of this process, so a call
        # replays nothing when this process served the session's previous call (the state stays the truth).
        self._recent: OrderedDict[str, tuple[str, Workplace]] = OrderedDict()
        self._recent_lock = threading.Lock()

    def _data(self) -> WorkplaceData:
        if self.data is None:
            raise RuntimeError(
                "workplace_assistant has no data: set environments.settings.workplace_assistant.data_dir to "
                "NeMo Gym's resources_servers/workplace_assistant/csv_data folder"
            )
        return self.data

    async def seed(self, session: Session, task: WorkplaceTask) -> None:
        self._data()
        calls = [] if isinstance(task.ground_truth, str) else task.ground_truth
        session.state["ground_truth"] = [call.model_dump() for call in calls]
        session.state["log"] = []

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        return await asyncio.to_thread(self._verdict, session.id, session.state)

    def _verdict(self, session_id: str, state: dict[str, Any]) -> Verdict:
        ours = self._tables(session_id, state["log"])
        expected = self._data().fresh()
        for call in state["ground_truth"]:
            self._try(expected, call["name"], call["arguments"])
        differing = ours.differing(expected)
        return Verdict(reward=0.0 if differing else 1.0, extras={"differing_tables": differing})

    def _try(self, w: Workplace, name: str, arguments: str) -> None:
        """A ground-truth call, skipped when it cannot run (as NeMo Gym's verify skips a failing one)."""
        definition = type(self).tool_definitions.get(name)
        try:
            if definition is None:
                return
            parsed = definition.parse(json.loads(arguments))
            OPS[name](w, **{k: v for k, v in parsed.model_dump().items() if v is not None})
        except (ToolError, ValidationError, ValueError, RecursionError):
            return

    def _replayed(self, log: list[list[Any]]) -> Workplace:
        w = self._data().fresh()
        for name, arguments in log:
            OPS[name](w, **arguments)
        return w

    def _tables(self, session_id: str, log: list[list[Any]]) -> Workplace:
        """The session's tables after its log: a copy of this process's last ones if they are for this very
        log (its digest), else replayed."""
        digest = _digest(log)
        with self._recent_lock:
            recent = self._recent.get(session_id)
        if recent is not None and recent[0] == digest:
            return recent[1].copy()
        return self._replayed(log)

    def _remember(self, session_id: str, log: list[list[Any]], w: Workplace) -> None:
        entry = (_digest(log), w.copy())
        with self._recent_lock:
            self._recent[session_id] = entry
            self._recent.move_to_end(session_id)
            while len(self._recent) > RECENT_SESSIONS:
                self._recent.popitem(last=False)

    def _act_now(
        self, session_id: str, state: dict[str, Any], name: str, arguments: dict[str, Any]
    ) -> dict[str, Any]:
        w = self._tables(session_id, state["log"])
        before = w.version()
        output = OPS[name](w, **arguments)
        if w.version() != before:
            state["log"].append([name, arguments])
            self._remember(session_id, state["log"], w)
        return {"output": output}

    async def _act(self, session: Session, op: str, /, **arguments: Any) -> dict[str, Any]:
        """Runs tool `op` on the session's tables (arguments that are None: not given)."""
        given = {key: value for key, value in arguments.items() if value is not None}
        return await asyncio.to_thread(self._act_now, session.id, session.state, op, given)


def _digest(log: list[list[Any]]) -> str:
    return hashlib.sha256(json.dumps(log, separators=(",", ":")).encode()).hexdigest()
