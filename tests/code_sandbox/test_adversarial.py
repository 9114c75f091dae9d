"""Hostile programs through a real gateway (`rewardfleet gateway`, the `code` built-in, bubblewrap): each
fails only its own sample with a typed outcome; the well-behaved samples sent alongside all score 1.0, the
gateway stays up, /health keeps answering (latency reported, not asserted), and no sandbox process is left.

Typed outcomes: a per-case verdict in `extra.verdicts` (`timeout`, `error`, `crashed`, `output_limit`) with
score 0 — the program ran and failed, as verl would score it. Nothing a program does inside its sandbox
turns into a sample error (no trusted process shares the sandbox; see test_forgery.py for the attempts to
forge a pass).
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd
from bench.harness.waiting import eventually
from tests.code_sandbox.support import sandbox_processes

SECRET = "rf-secret-4cf1a9"
GOOD = "n = int(input())\nprint(n * 2)"
CASES = {"inputs": ["21\n"], "outputs": ["42\n"]}


def _hostile(port: int, config: Path) -> dict[str, tuple[str, str]]:
    """name -> (program, expected output that proves isolation when it scores 1.0, else "")."""
    return {
        "infinite_loop": ("while True:\n    pass", ""),
        "fork_bomb": (
            "import posix\nwhile True:\n    try:\n        posix.fork()\n    except OSError:\n        pass",
            "",
        ),
        "alloc_8gib": ("x = bytearray(8 * 1024**3)\nprint(len(x))", ""),
        "write_10gib": (
            "import io\nf = io.open('/tmp/big', 'wb')\nchunk = b'0' * (1 << 20)\n"
            "for _ in range(10 * 1024):\n    f.write(chunk)\nf.close()\nprint('wrote')",
            "",
        ),
        "connect_gateway": (
            "import socket\nnames = socket.if_nameindex()\ntry:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n    print('CONNECTED', names)\n"
            "except OSError as exc:\n    print('REFUSED', names)",
            "REFUSED [(1, 'lo')]",
        ),
        "read_env_and_config": (
            "import io, os, glob\nseen = ' '.join(os.environ.values())\n"
            "for path in glob.glob('/proc/*/environ'):\n    try:\n"
            "        seen += io.open(path, 'rb').read().decode(errors='replace')\n"
            "    except OSError:\n        pass\n"
            f"try:\n    io.open({str(config)!r}).read()\n    config = 'CONFIG'\n"
            "except OSError:\n    config = 'NO_CONFIG'\n"
            f"print('SECRET' if {SECRET!r} in seen else 'NO_SECRET', config)",
            "NO_SECRET NO_CONFIG",
        ),
        # The parent is the pid namespace's init (bwrap's), which ignores signals from inside: no effect.
        "kill_parent": ("import posix\nposix.kill(posix.getppid(), 9)\nprint(42)", "42"),
        "stdout_100mb": ("import sys\nsys.stdout.write('x' * 100_000_000)", ""),
        # Through the namespace init's descriptors: its stdout is /dev/null (the zygote's case init keeps no
        # pipe), so the program printed nothing (wrong answer); at most a flood of the case's own output.
        "flood_sandbox_stdout": (
            "import io, posix\nio.open(f'/proc/{posix.getppid()}/fd/1', 'wb').write(b'x' * 100_000_000)",
            "",
        ),
        "sleeping_child": (
            # the child sleeps past its run (the behaviour): the sandbox must kill it
            "import posix, time\nif posix.fork() == 0:\n    posix.setsid()\n    time.sleep(600)\n"
            "n = int(input())\nprint(n * 2)",
            "42",
        ),
    }


@pytest.fixture
def gateway(tmp_path: Path) -> Any:
    port = free_port()
    config = tmp_path / "gateway.yaml"
    sandbox = {
        "slots": 2,
        "case_timeout_s": 1.0,
        "retry_case_timeout_s": 1.0,
        "retry_cases": 1,
        "sample_timeout_s": 30.0,
        "memory_limit_mb": 512,
        "max_processes": 32,
        "max_output_bytes": 1024 * 1024,
    }
    config.write_text(
        yaml.safe_dump(
            {"workers": 1, "functions": {"code": {"timeout_s": 60, "reward_kwargs": {"sandbox": sandbox}}}}
        )
    )
    cmd = rewardfleet_cmd("gateway", "--port", str(port), "--config", str(config))
    child = ChildProcess(cmd, tmp_path / "gateway.log", env={"REWARDFLEET_TEST_SECRET": SECRET})
    try:
        child.wait_http(f"http://127.0.0.1:{port}/health", timeout_s=90)
        yield port, config, child
    finally:
        child.stop()


def test_hostile_programs_fail_only_their_own_samples(gateway: Any) -> None:
    port, config, child = gateway
    url = f"http://127.0.0.1:{port}"
    hostile = _hostile(port, config)
    plan: list[tuple[str, str, str]] = [(name, *hostile[name]) for name in hostile]
    plan += [(f"good_{i}", GOOD, "") for i in range(8)]
    plan = [plan[i] for i in sorted(range(len(plan)), key=lambda i: (i * 5) % len(plan))]  # interleave

    latencies: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                started = time.perf_counter()
                assert client.get(f"{url}/health").status_code == 200
                latencies.append(time.perf_counter() - started)
                time.sleep(0.05)  # the probe's period (the behaviour measured), not a wait

    def score(item: tuple[str, str, str]) -> dict[str, Any]:
        _, program, proof = item
        cases = {"inputs": ["21\n"], "outputs": [proof + "\n" if proof else "42\n"]}
        body = {"data_source": "apps", "solution_str": f"```python\n{program}\n```", "ground_truth": cases}
        return httpx.post(f"{url}/score", json=body, timeout=120).json()

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    started = time.perf_counter()
    with ThreadPoolExecutor(6) as pool:
        answers = dict(zip([p[0] for p in plan], pool.map(score, plan), strict=True))
    elapsed = time.perf_counter() - started
    stop.set()
    prober.join()

    for name, answer in answers.items():
        print(f"{name}: status={answer['status']} score={answer['score']} "
              f"extra={answer['extra']} error={answer['error']}")  # fmt: skip
    for i in range(8):
        assert answers[f"good_{i}"]["status"] == "ok" and answers[f"good_{i}"]["score"] == 1.0, answers[
            f"good_{i}"
        ]
    # The isolation proofs: the program itself reports what it saw, and scores 1.0 only if isolated.
    for name in ("connect_gateway", "read_env_and_config", "sleeping_child", "kill_parent"):
        assert answers[name]["status"] == "ok" and answers[name]["score"] == 1.0, (name, answers[name])
    expected_verdicts = {
        "infinite_loop": {"timeout"},
        "fork_bomb": {"timeout", "crashed"},
        "alloc_8gib": {"error"},
        # Python ignores SIGXFSZ, so the write past RLIMIT_FSIZE raises OSError (EFBIG) in the program.
        "write_10gib": {"error", "crashed"},
        "stdout_100mb": {"output_limit", "error", "timeout"},
        "flood_sandbox_stdout": {"error", "output_limit", "wrong_answer"},
    }
    for name, verdicts in expected_verdicts.items():
        answer = answers[name]
        assert answer["status"] == "ok" and answer["score"] == 0.0, (name, answer)
        assert set(answer["extra"]["verdicts"]) <= verdicts, (name, answer)

    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    assert child.proc.poll() is None
    with contextlib.suppress(AssertionError):
        eventually(lambda: not sandbox_processes(), timeout_s=10, interval_s=0.2)
    assert sandbox_processes() == []
    print(f"\nsandbox interfaces seen by connect_gateway: {hostile['connect_gateway'][1]}")
    p50_ms, max_ms = statistics.median(latencies) * 1000, max(latencies) * 1000
    print(f"\nCODE_ADVERSARIAL samples={len(plan)} elapsed_s={elapsed:.1f} health_probes={len(latencies)} "
          f"health_p50_ms={p50_ms:.1f} health_max_ms={max_ms:.1f}")  # fmt: skip
