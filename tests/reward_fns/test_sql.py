"""`sql`: execution match in the bubblewrap sandbox on a database file under a root or an inline schema, the
comparison rules, and hostile queries and task fields (each a 0 with a reason or a typed error, never a
crash, a pass or a hang; the database file is unchanged)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.reward_fns import sql
from tests.reward_fns.nemo_gym_rows import rollouts

ROWS = [(1, "Ann", "red", 3.5), (2, "Bob", "blue", 2.0), (3, "Cid", "red", 1.25), (4, "Dee", "green", 2.0)]


@pytest.fixture(scope="module")
def root() -> Iterator[Path]:
    """A databases root the sandbox's uid can read (pytest's tmp dirs are 0700)."""
    base = Path(tempfile.mkdtemp(prefix="sqlroot-", dir="/tmp"))
    try:
        base.chmod(0o755)
        (base / "shop").mkdir(mode=0o755)
        db = base / "shop" / "shop.sqlite"
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, color TEXT, price REAL)")
            conn.executemany("INSERT INTO item VALUES (?, ?, ?, ?)", ROWS)
            conn.execute("CREATE TABLE blob_t (b BLOB)")
            conn.execute("INSERT INTO blob_t VALUES (x'00ff')")
        db.chmod(0o644)
        yield base
    finally:
        shutil.rmtree(base)


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def _score(root: Path, predicted: str, reference: str, **options: Any) -> dict[str, Any]:
    options.setdefault("query_timeout_s", 1.0)
    response = f"Here it is:\n```sql\n{predicted}\n```"
    return await sql.compute_score(
        "bird", response, reference, {"db_id": "shop"}, databases_root=str(root), **options
    )


async def test_execution_match_and_compare_modes(root: Path) -> None:
    reference = "SELECT name FROM item WHERE color = 'red'"
    result = await _score(
        root, "SELECT name FROM item WHERE price > 1 AND color = 'red' ORDER BY name DESC", reference
    )
    assert result["score"] == 1.0 and result["compare"] == "multiset" and result["reason"] == "none"
    assert result["reward_components"] == {"execution_match": 1.0, "executes": 1.0}
    # The reference orders at top level: order matters.
    ordered = "SELECT name FROM item ORDER BY price, name"
    assert (await _score(root, "SELECT name FROM item ORDER BY price, name", ordered))["score"] == 1.0
    wrong_order = await _score(root, "SELECT name FROM item ORDER BY name", ordered)
    assert (
        wrong_order["score"] == 0.0
        and wrong_order["compare"] == "ordered"
        and wrong_order["reason"] == "mismatch"
    )
    # An ORDER BY only inside a subquery does not make the comparison ordered.
    inner = "SELECT name FROM (SELECT name FROM item ORDER BY price) WHERE name <> 'x'"
    assert (await _score(root, "SELECT name FROM item", inner))["compare"] == "multiset"
    # multiset counts duplicates; BIRD's set does not.
    dup_ref = "SELECT price FROM item"
    assert (await _score(root, "SELECT DISTINCT price FROM item", dup_ref))["score"] == 0.0
    assert (await _score(root, "SELECT DISTINCT price FROM item", dup_ref, compare="set"))["score"] == 1.0
    blob = await _score(root, "SELECT b FROM blob_t", "SELECT x'00ff'")
    assert blob["score"] == 1.0


async def test_prediction_failures_score_zero_with_a_reason(root: Path) -> None:
    ref = "SELECT id FROM item"
    no_sql = await sql.compute_score("b", "I do not know.", ref, {"db_id": "shop"}, databases_root=str(root))
    assert no_sql["score"] == 0.0 and no_sql["reason"] == "no_sql"
    bad = await _score(root, "SELEC id FRM item", ref)
    assert bad["score"] == 0.0 and bad["reason"] == "sql_error" and "syntax" in bad["error"]
    assert bad["reward_components"]["executes"] == 0.0
    raw = await sql.compute_score(
        "b", "SELECT id FROM item", ref, {"db_id": "shop"}, databases_root=str(root), extract="raw"
    )
    assert raw["score"] == 1.0


async def test_reference_failure_is_a_typed_error(root: Path) -> None:
    with pytest.raises(sql.SqlReferenceError, match="no such table"):
        await _score(root, "SELECT 1", "SELECT * FROM missing_table")
    big = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x FROM c"
    with pytest.raises(sql.SqlReferenceError, match="too_many_rows"):
        await _score(root, "SELECT 1", big, max_rows=1000)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    with pytest.raises(sql.SqlReferenceError, match="timeout"):
        await _score(root, "SELECT 1", endless)
    with pytest.raises(sql.SqlTaskError, match="no reference"):
        await sql.compute_score(
            "b", "```sql\nSELECT 1\n```", None, {"db_id": "shop"}, databases_root=str(root)
        )


@pytest.mark.parametrize(
    "predicted",
    [
        "INSERT INTO item VALUES (9, 'x', 'y', 1)",
        "UPDATE item SET price = 0",
        "DELETE FROM item",
        "DROP TABLE item",
        "CREATE TABLE t (a)",
        "CREATE TEMP TABLE t (a)",
        "ATTACH DATABASE '/etc/passwd' AS p",
        "ATTACH DATABASE ':memory:' AS m",
        "SELECT load_extension('/usr/lib/x86_64-linux-gnu/libm.so.6')",
        "SELECT readfile('/etc/passwd')",
        "SELECT writefile('/tmp/x', 'y')",
        "PRAGMA query_only = OFF",
        "PRAGMA writable_schema = ON",
        "VACUUM INTO '/tmp/copy.sqlite'",
        "BEGIN",
        "SELECT 1; DELETE FROM item",
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
        "SELECT count(*) FROM " + ", ".join(f"item t{i}" for i in range(20)),
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 200000) SELECT x FROM c",
        "SELECT zeroblob(2000000000)",
        "SELECT printf('%.*c', 100000000, 'x')",
    ],
)
async def test_hostile_queries_score_zero_and_change_nothing(root: Path, predicted: str) -> None:
    db = root / "shop" / "shop.sqlite"
    before = _digest(db)
    started = time.monotonic()
    result = await _score(root, predicted, "SELECT id FROM item")
    assert result["score"] == 0.0, result
    assert result["reason"] in {"sql_error", "timeout", "too_many_rows", "too_many_bytes", "mismatch"}, result
    assert time.monotonic() - started < 15
    assert _digest(db) == before
    assert not _exists("/tmp/copy.sqlite")


async def test_reading_the_schema_is_allowed(root: Path) -> None:
    result = await _score(
        root, "SELECT name FROM sqlite_master WHERE type = 'table'", "SELECT 'item' UNION SELECT 'blob_t'"
    )
    assert result["score"] == 1.0


@pytest.mark.parametrize("db_id", ["../shop", "..", "/etc/passwd", "shop/../../etc", "", "a" * 200, 7, None])
async def test_db_ids_that_leave_the_root_are_refused(root: Path, db_id: Any) -> None:
    task = {"db_id": db_id} if db_id is not None else {}
    with pytest.raises(sql.SqlDatabaseError):
        await sql.compute_score("b", "```sql\nSELECT 1\n```", "SELECT 1", task, databases_root=str(root))


async def test_symlinks_out_of_the_root_and_unreadable_files_are_refused(root: Path) -> None:
    outside = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        os.chmod(outside, 0o755)
        (outside / "evil.sqlite").write_bytes((root / "shop" / "shop.sqlite").read_bytes())
        (root / "evil").mkdir(mode=0o755)
        (root / "evil" / "evil.sqlite").symlink_to(outside / "evil.sqlite")
        with pytest.raises(sql.SqlDatabaseError, match="outside"):
            await sql.compute_score("b", "x", "SELECT 1", {"db_id": "evil"}, databases_root=str(root))
        (root / "secret").mkdir(mode=0o755)
        (root / "secret" / "secret.sqlite").write_bytes(b"")
        (root / "secret" / "secret.sqlite").chmod(0o600)
        with pytest.raises(sql.SqlDatabaseError, match="world-readable"):
            await sql.compute_score("b", "x", "SELECT 1", {"db_id": "secret"}, databases_root=str(root))
        with pytest.raises(sql.SqlDatabaseError, match="no database"):
            await sql.compute_score("b", "x", "SELECT 1", {"db_id": "nothere"}, databases_root=str(root))
        with pytest.raises(sql.SqlDatabaseError, match="databases_root"):
            await sql.compute_score("b", "x", "SELECT 1", {"db_id": "shop"})
    finally:
        shutil.rmtree(outside)
        shutil.rmtree(root / "evil")
        shutil.rmtree(root / "secret")


async def test_huge_response_is_bounded(root: Path) -> None:
    huge = "```sql\nSELECT " + "1+" * 3_000_000 + "1\n```"
    result = await sql.compute_score("b", huge, "SELECT 1", {"db_id": "shop"}, databases_root=str(root))
    assert result["score"] == 0.0 and result["reason"] in {"no_sql", "sql_error"}


async def test_text_to_sql_inline_schema_rows() -> None:
    """NeMo Gym's text_to_sql rows carry the database inline (`sql_context`). Their rewards come from an LLM
    judge, so this is not parity: the SQLite row executes and its queries' results agree (the judge said
    equivalent too); the MySQL/PostgreSQL rows are typed errors (not SQLite)."""
    rows = rollouts("text_to_sql")
    sqlite_rows = [r for r in rows if r["sql_dialect"] == "sqlite"]
    assert len(sqlite_rows) == 1
    row = sqlite_rows[0]
    task = {"sql_context": row["sql_context"], "sql_dialect": row["sql_dialect"]}
    result = await sql.compute_score("text_to_sql", row["model_output"], row["sql"], task)
    assert result["score"] == 1.0 == row["reward"]
    for other in (r for r in rows if r["sql_dialect"] != "sqlite"):
        task = {"sql_context": other["sql_context"], "sql_dialect": other["sql_dialect"]}
        with pytest.raises(sql.SqlTaskError, match="not SQLite"):
            await sql.compute_score("text_to_sql", other["model_output"], other["sql"], task)


async def test_inline_schema_cannot_attach_or_escape() -> None:
    task = {"sql_context": "ATTACH DATABASE '/etc/passwd' AS p; CREATE TABLE t (a);"}
    with pytest.raises(sql.SqlTaskError, match="not authorized"):
        await sql.compute_score("t", "```sql\nSELECT 1\n```", "SELECT 1", task)
