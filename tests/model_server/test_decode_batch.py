"""The running generation batch (`DecodeBatch`) on real tiny checkpoints, in process: rows that join while
others decode, or leave early, produce exactly what each prompt produces alone and what `model.generate`
produces for it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.errors import InvalidRequest
from rewardfleet.services.model_server.runners.common import TextInput
from rewardfleet.services.model_server.runners.constraints import Constraint
from rewardfleet.services.model_server.runners.decode_batch import DecodeBatch
from rewardfleet.services.model_server.runners.generation import (
    GenerationInput,
    GenerationResult,
    GenerationRunner,
    Row,
    SamplingParams,
)
from rewardfleet.services.model_server.runners.loader import load_runner

PROMPTS = [
    "hello world",
    "the quick brown fox jumps over the lazy dog and keeps running far away",
    "a",
    "one two three four five six",
    "zebra",
]


@pytest.fixture(scope="module", params=["qwen2_lm", "llama_lm"])
def runner(request: pytest.FixtureRequest, tiny_models: dict[str, Path]) -> GenerationRunner:
    loaded = load_runner(ModelServerSettings(model_path=str(tiny_models[request.param])))
    assert isinstance(loaded, GenerationRunner)
    return loaded


def _input(prompt: str, n: int, **params: Any) -> GenerationInput:
    return GenerationInput(
        TextInput(text=prompt), SamplingParams(max_new_tokens=n, temperature=0.0, ignore_eos=True, **params)
    )


def _alone(runner: GenerationRunner, item: GenerationInput) -> GenerationResult:
    (result,) = runner.generate([item])
    assert isinstance(result, GenerationResult)
    return result


def _hf_greedy(runner: GenerationRunner, prompt: str, n: int) -> list[int]:
    import torch

    inputs = runner.tokenizer(prompt, return_tensors="pt")
    with torch.inference_mode():
        out = runner.model.generate(
            **inputs, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=runner.pad_id
        )
    return list(out[0, inputs["input_ids"].shape[1] :].tolist())


def _rows(admitted: list[Row | InvalidRequest]) -> list[Row]:
    assert all(isinstance(r, Row) for r in admitted), admitted
    return [r for r in admitted if isinstance(r, Row)]


def test_rows_joining_mid_decode_equal_their_unbatched_output(runner: GenerationRunner) -> None:
    items = [_input(p, n) for p, n in zip(PROMPTS, [12, 5, 9, 7, 4], strict=True)]
    batch = DecodeBatch(runner)
    finished: list[Row] = []
    first = _rows(batch.admit(items[:1]))
    for _ in range(3):
        finished += batch.step()
    assert len(batch) == 1 and len(first[0].output) == 3  # the first row is mid-decode...
    joined = _rows(batch.admit(items[1:3]))  # ...when two more join, with longer and shorter prompts
    finished += batch.step()
    assert len(batch) == 3
    for _ in range(4):
        finished += batch.step()
    late = _rows(batch.admit(items[3:]))  # the second row has left by now; two more join
    assert joined[0] in finished
    while len(batch):
        finished += batch.step()
    rows = first + joined + late
    assert {id(r) for r in finished} == {id(r) for r in rows}  # each row returned once, when it finished
    for item, row, prompt in zip(items, rows, PROMPTS, strict=True):
        expected = _alone(runner, item)
        assert row.output == expected.output_ids
        assert row.output == _hf_greedy(runner, prompt, item.params.max_new_tokens)
        assert runner.result(row) == expected


def test_removing_rows_mid_decode_leaves_the_others_unchanged(runner: GenerationRunner) -> None:
    items = [_input(p, 10) for p in PROMPTS[:3]]
    batch = DecodeBatch(runner)
    rows = _rows(batch.admit(items))
    batch.step()
    batch.step()
    batch.remove([rows[1]])  # its client left: the longest prompt, so its left padding goes too
    assert batch.rows == [rows[0], rows[2]]
    while len(batch):
        batch.step()
    for i in (0, 2):
        assert rows[i].output == _alone(runner, items[i]).output_ids


def test_per_row_limits_grammars_and_refusals_in_one_batch(runner: GenerationRunner) -> None:
    regex = Constraint("regex", "(yes|no) it is", "regex")
    items = [
        _input(PROMPTS[0], 6),
        GenerationInput(
            TextInput(text=PROMPTS[1]), SamplingParams(max_new_tokens=16, temperature=0.0, constraint=regex)
        ),
        GenerationInput(
            TextInput(text=PROMPTS[2]),
            SamplingParams(max_new_tokens=4, constraint=Constraint("regex", "(unclosed", "regex")),
        ),
        GenerationInput(TextInput(input_ids=[10**7]), SamplingParams(max_new_tokens=4)),  # not a token
    ]
    batch = DecodeBatch(runner)
    head = _rows(batch.admit(items[:1]))
    batch.step()
    admitted = batch.admit(items[1:])  # a constrained row joins mid-decode; two inputs are refused alone
    assert isinstance(admitted[1], InvalidRequest) and admitted[1].param == "regex"
    assert isinstance(admitted[2], InvalidRequest)
    assert isinstance(admitted[0], Row) and len(batch) == 2
    while len(batch):
        batch.step()
    assert head[0].output == _alone(runner, items[0]).output_ids
    constrained = runner.result(admitted[0])
    assert re.fullmatch("(yes|no) it is", constrained.text), constrained
    assert constrained.finish_reason["type"] == "stop"
    assert constrained == _alone(runner, items[1])
