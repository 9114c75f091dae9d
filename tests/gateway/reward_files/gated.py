import os
import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    # Holds its worker until the test creates the gate file, so a test decides when workers free up instead
    # of guessing with sleeps. time.monotonic() is one clock for every process on Linux.
    started = time.monotonic()
    deadline = started + 20  # below the 30 s call limit: a test that never opens the gate fails, not hangs
    while not os.path.exists(extra_info["gate"]):
        if time.monotonic() > deadline:
            raise TimeoutError("the gate never opened")
        time.sleep(0.01)  # polling the gate file, bounded above: a worker process has no test helpers
    return {"score": 1.0, "started": started, "finished": time.monotonic()}
