"""Reproducible rewards through the whole fleet (issue 42): gateway → sglang-router → 2 replicas per pool.

One `rewardfleet up` runs a reward-model pool and a judge pool, two CPU replicas each, both
`deterministic: true`, each behind a real sglang-router (round robin, so consecutive requests change
replica), and the gateway with the `reward_model` and `judge` built-ins. The judge *samples*
(temperature 1.0): its sampling seed comes from the question (reward_fns/judging/seed.py), so its verdict is
reproducible only if the seed reaches the server through the router and the server is batch invariant.

Every sample is scored alone first (one post at a time). Then: mixed into random concurrent groups (two
shuffles); after a replica of each pool is killed (the router retries the requests it loses on the other
replica, and the supervisor restarts it); through `rewardfleet score --repeat 3` (0 lines changed per
function); and a judge A/B, `rewardfleet score` twice with `--compare`, gives identical scores. Every post
carries a fresh uid, so nothing is answered from the gateway's cache (checked: `cached` is false). The
control runs the reward-model pool again with `deterministic: false` and reports how many scores moved.
"""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.tiny_models import build_tiny_qwen2
from bench.harness.waiting import eventually
from tests.determinism.harness import REPORT, Comparison, alone, compare, mixed
from tests.fleet.procs import cmdline, descendants

N_RM = 60
N_JUDGE = 24  # each a sampled generation of up to 40 tokens, one forward per token and request


@dataclass
class Fleet:
    proc: ChildProcess
    state: dict[str, Any]
    tmp: Path

    @property
    def gateway(self) -> str:
        return str(self.state["gateway"]["url"])


def _up(tmp: Path, deterministic: bool, judge: bool) -> Iterator[Fleet]:
    """`rewardfleet up` with a 2-replica reward-model pool (and a 2-replica judge pool), both
    `deterministic`; yields once every part is ready, stops the fleet after."""
    rm = build_tiny_qwen2(tmp / "rm", "seq_cls", seed=4)
    router = "{policy: round_robin, health_check_interval_secs: 2, health_check_timeout_secs: 1}"
    args = "{torch-num-threads: 1, max-batch-size: 16, batch-wait-timeout-s: 0.02}"
    flag = str(deterministic).lower()
    pools = f"""
          reward_model: {{kind: reward_model, model_path: {rm}, served_model_name: tiny-rm, replicas: 2,
                         deterministic: {flag}, server_args: {args}, router: {router}}}"""
    functions = "reward_model: {reward_kwargs: {model: tiny-rm}}"
    if judge:
        lm = build_tiny_qwen2(tmp / "judge", "causal", seed=3, max_position_embeddings=2048)
        pools += f"""
          judge: {{kind: judge, model_path: {lm}, served_model_name: tiny-judge, replicas: 2,
                  deterministic: {flag}, server_args: {args}, router: {router}}}"""
        functions += """
            judge: {timeout_s: 120, reward_kwargs: {pool: judge, model: tiny-judge,
                     generation: {max_tokens: 40, temperature: 1.0}}}"""
    (tmp / "fleet.yaml").write_text(
        textwrap.dedent(f"""
        pools:{pools}
        run_dir: {tmp / "run"}
        ready_timeout_s: 180
        restart_max_backoff_s: 2
        gateway:
          workers: 1
          functions:
            {functions}
        """)
    )
    port = free_port()
    cmd = rewardfleet_cmd("up", "--config", str(tmp / "fleet.yaml"), "--port", str(port))
    proc = ChildProcess(cmd, tmp / "up.log", env={"HF_HUB_OFFLINE": "1"})
    try:
        proc.wait_http(f"http://127.0.0.1:{port}/ready", timeout_s=300)
        state_file = tmp / "run" / "fleet.json"
        eventually(state_file.exists, timeout_s=30, interval_s=0.1, what=f"{state_file}")
        yield Fleet(proc, json.loads(state_file.read_text()), tmp)
    finally:
        proc.stop(timeout_s=60)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    yield from _up(tmp_path_factory.mktemp("det-fleet"), deterministic=True, judge=True)


def samples() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(N_RM):
        question = f"What is {i} plus {i * 3}? Explain briefly."
        out.append({
            "data_source": "chat", "reward_fn": "reward_model", "ground_truth": None,
            "prompt": [{"role": "user", "content": question}],
            "solution_str": f"Adding {i} and {i * 3} gives {4 * i}." + " We check it twice." * (i % 5),
        })  # fmt: skip
    for i in range(N_JUDGE):
        out.append({
            "data_source": "chat", "reward_fn": "judge", "ground_truth": str(5 * i),
            "extra_info": {"question": f"What is {i} times 5?"},
            "solution_str": f"Five times {i} is {5 * i + (i % 3 == 0)}, because we add {i} five times.",
        })  # fmt: skip
    return out


class Scorer:
    """Posts samples to the gateway under fresh uids (nothing cached) and keeps what must be reproducible."""

    def __init__(self, gateway: str) -> None:
        self.url = f"{gateway}/score"
        self.n = 0

    async def __call__(self, session: aiohttp.ClientSession, sample: dict[str, Any]) -> Any:
        self.n += 1
        async with session.post(self.url, json={**sample, "uid": f"post-{self.n}"}) as resp:
            body = await resp.json(content_type=None)
        assert resp.status == 200, body
        assert body.get("cached") is False, body
        extra = body.get("extra") or {}
        return [body["status"], body["score"], extra.get("judge_response"), extra.get("judge_verdict")]


def _report(kind: str, reference: list[Any], runs: list[list[Any]]) -> None:
    compared, differ, worst = compare(reference, runs)
    REPORT.append(Comparison(kind, True, compared, differ, worst, -1))
    assert compared == len(reference) * len(runs)
    assert differ == 0, f"{kind}: {differ} of {compared} differ (max {worst})"


def _kill_replica(fleet: Fleet, pool: str, index: int) -> int:
    port = fleet.state["pools"][pool]["replicas"][index].rsplit(":", 1)[1]
    for pid in descendants(fleet.proc.pid):
        argv = cmdline(pid)
        if "serve-model" in argv and f"--port {port} " in argv:
            os.kill(pid, signal.SIGKILL)
            return pid
    raise AssertionError(f"no serve-model process on port {port}")


def _served(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("rewardfleet_model_server_requests_total{") and 'status="200"' in line
    )


def test_alone_mixed_and_failover_are_bitwise_equal(fleet: Fleet) -> None:
    data = samples()
    scorer = Scorer(fleet.gateway)
    reference = alone(scorer, data)
    judged = [r for r in reference[N_RM:] if r[0] == "ok"]
    assert len(judged) >= N_JUDGE // 2, f"the sampled judge mostly failed: {reference[N_RM:]}"
    assert len({r[2] for r in judged}) > 1, "every judge reply is the same text: nothing was sampled"
    runs = [mixed(scorer, data, seed, max_group=24) for seed in (1, 2)]
    for pool in ("reward_model", "judge"):
        counts = [_served(u) for u in fleet.state["pools"][pool]["replicas"]]
        assert all(c > 10 for c in counts), f"{pool}: one replica served (almost) nothing: {counts}"
    _report("fleet: RM alone vs mixed", reference[:N_RM], [r[:N_RM] for r in runs])
    _report("fleet: judge alone vs mixed", reference[N_RM:], [r[N_RM:] for r in runs])

    _kill_replica(fleet, "reward_model", 0)
    _kill_replica(fleet, "judge", 0)
    after_kill = mixed(scorer, data, 3, max_group=24)
    _report("fleet: after a replica died", reference, [after_kill])


def _write_input(path: Path, reward_fn: str | None = None) -> Path:
    with path.open("w") as f:
        for i, sample in enumerate(samples()):
            if reward_fn is None or sample["reward_fn"] == reward_fn:
                f.write(json.dumps({**sample, "uid": f"line-{i}"}) + "\n")
    return path


def _score_cmd(fleet: Fleet, *args: str) -> dict[str, Any]:
    summary = fleet.tmp / f"summary-{time.monotonic_ns()}.json"
    cmd = rewardfleet_cmd("score", *args, "--url", fleet.gateway, "--summary-json", str(summary),
                          "--no-progress", "--concurrency", "8", "--batch-size", "8")  # fmt: skip
    child = ChildProcess(cmd, fleet.tmp / f"score-{summary.stem}.log")
    code = child.proc.wait(timeout=900)
    assert code == 0, child.log()[-3000:]
    result: dict[str, Any] = json.loads(summary.read_text())
    return result


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rescore_repeat_reports_no_flips(fleet: Fleet) -> None:
    source = _write_input(fleet.tmp / "rollouts.jsonl")
    out = fleet.tmp / "repeat.jsonl"
    figures = _score_cmd(fleet, str(source), "-o", str(out), "--repeat", "3")
    by_function = figures["repeat"]["by_function"]
    assert set(by_function) == {"judge", "reward_model"}, by_function
    assert by_function["reward_model"]["lines"] == N_RM
    assert by_function["judge"]["lines"] + by_function["judge"]["lines_with_a_failed_repeat"] == N_JUDGE
    for name, row in by_function.items():
        assert row["changed"] == 0 and row["flips"] == 0, (name, row)
    assert figures["repeat"]["cached_repeats"] == 0


def test_judge_ab_twice_is_identical(fleet: Fleet) -> None:
    source = _write_input(fleet.tmp / "ab.jsonl", "judge")
    first, second = fleet.tmp / "ab-1.jsonl", fleet.tmp / "ab-2.jsonl"
    _score_cmd(fleet, str(source), "-o", str(first))
    figures = _score_cmd(fleet, str(source), "-o", str(second), "--compare", str(first))
    a, b = _lines(first), _lines(second)
    assert len(a) == len(b) == N_JUDGE
    keys = ("status", "score")
    differ = [(x["line"], x["score"], y["score"]) for x, y in zip(a, b, strict=True)
              if [x[k] for k in keys] != [y[k] for k in keys]
              or x["extra"].get("judge_response") != y["extra"].get("judge_response")]  # fmt: skip
    assert differ == [], differ[:5]
    compared = figures["compare"]
    assert compared["flipped"] == 0 and compared["most_changed"] == [], compared
    assert compared["both_ok"] == N_JUDGE


def test_the_router_forwards_the_seed_fields(fleet: Fleet) -> None:
    """sglang-router 0.3.2 re-serialises bodies and drops fields it does not know: `sampling_seed` (in
    /generate's sampling_params) and `seed` (chat) must survive it, or every seed would draw like seed 42
    (the deterministic server's default) — so different seeds giving different tokens proves they arrive."""
    router = fleet.state["pools"]["judge"]["router"]

    def generate(seed: int) -> list[int]:
        params = {"max_new_tokens": 8, "temperature": 1.0, "ignore_eos": True, "sampling_seed": seed}
        body = {"text": "Say something:", "sampling_params": params}
        resp = httpx.post(f"{router}/generate", json=body, timeout=60)
        assert resp.status_code == 200, resp.text
        return list(resp.json()["output_ids"])

    def chat(seed: int) -> str:
        body = {"model": "tiny-judge", "messages": [{"role": "user", "content": "Say something:"}],
                "max_tokens": 8, "temperature": 1.0, "seed": seed}  # fmt: skip
        resp = httpx.post(f"{router}/v1/chat/completions", json=body, timeout=60)
        assert resp.status_code == 200, resp.text
        return str(resp.json()["choices"][0]["message"]["content"])

    for ask in (generate, chat):
        by_seed = {seed: ask(seed) for seed in range(1, 7)}
        assert [ask(seed) for seed in range(1, 7)] == list(by_seed.values()), ask.__name__
        assert len({json.dumps(v) for v in by_seed.values()}) > 1, f"{ask.__name__}: the seed did not arrive"


def test_the_default_fleet_is_measured_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The control: the same reward-model pool with `deterministic: false`, the same samples alone and mixed
    through the gateway. Reports how many scores differ (the terminal summary); asserts the comparison ran."""
    fleet = _up(tmp_path_factory.mktemp("default-fleet"), deterministic=False, judge=False)
    running = next(fleet)
    try:
        data = samples()[:N_RM]
        scorer = Scorer(running.gateway)
        reference = alone(scorer, data)
        runs = [mixed(scorer, data, seed, max_group=24) for seed in (1, 2)]
        compared, differ, worst = compare(reference, runs)
        REPORT.append(Comparison("fleet: RM, default pool", False, compared, differ, worst, -1))
        assert compared == 2 * N_RM
    finally:
        fleet.close()
