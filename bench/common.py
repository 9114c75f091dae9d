"""What every benchmark shares: result rows, medians of alternating rounds, and the real services started as
child processes on 127.0.0.1 (gateway, CPU model server, sglang-router), each reaped with its process group.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # `python bench/x.py` as well as `python -m bench.x`
    sys.path.insert(0, str(REPO_ROOT))

from bench.harness.processes import ChildProcess, free_port, rewardfleet_cmd  # noqa: E402

OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@dataclass
class Row:
    """One line of the results table. `met` is None for a figure without a target."""

    bench: str
    metric: str
    value: float
    target: str = ""
    met: bool | None = None
    detail: str = ""
    fmt: str = "{:.2f}"

    @property
    def shown(self) -> str:
        return self.fmt.format(self.value)

    @property
    def verdict(self) -> str:
        return "" if self.met is None else ("met" if self.met else "NOT met")


@dataclass
class BenchResult:
    """A benchmark's rows, plus free-form data (e.g. the cost-growth curve) for the report and the plot."""

    name: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def alternate_offline_and_served(
    rounds: int,
    offline: Callable[[], dict[int, float]],
    served: Callable[[int], tuple[float, float]],
) -> tuple[dict[int, list[float]], list[tuple[float, float]]]:
    """Alternating rounds (offline first in even rounds, the server first in odd ones): `offline()` gives
    samples/s per batch size, `served(round)` (samples/s, p50 ms); the lists add_served_vs_offline takes."""
    offs: dict[int, list[float]] = {}
    ons: list[tuple[float, float]] = []
    for r in range(rounds):
        for step in ("offline", "server") if r % 2 == 0 else ("server", "offline"):
            if step == "offline":
                for size, sps in offline().items():
                    offs.setdefault(size, []).append(sps)
            else:
                ons.append(served(r))
    return offs, ons


def add_served_vs_offline(
    result: BenchResult,
    label: str,
    offline: dict[int, list[float]],
    served: Sequence[tuple[float, float]],
    unit: str = "bs{}",
    target: float = 0.85,
) -> None:
    """The row "server / best offline batch" from alternating rounds: `offline` maps a batch size to its
    samples/s per round, `served` holds (samples/s, p50 ms) per round; medians of both, sweep as a note."""
    off = {size: median(v) for size, v in offline.items()}
    best_size, best = max(off.items(), key=lambda kv: kv[1])
    on, p50 = median([x[0] for x in served]), median([x[1] for x in served])
    sweep = " ".join(f"{unit.format(size)} {sps:.0f}" for size, sps in off.items())
    result.notes.append(f"offline {sweep} | server {on:.0f} (p50 {p50:.1f} ms)")
    result.rows.append(
        Row(
            result.name,
            f"{label}: server / best offline ({unit.format(best_size)})",
            on / best,
            f">= {target}",
            on / best >= target,
            f"{on:.0f} vs {best:.0f} samples/s",
        )
    )


def print_rows(rows: Sequence[Row]) -> None:
    for row in rows:
        target = f"(target {row.target}: {row.verdict})" if row.target else ""
        print(f"  {row.metric:58} {row.shown:>9}  {target}  {row.detail}")


def print_result(result: BenchResult) -> None:
    """What a benchmark run alone prints: its notes, then its rows."""
    print()
    for note in result.notes:
        print(note)
    print_rows(result.rows)


def write_fn(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(source)
    return folder


@contextmanager
def gateway(
    tmp: Path,
    config: dict[str, Any],
    fn_dirs: Sequence[Path] = (),
    name: str = "gateway",
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """`rewardfleet gateway` with `config` as its YAML file; yields its base URL once `/ready` says 200."""
    port = free_port()
    cfg = tmp / f"{name}-{port}.yaml"
    cfg.write_text(yaml.safe_dump(json.loads(json.dumps(config, default=str))))
    cmd = rewardfleet_cmd("gateway", "--port", str(port), "--config", str(cfg), "--log-level", "warning")
    for folder in fn_dirs:
        cmd += ["--reward-fns", str(folder)]
    child = ChildProcess(cmd, tmp / f"{name}-{port}.log", env={**OFFLINE_ENV, **(env or {})})
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/ready", timeout_s=120)
        yield base
    finally:
        child.stop()


@contextmanager
def model_server(
    tmp: Path,
    model_path: Path,
    threads: int,
    max_batch_size: int = 32,
    name: str = "model",
    served_model_name: str | None = None,
) -> Iterator[str]:
    """`rewardfleet serve-model` (CPU); yields its base URL once `/health` says 200 (after warm-up)."""
    port = free_port()
    cmd = rewardfleet_cmd(
        "serve-model",
        "--model-path",
        str(model_path),
        "--port",
        str(port),
        "--torch-num-threads",
        str(threads),
        "--max-batch-size",
        str(max_batch_size),
        "--max-queue",
        "4096",
        "--log-level",
        "warning",
    )
    if served_model_name:
        cmd += ["--served-model-name", served_model_name]
    child = ChildProcess(cmd, tmp / f"{name}-{port}.log", env=OFFLINE_ENV)
    try:
        base = f"http://127.0.0.1:{port}"
        child.wait_http(base + "/health", timeout_s=180)
        yield base
    finally:
        child.stop()


@contextmanager
def sglang_router(tmp: Path, worker_urls: Sequence[str], name: str = "router") -> Iterator[str]:
    """One sglang-router (round robin, the tests' `RouterProcess`); yields its bare `host:port`."""
    from bench.harness.router_process import RouterProcess
    from rewardfleet.router.config import RouterConfig

    cfg = RouterConfig(
        port=free_port(),
        prometheus_port=free_port(),
        worker_urls=list(worker_urls),
        policy="round_robin",
        log_level="warn",
    )
    proc = RouterProcess(cfg, tmp / f"{name}-{cfg.port}.log", env=dict(os.environ))
    with proc:
        proc.wait_ready(timeout_s=60)
        yield proc.address
