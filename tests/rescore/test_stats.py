"""The figures of stats.py against hand computations, and the plot's optional dependency."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.rescore import report
from rewardfleet.services.rescore.paths import JsonPath, PathSyntaxError, parse_field_args
from rewardfleet.services.rescore.stats import compare, fleiss_kappa, summary


def test_fleiss_kappa_of_the_textbook_example() -> None:
    # Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa" page: 10 subjects, 14 raters, 5 categories;
    # P = 0.378, Pe = 0.213, kappa = 0.210.
    table = [
        [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
    ]  # fmt: skip
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=1e-5)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # one category only: chance agreement is 1
    assert fleiss_kappa([[1, 0]]) is None  # one rater


def _line(n: int, score: float | None, status: str = "ok") -> dict[str, Any]:
    return {"line": n, "status": status, "score": score, "data_source": "d" if n % 2 else "e"}


def test_compare_against_a_hand_computation() -> None:
    earlier = {(n, None): _line(n, s) for n, s in enumerate([0.1, 0.4, 0.35, 0.8, 0.9], start=1)}
    earlier[(6, None)] = _line(6, None, "error")
    now = {(n, None): _line(n, s) for n, s in enumerate([0.2, 0.7, 0.3, 0.6, 0.95, 1.0], start=1)}
    result = compare(earlier, now, threshold=0.5)
    # ranks earlier 1 3 2 4 5, now 1 4 2 3 5: sum d^2 = 2 -> Spearman 1 - 6*2 / (5*24) = 0.9
    assert result["spearman"] == pytest.approx(0.9)
    # pairs: 10 in all, 1 discordant (lines 2 and 4) -> Kendall (9 - 1) / 10 = 0.8
    assert result["kendall"] == pytest.approx(0.8)
    # pass/fail at 0.5: line 2 went fail -> pass; the others stayed
    assert result["flipped"] == 1 and result["flip_rate"] == pytest.approx(1 / 5)
    assert result["confusion"]["fail"] == {"pass": 1, "fail": 2, "failed": 0}
    assert result["confusion"]["pass"] == {"pass": 2, "fail": 0, "failed": 0}
    assert result["confusion"]["failed"] == {"pass": 1, "fail": 0, "failed": 0}
    assert [row["key"][0] for row in result["most_changed"]][:3] == [2, 4, 1]
    assert result["most_changed"][0]["delta"] == pytest.approx(0.3)


def test_summary_counts_and_moments() -> None:
    records = [_line(1, 1.0), _line(2, 0.0), _line(3, 0.0), _line(4, None, "timeout")]
    result = summary(records)
    assert result["statuses"] == {"ok": 3, "timeout": 1}
    assert result["by_data_source"]["d"] == {"n": 2, "mean": 0.5, "std": 0.5}
    assert result["by_data_source"]["e"] == {"n": 1, "mean": 0.0, "std": 0.0}


def test_field_paths() -> None:
    record = {"reward_model": {"ground_truth": "7"}, "messages": [{"content": "a"}, {"content": "b"}]}
    assert JsonPath.parse("reward_model.ground_truth").get(record) == "7"
    assert JsonPath.parse("messages[-1].content").get(record) == "b"
    assert parse_field_args(["solution_str=messages[0].content"])["solution_str"].get(record) == "a"
    for bad in ("answer", "nope=x", "solution_str=a..b", "solution_str=[0]"):
        with pytest.raises(PathSyntaxError):
            parse_field_args([bad])


def test_plot_is_written_with_matplotlib(tmp_path: Path) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.fail("matplotlib is in the dev extra: install it")
    path = tmp_path / "scores.png"
    report.plot(path, [0.1, 0.5, 0.9], [0.2, 0.4, 0.8], [(0.2, 0.1), (0.4, 0.5), (0.8, 0.9)])
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
