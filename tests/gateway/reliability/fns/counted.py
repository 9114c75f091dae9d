"""Sync: appends the sample's uid to `log_path` (one line per call), then scores len(solution_str) % 7."""

import os
import time


def compute_score(
    data_source, solution_str, ground_truth, extra_info=None, uid=None, log_path=None, delay_s=0.0
):
    if delay_s:
        time.sleep(delay_s)  # the function's own work (the behaviour), not a wait
    if log_path:
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{uid}\n".encode())  # one write(2) per line: lines from processes do not interleave
        finally:
            os.close(fd)
    return float(len(solution_str) % 7)
