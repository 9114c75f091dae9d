import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    # time.monotonic() is one clock for every process on Linux: tests compare these intervals across workers.
    started = time.monotonic()
    time.sleep(extra_info["sleep_s"])  # the function's own work (the behaviour), not a wait
    return {"score": 1.0, "started": started, "finished": time.monotonic()}
