"""An operator's function that reports the addresses it was given: how the tests learn the forwarding
token, as any reward function legitimately holds it."""


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, router_addresses=None):
    return {"score": 1.0, "addresses": router_addresses}
