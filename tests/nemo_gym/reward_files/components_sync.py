# A sync function (run in the gateway's worker processes) returning the components named in extra_info.
def compute_score(data_source, solution_str, ground_truth=None, extra_info=None):
    components = extra_info.get("components", {})
    return {
        "score": sum(components.values()) if isinstance(components, dict) else 0.0,
        "reward_components": components,
    }
