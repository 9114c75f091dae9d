"""SQL extraction against NeMo Gym's own bird_sql rule (its `extract_sql_from_response`, read from the wheel's
`resources_servers/bird_sql/app.py` at test time), in linear time on hostile responses; the top-level ORDER BY
test; the runner's output framing."""

from __future__ import annotations

import ast
import random
import re
import time
import zipfile
from collections.abc import Callable
from typing import Any, Optional

from rewardfleet.reward_fns._sql.compare import extract_sql, has_top_level_order_by
from rewardfleet.reward_fns._sql.sandbox import _complete_lines
from tests.reward_fns.nemo_gym_rows import wheel_path

FILLER = "SELECT 1"  # NeMo Gym's bird_sql answer when no block is found


def _nemo_extract() -> Callable[[str], str]:
    """`extract_sql_from_response` from NeMo Gym's bird_sql app.py (which needs Python >= 3.12 and NeMo Gym
    to import whole): its source compiled alone."""
    with zipfile.ZipFile(wheel_path()) as zf:
        source = zf.read("resources_servers/bird_sql/app.py").decode()
    tree = ast.parse(source)
    keep = [
        node
        for node in tree.body
        if (isinstance(node, ast.FunctionDef) and node.name == "extract_sql_from_response")
        or (
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", "") == "_NO_ANSWER_FILLER" for t in node.targets)
        )
    ]
    assert len(keep) == 2
    namespace: dict[str, Any] = {"re": re, "Optional": Optional}
    exec(compile(ast.Module(body=keep, type_ignores=[]), "bird_sql_app", "exec"), namespace)
    return namespace["extract_sql_from_response"]


PIECES = [
    "```sql",
    "```",
    "SELECT a FROM t",
    "-- note",
    "/* c */",
    "/*",
    "*/",
    "**Query**",
    "\n",
    " ",
    "x",
    "1",
]


def test_extraction_matches_nemo_gyms_bird_rule() -> None:
    theirs = _nemo_extract()
    rng = random.Random(5)
    for _ in range(3000):
        response = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
        ours = extract_sql(response, "codeblock")
        expected = theirs(response)
        assert (FILLER if ours is None else ours) == expected, repr(response)


def test_extraction_is_linear_on_hostile_responses() -> None:
    for hostile in [
        "```sql a" * 200_000,
        "```sql x /*" * 150_000 + "```",
        "```sql\n" + "/* " * 300_000 + "x```",
    ]:
        started = time.monotonic()
        extract_sql(hostile, "codeblock")
        assert time.monotonic() - started < 2, hostile[:20]


def test_top_level_order_by() -> None:
    assert has_top_level_order_by("SELECT a FROM t ORDER BY a")
    assert has_top_level_order_by("select a from t order\n  by a desc")
    assert not has_top_level_order_by("SELECT a FROM (SELECT a FROM t ORDER BY a)")
    assert not has_top_level_order_by("SELECT 'order by' FROM t")
    assert not has_top_level_order_by('SELECT "order by" FROM t -- order by a')
    assert not has_top_level_order_by("SELECT a FROM t /* ORDER BY a */")
    assert not has_top_level_order_by("SELECT reorder by FROM t")
    assert has_top_level_order_by("WITH c AS (SELECT 1 AS x ORDER BY x) SELECT x FROM c ORDER BY x")


def test_runner_lines_cut_or_forged_are_not_results() -> None:
    assert _complete_lines(b'{"ok": true, "rows": []}\n{"ok": tr', 2) == [{"ok": True, "rows": []}]
    assert _complete_lines(b'{"ok": true, "rows": []}\n[1]\n', 2) == [{"ok": True, "rows": []}]
    assert _complete_lines(b'{"ok": false}\n{"ok": true}\n{"ok": true}\n', 2) == [{"ok": False}, {"ok": True}]
    assert _complete_lines(b"", 2) == []
