"""NeMo Gym's `example_multi_step`: look up the values of the right synonyms, then extract them in order.

Same tools, bodies and scores as NeMo Gym's server of that name: `get_synonym_value {synonym}` answers
`{"synonym_value": <sum of the synonym's code points>}`, `extract_synonym_values {synonym_values}` answers
`{"success": true}`, and the reward is 1.0 when the last extracted list equals the task's
`expected_synonym_values` (order included), else 0.0. NeMo Gym reads that last list from the verify body's
response; here it is the last list the session's own `extract_synonym_values` received, so a verify body
cannot claim a call the agent never made.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field

from rewardfleet.services.environments import Environment, Session, Verdict, tool

MAX_VALUES = 1000


class MultiStepTask(BaseModel):
    expected_synonym_values: list[int] = Field(min_length=1, max_length=MAX_VALUES)
    minefield_label_value: int


class SynonymValue(BaseModel):
    synonym_value: int


class Extracted(BaseModel):
    success: bool


class MultiStep(Environment):
    name = "example_multi_step"
    Task = MultiStepTask

    async def seed(self, session: Session, task: MultiStepTask) -> None:
        session.state.update(task.model_dump(), extracted=None)

    @tool
    async def get_synonym_value(
        self, session: Session, synonym: Annotated[str, Field(max_length=1000)]
    ) -> SynonymValue:
        """Get the synonym value for a synonym."""
        return SynonymValue(synonym_value=sum(map(ord, synonym)))

    @tool
    async def extract_synonym_values(
        self, session: Session, synonym_values: Annotated[list[int], Field(max_length=MAX_VALUES)]
    ) -> Extracted:
        """Extract the synonym values you retrieved for the term that is relevant to the user query."""
        session.state["extracted"] = synonym_values
        return Extracted(success=True)

    async def verify(self, session: Session, body: dict[str, Any]) -> Verdict:
        expected: list[int] = session.state["expected_synonym_values"]
        actual: list[int] = session.state["extracted"] or []
        accuracy = actual == expected
        overlap = len(set(actual) & set(expected)) / len(expected)
        return Verdict(
            reward=float(accuracy),
            extras={
                "parsed_synonym_values": actual,
                "accuracy": accuracy,
                "set_overlap": overlap,
                "original_term_minefield_hit": session.state["minefield_label_value"] in actual,
                "order_instruction_following_failure": not accuracy and overlap == 1.0,
            },
        )
