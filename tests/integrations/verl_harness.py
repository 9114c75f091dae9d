"""verl 0.9.1's own pieces, set up as its PPO trainer sets them up, for the adapter tests.

- `compose_trainer_config`: verl's real `ppo_trainer` Hydra config composed with command-line overrides.
- `documented_overrides`: the verl override lines of docs/client.md, so the docs are what is tested.
- `rollout_batch`: a `DataProto` from verl's own `RLHFDataset` + `collate_fn` on a parquet file, with
  responses appended as the rollout appends them (prompt left-padded, response right-padded, one
  attention mask over both).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.harness.processes import REPO_ROOT

DOCS = REPO_ROOT / "docs" / "client.md"


def documented_overrides(gateway_url: str) -> list[str]:
    """The Hydra override lines under docs/client.md's `## verl` (first bash block), pointed at a gateway."""
    text = DOCS.read_text()
    section = text[text.index("## verl\n") :]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    if block is None:
        raise AssertionError("docs/client.md's verl section has no bash block of overrides")
    lines = [line.strip() for line in block.group(1).splitlines() if line.strip()]
    return [re.sub(r"gateway_url=\S+", f"gateway_url={gateway_url}", line) for line in lines]


def compose_trainer_config(overrides: Sequence[str]) -> Any:
    """verl's `main_ppo` config (`verl/trainer/config/ppo_trainer.yaml`) plus `overrides`, via Hydra."""
    import verl
    from hydra import compose, initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name="ppo_trainer", overrides=list(overrides))


def write_parquet(path: Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    import pandas as pd

    pd.DataFrame(list(rows)).to_parquet(path)
    return path


def rollout_batch(
    parquet: Path, tokenizer: Any, responses: Sequence[str], cache_dir: Path, max_response_tokens: int = 48
) -> Any:
    """verl's dataset rows for `parquet`, each with the matching response, as one `DataProto`."""
    import torch
    from omegaconf import OmegaConf
    from tensordict import TensorDict
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    dataset = RLHFDataset(
        str(parquet), tokenizer, OmegaConf.create({"max_prompt_length": 256, "cache_dir": str(cache_dir)})
    )
    if len(dataset) != len(responses):
        raise AssertionError(f"{len(dataset)} rows but {len(responses)} responses")
    data = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    prompt_ids = [
        tokenizer.apply_chat_template(list(raw), add_generation_prompt=True, tokenize=True, return_dict=False)
        for raw in data.non_tensor_batch["raw_prompt"]
    ]
    eos = tokenizer.eos_token_id
    response_ids = [
        [*tokenizer(text, add_special_tokens=False)["input_ids"][: max_response_tokens - 1], eos]
        for text in responses
    ]
    prompt_len = max(len(p) for p in prompt_ids)
    pad = tokenizer.pad_token_id
    prompts = torch.tensor([[pad] * (prompt_len - len(p)) + list(p) for p in prompt_ids])
    resp = torch.tensor([r + [pad] * (max_response_tokens - len(r)) for r in response_ids])
    prompt_mask = torch.tensor([[0] * (prompt_len - len(p)) + [1] * len(p) for p in prompt_ids])
    resp_mask = torch.tensor([[1] * len(r) + [0] * (max_response_tokens - len(r)) for r in response_ids])
    tensors = TensorDict(
        {
            "prompts": prompts,
            "responses": resp,
            "input_ids": torch.cat([prompts, resp], dim=1),
            "attention_mask": torch.cat([prompt_mask, resp_mask], dim=1),
        },
        batch_size=len(responses),
    )
    return data.union(DataProto(batch=tensors))


def last_token_scores(rm_scores: Any, attention_mask: Any, response_len: int) -> list[float]:
    """The score at each row's last valid response token (where verl puts it), checking the rest is zero."""
    scores = []
    for row, mask in zip(rm_scores, attention_mask[:, -response_len:], strict=True):
        last = int(mask.sum()) - 1
        if float(row.abs().sum() - row[last].abs()) != 0.0:
            raise AssertionError(f"reward outside the last response token: {row.tolist()}")
        scores.append(float(row[last]))
    return scores
