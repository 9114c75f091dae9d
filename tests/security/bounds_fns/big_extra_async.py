"""An async function whose result carries `extra_info["blob_chars"]` characters in its extra, as a list of
`extra_info["pieces"]` strings (the size walk must count many values, not only long strings)."""


async def compute_score(data_source, solution_str, ground_truth, extra_info):
    pieces = int(extra_info.get("pieces", 1))
    return {"score": 1.0, "blob": ["x" * (int(extra_info.get("blob_chars", 0)) // pieces)] * pieces}
