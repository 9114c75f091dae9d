# Declares `messages`: reports what it received (tests/gateway/test_trajectories.py).
def compute_score(data_source, solution_str, ground_truth, extra_info, messages=None):
    return {
        "score": float(len(messages or [])),
        "roles": [m["role"] for m in messages or []],
        "solution_str": solution_str,
        "first_tool_call": (messages[1].get("tool_calls") or [None])[0]
        if messages and len(messages) > 1
        else None,
    }
