"""What changes a generated row's bits between decoding alone and in a batch, on this CPU's torch (a script).

Three measurements, each counting outputs that are not bitwise equal:

1. GEMMs (`nn.Linear` with SmolLM2-135M's shapes, and the tiny test models'): each row of an M-row product
   against the same row computed in a 4-row product, for M = 1..64 and a few larger M.
2. Attention (`scaled_dot_product_attention`, 9 heads of 64 as SmolLM2): one query over a row's n keys alone
   (no mask) against the same keys left-padded (as the default `DecodeBatch` pads its cache) or right-padded
   with a mask, against a wider padding, and against the same padded row in a batch of 8; a prompt's causal
   attention alone against the same prompt left- or right-padded in a batch.
3. End to end, per model: prompts decoded alone and in one batch, with the default `DecodeBatch` (left-padded
   prefill, one padded cache) and with the deterministic `RowwiseDecodeBatch` (packed forwards, attention per
   row); rows whose next-token logits differ from alone after the prefill, and at any later step.

    .venv/bin/python -m bench.generation_bits [--models tiny smollm2] [--prompts 16] [--tokens 8]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from bench.common import OFFLINE_ENV
from bench.determinism import WORDS


def gemm_rows() -> list[str]:
    """Per shape: the row counts M whose rows differ from the same rows in 4-row products."""
    import torch

    torch.manual_seed(0)
    lines = []
    shapes = [(576, 576), (576, 192), (576, 1536), (1536, 576), (576, 49152), (64, 64), (64, 320)]
    for k, n in shapes:
        lin = torch.nn.Linear(k, n)
        x = torch.randn(2048, k)
        with torch.inference_mode():
            ref = torch.cat([lin(x[i : i + 4]) for i in range(0, 64, 4)])
            counts = list(range(1, 65)) + ([256, 2048] if n < 49152 else [256])
            differ = [m for m in counts if not torch.equal(lin(x[:m])[: min(m, 64)], ref[: min(m, 64)])]
        lines.append(f"Linear {k}->{n}: rows differ from 4-row products at M = {differ} (of M = 1..64, 256+)")
    return lines


def _sdpa(q: Any, k: Any, v: Any, mask: Any = None, causal: bool = False) -> Any:
    import torch

    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)


def attention_rows() -> list[str]:
    """Counts of attention outputs that differ from the row alone, per kind of padding."""
    import torch

    torch.manual_seed(0)
    heads, dim = 9, 64
    tally: dict[str, list[int]] = {}

    def count(name: str, same: bool) -> None:
        tally.setdefault(name, [0, 0])
        tally[name][0] += 1
        tally[name][1] += not same

    def pad(t: Any, left: int, right: int) -> Any:
        return torch.cat([t.new_zeros(1, heads, left, dim), t, t.new_zeros(1, heads, right, dim)], 2)

    for n in range(1, 400, 7):
        q, k, v = torch.randn(1, heads, 1, dim), torch.randn(1, heads, n, dim), torch.randn(1, heads, n, dim)
        alone = _sdpa(q, k, v)
        for p in (1, 3, 16, 37):
            mask = torch.zeros(1, 1, 1, n + p, dtype=torch.bool)
            mask[..., p:] = True
            left = _sdpa(q, pad(k, p, 0), pad(v, p, 0), mask)
            count("decode, n keys alone vs left-padded by p with a mask", torch.equal(alone, left))
            wider = torch.zeros(1, 1, 1, n + p + 16, dtype=torch.bool)
            wider[..., p + 16 :] = True
            count(
                "decode, left-padded by p vs by p+16",
                torch.equal(left, _sdpa(q, pad(k, p + 16, 0), pad(v, p + 16, 0), wider)),
            )
            right = torch.zeros(1, 1, 1, n + p, dtype=torch.bool)
            right[..., :n] = True
            count(
                "decode, n keys alone vs right-padded by p",
                torch.equal(alone, _sdpa(q, pad(k, 0, p), pad(v, 0, p), right)),
            )
            others = 7
            qb = torch.cat([q, torch.randn(others, heads, 1, dim)])
            kb = torch.cat([pad(k, p, 0), torch.randn(others, heads, n + p, dim)])
            vb = torch.cat([pad(v, p, 0), torch.randn(others, heads, n + p, dim)])
            mb = torch.cat([mask, torch.rand(others, 1, 1, n + p) > 0.3])
            count(
                "decode, left-padded row alone vs in a batch of 8 (same width)",
                torch.equal(left[0], _sdpa(qb, kb, vb, mb)[0]),
            )
        count(
            "decode, n keys: no mask vs an all-true mask",
            torch.equal(alone, _sdpa(q, k, v, torch.ones(1, 1, 1, n, dtype=torch.bool))),
        )
    for n in range(2, 200, 9):
        q, k, v = torch.randn(1, heads, n, dim), torch.randn(1, heads, n, dim), torch.randn(1, heads, n, dim)
        alone = _sdpa(q, k, v, causal=True)
        p = 13
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        left = torch.ones(n + p, n + p, dtype=torch.bool)
        left[p:, :] = False
        left[p:, p:] = causal
        out = _sdpa(pad(q, p, 0), pad(k, p, 0), pad(v, p, 0), left[None, None])[:, :, p:]
        count("prefill, causal alone vs left-padded by 13 with a mask", torch.equal(alone, out))
        right = torch.ones(n + p, n + p, dtype=torch.bool)
        right[:n, :] = False
        right[:n, :n] = causal
        out = _sdpa(pad(q, 0, p), pad(k, 0, p), pad(v, 0, p), right[None, None])[:, :, :n]
        count("prefill, causal alone vs right-padded by 13 with a mask", torch.equal(alone, out))
        count(
            "prefill, is_causal vs the same causal mask",
            torch.equal(alone, _sdpa(q, k, v, causal[None, None])),
        )
    return [f"{name}: {d} of {c} differ" for name, (c, d) in tally.items()]


def _trace(runner: Any, batch: Any, items: list[Any]) -> list[Any]:
    """Every row's logits per step ([steps, vocab]) decoding `items` in `batch`."""
    import torch

    seen: dict[int, list[Any]] = {}
    sample = runner.sample

    def recording(logits: Any, rows: list[Any]) -> list[int]:
        for b, row in enumerate(rows):
            seen.setdefault(id(row), []).append(logits[b].clone())
        return sample(logits, rows)

    runner.sample = recording
    try:
        rows = batch.admit(items)
        while len(batch):
            batch.step()
    finally:
        del runner.sample
    return [torch.stack(seen[id(r)]) for r in rows]


def end_to_end(runner: Any, label: str, prompts: int, tokens: int) -> list[str]:
    """Rows whose logits differ from alone, per batch kind and prompt mix."""
    import torch

    from rewardfleet.services.model_server.runners.common import TextInput
    from rewardfleet.services.model_server.runners.decode_batch import DecodeBatch
    from rewardfleet.services.model_server.runners.decoding import GenerationInput, SamplingParams
    from rewardfleet.services.model_server.runners.rowwise_batch import RowwiseDecodeBatch

    rng = random.Random(0)
    params = SamplingParams(max_new_tokens=tokens, temperature=0.0, ignore_eos=True)
    mixed = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 48))) for _ in range(prompts)]
    equal = [" ".join(rng.choice(WORDS) for _ in range(24)) for _ in range(prompts)]
    equal_ids = [runner.tokenizer(t)["input_ids"] for t in equal]
    width = min(len(ids) for ids in equal_ids)
    lines = []
    for mix, inputs in (
        ("mixed lengths", [GenerationInput(TextInput(text=t), params) for t in mixed]),
        (
            f"equal lengths ({width} tokens)",
            [GenerationInput(TextInput(input_ids=ids[:width]), params) for ids in equal_ids],
        ),
    ):
        for name, make in (("default DecodeBatch", DecodeBatch), ("RowwiseDecodeBatch", RowwiseDecodeBatch)):
            together = _trace(runner, make(runner), inputs)
            alone = [_trace(runner, make(runner), [x])[0] for x in inputs]
            first = sum(not torch.equal(a[0], b[0]) for a, b in zip(together, alone, strict=True))
            later = sum(not torch.equal(a[1:], b[1:]) for a, b in zip(together, alone, strict=True))
            worst = max(float((a - b).abs().max()) for a, b in zip(together, alone, strict=True))
            lines.append(
                f"{label}, {mix}, {name}, batch of {prompts}: logits after the prefill differ in {first}, "
                f"at a decode step in {later} of {prompts} rows; max |diff| {worst:.3g}"
            )
            print(lines[-1], flush=True)
        where = first_divergence(runner, inputs)
        lines.append(f"{label}, {mix}, default DecodeBatch, first module whose output differs: {where}")
        print(lines[-1], flush=True)
    return lines


def _module_outputs(runner: Any, batch: Any, items: list[Any], row: int) -> list[list[tuple[str, Any]]]:
    """Per forward (prefill, then decode steps): each module's output at row `row`'s last token, in order."""
    calls: list[list[tuple[str, Any]]] = []
    handles = []

    def hook(name: str) -> Any:
        def record(module: Any, args: Any, out: Any) -> None:
            tensor = out[0] if isinstance(out, tuple) else out
            if name == "model.embed_tokens":
                calls.append([])
            if hasattr(tensor, "dim") and tensor.dim() == 3:
                calls[-1].append((name, tensor[row, -1].clone()))

        return record

    for name, module in runner.model.named_modules():
        if name and not name.endswith(("layers", "rotary_emb")) and name != "model":
            handles.append(module.register_forward_hook(hook(name)))
    try:
        batch.admit(items)
        for _ in range(2):
            batch.step()
    finally:
        for h in handles:
            h.remove()
    return calls


def first_divergence(runner: Any, inputs: list[Any]) -> str:
    """The first module (execution order) whose output at the last row's last token differs between the
    row alone and in the batch, at the prefill and at the first decode step (default `DecodeBatch`)."""
    import torch

    from rewardfleet.services.model_server.runners.decode_batch import DecodeBatch

    row = len(inputs) - 1
    together = _module_outputs(runner, DecodeBatch(runner), inputs, row)
    alone = _module_outputs(runner, DecodeBatch(runner), inputs[row:], 0)
    found = []
    for phase, a, b in zip(("prefill", "decode step 1"), together, alone, strict=False):
        first = next((na for (na, ta), (_, tb) in zip(a, b, strict=True) if not torch.equal(ta, tb)), "none")
        found.append(f"{phase}: {first}")
    return "; ".join(found)


def _runner(name: str, work: Path) -> tuple[Any, str]:
    from rewardfleet.services.model_server.config import ModelServerSettings
    from rewardfleet.services.model_server.runners.loader import load_runner

    if name == "tiny":
        from bench.harness.tiny_models import build_tiny_qwen2

        path = build_tiny_qwen2(work / "lm", kind="causal", hidden_size=64, num_layers=4)
        label = "tiny Qwen2 (h64 x4)"
    else:
        from rewardfleet.services.model_server.checkpoints import BUILTIN_SMOLLM2, resolve_builtin

        path, label = Path(resolve_builtin(BUILTIN_SMOLLM2)), "SmolLM2-135M-Instruct"
    return load_runner(ModelServerSettings(model_path=path)), label


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", choices=("tiny", "smollm2"), default=["tiny", "smollm2"])
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ.update(OFFLINE_ENV)
    import torch

    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s)")
    for line in gemm_rows() + attention_rows():
        print(line, flush=True)
    work = Path(tempfile.mkdtemp(prefix="rf-bench-generation-bits-"))
    for name in args.models:
        runner, label = _runner(name, work)
        end_to_end(runner, label, args.prompts, args.tokens)


if __name__ == "__main__":
    main()
