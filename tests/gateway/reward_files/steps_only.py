# Returns per-step (and per-turn) scores from extra_info, and a score only when extra_info has one.
def compute_score(data_source, solution_str, ground_truth, extra_info):
    out = {key: extra_info[key] for key in ("step_scores", "turn_scores", "score") if key in extra_info}
    if extra_info.get("nan_step"):
        out["step_scores"] = [1.0, float("nan")]
    if extra_info.get("long_steps"):
        out["step_scores"] = [1.0] * 5000
    return out
