"""Always fails: the trainer routes then use `?error_score=`."""


def compute_score(data_source, solution_str, ground_truth, extra_info):
    raise ValueError("this function always fails")
