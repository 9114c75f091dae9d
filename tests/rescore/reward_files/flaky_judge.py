"""A judge that is down while the file named by RESCORE_OUTAGE_FILE (the gateway's environment) exists."""

import os

DATA_SOURCES = ("test/judge",)


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    if os.path.exists(os.environ["RESCORE_OUTAGE_FILE"]):  # noqa: ASYNC240 - a test judge, one stat
        raise ConnectionError("judge pool unreachable")
    return 1.0 if str(ground_truth) in solution_str else 0.0
