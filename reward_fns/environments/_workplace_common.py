"""What the workplace tools share: search patterns, timestamps, pages and minted ids.

The agent's search patterns run with a time limit; an id is minted as NeMo Gym mints it (one more than the
column's largest id compared as text).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from rewardfleet.reward_fns.environments._workplace_tables import Row, Table
from rewardfleet.services.environments import ToolError

SEARCH_BUDGET_S = 1.0


class Pattern:
    """A case-insensitive search pattern, as pandas' `str.contains(pattern, case=False)` runs it (a regular
    expression searched anywhere in the text). The agent writes it, so it runs on the `regex` module with
    `SEARCH_BUDGET_S` for all the rows of one call, releasing the GIL while it searches; a missing value
    never matches."""

    def __init__(self, tool: str, text: str) -> None:
        import regex  # the `environments` extra: imported on first use, as the calendar's grading does

        self.tool = tool
        try:
            self.compiled = regex.compile(text, regex.IGNORECASE | regex.VERSION0)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ToolError(f"Error executing tool '{tool}': {exc}") from None
        self.deadline = time.monotonic() + SEARCH_BUDGET_S

    def __call__(self, value: Any) -> bool:
        if not isinstance(value, str):
            return False
        left = self.deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            return self.compiled.search(value, timeout=left, concurrent=True) is not None
        except TimeoutError:
            raise ToolError(
                f"Error executing tool '{self.tool}': the pattern took longer than {SEARCH_BUDGET_S:g}s"
            ) from None


def timestamp(text: Any) -> datetime:
    """A date or date and time in ISO 8601 form, without a time zone; ValueError otherwise."""
    if not isinstance(text, str):
        raise ValueError(f"not a timestamp: {text!r}")
    parsed = datetime.fromisoformat(text.strip())
    if parsed.tzinfo is not None:
        raise ValueError(f"time zones are not supported: {text!r}")
    return parsed


def next_id(tool: str, table: Table, column: str) -> int:
    """One more than the column's largest value compared as text, read as a number (as NeMo Gym mints)."""
    values = [value for value in (row.get(column) for row in table.rows) if isinstance(value, str)]
    if not values:
        raise ToolError(f"Error executing tool '{tool}': there is no id to count from")
    try:
        return int(max(values)) + 1
    except ValueError as exc:
        raise ToolError(f"Error executing tool '{tool}': {exc}") from None


def page_of(items: list[Row], page: int, page_size: int, noun: str, key: str) -> dict[str, Any]:
    """One page of `items` as NeMo Gym's search tools answer it (a page past the end is the last page)."""
    total = len(items)
    pages = (total + page_size - 1) // page_size
    page = max(1, min(page, pages)) if pages > 0 else 1
    start = (page - 1) * page_size
    return {
        key: items[start : min(start + page_size, total)],
        "pagination": {f"total_{noun}": total, "page": page, "page_size": page_size, "total_pages": pages},
    }


def lowered(value: str | None) -> str | None:
    return value.lower() if value is not None else None


def delete_row(table: Table, column: str, value: str | None, noun: str) -> str:
    """Deletes the rows whose `column` is `value`, answering as the workplace's delete tools do."""
    if not value:
        return f"{noun} ID not provided."
    if not table.has(column, value):
        return f"{noun} not found."
    table.keep(lambda row: row.get(column) != value)
    return f"{noun} deleted successfully."
