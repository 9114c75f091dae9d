"""A sync reward function that raises what `extra_info["raise"]` names: every kind of BaseException that is
not an Exception (the gateway must fail only this sample)."""


class Custom(BaseException):
    pass


def _exc(name: str) -> BaseException:
    return {
        "SystemExit": SystemExit(0),
        "SystemExit3": SystemExit(3),
        "KeyboardInterrupt": KeyboardInterrupt(),
        "GeneratorExit": GeneratorExit(),
        "Custom": Custom("custom base exception"),
    }[name]


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    name = (extra_info or {}).get("raise")
    if name:
        raise _exc(name)
    return 1.0


def grade(sample, item):
    """A python grader (configured by the operator) that raises the same way."""
    if item.get("raise"):
        raise _exc(item["raise"])
    return 1.0


def group_exit(samples, scores):
    """A sync group function that raises what the first sample's extra_info names."""
    raise _exc(samples[0]["extra_info"]["group_raise"])
