"""Unit tests of icml25.learning_theory.neuroalgebraic (neurovariety dimensions, singular points)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy

from icml25.learning_theory.neuroalgebraic import (
    AmbiguousRankError,
    ImplicitVariety,
    PolyNet,
    activation_degree_threshold,
    ah_secant_dim,
    exact_rank,
    expected_dim,
    is_singular_point,
    linear_net_dim,
    neurovariety_dim,
    numerical_rank,
    param_rank,
    quadratic_coefficients,
    quadratic_shallow_equations,
    rank_with_samples,
    singularity_report,
    sym_coordinates,
)

# ----------------------------------------------------------------------------- the network


def test_polynet_sizes_and_ambient_dimension():
    net = PolyNet((3, 4, 2, 2), r=3)
    assert net.n_params == 12 + 8 + 4
    assert net.n_hidden == 6
    assert net.degree == 9
    assert net.ambient_dim == 2 * math.comb(3 + 9 - 1, 9)
    with_bias = PolyNet((3, 4, 1), r=2, bias=True)
    assert with_bias.n_params == 4 * 4 + 1 * 5
    assert with_bias.ambient_dim == math.comb(3 + 2, 2)  # polynomials of degree <= 2 in 3 variables


def test_forward_matches_explicit_formula_and_pack_roundtrip():
    net = PolyNet((3, 2, 1), r=3, bias=True)
    theta = net.random_params(0)
    (W1, b1), (W2, b2) = net.unpack(theta)
    X = np.random.default_rng(1).standard_normal((5, 3))
    manual = ((X @ W1.T + b1) ** 3) @ W2.T + b2
    np.testing.assert_allclose(net.forward(theta, X), manual, rtol=1e-12)
    np.testing.assert_array_equal(net.pack(net.unpack(theta)), theta)


def test_homogeneous_outputs_scale_with_degree():
    net = PolyNet((2, 3, 2, 1), r=2)
    theta, X = net.random_params(3), net.random_points(4, 3)
    np.testing.assert_allclose(net.forward(theta, 2.0 * X), 2.0**4 * net.forward(theta, X), rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0)


@pytest.mark.parametrize("widths,r,bias", [((3, 4, 1), 3, False), ((2, 3, 2, 2), 2, True), ((3, 2, 3), 1, False)])
def test_jacobian_matches_complex_step(widths, r, bias):
    net = PolyNet(widths, r, bias)
    theta, X = net.random_params(5), net.random_points(7, 6)
    J = net.jacobian(theta, X)
    h = 1e-30
    cs = np.stack([net.forward(theta + 1j * h * np.eye(net.n_params)[k], X).imag.ravel() / h
                   for k in range(net.n_params)], axis=1)
    np.testing.assert_allclose(J, cs, rtol=1e-12, atol=1e-14)


def test_exact_jacobian_matches_float_on_integers():
    net = PolyNet((2, 2, 1), r=3)
    theta = np.array([1, -2, 3, 1, 2, -1], dtype=object)
    X = np.array([[1, 2], [-1, 3], [2, 0]], dtype=object)
    exact = net.jacobian(theta, X)
    assert isinstance(exact[0, 0], int)
    np.testing.assert_allclose(net.jacobian(theta.astype(float), X.astype(float)), exact.astype(float))
    np.testing.assert_array_equal(net.jacobian(theta, X, modulus=7), exact % 7)


# ----------------------------------------------------------------------------- dimensions against theory


@pytest.mark.parametrize("d0", [2, 3, 4, 5])
@pytest.mark.parametrize("r", [2, 3, 4])
def test_shallow_dimension_is_alexander_hirschowitz(d0, r):
    for d1 in range(1, 9):
        assert neurovariety_dim((d0, d1, 1), r, seed=d1).dim == ah_secant_dim(d0, d1, r), (d0, d1, r)


@pytest.mark.parametrize("widths,r,dim,edim", [
    ((3, 5, 1), 4, 14, 15), ((4, 9, 1), 4, 34, 35), ((5, 7, 1), 3, 34, 35), ((4, 2, 1), 2, 7, 8),
    ((5, 3, 1), 2, 12, 15), ((3, 2, 2, 1), 2, 7, 8), ((2, 3, 2), 2, 6, 6), ((3, 3, 3), 2, 15, 15),
    ((2, 2, 2, 2), 2, 8, 8), ((2, 2, 3), 2, 8, 8), ((3, 3, 1), 3, 9, 9),
])
def test_known_dimensions_and_defects(widths, r, dim, edim):
    res = neurovariety_dim(widths, r, seed=0)
    assert (res.dim, res.expected, res.defect) == (dim, edim, edim - dim)
    assert res.spectral_gap >= 1e6
    assert res.sample_complexity == math.ceil(dim / widths[-1])
    assert res.filling == (dim == PolyNet(widths, r).ambient_dim)


def test_ah_table_values():
    assert ah_secant_dim(3, 5, 4) == 14 and ah_secant_dim(5, 14, 4) == 69
    assert ah_secant_dim(5, 3, 2) == 12 and ah_secant_dim(5, 5, 2) == 15 and ah_secant_dim(5, 9, 2) == 15
    assert ah_secant_dim(3, 6, 4) == 15 and ah_secant_dim(2, 3, 5) == 6
    assert expected_dim((3, 5, 1), 4) == 15


@pytest.mark.parametrize("widths", [(3, 2, 3), (4, 3, 2, 5), (2, 4, 3, 2), (4, 1, 4), (5, 2, 4)])
@pytest.mark.parametrize("bias", [False, True])
def test_linear_networks_are_rank_bounded_matrices(widths, bias):
    assert neurovariety_dim(widths, 1, bias=bias, seed=0).dim == linear_net_dim(widths, bias=bias)


def test_expected_dim_overcounts_linear_networks():
    assert linear_net_dim((3, 2, 3)) == 8 < expected_dim((3, 2, 3), 1) == 9


def test_bias_shallow_quadratic_is_rank_bounded_plus_constant():
    # f(x) = (x, 1) S (x, 1)^T with S = sum of d1 rank-one terms + c0 e e^T: dim = rank<=d1 sym (d0+1) + 1
    d0, d1 = 3, 2
    res = neurovariety_dim((d0, d1, 1), 2, bias=True, seed=0)
    assert res.dim == d1 * (d0 + 1) - math.comb(d1, 2) + 1 == 8
    assert res.expected == 9 and res.ambient == 10


def test_float_and_exact_modes_agree():
    for widths, r, bias in [((3, 5, 1), 4, False), ((3, 2, 2, 1), 2, False), ((2, 2, 2, 1), 2, True)]:
        float_dim = neurovariety_dim(widths, r, bias=bias, seed=0).dim
        assert neurovariety_dim(widths, r, bias=bias, exact=True, seed=0).dim == float_dim
    rational = neurovariety_dim((3, 2, 1), 2, exact=True, prime=None, seed=0)
    assert rational.dim == 5 and rational.exact and rational.spectral_gap == math.inf


def test_determinism_under_seed():
    a = neurovariety_dim((3, 4, 2), 2, seed=11)
    b = neurovariety_dim((3, 4, 2), 2, seed=11)
    assert a == b
    net = PolyNet((3, 4, 2), 2)
    np.testing.assert_array_equal(net.random_params(4), net.random_params(np.random.default_rng(4)))


# ----------------------------------------------------------------------------- ranks


def test_numerical_rank_gap_policy():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((20, 20)))
    V, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    clean = U[:, :8] @ np.diag([1, 1, 1, 1, 1, 1e-15, 1e-16, 0]) @ V.T
    res = numerical_rank(clean)
    assert res.rank == 5 and res.gap > 1e6
    assert numerical_rank(U[:, :8] @ V.T).gap == math.inf
    blurry = U[:, :8] @ np.diag([1, 1, 1, 1, 1, 1e-7, 1e-12, 0]) @ V.T
    with pytest.raises(AmbiguousRankError, match="rank ambiguous.*exact=True"):
        numerical_rank(blurry)
    assert numerical_rank(np.zeros((3, 2))).rank == 0


def test_exact_rank_over_gf_and_rationals():
    A = np.array([[1, 2, 3], [2, 4, 6], [1, 0, 7]], dtype=object)
    assert exact_rank(A) == 2 and exact_rank(A, prime=None) == 2
    halves = np.array([[Fraction(1, 2), 1], [1, 2]], dtype=object)
    assert exact_rank(halves, prime=None) == 1
    assert exact_rank(np.array([[5, 0], [0, 1]], dtype=object), prime=5) == 1  # 5 = 0 mod 5


def test_rank_with_samples_is_min_of_samples_and_dim():
    assert [rank_with_samples((3, 5, 1), 4, m, seed=m) for m in range(1, 21)] == [min(m, 14) for m in range(1, 21)]
    assert rank_with_samples((2, 3, 2), 2, 2, seed=0) == 4  # two outputs per sample


def test_param_rank_drops_at_subnetworks():
    net = PolyNet((3, 2, 1), 2)
    theta = net.random_params(0)
    generic = param_rank((3, 2, 1), 2, theta, seed=0)
    zero_out = theta.copy()
    zero_out[-1] = 0.0
    parallel = theta.copy()
    parallel[3:6] = theta[0:3]
    assert generic == 5
    assert param_rank((3, 2, 1), 2, zero_out, seed=0) == 4
    assert param_rank((3, 2, 1), 2, parallel, seed=0) == 3
    integer = np.array([1, 2, -1, 3, 0, 2, 1, 0], dtype=object)
    assert param_rank((3, 2, 1), 2, integer, exact=True, seed=0) == 4
    rational = np.array([Fraction(1, 2), 2, -1, 3, 0, 2, sympy.Rational(1, 3), 1], dtype=object)
    assert param_rank((3, 2, 1), 2, rational, exact=True, seed=0) == 5


def test_activation_degree_threshold():
    assert activation_degree_threshold((2, 2, 2), 4, seed=0) == 1
    assert activation_degree_threshold((3, 3, 3), 4, seed=0) == 1
    assert activation_degree_threshold((3, 1, 3), 4, seed=0) is None  # width-one bottleneck
    # (3, 2, 2, 1) is defective at r = 2 (7 < 8) but meets the expected dimension at r = 3, 4
    assert neurovariety_dim((3, 2, 2, 1), 3, seed=0).defect == 0
    assert activation_degree_threshold((3, 2, 2, 1), 4, seed=0) == 3


# ----------------------------------------------------------------------------- implicit equations and singular points


def test_quadratic_coefficients_give_the_function():
    net = PolyNet((4, 3, 1), 2)
    theta, X = net.random_params(2), net.random_points(6, 2)
    S = quadratic_coefficients(theta, 4, 3)
    np.testing.assert_allclose(np.einsum("mi,ij,mj->m", X, S, X), net.forward(theta, X)[:, 0], rtol=1e-12)
    np.testing.assert_allclose(S, S.T)
    assert sym_coordinates(S).shape == (10,)


def test_quadratic_equations_are_minors():
    hyper = quadratic_shallow_equations(3, 2)
    assert len(hyper.equations) == 1 and hyper.codim == 1
    s = hyper.symbols
    assert sympy.expand(hyper.equations[0] - sympy.Matrix([[s[0], s[1], s[2]], [s[1], s[3], s[4]],
                                                           [s[2], s[4], s[5]]]).det()) == 0
    assert quadratic_shallow_equations(4, 2).codim == 3 and len(quadratic_shallow_equations(4, 1).equations) > 0
    assert quadratic_shallow_equations(3, 3).equations == []


@pytest.mark.parametrize("d0,d1", [(3, 2), (4, 2), (4, 3)])
def test_subnetworks_are_singular_points(d0, d1):
    variety = quadratic_shallow_equations(d0, d1)
    net = PolyNet((d0, d1, 1), 2)
    theta = net.random_params(1)
    point = sym_coordinates(quadratic_coefficients(theta, d0, d1))
    assert not is_singular_point(variety, point)
    theta[-1] = 0.0  # last hidden neuron switched off: a width-(d1-1) function
    narrow = sym_coordinates(quadratic_coefficients(theta, d0, d1))
    assert is_singular_point(variety, narrow)
    generic, sub = singularity_report(variety, point), singularity_report(variety, narrow)
    assert generic["residual"] < 1e-12 and sub["residual"] < 1e-12
    assert generic["grad_norm"] / sub["grad_norm"] >= 1e8
    assert is_singular_point(variety, np.zeros(len(variety.symbols)))  # apex of the cone


def test_is_singular_point_rejects_points_off_the_variety():
    variety = quadratic_shallow_equations(3, 2)
    with pytest.raises(ValueError, match="not on the variety"):
        is_singular_point(variety, sym_coordinates(np.eye(3)))
    with pytest.raises(ValueError, match="coordinates"):
        is_singular_point(variety, np.ones(5))
    with pytest.raises(ValueError, match="tol"):
        is_singular_point(variety, np.zeros(6), tol=0)
    assert not is_singular_point(quadratic_shallow_equations(3, 3), sym_coordinates(np.eye(3)))


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("widths,r,err,match", [
    ((3,), 2, ValueError, "at least 2"),
    ((3, 0, 1), 2, ValueError, r"widths\[1\] must be an integer >= 1"),
    ((3, 2.5, 1), 2, TypeError, r"widths\[1\] must be an int"),
    ((3, True, 1), 2, TypeError, "must be an int"),
    ("31", 2, TypeError, "widths must be a sequence"),
    ((3, 2, 1), 0, ValueError, "r must be an integer >= 1"),
    ((3, 2, 1), 2.0, TypeError, "r must be an int"),
])
def test_bad_architecture(widths, r, err, match):
    with pytest.raises(err, match=match):
        neurovariety_dim(widths, r)


def test_other_bad_input():
    with pytest.raises(ValueError, match="limit is"):
        neurovariety_dim((6, 10, 10, 1), 4)  # degree 64 in 6 variables: far too many monomials
    with pytest.raises(ValueError, match="prime must be a prime"):
        neurovariety_dim((2, 2, 1), 2, exact=True, prime=100)
    with pytest.raises(TypeError, match="exact must be True or False"):
        neurovariety_dim((2, 2, 1), 2, exact="yes")
    with pytest.raises(ValueError, match="n_seeds must be an integer >= 1"):
        neurovariety_dim((2, 2, 1), 2, n_seeds=0)
    with pytest.raises(TypeError, match="bias must be True or False"):
        PolyNet((2, 2, 1), 2, bias=1)
    net = PolyNet((2, 2, 1), 2)
    with pytest.raises(ValueError, match=r"theta must have shape \(6,\)"):
        net.forward(np.zeros(5), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"X must have shape \(M, 2\)"):
        net.forward(np.zeros(6), np.zeros((3, 3)))
    with pytest.raises(TypeError, match="integer or rational theta"):
        param_rank((2, 2, 1), 2, np.full(6, 0.5), exact=True)
    with pytest.raises(ValueError, match="non-finite"):
        numerical_rank(np.array([[np.inf, 1.0]]))
    with pytest.raises(ValueError, match="too large for symbolic minors"):
        quadratic_shallow_equations(8, 2)


# ---------------------------------------------------------------- argument checks (issue 19)


def test_polynet_and_helpers_reject_bad_arguments_clearly():
    net = PolyNet((2, 2, 1), 2)
    theta = net.random_params(0)
    with pytest.raises(ValueError, match="theta must contain only finite values"):
        net.jacobian(np.where(np.arange(theta.size) == 0, np.nan, theta), net.random_points(3, 0))
    with pytest.raises(ValueError, match="X must have shape"):
        net.forward(theta, np.zeros((0, 2)))
    with pytest.raises(TypeError, match="layers"):
        net.pack(None)
    with pytest.raises(TypeError, match="bias"):
        linear_net_dim((2, 2, 1), bias="yes")
    with pytest.raises(ValueError, match="d1 must be"):
        quadratic_coefficients(theta, 2, 0)
    with pytest.raises(TypeError, match="variety"):
        is_singular_point("variety", np.zeros(3))
    with pytest.raises(ValueError, match="point must be a 1-d array"):
        is_singular_point(quadratic_shallow_equations(2, 1), np.ones((1, 3)))


def test_exact_rank_rejects_floats_and_composite_primes():
    with pytest.raises(TypeError, match="J"):
        exact_rank(np.array([[0.5, 1.0], [1.0, 2.0]]))  # floats were truncated by int() before
    with pytest.raises(ValueError, match="prime"):
        exact_rank(np.array([[1, 0], [0, 1]]), prime=4)
    with pytest.raises(ValueError, match="J"):
        exact_rank(np.zeros((0, 2), dtype=int))


def test_implicit_variety_checks_its_equations_and_codim():
    x, y, z = sympy.symbols("x y z")
    with pytest.raises(ValueError, match="codim"):
        ImplicitVariety([x * y], (x, y), 2)
    with pytest.raises(ValueError, match="equations"):
        ImplicitVariety([x * z], (x, y), 1)
    with pytest.raises(TypeError, match="equations"):
        ImplicitVariety(["x*y"], (x, y), 1)
    with pytest.raises(ValueError, match="point"):
        singularity_report(ImplicitVariety([x * y], (x, y), 1), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="S"):
        sym_coordinates(np.array([[1.0, np.nan], [np.nan, 1.0]]))
