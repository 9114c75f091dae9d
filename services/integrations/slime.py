"""A slime group reward function scored by the gateway: a prompt's rollouts judged as one group.

slime's stock `remote_rm` (`--rm-url`, the gateway's `/slime` route) posts exactly `{"prompt", "response",
"label"}` per sample: nothing says which samples answer the same prompt. slime knows it when it scores a
whole group (`--group-rm`): it calls the custom reward function with the group's `Sample`s, each carrying
`group_index` (the prompt group's index, counted over the run) and `index`. So:

    --group-rm --custom-rm-path rewardfleet.services.integrations.slime.group_rm
    --rm-url http://reward-gateway:8000          # the gateway's base URL (else $REWARDFLEET_URL)

`group_rm(args, samples)` posts the group in one `POST /score/batch`: `group_id` =
`slime-<run id>-<group_index>` (a run id per process, so two runs on one gateway never share a group),
`group_size` = the number of samples (slime's `n_samples_per_prompt`), `group_index` = each sample's place
in the group. From each sample's `metadata` (slime's `--metadata-key` column) it reads `data_source`
(default "slime"), `reward_fn` and `group_fn` (else the gateway's `groups.default_group_fn`). It returns one
float per sample; a sample whose score failed is logged and gets `remove_sample = True` (slime drops it
from training), with reward 0.0 only as a placeholder slime never trains on.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from rewardfleet.services.client import ScoreResult
from rewardfleet.services.integrations._common import ClientPerLoop, gateway_url

logger = logging.getLogger(__name__)

_RUN = uuid.uuid4().hex[:12]
TIMEOUT_S = 600.0  # a group's answer waits for its judge calls (groups.functions.<name>.timeout_s)
_clients = ClientPerLoop()


def group_bodies(samples: Sequence[Any], run: str = _RUN) -> list[dict[str, Any]]:
    """The `/score` samples of one slime group (see the module docstring)."""
    if not samples:
        return []
    group = samples[0].group_index
    if group is None or any(s.group_index != group for s in samples):
        raise ValueError(
            f"group_rm needs the samples of one prompt group (one Sample.group_index), got "
            f"{[s.group_index for s in samples]}: run slime with --group-rm"
        )
    bodies = []
    for position, sample in enumerate(samples):
        meta = sample.metadata if isinstance(sample.metadata, Mapping) else {}
        body: dict[str, Any] = {
            "data_source": str(meta.get("data_source") or "slime"),
            "solution_str": sample.response,
            "ground_truth": sample.label,
            "prompt": sample.prompt,
            "extra_info": {"slime_index": sample.index},
            "group_id": f"slime-{run}-{group}",
            "group_size": len(samples),
            "group_index": position,
        }
        for key in ("reward_fn", "group_fn"):
            if meta.get(key):
                body[key] = str(meta[key])
        bodies.append(body)
    return bodies


async def group_rm(args: Any, samples: list[Any], **_kwargs: Any) -> list[float]:
    """slime's batched custom reward function (`--group-rm --custom-rm-path ...group_rm`)."""
    url = gateway_url(getattr(args, "rm_url", None))
    client = _clients.get(url, timeout_s=TIMEOUT_S, max_concurrency=64)
    results = await client.score_batch(group_bodies(samples))
    return [_reward(sample, result) for sample, result in zip(samples, results, strict=True)]


def _reward(sample: Any, result: ScoreResult) -> float:
    if result.ok and result.score is not None:
        return float(result.score)
    error = f"{result.error.type}: {result.error.message}" if result.error else result.status
    logger.warning("slime sample %s not scored (%s): removed from training", sample.index, error)
    sample.remove_sample = True
    return 0.0
