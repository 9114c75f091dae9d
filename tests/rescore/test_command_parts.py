"""The command's parts in this process (no gateway): the progress bar's columns, the summary tables, the
JSON codec, the names in an unreadable line's error, and --plot without matplotlib refused up front."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from rewardfleet.services.cli import app
from rewardfleet.services.rescore import jsoncodec, report
from rewardfleet.services.rescore.inputs import ReadOptions, read_items
from rewardfleet.services.rescore.paths import parse_field_args
from rewardfleet.services.rescore.stats import summary


def test_progress_bar_shows_done_total_rate_eta_and_failures() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=150, color_system=None)
    with report.progress_bar(console) as bar:
        task = bar.add_task("scoring", total=200, failed=0)
        bar.update(task, advance=64, failed=3)
        bar.refresh()
    text = out.getvalue()
    assert "64/200" in text
    assert "samples/s" in text
    assert "3 failed" in text
    assert "-:--:--" in text or "0:00:" in text  # rich's ETA column


def test_summary_tables_name_statuses_sources_and_the_slowest_functions() -> None:
    records = [
        {"line": 1, "data_source": "a", "status": "ok", "score": 1.0},
        {"line": 2, "data_source": "a", "status": "ok", "score": 0.0},
        {"line": 3, "data_source": "b", "status": "timeout", "score": None},
    ]
    tables = report.summary_tables(summary(records), {"slow_judge": [2.0, 4.0], "gsm8k": [0.001]})
    out = io.StringIO()
    console = Console(file=out, width=150, color_system=None)
    for table in tables:
        console.print(table)
    text = out.getvalue()
    assert "timeout" in text and "0.5000" in text  # statuses; mean of source a
    slow = text[text.index("slowest functions") :]
    assert slow.index("slow_judge") < slow.index("gsm8k")  # slowest first
    assert "3.0000" in slow and "4.0000" in slow  # mean and max of slow_judge


@pytest.mark.parametrize(
    "line",
    [
        {"line": 3, "uid": "é-ü", "data_source": "openai/gsm8k", "reward_fn": "gsm8k", "status": "ok",
         "score": 0.25, "extra": {"acc": True, "pred": "1/3", "n": [1, 2.5, None]}, "error": None},
        {"line": 4, "response": 1, "data_source": "x", "reward_fn": None, "status": "error", "score": None,
         "extra": {}, "error": {"type": "BadRequest", "message": "a \"quoted\" \\ message\n"}},
    ],
)  # fmt: skip
def test_output_lines_are_the_same_bytes_with_and_without_orjson(line: dict[str, object]) -> None:
    ours = jsoncodec.dump_line(line)
    stdlib = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    assert ours == stdlib
    assert jsoncodec.loads(ours) == line


def test_codec_reads_what_pythons_json_writes_and_writes_what_orjson_refuses() -> None:
    nan = jsoncodec.loads(b'{"score": NaN, "big": 1}')  # Python's json writes NaN; orjson refuses it
    assert math.isnan(nan["score"])
    huge = {"n": 2**70}  # beyond orjson's 64 bits
    assert jsoncodec.loads(jsoncodec.dump_line(huge)) == huge
    with pytest.raises(ValueError):
        jsoncodec.loads(b"{not json")


def test_a_line_missing_a_mapped_field_is_named_with_its_line(tmp_path: Path) -> None:
    src = tmp_path / "odd.jsonl"
    src.write_text(
        '{"meta": {"answer": "1", "dataset": "d"}, "out": "1"}\n'
        "\n"
        '{"meta": {"dataset": "d"}, "out": "2"}\n'
        "[1, 2]\n"
        '{"meta": {"answer": "1", "dataset": 7}, "out": "2"}\n'
    )
    fields = parse_field_args(["solution_str=out", "ground_truth=meta.answer", "data_source=meta.dataset"])
    fmt, items = read_items(src, ReadOptions(fields=fields))
    assert fmt == "fields"
    assert [i.key for i in items] == [(1, None), (3, None), (4, None), (5, None)]  # blank line 2 skipped
    assert items[0].problem is None
    assert f"{src} line 3: missing `meta.answer` (the sample's ground_truth" in (items[1].problem or "")
    assert "line 4: expected a JSON object, got list" in (items[2].problem or "")
    assert "line 5: data_source must be a string, got int" in (items[3].problem or "")


def test_plot_without_matplotlib_is_refused_before_anything_is_read_or_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # not installed: `import matplotlib` fails
    with pytest.raises(report.PlotUnavailable, match=r"pip install 'reward-fleet\[plot\]'"):
        report.check_plot_available()


def test_plot_with_a_broken_matplotlib_is_refused_before_anything_is_read_or_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Installed but broken (its compiled parts or numpy do not load): found, yet its import fails. The
    # command must say so before scoring, not end a finished run with a traceback.
    broken = tmp_path / "site" / "matplotlib"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("numpy.core.multiarray failed to import")\n')
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)

    src = tmp_path / "in.jsonl"
    src.write_text('{"data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1"}\n')
    out = tmp_path / "out.jsonl"
    # nothing listens at port 1: the command must stop at --plot, before it reads INPUT or calls the URL
    args = [
        "score",
        str(src),
        "-o",
        str(out),
        "--url",
        "http://127.0.0.1:1",
        "--plot",
        str(tmp_path / "p.png"),
    ]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "--plot needs matplotlib" in result.output and "reward-fleet[plot]" in result.output
    assert "numpy.core.multiarray failed to import" in result.output
    assert not out.exists()


def test_a_bad_fleet_config_is_named_before_anything_is_read_or_written(tmp_path: Path) -> None:
    config = tmp_path / "fleet.yaml"
    config.write_text("gateway: {workers: many}\n")
    src = tmp_path / "in.jsonl"
    src.write_text('{"data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1"}\n')
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app, ["score", str(src), "-o", str(out), "--config", str(config), "--no-progress"]
    )
    assert result.exit_code == 2, result.output
    # The flat key `workers` now lives in the `sync_pool` section (docs/gateway.md): named by its section.
    assert "invalid fleet config" in result.output and "gateway.sync_pool.workers" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)  # no traceback
    assert not out.exists()


def test_fewer_collections_restores_the_gc_threshold_even_on_error() -> None:
    import gc

    from rewardfleet.services.rescore.session import fewer_collections

    before = gc.get_threshold()
    with pytest.raises(KeyError), fewer_collections():
        assert gc.get_threshold()[0] >= 10_000
        assert gc.isenabled()  # collections still run
        raise KeyError("boom")
    assert gc.get_threshold() == before
