"""`rewardfleet up` with no config: the embedded CPU default does real work; Ctrl-C leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import httpx

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually
from tests.fleet.procs import cmdline, descendants, wait_gone


def test_default_fleet_scores_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    cmd = rewardfleet_cmd("up", "--port", str(port), "--run-dir", str(tmp_path / "run"))
    proc = ChildProcess(cmd, tmp_path / "up.log", env={"HF_HUB_OFFLINE": "1"})
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=180)
        gateway = f"http://127.0.0.1:{port}"
        rule = httpx.post(f"{gateway}/score", timeout=30, json={
            "data_source": "lighteval/MATH", "solution_str": r"so \boxed{\frac{1}{2}}",
            "ground_truth": "\\frac12",
        }).json()  # fmt: skip
        assert (rule["reward_fn"], rule["status"], rule["score"]) == ("math", "ok", 1.0), rule
        sim = httpx.post(f"{gateway}/score", timeout=30, json={
            "data_source": "x", "reward_fn": "similarity",
            "solution_str": "Paris is the capital of France.",
            "ground_truth": "The capital of France is Paris.",
        }).json()  # fmt: skip
        assert sim["status"] == "ok" and sim["score"] > 0.8, sim
        names = {f["name"] for f in httpx.get(f"{gateway}/reward_fns", timeout=10).json()["reward_fns"]}
        assert {
            "gsm8k",
            "math",
            "math_dapo",
            "math_verify",
            "similarity",
            "judge",
            "rule_then_judge",
        } <= names
        # The judge pool loads in the background: its router is up, and ready once SmolLM2 has loaded.
        state = json.loads((tmp_path / "run" / "fleet.json").read_text())
        judge_pool = state["pools"]["judge"]
        assert judge_pool["load_in_background"] is True and judge_pool["kind"] == "judge"
        eventually(
            lambda: httpx.get(f"{judge_pool['router']}/readiness", timeout=5).status_code == 200,
            timeout_s=600, interval_s=0.5, what="the judge pool ready", retry_on=(),
            detail=lambda: proc.log()[-3000:],
        )  # fmt: skip
        status = subprocess.run(
            rewardfleet_cmd("status", "--run-dir", str(tmp_path / "run")),
            capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        assert status.returncode == 0 and "judge router" in status.stdout, status.stdout + status.stderr
        assert "pool ready" in status.stdout.split("judge router", 1)[1].splitlines()[0], status.stdout

        # Master-key probes are on by default for the judge pool: status shows its false-positive ratio.
        def probed() -> tuple[subprocess.CompletedProcess[str], list[str]] | None:
            status = subprocess.run(
                rewardfleet_cmd("status", "--run-dir", str(tmp_path / "run")),
                capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
            )  # fmt: skip
            probe = [line for line in status.stdout.splitlines() if "judge probes" in line]
            return (status, probe) if probe and "false-positive ratio" in probe[0] else None

        status, probe = eventually(
            probed, timeout_s=300, interval_s=2, what="the judge pool's probe line in rewardfleet status",
            detail=lambda: proc.log()[-2000:],
        )  # fmt: skip
        assert "master keys accepted" in probe[0], probe
        judge_row = next(line for line in status.stdout.splitlines() if "judge-0" in line)
        assert "ready" in judge_row and "not routed" not in judge_row, status.stdout
        verdict = httpx.post(f"{gateway}/score", timeout=120, json={
            "data_source": "x", "reward_fn": "judge", "solution_str": "2 + 2 = 4, so the answer is 4.",
            "ground_truth": "4", "extra_info": {"question": "What is 2 + 2?"},
        }).json()  # fmt: skip
        assert verdict["status"] == "ok" and verdict["score"] in (0.0, 1.0), verdict
        flaw = httpx.post(f"{gateway}/score", timeout=120, json={
            "data_source": "x", "reward_fn": "rule_then_judge", "solution_str": "2 + 2 = 4.\n\nAnswer: 4",
            "ground_truth": "4", "extra_info": {"question": "What is 2 + 2?"},
        }).json()  # fmt: skip
        assert flaw["status"] == "ok" and flaw["score"] in (0.0, 1.0), flaw
        tree = descendants(proc.pid)
        # sglang-router retitles itself `sglang::router`.
        assert any("sglang::router" in cmdline(p) for p in tree), [cmdline(p) for p in tree]
        assert any("serve-model" in cmdline(p) for p in tree)
        proc.proc.send_signal(signal.SIGINT)  # Ctrl-C, to the `up` process only
        assert proc.proc.wait(timeout=90) == 0, proc.log()[-3000:]
        left = wait_gone(tree, timeout_s=10)
        assert not left, {p: cmdline(p) for p in left}
        assert not (tmp_path / "run" / "fleet.json").exists()
    finally:
        proc.stop()
