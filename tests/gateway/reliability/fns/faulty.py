"""Sync: misbehaves as `extra_info["fault"]` says: hang, exit (os._exit), segv, hog (allocate 4 GiB)."""

import ctypes
import os
import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    fault = (extra_info or {}).get("fault")
    if fault == "hang":
        time.sleep(3600)  # a function that never answers (the behaviour)
    elif fault == "exit":
        os._exit(3)
    elif fault == "segv":
        ctypes.string_at(0)
    elif fault == "hog":
        block = bytearray(4 * 1024**3)
        return float(len(block))
    return float(len(solution_str) % 7)
