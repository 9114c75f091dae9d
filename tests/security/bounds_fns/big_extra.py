"""A sync function whose result carries `extra_info["blob_chars"]` characters in its extra."""


def compute_score(data_source, solution_str, ground_truth, extra_info):
    return {"score": 1.0, "blob": "x" * int(extra_info.get("blob_chars", 0))}
