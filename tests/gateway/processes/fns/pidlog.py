"""Async: appends "<uid> <pid>" to `log_path` as it starts (the runs the tests count, and which process ran
them), waits `delay_s` when extra_info asks, and scores len(solution_str)."""

import asyncio
import os


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, uid=None, log_path=None):
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{uid} {os.getpid()}\n".encode())  # one write(2): lines never interleave
        finally:
            os.close(fd)
    await asyncio.sleep(float((extra_info or {}).get("delay_s", 0.0)))  # its own work (the behaviour)
    return {"score": float(len(solution_str)), "pid": os.getpid()}
