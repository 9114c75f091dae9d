"""Text-to-SQL by execution: the predicted and reference queries' result sets compared.

The predicted and the reference query run on the task's SQLite database inside the code sandbox, and their
result sets are compared.

The task (NeMo Gym's bird_sql and text_to_sql rows, Spider/BIRD style): the reference query is `ground_truth`
(text, or an object with `gt_sql` / `sql`), else `extra_info["gt_sql"]` / `["sql"]`. The database is
`extra_info["db_id"]` under the function's `databases_root` (`database_layout`, default
`{db_id}/{db_id}.sqlite`), or an inline SQL script `extra_info["sql_context"]` / `["schema"]` (CREATE and
INSERT statements) run into a fresh in-memory database; a task with `sql_dialect` other than SQLite's is a
`SqlTaskError` (its script and queries are not SQLite).

Score 1.0 when the predicted query's rows equal the reference's under `compare` (`auto`: in order when the
reference has a top-level ORDER BY, else as a multiset; `set`: BIRD's rule; `multiset`; `ordered`), else 0.0
with a `reason`: `no_sql` (nothing extracted), `sql_error`, `timeout`, `too_many_rows`, `too_many_bytes`,
`crashed` (the prediction took SQLite down), `mismatch`. The reference failing is a `SqlReferenceError`, a
bad task or database a `SqlTaskError` / `SqlDatabaseError`, a sandbox that cannot run a typed sandbox error.

Read-only and bounded: the database is bound read-only into the sandbox and opened `mode=ro&immutable=1`,
with `PRAGMA query_only` and an authorizer that allows only reads and function calls (no writes, ATTACH,
PRAGMA, DDL, `load_extension`, `readfile`); each query has `query_timeout_s` (SQLite's progress handler) and
the sandbox a wall-clock deadline and rlimits; rows and bytes of each result are capped. See
docs/verifiable_tasks.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any, Literal

from rewardfleet.reward_fns._sandbox.bubblewrap import check_bubblewrap
from rewardfleet.reward_fns._sandbox.settings import settings_from_kwargs
from rewardfleet.reward_fns._sandbox.slots import pool_for
from rewardfleet.reward_fns._sql.compare import extract_sql, has_top_level_order_by, results_match
from rewardfleet.reward_fns._sql.database import resolve_database
from rewardfleet.reward_fns._sql.errors import SqlDatabaseError, SqlReferenceError, SqlTaskError
from rewardfleet.reward_fns._sql.sandbox import SqlRun

__all__ = ["SqlDatabaseError", "SqlReferenceError", "SqlTaskError", "compute_score"]

SQLITE_DIALECTS = frozenset({"sqlite", "sqlite3"})
MAX_SQL_CHARS = 100_000


def startup_check(reward_kwargs: dict[str, Any]) -> None:
    """At gateway start: the sandbox can run here (else `SandboxUnavailable` naming the options), and a
    configured `databases_root` is a directory."""
    root = reward_kwargs.get("databases_root")
    if root is not None and not os.path.isdir(str(root)):
        raise SqlDatabaseError(f"databases_root {root!r} is not a directory")
    check_bubblewrap(settings_from_kwargs(reward_kwargs.get("sandbox"), None, None))


def _reference(ground_truth: Any, task: Mapping[str, Any]) -> str:
    if isinstance(ground_truth, str) and ground_truth.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            ground_truth = json.loads(ground_truth)
    if isinstance(ground_truth, Mapping):
        ground_truth = ground_truth.get("gt_sql", ground_truth.get("sql"))
    if ground_truth is None:
        ground_truth = task.get("gt_sql", task.get("sql"))
    if not isinstance(ground_truth, str) or not ground_truth.strip():
        raise SqlTaskError("no reference query: ground_truth (or extra_info gt_sql / sql) must be SQL text")
    if len(ground_truth) > MAX_SQL_CHARS:
        raise SqlTaskError(f"the reference query is over {MAX_SQL_CHARS} characters")
    return ground_truth


def _schema(task: Mapping[str, Any]) -> str | None:
    dialect = task.get("sql_dialect")
    if dialect is not None and str(dialect).strip().lower() not in SQLITE_DIALECTS:
        raise SqlTaskError(
            f"sql_dialect {str(dialect)[:32]!r} is not SQLite; only SQLite tasks can be executed"
        )
    schema = task.get("sql_context", task.get("schema"))
    if schema is not None and not isinstance(schema, str):
        raise SqlTaskError("sql_context / schema must be an SQL script (text)")
    return schema


def _result(score: float, reason: str, sql: str | None, mode: str, **extra: Any) -> dict[str, Any]:
    return {
        "score": score,
        "execution_match": score == 1.0,
        "reason": reason,
        "extracted_sql": None if sql is None else sql[:2000],
        "compare": mode,
        **extra,
        "reward_components": {"execution_match": score, "executes": float(reason in ("none", "mismatch"))},
    }


async def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any = None,
    extra_info: Mapping[str, Any] | None = None,
    *,
    databases_root: str | None = None,
    database_layout: str = "{db_id}/{db_id}.sqlite",
    compare: Literal["auto", "set", "multiset", "ordered"] = "auto",
    extract: Literal["codeblock", "raw"] = "codeblock",
    query_timeout_s: float = 10.0,
    max_rows: int = 10_000,
    max_result_bytes: int = 8 * 1024 * 1024,
    max_value_bytes: int = 1024 * 1024,
    sandbox: dict[str, Any] | None = None,
) -> dict[str, Any]:
    if compare not in ("auto", "set", "multiset", "ordered"):
        raise ValueError(f"compare must be auto, set, multiset or ordered, got {compare!r}")
    if extract not in ("codeblock", "raw"):
        raise ValueError(f"extract must be 'codeblock' or 'raw', got {extract!r}")
    if not 0 < query_timeout_s <= 600 or max_rows < 1 or max_result_bytes < 1024 or max_value_bytes < 1024:
        raise ValueError(
            "query_timeout_s must be in (0, 600], max_rows >= 1, max_result_bytes and max_value_bytes >= 1024"
        )
    if not isinstance(solution_str, str):
        raise TypeError(f"solution_str must be a string, got {type(solution_str).__name__}")
    task: Mapping[str, Any] = extra_info or {}
    reference = _reference(ground_truth, task)
    schema = _schema(task)
    database = None
    if task.get("db_id") is not None:
        database = resolve_database(databases_root, database_layout, task["db_id"])
    elif schema is None:
        raise SqlDatabaseError("the task has neither a db_id nor an inline sql_context / schema")
    mode = compare if compare != "auto" else ("ordered" if has_top_level_order_by(reference) else "multiset")

    predicted = extract_sql(solution_str, extract)
    if predicted is None or not predicted.strip():
        return _result(0.0, "no_sql", predicted, mode)
    if len(predicted) > MAX_SQL_CHARS:
        return _result(0.0, "sql_error", predicted, mode, error=f"over {MAX_SQL_CHARS} characters")

    defaults = {"sample_timeout_s": 2 * query_timeout_s + 10, "memory_limit_mb": 1024}
    settings = settings_from_kwargs({**defaults, **(sandbox or {})}, None, None)
    if settings.chosen_backend != "bubblewrap":
        raise ValueError("sandbox.backend: the sql reward runs only in the bubblewrap sandbox")
    job = {
        "db": None,
        "schema": schema if database is None else None,
        "queries": [reference, predicted],
        "timeout_s": query_timeout_s,
        "max_rows": max_rows,
        "max_bytes": max_result_bytes,
        "max_value_bytes": max_value_bytes,
    }
    async with pool_for("bubblewrap", settings.slots).hold() as slot:
        run = SqlRun(settings, slot, database)
        try:
            ref, pred = await run.run_queries(job, settings.sample_timeout_s, 2 * max_result_bytes + 65536)
        finally:
            await run.close()
    if ref.get("error") == "schema_error":
        raise SqlTaskError(
            f"the inline schema (sql_context) failed on SQLite: {ref.get('message', '')}"[:600]
        )
    if not ref.get("ok"):
        raise SqlReferenceError(
            f"the reference query failed ({ref.get('error')}): {ref.get('message', '')}"[:600]
        )
    if not pred.get("ok"):
        return _result(0.0, str(pred.get("error")), predicted, mode, error=str(pred.get("message", ""))[:600])
    # Up to 2 x max_result_bytes of rows: compared off the event loop.
    matched = await asyncio.to_thread(results_match, ref["rows"], pred["rows"], mode)
    return _result(
        1.0 if matched else 0.0,
        "none" if matched else "mismatch",
        predicted,
        mode,
        reference_rows=len(ref["rows"]),
        predicted_rows=len(pred["rows"]),
    )
