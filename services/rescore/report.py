"""What `rewardfleet score` shows: the progress bar, the summary tables, and the optional plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from rewardfleet.services.rescore.stats import VERDICTS, mean

if TYPE_CHECKING:  # imported with the bar: a run without one (--no-progress, no terminal) skips ~8 ms
    from rich.progress import Progress, Task


class PlotUnavailable(RuntimeError):
    """--plot needs matplotlib, an optional extra."""


def _rate(task: Task) -> Text:
    speed = task.finished_speed or task.speed
    return Text("-- samples/s" if speed is None else f"{speed:,.0f} samples/s")


def progress_bar(console: Console) -> Progress:
    """done/total, samples/s, ETA and failures so far (`failed` field of the task)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return _rate(task)

    return Progress(
        TextColumn("scoring"),
        BarColumn(),
        MofNCompleteColumn(),
        RateColumn(),
        TimeRemainingColumn(),
        TextColumn("[red]{task.fields[failed]} failed"),
        console=console,
        transient=False,
        # rich redraws from a thread of its own, holding the GIL while it renders: 10 times a second by
        # default, 2 is enough for a bar that moves by whole batches
        refresh_per_second=2,
    )


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def summary_tables(summary: dict[str, Any], total_s_by_fn: dict[str, list[float]]) -> list[Table]:
    statuses = Table(title=f"{summary['lines']} lines")
    statuses.add_column("status")
    statuses.add_column("lines", justify="right")
    for status, n in summary["statuses"].items():
        statuses.add_row(status, str(n))
    sources = Table(title="score by data_source (ok lines)")
    for col in ("data_source", "n", "mean", "std"):
        sources.add_column(col, justify="left" if col == "data_source" else "right")
    for source, row in summary["by_data_source"].items():
        sources.add_row(source, str(row["n"]), _fmt(row["mean"]), _fmt(row["std"]))
    tables = [statuses, sources]
    if total_s_by_fn:
        slow = Table(title="slowest functions (this run, gateway time per sample)")
        for col in ("reward_fn", "samples", "mean s", "max s"):
            slow.add_column(col, justify="left" if col == "reward_fn" else "right")
        ranked = sorted(total_s_by_fn.items(), key=lambda kv: -mean(kv[1]))
        for fn, times in ranked[:5]:
            slow.add_row(fn, str(len(times)), f"{mean(times):.4f}", f"{max(times):.4f}")
        tables.append(slow)
    return tables


def repeat_table(agreement: dict[str, Any], repeat: int, cached_repeats: int) -> Table:
    table = Table(title=f"judge noise over {repeat} repeats")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name in ("lines", "lines_with_a_failed_repeat", "mean_std", "max_range", "flip_rate", "fleiss_kappa"):
        table.add_row(name, _fmt(agreement[name]))
    if cached_repeats:
        table.add_row("[red]repeats answered from the cache[/red]", str(cached_repeats))
    return table


def compare_tables(result: dict[str, Any]) -> list[Table]:
    figures = Table(title="compared with the earlier scores")
    figures.add_column("figure")
    figures.add_column("value", justify="right")
    for name in ("matched", "only_earlier", "only_now", "both_ok", "spearman", "kendall", "flip_rate"):
        figures.add_row(name, _fmt(result[name]))
    confusion = Table(title="earlier (rows) x now (columns)")
    confusion.add_column("")
    for v in VERDICTS:
        confusion.add_column(v, justify="right")
    for v in VERDICTS:
        confusion.add_row(v, *(str(result["confusion"][v][w]) for w in VERDICTS))
    tables = [figures, confusion]
    if result.get("components"):
        parts = Table(title="reward components (lines scored ok on both sides)")
        for col in ("component", "both", "mean_earlier", "mean_now", "changed"):
            parts.add_column(col, justify="right")
        for name, row in result["components"].items():
            parts.add_row(name, *(_fmt(row[c]) for c in ("both", "mean_earlier", "mean_now", "changed")))
        tables.append(parts)
    if not result["most_changed"]:
        return tables
    changed = Table(title="lines that changed most")
    for col in ("line", "response", "earlier", "now", "delta"):
        changed.add_column(col, justify="right")
    for row in result["most_changed"]:
        line, response = row["key"]
        changed.add_row(str(line), _fmt(response), _fmt(row["earlier"]), _fmt(row["now"]), _fmt(row["delta"]))
    return [*tables, changed]


def check_plot_available() -> None:
    """Import matplotlib now, before anything is scored: a missing or broken install (it imports numpy and
    compiled parts) is said up front, not as a traceback after the run."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise PlotUnavailable(
            f"--plot needs matplotlib, which cannot be imported ({exc}): "
            "pip install 'reward-fleet[plot]' (or drop --plot)"
        ) from exc


def plot(path: Path, now: list[float], earlier: list[float] | None, pairs: list[tuple[float, float]]) -> None:
    """Score histograms (earlier and now with `--compare`) and, with `--compare`, earlier vs now."""
    check_plot_available()
    import matplotlib

    matplotlib.use("Agg")  # files only; no display here
    import matplotlib.pyplot as plt

    columns = 2 if earlier is not None else 1
    fig, axes = plt.subplots(1, columns, figsize=(6 * columns, 4), squeeze=False)
    hist = axes[0][0]
    hist.hist(now, bins=30, alpha=0.6, label="now")
    if earlier is not None:
        hist.hist(earlier, bins=30, alpha=0.6, label="earlier")
        hist.legend()
    hist.set_xlabel("score")
    hist.set_ylabel("lines")
    hist.set_title("scores")
    if earlier is not None:
        scatter = axes[0][1]
        scatter.scatter([a for a, _ in pairs], [b for _, b in pairs], s=8, alpha=0.5)
        scatter.set_xlabel("earlier score")
        scatter.set_ylabel("new score")
        scatter.set_title("earlier vs now")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
