"""Accuracy of the embedded default fleet's `judge` on labelled reference-answer judgments, and its cost.

    .venv/bin/python -m bench.judge_accuracy [--subset] [--concurrency 4] [--server host:port]

Runs SmolLM2-135M-Instruct (the embedded default's judge model, on the CPU model server) and scores every case
of `bench/harness/judge_cases.py` (right and wrong final answers, paraphrases, units, reasoning, free
text) with `judge.compute_score` under each configuration, in the same run:

- `before`: the default fleet's judge settings before this change (the `correctness` template, free reasoning
  then a constrained verdict, `max_tokens: 64`, no guards);
- `default`: `judge`'s reward_kwargs as `services/fleet/default.yaml` sets them now.

Prints accuracy, true-positive and true-negative rates, judge calls and completion tokens per judgment, and
seconds per judgment at the given concurrency, with the ratio of each configuration's cost to `before`.
The router in front of the pool is a pass-through here, so the model server is called directly.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.common import model_server
from bench.harness.judge_cases import JudgeCase, judge_cases, small_subset
from bench.harness.processes import REPO_ROOT
from rewardfleet.reward_fns import judge
from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

BEFORE: dict[str, Any] = {
    "pool": "judge", "model": "smollm2", "generation": {"max_tokens": 64}, "guards": False,
}  # fmt: skip


def default_kwargs() -> dict[str, Any]:
    """`judge`'s reward_kwargs in the embedded default fleet."""
    config = yaml.safe_load((REPO_ROOT / "services" / "fleet" / "default.yaml").read_text())
    return dict(config["gateway"]["functions"]["judge"]["reward_kwargs"])


@dataclass
class Outcome:
    case: JudgeCase
    score: float | None
    error: str
    calls: int
    completion_tokens: int


def _verdict(score: float | None) -> bool | None:
    return None if score is None else score >= 0.5


def _calls(extra: Mapping[str, Any]) -> tuple[int, int]:
    """(judge calls, completion tokens) of one result, from its extras: a guard or the rule of answer_match
    decided without a call; a pairwise verdict asked in both orders made two."""
    usage = extra.get("usage") or {}
    tokens = int(usage.get("completion_tokens", 0)) if isinstance(usage, Mapping) else 0
    source = str(extra.get("judge_verdict_source", ""))
    if source in ("guard", "rule"):
        return 0, tokens
    return len(source.split(" / ")), tokens


async def run_config(
    address: str, kwargs: Mapping[str, Any], cases: Sequence[JudgeCase], concurrency: int
) -> tuple[list[Outcome], float]:
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession() as session:

        async def one(case: JudgeCase) -> Outcome:
            async with gate:
                try:
                    result = await judge.compute_score(
                        "bench", case.response, case.reference, {"question": case.problem},
                        router_addresses={"judge": address}, http_client=session,
                        **{"timeout_s": 600, **kwargs},
                    )  # fmt: skip
                except Exception as exc:  # a failed judgment counts as wrong, and is shown
                    return Outcome(case, None, f"{type(exc).__name__}: {str(exc)[:120]}", 1, 0)
                calls, tokens = _calls(result)
                return Outcome(case, float(result["score"]), "", calls, tokens)

        started = time.perf_counter()
        outcomes = await asyncio.gather(*(one(c) for c in cases))
        return list(outcomes), time.perf_counter() - started


def summarise(name: str, outcomes: Sequence[Outcome], elapsed_s: float, base_s: float | None) -> None:
    n = len(outcomes)
    right = [o for o in outcomes if _verdict(o.score) == o.case.correct]
    pos = [o for o in outcomes if o.case.correct]
    neg = [o for o in outcomes if not o.case.correct]
    tpr = sum(_verdict(o.score) is True for o in pos) / max(1, len(pos))
    tnr = sum(_verdict(o.score) is False for o in neg) / max(1, len(neg))
    calls = sum(o.calls for o in outcomes) / n
    tokens = sum(o.completion_tokens for o in outcomes) / n
    ratio = f"  cost ratio vs before {elapsed_s / base_s:.2f}" if base_s else ""
    print(
        f"{name:10} accuracy {len(right) / n:.2f} ({len(right)}/{n})  TPR {tpr:.2f}  TNR {tnr:.2f}  "
        f"errors {sum(bool(o.error) for o in outcomes)}  judge calls/judgment {calls:.2f}  "
        f"completion tokens/judgment {tokens:.1f}  s/judgment {elapsed_s / n:.2f}{ratio}"
    )
    kinds = sorted({o.case.kind for o in outcomes})
    per_kind = []
    for kind in kinds:
        group = [o for o in outcomes if o.case.kind == kind]
        per_kind.append(f"{kind} {sum(_verdict(o.score) == o.case.correct for o in group)}/{len(group)}")
    print(f"{'':10} by kind: {', '.join(per_kind)}")


async def main_async(args: argparse.Namespace, address: str) -> None:
    cases = small_subset() if args.subset else judge_cases()
    configs = {"before": BEFORE, "default": default_kwargs()}
    if args.only:
        configs = {args.only: configs[args.only]}
    print(f"{len(cases)} judgments ({sum(c.correct for c in cases)} right), concurrency {args.concurrency}")
    base_s = None
    for name, kwargs in configs.items():
        outcomes, elapsed_s = await run_config(address, kwargs, cases, args.concurrency)
        summarise(name, outcomes, elapsed_s, base_s)
        base_s = base_s or elapsed_s
        if args.verbose:
            for o in outcomes:
                if _verdict(o.score) != o.case.correct:
                    print(f"    wrong: {o.case.response!r} ref {o.case.reference!r} -> {o.score} {o.error}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subset", action="store_true", help="the 12-case subset the SmolLM2 test runs")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--server", help="host:port of a running SmolLM2 model server (else one is started)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--verbose", action="store_true", help="show every misjudged case")
    parser.add_argument("--only", choices=["before", "default"], help="run one configuration (no cost ratio)")
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
