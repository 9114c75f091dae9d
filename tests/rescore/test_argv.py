"""The command line `rewardfleet score` reads without typer (services/rescore/argv.py) against typer's own
parser of the same command: the same options, defaults and values, and typer for anything else."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

from bench.harness.processes import REPO_ROOT
from rewardfleet.services.cli import app
from rewardfleet.services.rescore import argv
from rewardfleet.services.rescore.command import ScoreArgs


def _typer_command() -> Any:
    return typer.main.get_command(app).commands["score"]  # type: ignore[attr-defined]


def _typer_reads(args: list[str]) -> ScoreArgs | None:
    """What typer's parser makes of the arguments after `score` (None: it refuses them)."""
    try:
        ctx = _typer_command().make_context("score", list(args))
    except Exception:  # typer's usage errors; --help exits
        return None
    params = dict(ctx.params)
    params["field"] = list(params["field"] or [])
    return ScoreArgs(**params)


def test_the_table_is_the_typer_commands_options_with_its_defaults() -> None:
    defaults = {f.name: f.default_factory() if callable(f.default_factory) else f.default
                for f in dataclasses.fields(ScoreArgs)}  # fmt: skip
    seen: set[str] = set()
    for param in _typer_command().params:
        if param.name == "help":
            continue
        seen.add(param.name)
        if param.param_type_name == "argument":
            assert param.name == "input_path"
            continue
        if param.required:  # -o: no default on either side
            assert defaults[param.name] is dataclasses.MISSING
        else:  # typer's --field default is None; ScoreArgs holds the empty list command.py reads it as
            assert param.default == (defaults[param.name] if param.name != "field" else None), param.name
        for opt in [*param.opts, *param.secondary_opts]:
            if param.is_flag:
                assert argv.FLAGS[opt][0] == param.name
            else:
                assert argv.VALUE_OPTIONS[opt][0] == param.name
        assert param.multiple == (param.name in argv.MULTIPLE)
        assert param.envvar == (argv.API_KEY_ENV if param.name == "api_key" else None)
    assert seen == set(defaults)
    names = {opt for p in _typer_command().params for opt in [*p.opts, *p.secondary_opts]}
    assert set(argv.VALUE_OPTIONS) | set(argv.FLAGS) <= names


def _plain_lines(tmp: Path) -> list[list[str]]:
    src = tmp / "in.jsonl"
    src.write_text("{}\n")
    out, cfg = str(tmp / "out.jsonl"), str(tmp / "fleet.yaml")
    (tmp / "fleet.yaml").write_text("{}\n")
    plot = str(tmp / "p.png")
    return [
        [str(src), "-o", out],
        ["-o", out, str(src), "--url", "http://127.0.0.1:8000", "--no-progress"],
        [str(src), "--output=" + out, "--url=http://x", "--progress", "--no-progress", "--progress"],
        [str(src), "-o", out, "--config", cfg, "--format", "verl-dump", "--data-source", "gsm8k"],
        [str(src), "-o", out, "--field", "solution_str=a.b", "--field=ground_truth=c[0]", "--reward-fn", "j"],
        [str(src), "-o", out, "--resume", "--only-failed", "--skip-bad-lines", "--repeat", "3"],
        [str(src), "-o", out, "--compare", str(src), "--pass-threshold", "0.75", "--plot", plot],
        [str(src), "-o", out, "--concurrency", "16", "--batch-size", "128", "--timeout-s", "0.001"],
        [str(src), "-o", out, "--timeout-s", "30", "--pass-threshold", "1", "--summary-json", out + ".json"],
        [str(src), "-o", out, "--api-key", "k", "--url", "--weird", "--batch-size", "8", "--batch-size", "9"],
        [str(src), "-o", out, "--format", "nonsense", "--url", ""],  # command.py refuses it, as before
        [str(src), "-o", str(tmp)],  # a directory as OUTPUT: typer takes it; command.py says why not
    ]


def _other_lines(tmp: Path) -> list[list[str]]:
    src, out = str(tmp / "in.jsonl"), str(tmp / "out.jsonl")
    return [
        ["--help"],
        [src, "-o", out, "--help"],
        [src],  # no -o
        ["-o", out],  # no INPUT
        [src, src, "-o", out],
        [src, "-o", out, "--repeat", "0"],
        [src, "-o", out, "--repeat", "-1"],
        [src, "-o", out, "--repeat", "2.5"],
        [src, "-o", out, "--repeat", " 3"],
        [src, "-o", out, "--repeat", "1_0"],
        [src, "-o", out, "--repeat", "03"],
        [src, "-o", out, "--timeout-s", "0.0009"],
        [src, "-o", out, "--timeout-s", "1e3"],
        [src, "-o", out, "--pass-threshold", "-0.5"],
        [src, "-o", out, "--pass-threshold", "nan"],
        [src, "-o", out, "--config", str(tmp)],  # a directory: typer's message
        [src, "-o", out, "--compare", str(tmp)],
        [src, "-o", out, "--batch"],  # click does not complete prefixes
        [src, "-o", out, "--resume=yes"],
        [src, "-o=" + out],
        ["-o" + out, src],
        [src, "-o", out, "--", "--url"],
        [src, "-o", out, "--url"],  # value missing
        ["-", "-o", out],
        ["", "-o", out],
    ]


@pytest.mark.parametrize("index", range(12))
def test_plain_lines_are_read_here_as_typer_reads_them(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(argv.API_KEY_ENV, raising=False)
    line = _plain_lines(tmp_path)[index]
    ours = argv.read_plain_command_line(line, {})
    assert ours is not None, line
    assert ours == _typer_reads(line)


@pytest.mark.parametrize("index", range(25))
def test_every_other_line_goes_to_typer(index: int, tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text("{}\n")
    line = _other_lines(tmp_path)[index]
    assert argv.read_plain_command_line(line, {}) is None, line


@pytest.mark.parametrize(("env", "given"), [("sk-env", None), ("", None), ("sk-env", "sk-flag")])
def test_the_api_key_variable_as_typer_reads_it(
    env: str, given: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(argv.API_KEY_ENV, env)
    line = [str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl")]
    line += ["--api-key", given] if given is not None else []
    ours = argv.read_plain_command_line(line, {argv.API_KEY_ENV: env})
    assert ours is not None and ours == _typer_reads(line)
    assert ours.api_key == (given or env or None)


def test_an_unreadable_existing_path_goes_to_typer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """typer refuses an INPUT it cannot read; argv.py must leave that line to typer. The file is made
    unreadable by mode 0 and, since root (as in CI) reads any file, by os.access answering no for it too."""
    locked = tmp_path / "locked.jsonl"
    locked.write_text("{}\n")
    locked.chmod(0)
    real_access = argv.os.access
    monkeypatch.setattr(
        argv.os, "access", lambda path, mode: False if Path(path) == locked else real_access(path, mode)
    )
    try:
        assert argv.read_plain_command_line([str(locked), "-o", str(tmp_path / "o")], {}) is None
        readable = tmp_path / "readable.jsonl"
        readable.write_text("{}\n")
        assert argv.read_plain_command_line([str(readable), "-o", str(tmp_path / "o")], {}) is not None
    finally:
        locked.chmod(0o644)


def test_a_plain_line_runs_the_command_without_pydantic(tmp_path: Path) -> None:
    """The point of argv.py: the command refuses OUTPUT == INPUT (exit 2, its own message) without typer's
    parser, which imports pydantic."""
    src = tmp_path / "in.jsonl"
    src.write_text("{}\n")
    script = (
        "import sys\n"
        "from rewardfleet.services import cli\n"
        f"sys.argv = ['rewardfleet', 'score', {str(src)!r}, '-o', {str(src)!r}, '--url', 'http://127.0.0.1:1']\n"
        "try:\n"
        "    cli.main()\n"
        "except SystemExit as exc:\n"
        "    print(exc.code, 'pydantic' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["2", "False"], done.stderr
    assert "rewardfleet score: OUTPUT is INPUT" in done.stderr
