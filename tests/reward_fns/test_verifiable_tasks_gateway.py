"""`instruction_following` and `sql` as discovered built-ins of a live gateway (real uvicorn, real loading,
worker processes, the bubblewrap sandbox): scores with their per-item results, typed errors as errors."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardfleet.services.client import AsyncRewardClient
from tests.support.gateway import Gateway, start_gateway


@pytest.fixture(scope="module")
def databases() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="sqlroot-", dir="/tmp"))
    try:
        root.chmod(0o755)
        (root / "pets").mkdir(mode=0o755)
        with sqlite3.connect(root / "pets" / "pets.sqlite") as conn:
            conn.execute("CREATE TABLE pet (name TEXT, kind TEXT)")
            conn.executemany(
                "INSERT INTO pet VALUES (?, ?)", [("Rex", "dog"), ("Tom", "cat"), ("Ace", "dog")]
            )
        (root / "pets" / "pets.sqlite").chmod(0o644)
        yield root
    finally:
        shutil.rmtree(root)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, databases: Path) -> Iterator[Gateway]:
    config = {
        "workers": 1,
        "functions": {
            "sql": {
                "timeout_s": 60,
                "reward_kwargs": {"databases_root": str(databases), "query_timeout_s": 1},
            },
            "instruction_following": {"timeout_s": 10, "reward_kwargs": {"credit": "fraction"}},
        },
    }
    gw = start_gateway(tmp_path_factory.mktemp("vt-gateway"), config, None)
    try:
        yield gw
    finally:
        gw.proc.stop()


async def test_both_builtins_score_through_the_gateway(gateway: Gateway) -> None:
    task = {
        "instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase", "ratio:stop_words"],
        "kwargs": [None, None, {"percentage": 50}],
    }
    samples = [
        {
            "reward_fn": "instruction_following",
            "data_source": "ifeval",
            "solution_str": "no commas and all lowercase here",
            "extra_info": {
                **task,
                "instruction_id_list": task["instruction_id_list"][:2],
                "kwargs": [None, None],
            },
        },
        {
            "reward_fn": "instruction_following",
            "data_source": "ifbench",
            "solution_str": "x",
            "extra_info": task,
        },
        {
            "reward_fn": "sql",
            "data_source": "bird",
            "solution_str": "```sql\nSELECT name FROM pet WHERE kind = 'dog'\n```",
            "ground_truth": "SELECT name FROM pet WHERE kind = 'dog' ORDER BY name LIMIT 5",
            "extra_info": {"db_id": "pets"},
        },
        {
            "reward_fn": "sql",
            "data_source": "bird",
            "solution_str": "```sql\nDELETE FROM pet\n```",
            "ground_truth": "SELECT name FROM pet",
            "extra_info": {"db_id": "pets"},
        },
        {
            "reward_fn": "sql",
            "data_source": "bird",
            "solution_str": "```sql\nSELECT 1\n```",
            "ground_truth": "SELECT 1",
            "extra_info": {"db_id": "../../etc"},
        },
    ]
    async with AsyncRewardClient(gateway.url) as client:
        results = await client.score_many(samples)
    followed, unsupported, ordered_mismatch, write, escape = results
    assert followed.ok and followed.score == 1.0
    assert followed.extra["follow_instruction_list"] == [True, True]
    assert unsupported.status == "error" and unsupported.error is not None
    assert unsupported.error.type == "UnsupportedInstruction"
    # The reference orders at top level (by name): the prediction's rows come in table order.
    assert ordered_mismatch.ok and ordered_mismatch.score == 0.0
    assert ordered_mismatch.extra["reason"] == "mismatch" and ordered_mismatch.extra["compare"] == "ordered"
    assert write.ok and write.score == 0.0 and write.extra["reason"] == "sql_error"
    assert escape.status == "error" and escape.error is not None and escape.error.type == "SqlDatabaseError"


async def test_a_catastrophic_keyword_pattern_is_stopped_by_the_timeout(gateway: Gateway) -> None:
    """IFEval's keyword kwargs are regular expressions: a task's backtracking pattern is stopped by the
    function's timeout_s (its worker process is replaced), and the next sample is scored."""
    task = {"instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["(a+)+$"]}]}
    hostile = {"reward_fn": "instruction_following", "data_source": "ifeval", "solution_str": "a" * 40 + "b"}
    fine = {"reward_fn": "instruction_following", "data_source": "ifeval", "solution_str": "no comma here"}
    fine_task = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [None]}
    async with AsyncRewardClient(gateway.url, timeout_s=60) as client:
        stuck = await client.score(**hostile, extra_info=task)
        after = await client.score(**fine, extra_info=fine_task)
    assert stuck.status == "timeout" and stuck.score is None
    assert after.ok and after.score == 1.0
