"""Deterministic mode's fixed-shape forwards, in process: rows really share forwards, and each row's output is
bitwise the one it gets alone.

The servers' batch-invariance tests (test_model_kinds.py) compare answers over HTTP; the batcher groups
requests in both modes, so its batch-size histogram alone cannot show that rows shared a *forward*. Here the
model's forward is counted with a hook: a batch of 40 inputs of mixed lengths runs one forward per length
bucket (padded to the bucket's width), and every row equals the same input run alone, bitwise.
"""

from __future__ import annotations

import io
import random
from pathlib import Path
from typing import Any

import pytest

from rewardfleet.services.model_server.config import ModelServerSettings
from rewardfleet.services.model_server.runners.common import (
    ROW_MULTIPLE,
    ImageInput,
    TextInput,
    bucket_groups,
    pad_batch,
    shape_bucket,
)
from rewardfleet.services.model_server.runners.deterministic import serving_operations
from rewardfleet.services.model_server.runners.loader import load_runner
from rewardfleet.services.model_server.runners.prm import StepInput

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
]


def _texts(n: int, seed: int, longest: int = 60) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, longest))) for _ in range(n)]


def _png(rgb: tuple[int, int, int]) -> ImageInput:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (20, 12), rgb).save(buf, format="PNG")
    return ImageInput(buf.getvalue(), "input[0].image", 20, 12)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> dict[str, Path]:
    from bench.harness.tiny_clip import build_random_clip
    from bench.harness.tiny_models import build_tiny_qwen2
    from bench.harness.tiny_prm import build_tiny_qwen2_prm
    from tests.tiny_reward_models import build_tiny_reward_model

    root = tmp_path_factory.mktemp("fixed-shapes")
    return {
        "decoder_rm": build_tiny_qwen2(root / "rm", kind="seq_cls"),
        "cross_encoder": build_tiny_reward_model(root / "ce", "BertForSequenceClassification"),
        "encoder": minilm_path,
        "prm": build_tiny_qwen2_prm(root / "prm"),
        "clip": build_random_clip(root / "clip"),
    }


def _inputs(kind: str, n: int) -> list[Any]:
    texts = _texts(n, seed=len(kind))
    if kind == "cross_encoder":
        return [TextInput(text=a, pair=b) for a, b in zip(texts, _texts(n, seed=7, longest=20), strict=True)]
    if kind == "prm":
        from bench.harness.tiny_prm import STEP_TAG

        return [StepInput(text=f"{t}{STEP_TAG}{t[::-1]}{STEP_TAG}") for t in texts]
    if kind == "clip":
        out: list[Any] = [TextInput(text=t) for t in texts[: n // 2]]
        return out + [_png((i * 37 % 256, i * 91 % 256, i * 13 % 256)) for i in range(n - n // 2)]
    return [TextInput(text=t) for t in texts]


def _values(result: Any) -> Any:
    return getattr(result, "values", None) or getattr(result, "rows", None)


@pytest.mark.parametrize("kind", ["decoder_rm", "cross_encoder", "encoder", "prm", "clip"])
def test_rows_share_forwards_and_equal_alone(checkpoints: dict[str, Path], kind: str) -> None:
    import torch

    torch.set_num_threads(1)
    step_tag = None
    if kind == "prm":
        from bench.harness.tiny_prm import step_tag_id

        step_tag = step_tag_id(checkpoints[kind])
    runner = load_runner(ModelServerSettings(model_path=checkpoints[kind], step_tag_id=step_tag))
    (op,) = serving_operations(runner, True).values()
    shapes: list[tuple[int, int]] = []
    # The token embedding runs once per text forward, whatever the tower or head around it.
    model = runner.model
    embedding = (
        model.text_model.embeddings.token_embedding if kind == "clip" else model.get_input_embeddings()
    )
    handle = embedding.register_forward_hook(lambda _m, args, _out: shapes.append(tuple(args[0].shape)))
    try:
        items = _inputs(kind, 40)
        together = op(items)
        shared = list(shapes)
        shapes.clear()
        alone = [op([item])[0] for item in items]
        solo = list(shapes)
    finally:
        handle.remove()
    assert all(not isinstance(r, BaseException) for r in together), together
    differ = [i for i, (a, b) in enumerate(zip(together, alone, strict=True)) if _values(a) != _values(b)]
    assert differ == [], f"{len(differ)} of {len(items)} rows differ from alone: {differ}"
    if kind == "clip":  # the hook sees the text forwards; images go through the vision tower
        texts = [x for x in items if isinstance(x, TextInput)]
        lengths = [len(runner.tokenizer(x.text)["input_ids"]) for x in texts]
    else:
        lengths = [r.prompt_tokens for r in together]
    buckets = bucket_groups(lengths, runner.context_length)
    # One forward per bucket, not per row: rows really share forwards. A cross-encoder's batch is padded to a
    # multiple of ROW_MULTIPLE rows (its per-sequence head runs inside the model's forward); the others
    # pad only the rows their heads see.
    multiple = ROW_MULTIPLE if kind == "cross_encoder" else 1
    assert len(shared) == len(buckets) < len(lengths), (shared, buckets)
    assert sorted(shared) == sorted((-(-len(g) // multiple) * multiple, w) for w, g in buckets.items())
    assert solo and {rows for rows, _ in solo} == {multiple}  # alone, the same shape rules apply


def test_default_mode_runs_one_forward_per_batch(checkpoints: dict[str, Path]) -> None:
    runner = load_runner(ModelServerSettings(model_path=checkpoints["decoder_rm"]))
    (op,) = serving_operations(runner, False).values()
    calls: list[int] = []
    embedding = runner.model.get_input_embeddings()
    handle = embedding.register_forward_hook(lambda _m, _a, _out: calls.append(1))
    try:
        op([TextInput(text=f"{i} the cat sat on a mat") for i in range(10, 34)])  # equal lengths
    finally:
        handle.remove()
    assert len(calls) == 1
    assert runner.fixed_shapes is False  # the deterministic twin never changed the shared runner


def test_shape_bucket_and_pad_batch() -> None:
    assert [shape_bucket(n, 512) for n in (1, 16, 17, 33, 64, 65, 130, 600)] == [
        16,
        16,
        32,
        48,
        64,
        80,
        160,
        512,
    ]
    for n in range(1, 2000):
        b = shape_bucket(n, 4096)
        assert 0 <= b - n < max(16, n // 4), (n, b)
    ids, mask = pad_batch([[5, 6, 7], [8]], 0, left=False, width=4, row_multiple=4)
    assert ids.tolist() == [[5, 6, 7, 0], [8, 0, 0, 0], [5, 6, 7, 0], [5, 6, 7, 0]]
    assert mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]]
    ids, mask = pad_batch([[5, 6, 7], [8]], 0, left=True)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_length_groups_split_only_where_padding_pays() -> None:
    from rewardfleet.services.model_server.runners.common import length_groups

    same = length_groups([64] * 32, overhead_tokens=512)
    assert same == [list(range(32))]  # equal lengths: one forward
    mixed = [10] * 16 + [200] * 16
    groups = length_groups(mixed, overhead_tokens=512)
    assert sorted(sorted(g) for g in groups) == [list(range(16)), list(range(16, 32))]
    assert length_groups(mixed, overhead_tokens=10_000) == [sorted(range(32), key=lambda i: mixed[i])]
    lengths = [random.Random(3).randint(1, 300) for _ in range(40)]
    groups = length_groups(lengths, overhead_tokens=256)
    assert sorted(i for g in groups for i in g) == list(range(40))
    padded = sum(256 + len(g) * max(lengths[i] for i in g) for g in groups)
    assert padded <= 256 + 40 * max(lengths)  # never worse than one forward padded to the longest


def test_default_mode_splits_mixed_lengths(checkpoints: dict[str, Path]) -> None:
    """Default mode: a batch of short and long inputs runs two forwards of similar lengths, not one padded to
    the longest; each row's values stay those of its input alone (within float noise)."""
    runner = load_runner(ModelServerSettings(model_path=checkpoints["decoder_rm"]))
    (op,) = serving_operations(runner, False).values()
    long = " ".join(WORDS * 2)
    assert len(runner.tokenizer(long)["input_ids"]) <= runner.context_length
    items = [TextInput(text="ten"), TextInput(text=long)] * 8
    shapes: list[tuple[int, int]] = []
    embedding = runner.model.get_input_embeddings()
    handle = embedding.register_forward_hook(lambda _m, args, _out: shapes.append(tuple(args[0].shape)))
    try:
        together = op(items)
    finally:
        handle.remove()
    assert len(shapes) == 2 and all(rows == 8 for rows, _ in shapes), shapes
    alone = [op([x])[0] for x in items[:2]]
    for i, r in enumerate(together):
        assert r.values == pytest.approx(alone[i % 2].values, abs=1e-5)


@pytest.mark.parametrize("kind", ["decoder_rm", "prm"])
def test_warmup_measures_a_forwards_fixed_cost(checkpoints: dict[str, Path], kind: str) -> None:
    step_tag = None
    if kind == "prm":
        from bench.harness.tiny_prm import step_tag_id

        step_tag = step_tag_id(checkpoints[kind])
    runner = load_runner(ModelServerSettings(model_path=checkpoints[kind], step_tag_id=step_tag))
    runner.forward_overhead_tokens = -1  # a value the measure never gives: shows it ran
    runner.warmup()
    assert 16 <= runner.forward_overhead_tokens <= 4096
