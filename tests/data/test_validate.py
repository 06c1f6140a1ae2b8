import numpy as np
import pytest

from icml25.data._validate import check_int


def test_check_int_accepts_python_and_numpy_integers():
    assert check_int("n", 3, 1) == 3 and check_int("n", np.int64(2), 2) == 2
    assert type(check_int("n", np.int32(5), 0)) is int


@pytest.mark.parametrize("value", [0, True, 2.0, "3", None])
def test_check_int_rejects_small_bool_and_non_integers(value):
    with pytest.raises(ValueError, match=r"n must be an integer >= 1, got"):
        check_int("n", value, 1)
