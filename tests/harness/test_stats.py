import math

import pytest

from icml25.harness.stats import is_summary, summary


def test_summary_uses_the_sample_sd():
    s = summary([1.0, 2.0, 3.0])
    assert s == {"mean": 2.0, "sd": 1.0, "n": 3, "values": [1.0, 2.0, 3.0]} and is_summary(s)
    assert summary([4.0])["sd"] is None


@pytest.mark.parametrize("values", [[], [1.0, math.nan], [math.inf]])
def test_summary_rejects_empty_and_non_finite(values):
    with pytest.raises(ValueError, match="values must"):
        summary(values)
