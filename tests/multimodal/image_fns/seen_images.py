"""Reports what images it was given: the gateway injects `images` to a function that declares it."""


async def compute_score(data_source, solution_str, ground_truth, extra_info, images=None, prompt=None):
    return {"score": 1.0, "n_images": len(images or []), "first_image": (images or [""])[0][:30]}
