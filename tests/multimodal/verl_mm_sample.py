"""Run in verl's own interpreter (antlr4 4.9 first on the path, see test_gateway_images.py): verl 0.9.1's
`RLHFDataset._build_messages` makes a multimodal sample's chat from a dataset row (`<image>` placeholders, a
PIL image and a parquet-style `{"bytes", "path"}` image), the agent loop's `extra_fields["raw_prompt"]` and
the reward manager's merge put it in `extra_info`, and the verl adapter scores it at the gateway given as
argv[1]. Prints the adapter's return value as JSON.
"""

from __future__ import annotations

import io
import json
import sys
from types import SimpleNamespace
from typing import Any

from PIL import Image
from verl.utils.dataset.rl_dataset import RLHFDataset

from rewardfleet.services.integrations import verl_reward


def main() -> None:
    png = io.BytesIO()
    Image.new("RGB", (6, 6), (0, 255, 0)).save(png, format="PNG")
    row: dict[str, Any] = {
        "prompt": [{"role": "user", "content": "<image>Which one is green? <image>"}],
        "images": [Image.new("RGB", (7, 7), (0, 0, 255)), {"bytes": png.getvalue(), "path": None}],
        "extra_info": {"split": "train", "index": 0},
    }
    # The dataset's own method; its `self` needs only the modality keys and a processor to exist.
    dataset = SimpleNamespace(image_key="images", video_key="videos", audio_key="audios", processor=object())
    raw_prompt = RLHFDataset._build_messages(dataset, row, key="prompt")  # type: ignore[arg-type]
    # AgentLoopWorker._agent_loop_postprocess: extra_fields["raw_prompt"]; the reward manager merges the
    # agent loop's extra fields (tool_extra_fields) into extra_info and adds num_turns / rollout scores.
    extra_info = dict(row["extra_info"])
    extra_info.update({"raw_prompt": raw_prompt}.items())
    extra_info["num_turns"] = 2
    extra_info["rollout_reward_scores"] = {}
    out = verl_reward.compute_score_sync(
        "mm_vqa", "the second", "B", extra_info, gateway_url=sys.argv[1], reward_fn="seen_images"
    )
    kinds = [type(p.get("image")).__name__ for p in raw_prompt[0]["content"] if p.get("type") == "image"]
    print(json.dumps({"result": out, "image_parts": kinds}))


if __name__ == "__main__":
    main()
