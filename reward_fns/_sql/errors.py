"""The `sql` reward's typed failures: the task cannot be scored (never a silent 0).

A predicted query that fails is the policy's mistake and scores 0 with a reason instead."""

from __future__ import annotations


class SqlTaskError(ValueError):
    """The task is unusable: no reference query, no database, a dialect SQLite cannot run."""


class SqlDatabaseError(SqlTaskError):
    """The task's database cannot be used: a `db_id` that leaves the databases root, a missing file, one the
    sandbox cannot read."""


class SqlReferenceError(SqlTaskError):
    """The reference query failed on the task's database (error, timeout, result over the bounds)."""
