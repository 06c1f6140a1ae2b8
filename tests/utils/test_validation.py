"""The shared argument checks: TypeError for a wrong type, ValueError for a wrong value, one message form."""

import math

import numpy as np
import pytest

from icml25.utils.validation import (
    NotFittedError,
    check_array,
    check_bool,
    check_choice,
    check_consistent_length,
    check_is_fitted,
    check_probability_vector,
    check_scalar,
    check_sequence,
)


def test_check_scalar_returns_python_numbers():
    assert check_scalar(np.int64(3), "n", "int", min=1) == 3 and type(check_scalar(np.int32(5), "n", "int")) is int
    assert type(check_scalar(np.float32(0.5), "p", "real", min=0, max=1)) is float
    assert check_scalar(2, "x", "real") == 2.0
    assert check_scalar(math.inf, "t", "real", min=0, allow_inf=True) == math.inf


@pytest.mark.parametrize(("value", "exc"), [(True, TypeError), (2.0, TypeError), ("3", TypeError), (None, TypeError),
                                            (0, ValueError), (-4, ValueError)])
def test_check_scalar_int_rules(value, exc):
    with pytest.raises(exc, match=r"^n must be an integer >= 1, got "):
        check_scalar(value, "n", "int", min=1)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_check_scalar_rejects_non_finite_reals(value):
    with pytest.raises(ValueError, match=r"x must be a finite real number, got"):
        check_scalar(value, "x", "real")


@pytest.mark.parametrize(("inclusive", "ok", "bad"), [("both", [0.0, 1.0], [-0.1, 1.1]), ("left", [0.0], [1.0]),
                                                       ("right", [1.0], [0.0]), ("neither", [0.5], [0.0, 1.0])])
def test_check_scalar_bounds(inclusive, ok, bad):
    for v in ok:
        assert check_scalar(v, "p", "real", min=0.0, max=1.0, inclusive=inclusive) == v
    for v in bad:
        with pytest.raises(ValueError, match=r"p must be a real number in [\[(]0, 1[\])], got"):
            check_scalar(v, "p", "real", min=0.0, max=1.0, inclusive=inclusive)


def test_check_scalar_names_an_infinite_bound_it_accepts():
    with pytest.raises(ValueError, match=r"rho must be a real number in \[0, inf\], got -1"):
        check_scalar(-1, "rho", "real", min=0, allow_inf=True)


def test_check_scalar_rejects_bad_kind_and_inclusive():
    with pytest.raises(ValueError, match="kind must be one of"):
        check_scalar(1, "n", "float")
    with pytest.raises(ValueError, match="inclusive must be one of"):
        check_scalar(1, "n", "int", inclusive="open")


def test_check_array_shapes_and_values():
    assert check_array([[1, 2], [3, 4]], "X", ndim=2).shape == (2, 2)
    assert check_array([1, 2], "x", dtype=float).dtype == np.float64
    assert check_array(np.ones((3, 2)), "X", shape=(None, 2)).shape == (3, 2)
    with pytest.raises(ValueError, match=r"X must be a 2-d array, got shape \(3,\)"):
        check_array([1, 2, 3], "X", ndim=2)
    with pytest.raises(ValueError, match=r"X must have shape \(\*, 3\), got shape \(3, 2\)"):
        check_array(np.ones((3, 2)), "X", shape=(None, 3))
    with pytest.raises(ValueError, match="x must contain only finite values"):
        check_array([1.0, math.nan], "x")
    assert np.isnan(check_array([1.0, math.nan], "x", finite=False)[1])
    with pytest.raises(ValueError, match="x must have at least 2 entries, got 1"):
        check_array([1.0], "x", min_len=2)
    for bad in (None, "abc", [1, "a"], {"a": 1}):
        with pytest.raises(TypeError, match="x must be an array-like of numbers"):
            check_array(bad, "x")


def test_check_array_copy_and_torch():
    a = np.zeros(3)
    assert check_array(a, "a") is a and check_array(a, "a", copy=True) is not a
    torch = pytest.importorskip("torch")
    assert check_array(torch.ones(2, 3), "t", ndim=2).shape == (2, 3)


def test_check_consistent_length_names_the_arguments():
    assert check_consistent_length([1, 2], np.zeros(2), names=("X", "y")) == 2
    with pytest.raises(ValueError, match="X and y must have the same length, got 2, 3"):
        check_consistent_length([1, 2], [1, 2, 3], names=("X", "y"))


def test_check_choice_bool_sequence_and_probability():
    assert check_choice("ip", "method", ("mst", "ip")) == "ip"
    with pytest.raises(ValueError, match=r"method must be one of 'mst', 'ip', got 'x'"):
        check_choice("x", "method", ("mst", "ip"))
    with pytest.raises(ValueError, match="method must be one of"):
        check_choice(["unhashable"], "method", ("mst",))
    assert check_bool(np.bool_(True), "flag") is True
    with pytest.raises(TypeError, match="flag must be True or False, got 1"):
        check_bool(1, "flag")
    assert check_sequence((1, 2), "sizes", item=lambda v, n: check_scalar(v, n, "int")) == [1, 2]
    with pytest.raises(TypeError, match=r"sizes\[1\] must be an integer"):
        check_sequence([1, 2.5], "sizes", item=lambda v, n: check_scalar(v, n, "int"))
    with pytest.raises(TypeError, match="sizes must be a sequence"):
        check_sequence("12", "sizes")
    np.testing.assert_allclose(check_probability_vector([0.25, 0.75], "p"), [0.25, 0.75])
    with pytest.raises(ValueError, match="p must sum to 1"):
        check_probability_vector([0.5, 1.5], "p")
    with pytest.raises(ValueError, match="p must have non-negative entries"):
        check_probability_vector([-0.5, 1.5], "p")


def test_check_is_fitted():
    class Est:
        pass

    est = Est()
    with pytest.raises(NotFittedError, match="this Est instance is not fitted yet"):
        check_is_fitted(est, "coef_")
    est.coef_ = 1
    check_is_fitted(est, ["coef_"])
