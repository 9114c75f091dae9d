"""Async: waits `extra_info["delay_s"]` (default 0.2 s), then scores len(solution_str) % 7."""

import asyncio


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(float((extra_info or {}).get("delay_s", 0.2)))  # its own work (the behaviour)
    return float(len(solution_str) % 7)
