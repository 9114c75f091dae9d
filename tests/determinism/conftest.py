"""Prints, at the end of the session, how many scores differed from "alone" per kind and mode."""

from __future__ import annotations

from typing import Any

from tests.determinism.harness import REPORT


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if REPORT:
        terminalreporter.section("batch invariance (scores vs the same sample scored alone)")
        for comparison in REPORT:
            terminalreporter.write_line(comparison.line())
