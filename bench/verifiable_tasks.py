"""The verifiable-task built-ins' cost per sample, in process (no gateway): samples/s of
`instruction_following` (IFEval/IFBench tasks of 3 instructions on ~250-word responses; every call computes
both the strict and the loose list) and of `sql` (one bubblewrap sandbox per sample; a 2,000-row database
file, and an inline schema), each as a ratio to `gsm8k` measured in the same run (the machine is shared: only
ratios are comparable across runs).

    .venv/bin/python -m bench.verifiable_tasks [--seconds 5] [--sql-samples 20]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rewardfleet.reward_fns import gsm8k, instruction_following, sql

WORDS = ["the", "model", "writes", "a", "short", "answer", "about", "rivers", "mountains", "and", "quiet"]
WORDS += ["towns", "near", "the", "sea"]
IF_TASKS = [
    (
        ["punctuation:no_comma", "length_constraints:number_words", "detectable_format:title"],
        [None, {"num_words": 200, "relation": "at least"}, None],
    ),
    (
        [
            "keywords:forbidden_words",
            "length_constraints:number_sentences",
            "change_case:capital_word_frequency",
        ],
        [
            {"forbidden_words": ["ocean"]},
            {"num_sentences": 10, "relation": "at least"},
            {"capital_frequency": 3, "capital_relation": "less than"},
        ],
    ),
    (
        ["count:keywords_multiple", "words:no_consecutive", "format:line_indent"],
        [{f"keyword{i}": w for i, w in enumerate(("river", "sea", "town", "quiet", "the"), 1)}, None, None],
    ),
]


def _response(rng: random.Random) -> str:
    sentences = [" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "." for _ in range(20)]
    return "<<A Title>>\n\n" + " ".join(sentences[:10]) + "\n\n" + " ".join(sentences[10:])


def _rate(fn: Callable[[int], Any], seconds: float) -> float:
    """Calls per second of fn(i), for about `seconds`, after warm-up calls (one-time loads: Punkt's model)."""
    for i in range(len(IF_TASKS)):
        fn(i)
    done, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        fn(done)
        done += 1
    return done / (time.perf_counter() - started)


def _database(root: Path) -> None:
    (root / "shop").mkdir(mode=0o755)
    with sqlite3.connect(root / "shop" / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, color TEXT, price REAL)")
        conn.executemany(
            "INSERT INTO item VALUES (?, ?, ?)", [(i, f"c{i % 7}", i * 0.5) for i in range(2000)]
        )
    (root / "shop" / "shop.sqlite").chmod(0o644)


async def _sql_rate(samples: int, root: Path, inline: bool) -> float:
    reference = "SELECT color, count(*) FROM item GROUP BY color"
    predicted = "```sql\nSELECT color, count(id) FROM item GROUP BY 1\n```"
    if inline:
        rows = ",".join(f"({i}, 'c{i % 7}', {i * 0.5})" for i in range(200))
        create = "CREATE TABLE item (id INTEGER PRIMARY KEY, color TEXT, price REAL);"
        schema = f"{create} INSERT INTO item VALUES {rows};"
        task: dict[str, Any] = {"sql_context": schema}
    else:
        task = {"db_id": "shop"}
    await sql.compute_score("b", predicted, reference, task, databases_root=str(root))
    started = time.perf_counter()
    for _ in range(samples):
        result = await sql.compute_score("b", predicted, reference, task, databases_root=str(root))
        if result["score"] != 1.0:
            raise RuntimeError(f"bench sample scored {result}")
    return samples / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time per in-process measurement")
    parser.add_argument("--sql-samples", type=int, default=20, help="sql samples per measurement")
    args = parser.parse_args()
    rng = random.Random(0)
    responses = [_response(rng) for _ in range(16)]

    def gsm(i: int) -> Any:
        return gsm8k.compute_score("openai/gsm8k", f"So it is 12.\n#### {i % 50}", str(i % 50))

    def follow(strictness: str) -> Callable[[int], Any]:
        def call(i: int) -> Any:
            ids, kwargs = IF_TASKS[i % len(IF_TASKS)]
            task = {"instruction_id_list": ids, "kwargs": kwargs}
            return instruction_following.compute_score(
                "ifeval", responses[i % 16], None, task, strictness=strictness
            )

        return call

    baseline = _rate(gsm, args.seconds)
    following = _rate(follow("strict"), args.seconds)
    root = Path(tempfile.mkdtemp(prefix="bench-sql-", dir="/tmp"))
    try:
        root.chmod(0o755)
        _database(root)
        sql_file = asyncio.run(_sql_rate(args.sql_samples, root, inline=False))
        sql_inline = asyncio.run(_sql_rate(args.sql_samples, root, inline=True))
    finally:
        shutil.rmtree(root)
    print(f"{'function':<36} {'samples/s':>10} {'ms/sample':>10} {'÷ gsm8k':>10}")
    for name, rate in [
        ("gsm8k (baseline)", baseline),
        ("instruction_following", following),
        ("sql, database file (1 sandbox)", sql_file),
        ("sql, inline schema (1 sandbox)", sql_inline),
    ]:
        print(f"{name:<36} {rate:>10.1f} {1000 / rate:>10.3f} {rate / baseline:>10.6f}")


if __name__ == "__main__":
    main()
