"""What `rewardfleet score` does once its command line is read: `run_command(ScoreArgs) -> exit code`.

Kept apart from the typer signature (cli.py) so that a plain command line, read by argv.py, runs it without
importing typer or pydantic. Exit codes: 0 every line scored ok; 1 some lines failed (their
`status` and `error` say why; `--only-failed` sends them again); 2 bad arguments or an input that cannot be
read (nothing is sent); 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # imported in the command: `rewardfleet --help` and the other commands stay fast
    from rich.console import Console

    from rewardfleet.services.rescore.inputs import Item
    from rewardfleet.services.rescore.output import Key
    from rewardfleet.services.rescore.runner import Entry, RunOptions, RunStats
    from rewardfleet.services.rescore.session import Target

FORMATS: tuple[str, ...] = ("auto", "samples", "verl-dump", "verl-parquet", "fields")


@dataclass
class ScoreArgs:
    """The command's parameters, with the defaults of its options (cli.py shows them in `--help`; a test
    checks both agree)."""

    input_path: Path
    output: Path
    url: str | None = None
    config: Path | None = None
    input_format: str = "auto"
    field: list[str] = field(default_factory=list)
    data_source: str | None = None
    reward_fn: str | None = None
    resume: bool = False
    only_failed: bool = False
    repeat: int = 1
    compare_with: Path | None = None
    pass_threshold: float = 0.5
    plot_path: Path | None = None
    concurrency: int = 8
    batch_size: int = 64
    timeout_s: float = 120.0
    api_key: str | None = None
    skip_bad_lines: bool = False
    summary_json: Path | None = None
    progress: bool | None = None


class _Refused(Exception):
    """Bad arguments or an unreadable input: exit 2, nothing sent (the message is printed already)."""


def _fail(message: str) -> _Refused:
    import typer  # on this path only: typer.echo writes what the command always wrote

    typer.echo(f"rewardfleet score: {message}", err=True)
    return _Refused(message)


def run_command(args: ScoreArgs) -> int:
    """Re-score `args.input_path` into `args.output`; the exit code."""
    try:
        return _run(args)
    except _Refused:
        return 2


def _run(a: ScoreArgs) -> int:
    from rich.console import Console
    from rich.logging import RichHandler

    from rewardfleet.services.rescore.inputs import InputError, InputFormat, ReadOptions, read_items
    from rewardfleet.services.rescore.output import OutputError, read_output, read_scores
    from rewardfleet.services.rescore.paths import PathSyntaxError, parse_field_args
    from rewardfleet.services.rescore.report import PlotUnavailable, check_plot_available
    from rewardfleet.services.rescore.runner import RunOptions
    from rewardfleet.services.rescore.session import GatewayNotReachable, Target, fewer_collections

    console = Console(stderr=True)
    logging.basicConfig(level=logging.WARNING, handlers=[RichHandler(console=console, show_path=False)])
    if a.url is not None and a.config is not None:
        raise _fail("--url and --config exclude each other (--config runs the gateway in-process)")
    if a.resume and a.only_failed:
        raise _fail("--resume and --only-failed exclude each other")
    if a.input_format not in FORMATS:
        raise _fail(f"--format {a.input_format!r}: use auto, samples, verl-dump, verl-parquet or fields")
    if a.output.resolve() == a.input_path.resolve():
        raise _fail("OUTPUT is INPUT: write the scores to another file")
    if a.only_failed and not a.output.exists():
        raise _fail(
            f"--only-failed: {a.output} does not exist (it re-runs the failed lines of an earlier OUTPUT)"
        )
    try:
        if a.plot_path is not None:
            check_plot_available()
        if a.url is None:
            _check_fleet_config(a.config)
        fields = parse_field_args(a.field)
        options = ReadOptions(cast(InputFormat, a.input_format), fields, a.data_source, a.reward_fn)
    except (PlotUnavailable, PathSyntaxError, InputError, OutputError, OSError) as exc:
        raise _fail(str(exc)) from exc
    # Reading and the entry built per line allocate containers that all stay alive: with CPython's default
    # thresholds the collector runs every 700 of them and its older collections walk the whole input
    # (session.fewer_collections). Building 20,000 entries outside it: 29 collections, 0.05-0.09 s; inside: 4.
    with fewer_collections():
        try:
            fmt, items = read_items(a.input_path, options)
            earlier = read_output(a.output) if (a.resume or a.only_failed) else None
            compared = read_scores(a.compare_with) if a.compare_with is not None else None
        except (PlotUnavailable, PathSyntaxError, InputError, OutputError, OSError) as exc:
            raise _fail(str(exc)) from exc
        bad = [i for i in items if i.problem]
        if bad and not a.skip_bad_lines:
            more = f" ({len(bad)} unreadable lines in all)" if len(bad) > 1 else ""
            raise _fail(
                f"{bad[0].problem}{more}; nothing was scored (--skip-bad-lines writes them as failed)"
            )
        if earlier is not None:
            keys = {i.key for i in items}
            if not set(earlier.lines) <= keys:
                stray = min(set(earlier.lines) - keys, key=lambda k: (k[0], k[1] or 0))
                raise _fail(
                    f"{a.output} has line {stray[0]} that {a.input_path} does not: "
                    "not an OUTPUT of this INPUT"
                )
        entries = _entries(items, earlier, a.only_failed)
    console.print(f"{a.input_path}: {len(items)} items read as {fmt}; {_pending(entries)} to score")
    run_options = RunOptions(a.batch_size, a.concurrency, a.repeat, a.timeout_s)
    target = Target(a.url, a.config, a.api_key)
    show = console.is_terminal if a.progress is None else a.progress
    try:
        stats = _write(a.output, earlier, a.only_failed, entries, target, run_options, console, show)
    except GatewayNotReachable as exc:
        raise _fail(f"{exc}; is it running? (without --url the command runs a gateway itself)") from exc
    except KeyboardInterrupt:
        console.print(f"interrupted: the lines written to {a.output} are kept; --resume continues")
        return 130
    except (RuntimeError, OSError) as exc:
        console.print(f"[red]rewardfleet score failed:[/red] {exc}")
        return 1
    records = stats.records if a.only_failed or earlier is None else {**earlier.records, **stats.records}
    figures = _report(records, stats, a.repeat, compared, a.pass_threshold, a.plot_path, console)
    if a.summary_json is not None:
        a.summary_json.write_text(json.dumps(figures, indent=2))
    return 0 if figures["summary"]["statuses"].keys() <= {"ok"} else 1


def _check_fleet_config(config: Path | None) -> None:
    """The in-process gateway's config, read before anything is read or written (an error names the key)."""
    from rewardfleet.services.fleet.config import FleetConfigError, load_fleet_config

    try:
        load_fleet_config(config)
    except FleetConfigError as exc:
        raise _fail(str(exc)) from exc


def _entries(items: list[Item], earlier: Any, only_failed: bool) -> list[Entry]:
    from rewardfleet.services.rescore.output import bad_input_line, encode
    from rewardfleet.services.rescore.runner import Entry

    entries: list[Entry] = []
    for item in items:
        kept = earlier.lines.get(item.key) if earlier is not None else None
        if kept is not None and not only_failed:
            continue  # --resume: already written
        if kept is not None and earlier.records[item.key].get("status") == "ok":
            entries.append(Entry(item, kept, earlier.records[item.key]))
        elif item.problem is not None:
            record = bad_input_line(item)
            entries.append(Entry(item, encode(record), record))
        else:
            entries.append(Entry(item))
    return entries


def _pending(entries: list[Entry]) -> int:
    return sum(1 for e in entries if e.text is None)


def _write(
    output: Path,
    earlier: Any,
    only_failed: bool,
    entries: list[Entry],
    target: Target,
    options: RunOptions,
    console: Console,
    show: bool,
) -> RunStats:
    """Fresh run: write OUTPUT. --resume: cut a partial last line, append. --only-failed: write the merged
    file next to OUTPUT and move it over OUTPUT at the end (a kill leaves the earlier OUTPUT untouched)."""
    from rewardfleet.services.rescore.session import run_score

    if only_failed:
        partial = output.with_name(output.name + ".partial")
        with partial.open("wb") as out:
            stats = asyncio.run(run_score(target, entries, out, options, console, show))
        os.replace(partial, output)
        return stats
    if earlier is not None and earlier.complete_bytes < earlier.size_bytes:
        with output.open("r+b") as f:
            f.truncate(earlier.complete_bytes)
    with output.open("ab" if earlier is not None else "wb") as out:
        return asyncio.run(run_score(target, entries, out, options, console, show))


def _report(
    records: dict[Key, dict[str, Any]],
    stats: RunStats,
    repeat: int,
    compared: dict[Key, dict[str, Any]] | None,
    threshold: float,
    plot_path: Path | None,
    console: Console,
) -> dict[str, Any]:
    from rewardfleet.services.rescore.report import compare_tables, plot, repeat_table, summary_tables
    from rewardfleet.services.rescore.stats import ScipyMissing, compare, repeat_agreement, summary

    figures: dict[str, Any] = {"summary": summary(records.values())}
    for table in summary_tables(figures["summary"], stats.total_s_by_fn):
        console.print(table)
    if repeat > 1:
        figures["repeat"] = repeat_agreement(records.values(), threshold)
        figures["repeat"]["cached_repeats"] = stats.cached_repeats
        console.print(repeat_table(figures["repeat"], repeat, stats.cached_repeats))
        from rewardfleet.services.rescore.flips import flips_by_function, flips_table

        figures["repeat"]["by_function"] = flips_by_function(records.values(), threshold)
        console.print(flips_table(figures["repeat"]["by_function"], repeat))
    pairs: list[tuple[float, float]] = []
    if compared is not None:
        try:
            figures["compare"] = compare(compared, records, threshold)
        except ScipyMissing as exc:
            console.print(f"[red]{exc}[/red]")
        else:
            for table in compare_tables(figures["compare"]):
                console.print(table)
            pairs = [
                (float(compared[k]["score"]), float(records[k]["score"]))
                for k in sorted(set(compared) & set(records), key=lambda k: (k[0], k[1] or 0))
                if compared[k].get("status") == "ok" == records[k].get("status")
                and compared[k].get("score") is not None
                and records[k].get("score") is not None
            ]
    if plot_path is not None:
        now = [
            float(r["score"])
            for r in records.values()
            if r.get("status") == "ok" and r.get("score") is not None
        ]
        before = (
            [
                float(r["score"])
                for r in compared.values()
                if r.get("status") == "ok" and r.get("score") is not None
            ]
            if compared is not None
            else None
        )
        plot(plot_path, now, before, pairs)
        console.print(f"plot written to {plot_path}")
    return figures
