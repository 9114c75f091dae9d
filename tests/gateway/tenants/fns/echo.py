"""Async: scores len(solution_str) after `delay_s` (extra_info); `call_id` tells one call from another."""

import asyncio
import uuid


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    delay_s = (extra_info or {}).get("delay_s", 0.0)
    if delay_s:
        await asyncio.sleep(delay_s)  # the function's own work (the behaviour), not a wait
    return {"score": float(len(solution_str)), "call_id": uuid.uuid4().hex}
