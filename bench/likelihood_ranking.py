"""How often the `likelihood` reward on SmolLM2-135M-Instruct ranks the right reference above a wrong one.

    .venv/bin/python -m bench.likelihood_ranking [--server host:port] [--debias baseline]

For each case of `tests/reward_fns/data/likelihood_cases.jsonl` (a question, a response with reasoning and a
final answer, a right and a wrong reference), the same response is scored against both references; prints
the share of cases where the right one scores higher, per aggregate (mean_prob, geometric_mean), the mean
rewards, and seconds per call. The model server is called directly (the router is a pass-through).
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

from bench.common import model_server
from rewardfleet.reward_fns import likelihood
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

CASES = Path(__file__).resolve().parent.parent / "tests" / "reward_fns" / "data" / "likelihood_cases.jsonl"


def cases() -> list[dict[str, str]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def smollm2_tokenizer() -> Any:
    import transformers

    path = Path(resolve_builtin(BUILTIN_SMOLLM2))
    return transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)


async def ranking(address: str, tokenizer: Any, how: str, debias: str) -> tuple[float, float, float, float]:
    """(share ranked right, mean reward right, mean reward wrong, seconds per call)."""
    wins, right_sum, wrong_sum, calls = 0, 0.0, 0.0, 0
    started = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        for case in cases():
            scores = []
            for ref in (case["right"], case["wrong"]):
                result = await likelihood.compute_score(
                    "bench", case["response"], ref, {"question": case["question"]},
                    router_addresses={"judge": address}, http_client=session,
                    reward_model_tokenizer=tokenizer, aggregate=how, debias=debias, timeout_s=600,
                )  # fmt: skip
                scores.append(result["score"])
                calls += 2 if debias == "baseline" else 1
            wins += scores[0] > scores[1]
            right_sum += scores[0]
            wrong_sum += scores[1]
    n = len(cases())
    return wins / n, right_sum / n, wrong_sum / n, (time.perf_counter() - started) / calls


async def main_async(address: str, debias: str) -> None:
    tokenizer = smollm2_tokenizer()
    print(f"{len(cases())} cases, debias {debias}")
    for how in likelihood.AGGREGATES:
        rate, right, wrong, per_call = await ranking(address, tokenizer, how, debias)
        print(
            f"{how:15} right ranked above wrong {rate:.2f}  mean reward right {right:.3f} wrong {wrong:.3f}  "
            f"s/call {per_call:.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", help="host:port of a running SmolLM2 model server (else one is started)")
    parser.add_argument("--debias", choices=likelihood.DEBIAS, default="none")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    if args.server:
        asyncio.run(main_async(args.server, args.debias))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(resolve_builtin(BUILTIN_SMOLLM2))
        with model_server(Path(tmp), path, args.threads, 16, "judge", "smollm2") as url:
            asyncio.run(main_async(url.removeprefix("http://"), args.debias))


if __name__ == "__main__":
    main()
