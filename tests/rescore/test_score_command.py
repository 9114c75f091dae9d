"""`rewardfleet score` as a child process against a real gateway: kill and resume, an outage and
--only-failed, --repeat against a hand computation, backpressure, unreadable input, the in-process gateway."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from bench.harness.processes import ChildProcess
from bench.harness.waiting import eventually
from tests.support.rescore import (
    REWARD_FILES,
    Gateway,
    read_jsonl,
    run_score,
    score_cmd,
    start_gateway,
    write_jsonl,
)


def _slow_rows(n: int) -> list[dict[str, object]]:
    # Delays vary so that batches come back out of order; the output must still be in input order.
    return [
        {
            "data_source": "test/slow",
            "solution_str": f"answer {i % 3}",
            "ground_truth": "1",
            "extra_info": {"delay_s": 0.01 * (i % 6)},
            "uid": f"u{i}",
        }
        for i in range(n)
    ]


def _line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_run_resumes_to_the_uninterrupted_output(gateway: Gateway, tmp_path: Path) -> None:
    n = 300  # with batches of 2, 3 in flight and 0-50 ms per line: seconds of margin for the kill
    src = write_jsonl(tmp_path / "in.jsonl", _slow_rows(n))
    full = tmp_path / "full.jsonl"
    done = run_score(src, "-o", full, "--url", gateway.url, "--batch-size", "2", "--concurrency", "3")
    assert done.returncode == 0, done.stderr

    out = tmp_path / "out.jsonl"
    args = ["-o", str(out), "--url", gateway.url, "--batch-size", "2", "--concurrency", "3"]
    child = ChildProcess(score_cmd(src, *args), tmp_path / "killed.log")
    try:

        def twenty_lines() -> bool:  # wait on the file, not on a clock
            assert child.proc.poll() is None, child.log()
            return _line_count(out) >= 20

        eventually(twenty_lines, timeout_s=120, interval_s=0.01, retry_on=(), detail=child.log)
        child.signal(signal.SIGKILL)
        child.proc.wait(timeout=30)
    finally:
        child.stop()
    written = _line_count(out)
    assert 20 <= written < n, f"the kill came too late to test anything ({written} lines)"

    resumed = run_score(src, *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert out.read_bytes() == full.read_bytes()
    assert [r["line"] for r in read_jsonl(out)] == list(range(1, n + 1))  # none lost, none doubled


def test_only_failed_rescores_the_lines_an_outage_failed(gateway: Gateway, tmp_path: Path) -> None:
    rows = [
        {"data_source": "test/judge" if i % 2 else "openai/gsm8k", "solution_str": f"#### {i % 3}",
         "ground_truth": "1", "uid": f"o{i}"}
        for i in range(20)
    ]  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    gateway.outage_file.touch()
    try:
        first = run_score(src, "-o", out, "--url", gateway.url, "--batch-size", "4")
    finally:
        gateway.outage_file.unlink()
    assert first.returncode == 1, first.stderr  # some lines failed
    before = read_jsonl(out)
    assert [r["status"] for r in before] == ["ok" if i % 2 == 0 else "error" for i in range(20)]
    assert before[1]["error"] == {"type": "ConnectionError", "message": before[1]["error"]["message"]}
    assert "judge pool unreachable" in before[1]["error"]["message"]
    earlier = tmp_path / "earlier.jsonl"
    earlier.write_bytes(out.read_bytes())

    summary = tmp_path / "summary.json"
    again = run_score(src, "-o", out, "--url", gateway.url, "--only-failed", "--compare", earlier,
                      "--summary-json", summary)  # fmt: skip
    assert again.returncode == 0, again.stderr
    after = read_jsonl(out)
    assert [r["line"] for r in after] == list(range(1, 21))
    assert all(r["status"] == "ok" for r in after)
    assert [r["score"] for r in after] == [1.0 if i % 3 == 1 else 0.0 for i in range(20)]
    old_lines, new_lines = earlier.read_text().splitlines(), out.read_text().splitlines()
    assert [new_lines[i] for i in range(0, 20, 2)] == [old_lines[i] for i in range(0, 20, 2)]  # kept as is
    figures = json.loads(summary.read_text())
    confusion = figures["compare"]["confusion"]
    # the 10 judge lines were "failed"; now 4 of them pass (odd i with i % 3 == 1: 1, 7, 13, 19), 6 fail
    assert confusion["failed"] == {"pass": 4, "fail": 6, "failed": 0}
    assert confusion["pass"]["pass"] + confusion["fail"]["fail"] == 10
    assert figures["compare"]["flip_rate"] == 0.0


def test_repeat_measures_a_noisy_judge_as_computed_by_hand(gateway: Gateway, tmp_path: Path) -> None:
    noise = [[1, 1, 1], [1, 0, 1], [0, 0, 0], [0, 1, 1]]
    rows = [
        {"data_source": "test/noisy", "solution_str": f"r{i}-{tmp_path.name}", "extra_info": {"noise": v}}
        for i, v in enumerate(noise)
    ]
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_score(src, "-o", out, "--url", gateway.url, "--repeat", "3", "--summary-json", summary)
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(out)
    # each repeat reached the function: the cache answered none of them
    assert [sorted(r["scores"]) for r in lines] == [sorted(map(float, v)) for v in noise]
    assert [r["score"] for r in lines] == pytest.approx([1.0, 2 / 3, 0.0, 2 / 3])
    rep = json.loads(summary.read_text())["repeat"]
    # By hand. Per-line population std: 0, sqrt(2/9), 0, sqrt(2/9).
    assert rep["mean_std"] == pytest.approx((2 * (2 / 9) ** 0.5) / 4)
    assert rep["max_range"] == 1.0
    assert rep["flip_rate"] == 0.5  # lines 2 and 4 have both verdicts
    # Fleiss: (pass, fail) counts 3-0, 2-1, 0-3, 2-1 of n = 3; P_i = 1, 1/3, 1, 1/3 -> P = 2/3;
    # p_pass = 7/12, p_fail = 5/12 -> Pe = 74/144; kappa = (2/3 - 74/144) / (1 - 74/144) = 11/35.
    assert rep["fleiss_kappa"] == pytest.approx(11 / 35)
    assert rep["cached_repeats"] == 0


def test_backpressure_loses_and_doubles_nothing(tmp_path: Path) -> None:
    gw = start_gateway(tmp_path, {"max_inflight_requests": 1, "max_queued_requests": 0, "retry_after_s": 1})
    try:
        src = write_jsonl(tmp_path / "in.jsonl", _slow_rows(60))
        out = tmp_path / "out.jsonl"
        done = run_score(src, "-o", out, "--url", gw.url, "--batch-size", "2", "--concurrency", "6")
        assert done.returncode == 0, done.stderr
        refused = gw.metric('rewardfleet_gateway_admission_rejections_total{reason="overload"}')
    finally:
        gw.proc.stop()
    assert refused > 0, "the gateway never pushed back: the test did not test backpressure"
    lines = read_jsonl(out)
    assert [r["line"] for r in lines] == list(range(1, 61))
    assert all(r["status"] == "ok" for r in lines)


def test_unreadable_lines_are_named_and_nothing_is_sent(gateway: Gateway, tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1"}\n'
        '{"data_source": "openai/gsm8k", "ground_truth": "1"}\n'
        "{not json\n"
    )
    out = tmp_path / "out.jsonl"
    refused = run_score(src, "-o", out, "--url", gateway.url)
    assert refused.returncode == 2
    assert "line 2: missing `solution_str`" in refused.stderr
    assert "2 unreadable lines" in refused.stderr
    assert not out.exists()

    unknown = write_jsonl(tmp_path / "odd.jsonl", [{"question": "q", "answer": "a"}])
    odd = run_score(unknown, "-o", out, "--url", gateway.url)
    assert odd.returncode == 2
    assert "line 1: cannot tell the format" in odd.stderr and "--field solution_str=" in odd.stderr

    mapped = run_score(unknown, "-o", out, "--url", gateway.url, "--field", "solution_str=answer",
                       "--field", "ground_truth=answer", "--data-source", "test/slow")  # fmt: skip
    assert mapped.returncode == 0, mapped.stderr
    assert read_jsonl(out)[0]["score"] == 1.0


def test_in_process_gateway_with_bad_lines_written_as_failed(tmp_path: Path) -> None:
    """No --url: the embedded default fleet config's gateway, in the command's own process."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        '{"data_source": "openai/gsm8k", "solution_str": "#### 1", "ground_truth": "1", "uid": "a"}\n'
        "\n"
        "{not json\n"
        '{"data_source": "openai/gsm8k", "solution_str": "#### 2", "ground_truth": "1"}\n'
    )
    out = tmp_path / "out.jsonl"
    done = run_score(src, "-o", out, "--skip-bad-lines")
    assert done.returncode == 1, done.stderr  # one line failed: the unreadable one
    lines = read_jsonl(out)
    assert [(r["line"], r["status"], r["score"]) for r in lines] == [
        (1, "ok", 1.0), (3, "error", None), (4, "ok", 0.0)
    ]  # fmt: skip
    assert lines[0]["uid"] == "a" and "uid" not in lines[2]
    assert (
        lines[1]["error"]["type"] == "bad_input" and "line 3: not valid JSON" in lines[1]["error"]["message"]
    )


def test_in_process_gateway_runs_the_given_fleet_config(tmp_path: Path) -> None:
    """--config: the in-process gateway is that file's (here its reward_fns_dirs hold the test functions,
    which the embedded default does not know)."""
    config = tmp_path / "fleet.yaml"
    config.write_text(f"gateway: {{reward_fns_dirs: [{REWARD_FILES}]}}\n")
    src = write_jsonl(tmp_path / "in.jsonl", _slow_rows(3))
    out = tmp_path / "out.jsonl"
    done = run_score(src, "-o", out, "--config", config)
    assert done.returncode == 0, done.stderr
    assert [(r["line"], r["reward_fn"], r["score"]) for r in read_jsonl(out)] == [
        (1, "slow", 0.0), (2, "slow", 1.0), (3, "slow", 0.0)
    ]  # fmt: skip


def test_no_gateway_at_url_and_output_over_input_are_refused(tmp_path: Path) -> None:
    from bench.harness.processes import free_port

    src = write_jsonl(tmp_path / "in.jsonl", _slow_rows(2))
    gone = run_score(src, "-o", tmp_path / "out.jsonl", "--url", f"http://127.0.0.1:{free_port()}")
    assert gone.returncode == 2
    assert "no gateway answers GET" in gone.stderr
    same = run_score(src, "-o", src, "--url", "http://127.0.0.1:1")
    assert same.returncode == 2 and "OUTPUT is INPUT" in same.stderr
    assert len(read_jsonl(src)) == 2  # untouched


def test_grpo_groups_are_never_split_across_requests(gateway: Gateway, tmp_path: Path) -> None:
    """Groups of 4 with batches of 3 and one request at a time: a group split over two requests would wait
    for itself until the gateway's group timeout (300 s, beyond this test's budget)."""
    rows = [
        {"data_source": "openai/gsm8k", "solution_str": f"#### {[1, 0, 1, 2][i % 4]}", "ground_truth": "1",
         "group_id": f"{tmp_path.name}-g{i // 4}", "group_size": 4, "group_index": i % 4,
         "group_fn": "rank_normalise"}
        for i in range(8)
    ]  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    done = run_score(
        src, "-o", out, "--url", gateway.url, "--batch-size", "3", "--concurrency", "1", timeout_s=120
    )
    assert done.returncode == 0, done.stderr
    lines = read_jsonl(out)
    # per-sample 1, 0, 1, 0 -> rank-normalised: the zeros share rank 1/6, the ones 5/6
    assert [r["score"] for r in lines] == pytest.approx([5 / 6, 1 / 6, 5 / 6, 1 / 6] * 2)
    assert all(r["extra"]["group"]["size"] == 4 for r in lines)
