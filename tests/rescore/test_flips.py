"""`--repeat N` per reward function: changed (not bitwise equal) and flips (both sides of the threshold)."""

from __future__ import annotations

from rich.console import Console

from rewardfleet.services.rescore.flips import flips_by_function, flips_table


def _line(fn: str, scores: list[float | None], status: str = "ok") -> dict[str, object]:
    return {"reward_fn": fn, "scores": scores, "status": status}


def test_counts_per_function() -> None:
    records = [
        _line("rm", [0.25, 0.25, 0.25]),
        _line("rm", [0.1, 0.1 + 1e-12, 0.1]),  # changed in the last bits, no flip
        _line("judge", [1.0, 0.0, 1.0]),  # a flip at 0.5
        _line("judge", [0.0, 0.0, 0.0]),
        _line("judge", [1.0, None, 1.0], status="error"),
        {"reward_fn": "gsm8k", "score": 1.0, "status": "ok"},  # scored once: not a repeat line
    ]
    out = flips_by_function(records, threshold=0.5)
    assert list(out) == ["judge", "rm"]
    assert out["rm"] == {
        "lines": 2, "changed": 1, "flips": 0, "max_range": 1e-12 + 0.1 - 0.1, "lines_with_a_failed_repeat": 0,
    }  # fmt: skip
    assert out["judge"]["lines"] == 2 and out["judge"]["changed"] == 1 and out["judge"]["flips"] == 1
    assert out["judge"]["max_range"] == 1.0 and out["judge"]["lines_with_a_failed_repeat"] == 1
    console = Console(record=True, width=120)
    console.print(flips_table(out, 3))
    text = console.export_text()
    assert "judge" in text and "rm" in text and "changed" in text
