import asyncio


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    await asyncio.sleep(float((extra_info or {}).get("sleep_s", 0.0)))  # its own work (the behaviour)
    return float(len(solution_str))
