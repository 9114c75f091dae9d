"""The async twin of exits_sync.py: raised inside the gateway's event loop."""


class Custom(BaseException):
    pass


def _exc(name: str) -> BaseException:
    return {
        "SystemExit": SystemExit(0),
        "SystemExit3": SystemExit(3),
        "KeyboardInterrupt": KeyboardInterrupt(),
        "GeneratorExit": GeneratorExit(),
        "Custom": Custom("custom base exception"),
        "CancelledError": __import__("asyncio").CancelledError(),
    }[name]


async def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    name = (extra_info or {}).get("raise")
    if name:
        raise _exc(name)
    return 1.0


async def grade(sample, item):
    if item.get("raise"):
        raise _exc(item["raise"])
    return 1.0


async def group_exit_async(samples, scores):
    raise _exc(samples[0]["extra_info"]["group_raise"])
