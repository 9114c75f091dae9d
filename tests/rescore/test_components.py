"""`rewardfleet score` writes each line's reward components and `--compare` compares them, per name."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.rescore import read_jsonl, run_score, write_jsonl


def test_components_are_written_and_compared(tmp_path: Path) -> None:
    config = tmp_path / "fleet.yaml"
    combo = {"components": [{"fn": "exact_match"}, {"fn": "format_check", "weight": 0.5}]}
    config.write_text(json.dumps({"gateway": {"composites": {"combo": combo}}}))
    rows = [
        {"data_source": "d", "solution_str": "<think>a</think> 4", "ground_truth": "<think>a</think> 4"},
        {"data_source": "d", "solution_str": "4", "ground_truth": "4"},
        {"data_source": "d", "solution_str": "<think>a</think> 5", "ground_truth": "4"},
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    earlier = write_jsonl(
        tmp_path / "earlier.jsonl",
        [
            {
                "line": 1,
                "status": "ok",
                "score": 1.5,
                "reward_components": {"exact_match": 1.0, "format_check": 1.0},
            },
            {
                "line": 2,
                "status": "ok",
                "score": 1.0,
                "reward_components": {"exact_match": 1.0, "format_check": 1.0},
            },
            {"line": 3, "status": "ok", "score": 0.0, "reward_components": {"exact_match": 0.0}},
        ],
    )
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(src, "-o", out, "--config", config, "--reward-fn", "combo", "--compare", earlier,
                     "--summary-json", summary)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r["reward_components"] for r in read_jsonl(out)] == [
        {"exact_match": 1.0, "format_check": 1.0},
        {"exact_match": 1.0, "format_check": 0.0},
        {"exact_match": 0.0, "format_check": 1.0},
    ]
    components = json.loads(summary.read_text())["compare"]["components"]
    assert components == {
        "exact_match": {"both": 3, "mean_earlier": 2 / 3, "mean_now": 2 / 3, "changed": 0},
        "format_check": {"both": 2, "mean_earlier": 1.0, "mean_now": 0.5, "changed": 1},
    }
    assert "reward components" in done.stderr  # the report tables
