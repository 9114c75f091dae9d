"""Async stand-in judge on the fleet pool `judge`: reports 1000 prompt tokens of usage per call (priced by the
test config), after `delay_s` (extra_info)."""

import asyncio
import uuid


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    delay_s = (extra_info or {}).get("delay_s", 0.0)
    if delay_s:
        await asyncio.sleep(delay_s)  # the function's own work (the behaviour), not a wait
    return {
        "score": 1.0,
        "call_id": uuid.uuid4().hex,
        "judge_pool": "judge",
        "usage": {"prompt_tokens": 1000, "completion_tokens": 0},
    }
