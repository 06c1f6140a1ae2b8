import math

import pytest

from icml25.harness.stats import is_summary, loglog_slope, summary


def test_summary_uses_the_sample_sd():
    s = summary([1.0, 2.0, 3.0])
    assert s == {"mean": 2.0, "sd": 1.0, "n": 3, "values": [1.0, 2.0, 3.0]} and is_summary(s)
    assert summary([4.0])["sd"] is None


@pytest.mark.parametrize("values", [[], [1.0, math.nan], [math.inf]])
def test_summary_rejects_empty_and_non_finite(values):
    with pytest.raises(ValueError, match="values must"):
        summary(values)


def test_loglog_slope_recovers_the_exponent_of_a_power_law():
    sizes = [5, 10, 20, 40, 100]
    assert loglog_slope(sizes, [3.0 * s**1.5 for s in sizes]) == pytest.approx(1.5)
    assert loglog_slope(sizes, [0.2] * len(sizes)) == pytest.approx(0.0)
    assert loglog_slope([1, 2], [4, 1]) == pytest.approx(-2.0)


@pytest.mark.parametrize(("sizes", "costs"), [([1, 2], [1, 0]), ([0, 2], [1, 2]), ([3, 3], [1, 2]),
                                              ([1, 2, 3], [1, 2]), ([1], [1]), ([1, float("nan")], [1, 2])])
def test_loglog_slope_rejects_what_has_no_slope(sizes, costs):
    with pytest.raises(ValueError):
        loglog_slope(sizes, costs)
