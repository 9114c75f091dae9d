"""Ready means routable: `rewardfleet up` announces a replica ready, and `rewardfleet status` says ready, only
once its pool's real sglang-router sends it work, for a pool loading in the background (a judge) and for the
replicas the start-up waits for (a reward model, two replicas)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import textwrap
from pathlib import Path

import httpx

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from rewardfleet.services.fleet.routable import router_workers


def _probes(port: int, outcome: str) -> float:
    """The gateway's `judge_probes_total` for the judge pool and `outcome`, summed over its series."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    pattern = rf'^\w*judge_probes_total{{[^}}]*outcome="{outcome}"[^}}]*}} (\S+)$'
    return sum(float(v) for v in re.findall(pattern, text, re.MULTILINE))


def test_a_replica_is_ready_only_once_its_router_routes_to_it(tmp_path: Path) -> None:
    judge = build_tiny_qwen2(tmp_path / "judge", "causal", seed=1)
    rm = build_tiny_qwen2(tmp_path / "rm", "seq_cls", seed=2)
    # A slow health check widens the gap between "loaded" and "routed", as the default fleet's 10 s does.
    slow_router = "{policy: round_robin, health_check_interval_secs: 10, health_check_timeout_secs: 2}"
    (tmp_path / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:
          judge: {{kind: judge, model_path: {judge}, served_model_name: tiny-judge, replicas: 1,
                  load_in_background: true,
                  server_args: {{torch-num-threads: 1, max-new-tokens-limit: 16}}, router: {slow_router}}}
          reward_model: {{kind: reward_model, model_path: {rm}, served_model_name: tiny-rm, replicas: 2,
                         server_args: {{torch-num-threads: 1}}, router: {slow_router}}}
        run_dir: {tmp_path / "run"}
        ready_timeout_s: 180
        # The default master-key probes run: the fleet caps their max_tokens at the judge's limit of 16
        # (judge_probes.pool_max_tokens), so they do not fail and open the router's circuits.
        gateway: {{workers: 1}}
        """)
    )
    port = free_port()
    cmd = rewardfleet_cmd("up", "--config", str(tmp_path / "fleet.yaml"), "--port", str(port))
    proc = ChildProcess(cmd, tmp_path / "up.log", env={"HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=240)
        state = json.loads((tmp_path / "run" / "fleet.json").read_text())
        rm_router = state["pools"]["reward_model"]["router"]
        # Start-up waited for the reward model's replicas to be routable: both are healthy in its router.
        workers = router_workers(rm_router)
        assert workers is not None and all(workers.get(u) for u in state["pools"]["reward_model"]["replicas"])
        # The fleet's console lines reach the log file when its stdout is flushed: wait for the line.
        eventually(
            lambda: re.search(r"reward_model-1: ready", proc.log()),
            timeout_s=60, what="reward_model-1: ready in the log", detail=lambda: proc.log()[-3000:],
        )  # fmt: skip
        # The judge loads in the background: the moment `judge-0: ready` is printed, its router routes to it.
        judge_router = state["pools"]["judge"]["router"]
        judge_url = state["pools"]["judge"]["replicas"][0]
        eventually(
            lambda: proc.proc.poll() is None and "judge-0: ready" in proc.log(),
            timeout_s=240, interval_s=0.05, what="judge-0: ready in the log",
            detail=lambda: proc.log()[-3000:],
        )  # fmt: skip
        assert (router_workers(judge_router) or {}).get(judge_url) is True
        # The probes reached the judge and were answered (rejected or accepted). Some are refused (503 while
        # the judge loads, 400 where a prompt overflows the tiny judge's 512-token context): the round backs
        # off, and the real call below still finds the worker's circuit closed.
        eventually(
            lambda: _probes(port, "rejected") + _probes(port, "false_positive") > 0,
            timeout_s=120, what="a master-key probe answered by the judge",
            detail=lambda: proc.log()[-3000:],
        )  # fmt: skip
        routed = httpx.post(
            f"{judge_router}/generate",
            json={"text": "hi", "sampling_params": {"max_new_tokens": 2, "temperature": 0.0}},
            timeout=60,
        )
        assert routed.status_code == 200, routed.text
        status = subprocess.run(
            rewardfleet_cmd("status", "--run-dir", str(tmp_path / "run")),
            capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "200"},
        )  # fmt: skip
        row = next(line for line in status.stdout.splitlines() if "judge-0" in line)
        assert "ready" in row and "not routed" not in row, status.stdout
    finally:
        proc.stop(timeout_s=60)
