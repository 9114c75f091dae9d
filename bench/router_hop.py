"""Router hop: the gateway's built-in `reward_model` function scoring through an sglang-router vs straight to
the model server (its address in `router_addresses`), same tiny reward model, same CPU model server, same run.

One model server, one sglang-router in front of it, two gateways (one per address); alternating rounds of
closed-loop load at concurrency 64; the ratio of medians is reported (target >= 0.85).

    .venv/bin/python -m bench.router_hop [--duration-s 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.common import BenchResult, Row, gateway, median, model_server, print_result, sglang_router
from bench.harness.tiny_models import build_tiny_qwen2
from bench.load import run_load

MODEL_NAME = "tiny-rm"
SAMPLE = {
    "data_source": "bench",
    "reward_fn": "reward_model",
    "prompt": "What is the sum of the first ten positive integers? Explain briefly.",
    "solution_str": "Pair them up: 1+10, 2+9, ... five pairs of 11, so the sum is 55.",
}
BODY = json.dumps(SAMPLE).encode()


@dataclass
class RmStack:
    via_router: str  # gateway URL whose reward_model pool is the sglang-router
    direct: str  # gateway URL whose reward_model pool is the model server itself


def gateway_config(rm_path: Path, address: str) -> dict[str, object]:
    return {
        "builtin_package": "rewardfleet.reward_fns",
        "workers": 1,
        "reward_model_tokenizer": str(rm_path),
        "routers": {"reward_model": address},
        "functions": {"reward_model": {"reward_kwargs": {"model": MODEL_NAME}}},
    }


@contextmanager
def rm_stack(tmp: Path, threads: int = 1, direct: bool = True) -> Iterator[RmStack]:
    """Tiny Qwen2 RM on a CPU model server, an sglang-router in front, and the gateway(s)."""
    rm = build_tiny_qwen2(tmp / "rm", kind="seq_cls")
    with ExitStack() as stack:
        server = stack.enter_context(model_server(tmp, rm, threads, 32, served_model_name=MODEL_NAME))
        router = stack.enter_context(sglang_router(tmp, [server]))
        via = stack.enter_context(gateway(tmp, gateway_config(rm, router), name="gw-router"))
        straight = ""
        if direct:
            address = server.removeprefix("http://")
            straight = stack.enter_context(gateway(tmp, gateway_config(rm, address), name="gw-direct"))
        yield RmStack(via, straight)


def _check(url: str) -> None:
    import httpx

    answer = httpx.post(url, content=BODY, timeout=30).json()
    if answer.get("status") != "ok":
        raise RuntimeError(f"{url}: the reward_model function failed: {answer}")


def run(
    duration_s: float = 8.0,
    warmup_s: float = 2.0,
    rounds: int = 3,
    concurrency: int = 64,
    stack: RmStack | None = None,
) -> BenchResult:
    """`stack`: an already running `rm_stack` (bench.run_all shares one with the cost-growth benchmark)."""
    result = BenchResult("3. router hop")
    runs: dict[str, list[tuple[float, float, float]]] = {"router": [], "direct": []}
    with ExitStack() as resources:
        if stack is None:
            tmp = Path(resources.enter_context(tempfile.TemporaryDirectory(prefix="rf-hop-")))
            stack = resources.enter_context(rm_stack(tmp))
        urls = {"router": stack.via_router + "/score", "direct": stack.direct + "/score"}
        for url in urls.values():
            _check(url)
        for _ in range(rounds):
            for name, url in urls.items():
                load = asyncio.run(run_load(url, BODY, concurrency, duration_s, warmup_s))
                if load.errors:
                    raise RuntimeError(f"{name}: {load.errors} failed requests")
                runs[name].append((load.rps, load.percentile(0.5), load.percentile(0.99)))
    med = {k: tuple(median([r[i] for r in v]) for i in range(3)) for k, v in runs.items()}
    result.notes.append(
        f"built-in reward_model fn (chat template + POST /v1/embeddings), tiny Qwen2 RM, 1 CPU model server "
        f"(1 torch thread, max batch 32), concurrency {concurrency}, {duration_s:.0f} s x {rounds} "
        "alternating rounds, medians"
    )
    for name, (rps, p50, p99) in med.items():
        result.notes.append(
            f"gateway -> {name:7} {rps:7.0f} req/s  p50 {p50 * 1e3:6.1f} ms  p99 {p99 * 1e3:6.1f} ms"
        )
    ratio = med["router"][0] / med["direct"][0]
    result.rows.append(
        Row(
            result.name,
            f"req/s via sglang-router / direct to model server (c{concurrency})",
            ratio,
            ">= 0.85",
            ratio >= 0.85,
            f"{med['router'][0]:.0f} vs {med['direct'][0]:.0f} req/s; "
            f"p50 {med['router'][1] * 1e3:.1f} vs {med['direct'][1] * 1e3:.1f} ms",
        )
    )
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration-s", type=float, default=8.0)
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    result = run(args.duration_s, args.warmup_s, args.rounds, args.concurrency)
    print_result(result)


if __name__ == "__main__":
    main()
