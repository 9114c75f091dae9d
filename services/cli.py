"""The `rewardfleet` command line (`python -m rewardfleet.services.cli`, the `rewardfleet` script: `main`).

cli_app.py assembles each service's typer command into `app`. `rewardfleet score` with a plain command line
is read without typer (services/rescore/argv.py: typer would import pydantic to read its options, ~90 ms of
CPU on every run); every other command line, `--help` and every error included, goes to `app`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

    from rewardfleet.services.rescore.command import ScoreArgs


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["score"]:
        from rewardfleet.services.rescore.argv import read_plain_command_line

        args = read_plain_command_line(argv[1:], os.environ)
        if args is not None:
            sys.exit(_score(args))
    from rewardfleet.services.cli_app import app

    app()


def _score(args: ScoreArgs) -> int:
    """Run the command as typer's standalone mode would: Ctrl-C exits 130 quietly, a closed stdout or stderr
    exits 1 without a second error when Python flushes it at exit."""
    from rewardfleet.services.rescore.command import run_command

    try:
        return run_command(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.dup2(devnull, sys.stderr.fileno())
        return 1


def __getattr__(name: str) -> typer.Typer:
    # `from rewardfleet.services.cli import app`: scripts installed before `main` was the entry point, tests.
    if name == "app":
        from rewardfleet.services.cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
