"""Async: the reward model's score of `solution_str` through the router (`/v1/embeddings`, last value)."""


async def compute_score(
    data_source, solution_str, ground_truth, extra_info, reward_router_address, http_client
):
    url = f"http://{reward_router_address}/v1/embeddings"
    async with http_client.post(url, json={"model": "rm", "input": solution_str}) as resp:
        resp.raise_for_status()
        body = await resp.json()
    return float(body["data"][-1]["embedding"][-1])
