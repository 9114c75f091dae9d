"""Write a verl rollout dump with verl 0.9.1's own code: `RayPPOTrainer._log_rollout_data`, the method the
trainer calls for `trainer.rollout_data_dir` (tokenizer decode, token-level score sums, its thread-pool
writer `_dump_generations` -> `_write_generations`).

Run in an interpreter with antlr4 4.9 first on PYTHONPATH (verl's omegaconf; see
tests/integrations/test_verl_trainer_code.py):  python -m tests.rescore.verl_dump CASES.json OUT_DIR STEP
CASES.json: [{"prompt": str, "response": str, "ground_truth": str, "score": float, "acc": bool}, ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from verl import DataProto
from verl.trainer.ppo.ray_trainer import RayPPOTrainer

from bench.harness.tiny_models import _build_qwen2_tokenizer


def main(cases_path: str, out_dir: str, step: int) -> None:
    cases = json.loads(Path(cases_path).read_text())
    tok = _build_qwen2_tokenizer()
    pad = tok.pad_token_id
    prompts = [
        tok.apply_chat_template(
            [{"role": "user", "content": c["prompt"]}], tokenize=False, add_generation_prompt=True
        )
        for c in cases
    ]
    prompt_ids = [tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
    response_ids = [
        tok(c["response"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for c in cases
    ]
    p_len = max(map(len, prompt_ids))
    r_len = max(map(len, response_ids))
    prompts_t = torch.tensor([[pad] * (p_len - len(ids)) + ids for ids in prompt_ids])  # left padded
    responses_t = torch.tensor([ids + [pad] * (r_len - len(ids)) for ids in response_ids])  # right padded
    scores = torch.zeros(len(cases), r_len)
    for i, (case, ids) in enumerate(zip(cases, response_ids, strict=True)):
        scores[i, len(ids) - 1] = case["score"]  # verl puts the sequence reward on the last valid token
    batch = DataProto.from_dict(
        tensors={"prompts": prompts_t, "responses": responses_t, "token_level_scores": scores},
        non_tensors={
            "reward_model": np.array(
                [{"ground_truth": c["ground_truth"], "style": "rule"} for c in cases], dtype=object
            ),
            "request_id": np.array([f"req-{i}" for i in range(len(cases))], dtype=object),
        },
    )
    # A trainer without its __init__ (which needs Ray workers): only what _log_rollout_data reads.
    trainer = object.__new__(RayPPOTrainer)
    trainer.tokenizer = tok
    trainer.global_steps = step
    trainer._init_dump_executor()
    trainer._log_rollout_data(batch, {"acc": np.array([c["acc"] for c in cases])}, {}, out_dir)
    trainer._shutdown_dump_executor()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
