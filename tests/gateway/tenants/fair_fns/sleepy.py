"""Sync (runs in the worker pool): sleeps `delay_s` and stamps when it started, so a test can order the
calls as the pool ran them."""

import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    started_ns = time.time_ns()
    time.sleep((extra_info or {}).get("delay_s", 0.0))  # its own work (the behaviour)
    return {"score": 1.0, "started_ns": started_ns}
