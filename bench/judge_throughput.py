"""Judge throughput on the real model (SmolLM2-135M-Instruct, CPU): 32 concurrent single `judge` posts through
the gateway → sglang-router → CPU model server, against the best offline batched `generate` of the same
prompts (same constrained verdict regex, same greedy decoding), in the same run.

    .venv/bin/python -m bench.judge_throughput [--samples 32] [--max-tokens 64] [--threads 2]
        [--batch-sizes 8,16,32]

Rows: offline samples/s at each batch size (the best is the baseline), online samples/s, online ÷ offline,
and the padding waste of a batch that runs to its longest request: decode steps spent on rows that had
already finished, as a share of all row-steps (what continuous batching would recover).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.common import BenchResult, Row, gateway, model_server, print_result, sglang_router
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

PROBLEMS = [
    ("What is {a} + {b}?", lambda a, b: a + b),
    ("What is {a} times {b}?", lambda a, b: a * b),
    ("What is {a} minus {b}?", lambda a, b: a - b),
    ("How many apples are left if you have {a} and eat {b}?", lambda a, b: a - b),
]


def samples(n: int) -> list[dict[str, Any]]:
    """Right and wrong answers, short and long, deterministic."""
    out = []
    for i in range(n):
        text, fn = PROBLEMS[i % len(PROBLEMS)]
        a, b = 3 + i, 1 + i % 5
        truth = fn(a, b)
        answer = truth if i % 3 else truth + 1
        padding = " Let me check it step by step once more to be sure." * (i % 4)
        out.append({
            "data_source": "bench", "reward_fn": "judge", "uid": i, "ground_truth": str(truth),
            "solution_str": f"The answer is {answer}.{padding}",
            "extra_info": {"question": text.format(a=a, b=b)},
        })  # fmt: skip
    return out


def offline(
    items: list[dict[str, Any]], max_tokens: int, threads: int, batch_sizes: tuple[int, ...] = (8, 16, 32)
) -> tuple[dict[int, float], float, list[int]]:
    """samples/s of the runner's own batch function per batch size; padding waste; completion lengths."""
    import torch

    from rewardfleet.reward_fns.judging.judge import template_values
    from rewardfleet.reward_fns.judging.templates import get_template
    from rewardfleet.reward_fns.judging.verdict_grammar import verdict_regex
    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.common import TextInput
    from rewardfleet.services.model_server.runners.constraints import Constraint
    from rewardfleet.services.model_server.runners.generation import GenerationInput, SamplingParams
    from rewardfleet.services.model_server.runners.loader import load_runner

    torch.set_num_threads(threads)
    runner = load_runner(ModelServerSettings(model_path=BUILTIN_SMOLLM2))
    tmpl = get_template("correctness")
    regex = verdict_regex(tmpl, scale_min=1, scale_max=10, max_tokens=max_tokens, reasoning_chars=400)
    assert regex is not None
    params = SamplingParams(
        max_new_tokens=max_tokens, temperature=0.0, constraint=Constraint("regex", regex, "regex")
    )
    inputs = []
    for s in items:
        values = template_values(s["solution_str"], s["ground_truth"], s["extra_info"], None, None)
        messages = tmpl.render({k: v for k, v in values.items() if v is not None})
        text = runner.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        inputs.append(
            GenerationInput(
                TextInput(input_ids=runner.tokenizer(text, add_special_tokens=False)["input_ids"]), params
            )
        )
    runner.generate(inputs[:2])  # warm-up
    rates: dict[int, float] = {}
    lengths: list[int] = []
    for bs in batch_sizes:
        started = time.perf_counter()
        results = []
        for i in range(0, len(inputs), bs):
            results += runner.generate(inputs[i : i + bs])
        rates[bs] = len(inputs) / (time.perf_counter() - started)
        lengths = [r.completion_tokens for r in results]
    waste_steps = total_steps = 0
    for i in range(0, len(lengths), 32):
        chunk = lengths[i : i + 32]
        total_steps += max(chunk) * len(chunk)
        waste_steps += sum(max(chunk) - n for n in chunk)
    return rates, waste_steps / max(total_steps, 1), lengths


async def online(url: str, items: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=len(items))) as session:

        async def one(body: dict[str, Any]) -> dict[str, Any]:
            async with session.post(f"{url}/score", json=body) as resp:
                return dict(await resp.json())

        started = time.perf_counter()
        answers = await asyncio.gather(*(one(b) for b in items))
        return len(items) / (time.perf_counter() - started), answers


def run(n: int, max_tokens: int, threads: int, batch_sizes: tuple[int, ...] = (8, 16, 32)) -> BenchResult:
    result = BenchResult("judge_throughput")
    items = samples(n)
    rates, waste, lengths = offline(items, max_tokens, threads, batch_sizes)
    best_bs = max(rates, key=lambda b: rates[b])
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        with (
            model_server(
                tmp, Path(resolve_builtin(BUILTIN_SMOLLM2)), threads, 32, "judge", "smollm2"
            ) as server,
            sglang_router(tmp, [server]) as router,
        ):
            config = {
                "workers": 1,
                "routers": {"judge": router},
                "functions": {"judge": {"timeout_s": 600, "reward_kwargs": {
                    "pool": "judge", "model": "smollm2", "timeout_s": 600,
                    "generation": {"max_tokens": max_tokens},
                }}},
            }  # fmt: skip
            with gateway(tmp, config) as url:
                asyncio.run(online(url, items[:4]))  # warm-up
                rate, answers = asyncio.run(online(url, items))
    failed = [a for a in answers if a.get("status") != "ok"]
    result.notes.append(
        f"{n} judge samples, greedy, constrained verdict, max_tokens {max_tokens}, {threads} torch threads; "
        f"completion tokens min/median/max "
        f"{min(lengths)}/{sorted(lengths)[len(lengths) // 2]}/{max(lengths)}; "
        f"failed online: {len(failed)} {json.dumps(failed[:1])[:300]}"
    )
    for bs, r in rates.items():
        result.rows.append(Row("judge_throughput", f"offline generate, batch {bs} (samples/s)", r))
    result.rows.append(
        Row("judge_throughput", "online: concurrent single posts via gateway (samples/s)", rate)
    )
    result.rows.append(
        Row(
            "judge_throughput",
            f"online ÷ best offline (batch {best_bs})",
            rate / rates[best_bs],
            fmt="{:.2f}",
        )
    )
    result.rows.append(
        Row("judge_throughput", "padding waste of run-to-longest batches (share of row-steps)", waste)
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", default="8,16,32", help="offline batch sizes, comma-separated")
    args = parser.parse_args()
    sizes = tuple(int(b) for b in args.batch_sizes.split(","))
    print_result(run(args.samples, args.max_tokens, args.threads, sizes))


if __name__ == "__main__":
    main()
