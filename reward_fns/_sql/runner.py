"""Runs the reference and the predicted query on SQLite, inside the sandbox (stdlib only, `python -I`).

stdin: one JSON job `{"db": path | null, "schema": SQL script | null, "queries": [reference, predicted],
"timeout_s", "max_rows", "max_bytes", "max_value_bytes"}`. stdout: one JSON line per query, in order,
flushed as each ends: `{"ok": true, "rows": [[value, ...], ...]}` or `{"ok": false, "error": kind,
"message"}` with kind `sql_error`, `timeout`, `too_many_rows`, `too_many_bytes`, `schema_error` (the
inline schema script failed). A blob value is
`{"blob": hex}` (JSON has no bytes).

Each query gets its own connection: the database file opened `mode=ro&immutable=1`, or a fresh in-memory
database built from `schema`; `PRAGMA query_only`; an authorizer that allows reading and calling functions
and denies everything else (writes, ATTACH, PRAGMA, transactions, DDL, `load_extension`, `readfile`,
`writefile`); a progress handler that interrupts past `timeout_s`; and SQLite's own length limits. The
sandbox bounds the rest (memory, CPU, wall time, no network, no host files).
"""

import json
import sqlite3
import sys
import time

ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "sqlar"}
STEPS_PER_CHECK = 2000


def _authorize(action, arg1, arg2, database, trigger):
    if action not in ALLOWED:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _schema_authorize(action, arg1, arg2, database, trigger):
    if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _connect(job):
    if job.get("db"):
        conn = sqlite3.connect(f"file:{job['db']}?mode=ro&immutable=1", uri=True, isolation_level=None)
    else:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.set_authorizer(_schema_authorize)
        conn.executescript(job.get("schema") or "")
        conn.set_authorizer(None)
    conn.text_factory = lambda b: b.decode(errors="ignore")  # as BIRD's evaluator reads text
    conn.execute("PRAGMA query_only = ON")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, job["max_value_bytes"])
    conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
    conn.set_authorizer(_authorize)
    return conn


def _value(value):
    return {"blob": bytes(value).hex()} if isinstance(value, (bytes, bytearray, memoryview)) else value


def _failed(kind, message):
    return {"ok": False, "error": kind, "message": message}


def run_query(job, sql):
    deadline = time.monotonic() + job["timeout_s"]
    timed_out = []

    def progress():
        if time.monotonic() > deadline:
            timed_out.append(True)
            return 1
        return 0

    try:
        conn = _connect(job)
    except (sqlite3.Error, sqlite3.Warning, ValueError, MemoryError, RecursionError) as exc:
        return _failed("schema_error", f"{type(exc).__name__}: {exc}"[:500])
    conn.set_progress_handler(progress, STEPS_PER_CHECK)
    rows, size = [], 0
    try:
        cursor = conn.execute(sql)
        while True:
            batch = cursor.fetchmany(256)
            if not batch:
                break
            for row in batch:
                encoded = [_value(v) for v in row]
                size += len(json.dumps(encoded))
                rows.append(encoded)
                if len(rows) > job["max_rows"]:
                    return {"ok": False, "error": "too_many_rows", "message": f"over {job['max_rows']} rows"}
                if size > job["max_bytes"]:
                    return {
                        "ok": False,
                        "error": "too_many_bytes",
                        "message": f"over {job['max_bytes']} bytes",
                    }
    except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        if timed_out:
            return _failed("timeout", f"over {job['timeout_s']} s")
        return _failed("sql_error", f"{type(exc).__name__}: {exc}"[:500])
    finally:
        conn.close()
    return {"ok": True, "rows": rows}


def main():
    job = json.loads(sys.stdin.read())
    for sql in job["queries"]:
        sys.stdout.write(json.dumps(run_query(job, sql)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
