"""Sync: appends "<uid> <unix time>" to `log_path` (one line per run: the side effect the fleet tests count),
sleeps `delay_s` when extra_info asks for it, and scores len(solution_str)."""

import os
import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None, uid=None, log_path=None):
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{uid} {time.time():.3f}\n".encode())  # one write(2): lines never interleave
        finally:
            os.close(fd)
    delay_s = (extra_info or {}).get("delay_s", 0.0)
    if delay_s:
        time.sleep(delay_s)  # the function's own work (the behaviour), not a wait
    return float(len(solution_str))
