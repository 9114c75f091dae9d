"""Where a task's SQLite database is: a file under `databases_root`, or an inline schema.

A file under the configured `databases_root`, named by the task's `db_id` (BIRD and Spider lay them out as
`<db_id>/<db_id>.sqlite`), or an inline schema script.

`db_id` is task data, so it is treated as hostile: only `[A-Za-z0-9_][A-Za-z0-9_.-]*` (no `/`, no `..`), and
the resolved path (symlinks followed) must stay inside the root's own resolved path and be a regular file that
the sandbox's unprivileged user can read (world-readable, in directories others may enter: the sandbox runs
as another uid).
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from rewardfleet.reward_fns._sql.errors import SqlDatabaseError

DB_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")


def resolve_database(root: str | None, layout: str, db_id: object) -> Path:
    """The database file for `db_id`, or `SqlDatabaseError` naming what is wrong."""
    if root is None:
        raise SqlDatabaseError("the task names a db_id but the function has no databases_root configured")
    if not isinstance(db_id, str) or not DB_ID.fullmatch(db_id) or ".." in db_id:
        raise SqlDatabaseError(f"db_id must match {DB_ID.pattern} without '..', got {str(db_id)[:80]!r}")
    base = Path(os.path.realpath(root))
    if not base.is_dir():
        raise SqlDatabaseError(f"databases_root {root!r} is not a directory")
    relative = layout.format(db_id=db_id)
    candidate = Path(os.path.realpath(base / relative))
    if os.path.commonpath([base, candidate]) != str(base):
        raise SqlDatabaseError(f"db_id {db_id!r} resolves outside databases_root")
    try:
        info = candidate.stat()
    except OSError:
        raise SqlDatabaseError(f"no database for db_id {db_id!r} ({relative} under databases_root)") from None
    if not stat.S_ISREG(info.st_mode):
        raise SqlDatabaseError(f"the database for db_id {db_id!r} is not a regular file")
    if not info.st_mode & stat.S_IROTH:
        raise SqlDatabaseError(
            f"the database for db_id {db_id!r} is not world-readable; the sandbox reads it as another user"
        )
    for parent in candidate.parents:
        if not parent.stat().st_mode & stat.S_IXOTH:
            raise SqlDatabaseError(
                f"the database for db_id {db_id!r} is under {parent}, which other users cannot enter; "
                "the sandbox reads it as another user"
            )
    return candidate
