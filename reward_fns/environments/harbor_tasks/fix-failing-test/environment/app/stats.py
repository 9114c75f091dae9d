"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) / len(values)


def median(values):
    """The middle value of a non-empty sequence (the mean of the two middle ones for an even length)."""
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def mode(values):
    """The most frequent value of a non-empty sequence; the smallest one when several are as frequent."""
    if not values:
        raise ValueError("mode of an empty sequence")
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return max(counts, key=lambda value: counts[value])
