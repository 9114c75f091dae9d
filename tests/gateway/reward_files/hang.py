import time


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    while True:
        time.sleep(3600)  # a function that never answers (the behaviour)
