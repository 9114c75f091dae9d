"""Scores a line after `extra_info["delay_s"]` seconds: 1.0 when the response holds the ground truth."""

import asyncio

DATA_SOURCES = ("test/slow",)


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(float((extra_info or {}).get("delay_s", 0.0)))  # its own work (the behaviour)
    return 1.0 if str(ground_truth) in solution_str else 0.0
