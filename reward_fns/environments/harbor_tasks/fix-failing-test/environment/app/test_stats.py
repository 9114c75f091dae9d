import pytest
from stats import mean, median, mode


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_mode_tie_takes_smallest():
    assert mode([3, 3, 1, 1, 2]) == 1


def test_mode_single():
    assert mode([7, 5, 7]) == 7
