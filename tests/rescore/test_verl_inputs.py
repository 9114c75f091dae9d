"""verl's own files read natively: a rollout dump written by verl 0.9.1's trainer code, and a dataset parquet
written the way verl's preprocessing and `main_generation_server` write it; both scored by a real gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.rescore.inputs import ReadOptions, read_items
from tests.support.rescore import Gateway, read_jsonl, run_score

ANTLR_FOR_VERL = REPO_ROOT / ".venv" / "antlr4-4.9"
CASES = [
    {"prompt": "What is 2+2?", "response": "It is 4. #### 4", "ground_truth": "4", "score": 1.0, "acc": True},
    {"prompt": "Größe?", "response": "ü #### 5", "ground_truth": "6", "score": 0.0, "acc": False},
    {"prompt": "3*3", "response": "#### 9", "ground_truth": "9", "score": 1.0, "acc": True},
]


@pytest.fixture(scope="module")
def verl_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`<dir>/7.jsonl` by RayPPOTrainer._log_rollout_data (verl needs antlr4 4.9: its own interpreter)."""
    if not (ANTLR_FOR_VERL / "antlr4").is_dir():
        pytest.fail(f"no antlr4 4.9 for verl in {ANTLR_FOR_VERL}: run .ci/setup")
    tmp = tmp_path_factory.mktemp("verl")
    cases = tmp / "cases.json"
    cases.write_text(json.dumps(CASES))
    pythonpath = os.pathsep.join([str(ANTLR_FOR_VERL), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "tests.rescore.verl_dump", str(cases), str(tmp / "dump"), "7"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": pythonpath},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return tmp / "dump" / "7.jsonl"


def test_verl_dump_is_read_and_needs_a_data_source(verl_dump: Path) -> None:
    _, forced = read_items(verl_dump, ReadOptions(format="samples"))  # the wrong shape, forced
    assert forced[0].problem is not None and "line 1: missing `solution_str`" in forced[0].problem
    fmt, items = read_items(verl_dump, ReadOptions())
    assert fmt == "verl-dump"
    # verl dumps have no data_source: every line says so, naming the field and the way out
    assert items[0].problem is not None and "line 1" in items[0].problem
    assert "data_source" in items[0].problem and "--data-source" in items[0].problem

    fmt, items = read_items(verl_dump, ReadOptions(data_source="openai/gsm8k"))
    assert [i.problem for i in items] == [None] * 3
    assert [i.sample["solution_str"] for i in items if i.sample] == [c["response"] for c in CASES]
    assert [i.sample["ground_truth"] for i in items if i.sample] == [c["ground_truth"] for c in CASES]
    assert [i.uid for i in items] == ["req-0", "req-1", "req-2"]
    first = items[0].sample or {}
    assert "What is 2+2?" in first["prompt"] and "<|im_start|>" not in first["prompt"]  # decoded, no specials


def test_verl_dump_rescored_and_compared_with_the_scores_verl_logged(
    verl_dump: Path, gateway: Gateway, tmp_path: Path
) -> None:
    # Compared with the dump itself: the scores verl logged (its `score` column) must agree in full.
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(verl_dump, "-o", out, "--url", gateway.url, "--data-source", "openai/gsm8k",
                     "--compare", verl_dump, "--summary-json", summary)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(out)
    assert [(r["line"], r["uid"], r["reward_fn"], r["score"]) for r in lines] == [
        (1, "req-0", "gsm8k", 1.0), (2, "req-1", "gsm8k", 0.0), (3, "req-2", "gsm8k", 1.0)
    ]  # fmt: skip
    figures = json.loads(summary.read_text())["compare"]
    assert figures["matched"] == figures["both_ok"] == 3
    assert figures["flip_rate"] == 0.0 and figures["most_changed"] == []
    assert figures["spearman"] == pytest.approx(1.0) and figures["kendall"] == pytest.approx(1.0)


def _write_verl_dataset(path: Path) -> None:
    """As verl's examples/data_preprocess/gsm8k.py builds its rows (datasets `map`, then `to_parquet`), then
    as verl's trainer/main_generation_server.py adds the generations (pandas, a `responses` list column)."""
    import datasets
    import pandas as pd

    raw = datasets.Dataset.from_dict(
        {"question": ["1+1?", "2+3?"], "answer": ["one and one #### 2", "two and three #### 5"]}
    )

    def make_map_fn(split: str):  # type: ignore[no-untyped-def]
        def process_fn(example, idx):  # type: ignore[no-untyped-def]
            solution = example.pop("answer").split("####")[-1].strip()
            question = example.pop("question")
            return {
                "data_source": "openai/gsm8k",
                "prompt": [{"role": "user", "content": question + " Let's think step by step."}],
                "ability": "math",
                "reward_model": {"style": "rule", "ground_truth": solution},
                "extra_info": {"split": split, "index": idx, "question": question},
            }

        return process_fn

    raw.map(function=make_map_fn("test"), with_indices=True).to_parquet(str(path))
    frame = pd.read_parquet(path)
    frame["responses"] = [["#### 2", "#### 3"], ["#### 5", "no idea"]]
    frame.to_parquet(path)


def test_verl_parquet_dataset_with_responses(gateway: Gateway, tmp_path: Path) -> None:
    src = tmp_path / "gen.parquet"
    _write_verl_dataset(src)
    fmt, items = read_items(src, ReadOptions())
    assert fmt == "verl-parquet"
    assert [i.key for i in items] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    sample = items[2].sample or {}
    assert sample["ground_truth"] == "5" and sample["extra_info"]["index"] == 1
    assert sample["prompt"][0]["role"] == "user"

    out = tmp_path / "out.jsonl"
    done = run_score(src, "-o", out, "--url", gateway.url)
    assert done.returncode == 0, done.stderr
    assert [(r["line"], r["response"], r["score"]) for r in read_jsonl(out)] == [
        (1, 0, 1.0), (1, 1, 0.0), (2, 0, 1.0), (2, 1, 0.0)
    ]  # fmt: skip
