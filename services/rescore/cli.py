"""`rewardfleet score INPUT -o OUTPUT.jsonl`: re-score rollouts that were already generated.

The options as typer declares them (`--help`, and every command line argv.py does not read itself); what
the command does is command.py. Exit codes: 0 every line scored ok; 1 some lines failed (their
`status` and `error` say why; `--only-failed` sends them again); 2 bad arguments or an input that cannot be
read (nothing is sent); 130 interrupted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def score(
    input_path: Annotated[
        Path,
        typer.Argument(metavar="INPUT", help="JSONL or parquet: verl dumps, verl datasets, /score samples."),
    ],
    output: Annotated[Path, typer.Option("-o", "--output", help="Output JSONL (one line per input line).")],
    url: Annotated[
        str | None, typer.Option("--url", help="A running gateway (else one runs in-process).")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="Fleet YAML for the in-process gateway (default: embedded).", dir_okay=False
        ),
    ] = None,
    input_format: Annotated[
        str, typer.Option("--format", help="auto | samples | verl-dump | verl-parquet | fields.")
    ] = "auto",
    field: Annotated[
        list[str] | None,
        typer.Option("--field", help="sample_field=json.path, e.g. ground_truth=reward_model.ground_truth."),
    ] = None,
    data_source: Annotated[
        str | None, typer.Option("--data-source", help="data_source of lines that have none (verl dumps).")
    ] = None,
    reward_fn: Annotated[
        str | None, typer.Option("--reward-fn", help="Score every line with this function (the new judge).")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Skip the lines already in OUTPUT.")] = False,
    only_failed: Annotated[
        bool, typer.Option("--only-failed", help="Re-run only the failed lines of OUTPUT; keep the rest.")
    ] = False,
    repeat: Annotated[
        int, typer.Option("--repeat", min=1, help="Score each line N times (judge noise).")
    ] = 1,
    compare_with: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            help="An earlier OUTPUT (or a verl dump: its logged scores) to compare with.",
            dir_okay=False,
        ),
    ] = None,
    pass_threshold: Annotated[
        float, typer.Option("--pass-threshold", help="A score >= this passes (flip rates, confusion).")
    ] = 0.5,
    plot_path: Annotated[
        Path | None, typer.Option("--plot", help="Write score plots here (matplotlib).")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight.")] = 8,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Samples per /score/batch.")] = 64,
    timeout_s: Annotated[float, typer.Option("--timeout-s", min=0.001, help="Per HTTP attempt.")] = 120.0,
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="REWARDFLEET_API_KEY", help="Bearer key for --url.")
    ] = None,
    skip_bad_lines: Annotated[
        bool, typer.Option("--skip-bad-lines", help="Write unreadable lines as failed instead of stopping.")
    ] = False,
    summary_json: Annotated[
        Path | None, typer.Option("--summary-json", help="Also write the figures as JSON here.")
    ] = None,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Progress bar (default: on a terminal).")
    ] = None,
) -> None:
    """Re-score rollouts: change a judge, fill in lost rewards, measure judge noise, A/B two graders."""
    from rewardfleet.services.rescore.command import ScoreArgs, run_command

    args = ScoreArgs(
        input_path=input_path,
        output=output,
        url=url,
        config=config,
        input_format=input_format,
        field=list(field or []),
        data_source=data_source,
        reward_fn=reward_fn,
        resume=resume,
        only_failed=only_failed,
        repeat=repeat,
        compare_with=compare_with,
        pass_threshold=pass_threshold,
        plot_path=plot_path,
        concurrency=concurrency,
        batch_size=batch_size,
        timeout_s=timeout_s,
        api_key=api_key,
        skip_bad_lines=skip_bad_lines,
        summary_json=summary_json,
        progress=progress,
    )
    raise typer.Exit(run_command(args))
