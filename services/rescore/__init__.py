"""`rewardfleet score`: re-score rollouts that were already generated.

    inputs.py      read JSONL / parquet (verl dumps, verl datasets, `/score` samples, `--field` mappings)
    paths.py       the `--field sample_field=json.path` syntax
    output.py      the OUTPUT file: one line per input line, in order; resume and only-failed
    session.py     where to send them: `--url`, or the in-process gateway (inprocess.py)
    runner.py      send the lines to a gateway (`/score/batch`, bounded, retried) and write as results arrive
    inprocess.py   the gateway of a fleet config, served in this process on 127.0.0.1 (no `--url`)
    stats.py       summary, repeat agreement (Fleiss' kappa), comparison with an earlier OUTPUT
    flips.py       `--repeat`: per function, lines whose score changed or flipped across the pass threshold
    report.py      rich tables and the optional matplotlib plot
    jsoncodec.py   JSON for its own files: orjson when installed, else the standard library (same bytes)
    cli.py         the options as typer declares them (`--help`, and any command line argv.py leaves)
    argv.py        a plain command line read without typer (typer's parsing costs ~90 ms of CPU a run)
    command.py     what the command does with its arguments (ScoreArgs -> exit code)

It talks to the gateway only through `rewardfleet.services.client`, in both modes.
"""
