"""Accuracy per kind of the embedded default fleet's `judge` (method answer_match, SmolLM2-135M judge) on the
labelled set of issue 41: short facts, yes/no, equivalent forms, number words, chains whose intermediate
numbers include the reference, negations, self-corrections and hedges.

    .venv/bin/python -m bench.answer_match_kinds [--concurrency 4] [--server host:port] [--verbose]

The cases are `tests/reward_fns/data/answer_match_cases.jsonl`; the judge's reward_kwargs are those of
`services/fleet/default.yaml`. Prints accuracy overall and per kind, errors (a failed judgment counts as
wrong and is shown), judge calls and completion tokens per judgment.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.common import model_server
from bench.harness.judge_cases import answer_match_cases
from bench.judge_accuracy import default_kwargs, run_config, summarise
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin


async def main_async(args: argparse.Namespace, address: str) -> None:
    cases = answer_match_cases()
    print(f"{len(cases)} judgments ({sum(c.correct for c in cases)} right), concurrency {args.concurrency}")
    outcomes, elapsed_s = await run_config(address, default_kwargs(), cases, args.concurrency)
    summarise("default", outcomes, elapsed_s, None)
    for o in outcomes:
        if o.error or (args.verbose and (o.score is None or (o.score >= 0.5) != o.case.correct)):
            case = o.case
            print(f"    wrong: [{case.kind}] {case.response!r} ref {case.reference!r} -> {o.score} {o.error}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--server", help="host:port of a running SmolLM2 model server (else one is started)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="show every misjudged case")
    args = parser.parse_args()
    if args.server:
        asyncio.run(main_async(args, args.server))
        return
    with (
        tempfile.TemporaryDirectory() as tmp,
        model_server(
            Path(tmp), Path(resolve_builtin(BUILTIN_SMOLLM2)), args.threads, 16, "judge", "smollm2"
        ) as url,
    ):
        asyncio.run(main_async(args, url.removeprefix("http://")))


if __name__ == "__main__":
    main()
