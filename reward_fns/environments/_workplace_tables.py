"""The workplace's data: NeMo Gym's workplace_assistant CSV tables and the tables a session sees.

The workplace's data: NeMo Gym's workplace_assistant CSV tables read from a data folder, and the
tables one session sees (the base tables with the session's changes applied).

A data folder is laid out as NeMo Gym's `resources_servers/workplace_assistant/csv_data/`:
`processed/{emails,calendar_events,analytics_data,project_tasks,customer_relationship_manager_data}.csv` and
`raw/email_addresses.csv` (one address a line, no header). Cells are read as text; an empty cell (or one of
the NA spellings pandas' `read_csv` reads as missing) is None, as NeMo Gym's pandas tables hold NaN.

A `Table` keeps its rows' index labels as pandas would have them, because NeMo Gym's verify compares whole
DataFrames, index included: a deleted row leaves a gap, an append that ignores the index renumbers every
row, and the calendar's append labels its new row 0.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Row = dict[str, Any]

# What pandas.read_csv reads as missing by default (its STR_NA_VALUES).
NA_CELLS = frozenset(
    {"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>"}
    | {"N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"}
)
TABLE_FILES = {
    "emails": "processed/emails.csv",
    "calendar": "processed/calendar_events.csv",
    "analytics": "processed/analytics_data.csv",
    "projects": "processed/project_tasks.csv",
    "customers": "processed/customer_relationship_manager_data.csv",
}
DIRECTORY_FILE = "raw/email_addresses.csv"
# Columns NeMo Gym's verify compares with their case; every other text is compared case-folded.
CASED_COLUMNS = frozenset({"status", "list_name", "board"})
MAX_DATA_BYTES = 64 << 20


class DataError(Exception):
    """The data folder lacks a file, or a file is not a table."""


@dataclass
class Table:
    """Rows in order, each with its index label; a changed row is a new dict (rows are shared by copies)."""

    columns: list[str]
    rows: list[Row]
    labels: list[int]
    changes: int = 0

    def copy(self) -> Table:
        return Table(list(self.columns), list(self.rows), list(self.labels))

    def keep(self, wanted: Callable[[Row], bool]) -> int:
        """Keeps the rows `wanted` says, with their labels; how many were dropped."""
        kept = [(row, label) for row, label in zip(self.rows, self.labels, strict=True) if wanted(row)]
        dropped = len(self.rows) - len(kept)
        self.changes += dropped > 0
        self.rows = [row for row, _ in kept]
        self.labels = [label for _, label in kept]
        return dropped

    def append(self, row: Row, *, renumber: bool) -> None:
        """Adds a row at the end: `renumber` as pandas' `concat(ignore_index=True)`; else labelled 0."""
        self.changes += 1
        self.rows.append({column: row.get(column) for column in self.columns})
        self.labels = list(range(len(self.rows))) if renumber else [*self.labels, 0]

    def assign(self, key: str, value: Any, column: str, new: Any) -> int:
        """Sets `column` to `new` in every row whose `key` is `value`; how many rows."""
        count = 0
        for i, row in enumerate(self.rows):
            if row.get(key) == value:
                self.rows[i] = {**row, column: new}
                count += 1
        self.changes += count > 0
        return count

    def find(self, key: str, value: Any) -> list[Row]:
        return [row for row in self.rows if row.get(key) == value]

    def has(self, key: str, value: Any) -> bool:
        return any(row.get(key) == value for row in self.rows)

    def records(self, rows: list[Row] | None = None) -> list[Row]:
        """Rows (all of them, or `rows`) as JSON records: copies, columns in order."""
        return [
            {column: row.get(column) for column in self.columns}
            for row in (self.rows if rows is None else rows)
        ]

    def compared(self) -> tuple[list[str], list[int], list[tuple[Any, ...]]]:
        """What NeMo Gym's verify compares: columns, labels and the values, text case-folded but in
        `CASED_COLUMNS` (pandas' `.str.lower()` makes anything but text missing)."""
        values = [
            tuple(
                row.get(column) if column in CASED_COLUMNS else _folded(row.get(column))
                for column in self.columns
            )
            for row in self.rows
        ]
        return list(self.columns), list(self.labels), values


def _folded(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else None


@dataclass(frozen=True)
class WorkplaceData:
    """The base tables of one data folder, read once and shared (read-only) by every session."""

    tables: dict[str, Table]
    directory: tuple[str | None, ...]

    @classmethod
    def load(cls, folder: Path) -> WorkplaceData:
        tables = {name: _read_table(folder / relative) for name, relative in TABLE_FILES.items()}
        analytics = tables["analytics"]
        if "user_engaged" not in analytics.columns:
            raise DataError(f"{folder / TABLE_FILES['analytics']}: no user_engaged column")
        analytics.rows = [{**row, "user_engaged": row["user_engaged"] == "True"} for row in analytics.rows]
        directory = tuple(None if row[0] in NA_CELLS else row[0] for row in _cells(folder / DIRECTORY_FILE))
        return cls(tables, directory)

    def fresh(self) -> Workplace:
        """A session's tables before any change."""
        return Workplace(
            emails=self.tables["emails"].copy(),
            calendar=self.tables["calendar"].copy(),
            projects=self.tables["projects"].copy(),
            customers=self.tables["customers"].copy(),
            plots=Table(["file_path"], [], []),
            analytics=self.tables["analytics"],
            directory=self.directory,
        )


@dataclass
class Workplace:
    """One session's tables. `analytics` and `directory` are never changed (shared with the base);
    `durations_as_numbers` is NeMo Gym's side effect of an unbounded average (analytics tools)."""

    emails: Table
    calendar: Table
    projects: Table
    customers: Table
    plots: Table
    analytics: Table
    directory: tuple[str | None, ...]
    durations_as_numbers: bool = False

    def copy(self) -> Workplace:
        """The same tables, changed apart from these from now on (rows are shared, never changed in place)."""
        return Workplace(
            emails=self.emails.copy(),
            calendar=self.calendar.copy(),
            projects=self.projects.copy(),
            customers=self.customers.copy(),
            plots=self.plots.copy(),
            analytics=self.analytics,
            directory=self.directory,
            durations_as_numbers=self.durations_as_numbers,
        )

    def version(self) -> tuple[int, ...]:
        """Grows with every change, so a caller can tell whether a call changed anything."""
        tables = (self.emails, self.calendar, self.projects, self.customers, self.plots)
        return (*(table.changes for table in tables), int(self.durations_as_numbers))

    def compared_tables(self) -> Iterator[tuple[str, Table]]:
        yield from (
            ("calendar", self.calendar),
            ("emails", self.emails),
            ("plots", self.plots),
            ("projects", self.projects),
            ("customers", self.customers),
        )

    def differing(self, other: Workplace) -> list[str]:
        """The tables NeMo Gym's verify would find unequal (an empty list: the same state)."""
        theirs = dict(other.compared_tables())
        return [name for name, table in self.compared_tables() if table.compared() != theirs[name].compared()]


def _cells(path: Path) -> list[list[str]]:
    try:
        if path.stat().st_size > MAX_DATA_BYTES:
            raise DataError(f"{path}: larger than {MAX_DATA_BYTES} bytes")
        with path.open(encoding="utf-8-sig", newline="") as handle:
            return [row for row in csv.reader(handle, strict=True) if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: {exc}") from None


def _read_table(path: Path) -> Table:
    cells = _cells(path)
    if not cells:
        raise DataError(f"{path}: empty (a header row is needed)")
    columns, rows = cells[0], []
    if len(set(columns)) != len(columns):
        raise DataError(f"{path}: repeated column names")
    for number, line in enumerate(cells[1:], start=2):
        if len(line) > len(columns):
            raise DataError(f"{path}: row {number} has {len(line)} cells for {len(columns)} columns")
        padded = [*line, *[""] * (len(columns) - len(line))]
        rows.append({c: (None if v in NA_CELLS else v) for c, v in zip(columns, padded, strict=True)})
    return Table(columns, rows, list(range(len(rows))))
