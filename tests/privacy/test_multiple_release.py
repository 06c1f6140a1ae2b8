"""Unit tests of icml25.privacy.multiple_release (lossless multiple release)."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from icml25.privacy import (
    GaussianFamily,
    GaussianMultipleRelease,
    LaplaceFamily,
    LaplaceMultipleRelease,
    MultipleRelease,
    PoissonFamily,
    PoissonMultipleRelease,
    poisson_delta,
    sample_discrete_gaussian,
)
from icml25.privacy import multiple_release as mr

LEVELS = [0.5, 1.0, 2.0, 3.0, 4.0]
ORDER = [3, 0, 4, 1, 2]  # a mixed request order: bridge, backward and forward all occur


class BasisRNG(np.random.Generator):
    """Returns the k-th unit vector as the k-th standard-normal draw: the Gaussian engine is linear in its
    draws, so each stored noise becomes its exact coefficient row."""

    def __init__(self, dim: int) -> None:
        super().__init__(np.random.PCG64(0))
        self.dim, self.calls = dim, 0

    def standard_normal(self, size=None, dtype=np.float64, out=None):
        e = np.zeros(self.dim)
        e[self.calls] = 1.0
        self.calls += 1
        return e


def _noises(family, levels, order, n, seed):
    engine = MultipleRelease(np.zeros(n), family, seed=seed)
    out = {}
    for i in order:
        out[i] = engine.release(levels[i])
    return np.array([out[i] for i in range(len(levels))], dtype=float)


# --- Gaussian -------------------------------------------------------------------------------------------


def test_gaussian_exact_covariance_is_brownian_for_every_order():
    s = np.array(LEVELS)
    for order in itertools.permutations(range(5)):
        z = _noises(GaussianFamily(), LEVELS, order, 5, BasisRNG(5))
        assert np.allclose(z @ z.T, np.minimum.outer(s, s), rtol=0, atol=1e-12)


def test_gaussian_backward_and_bridge_coefficients():
    z = _noises(GaussianFamily(), [1.0, 2.0, 4.0], [2, 0, 1], 3, BasisRNG(3))
    # Z4 = 2 xi0; Z1 = Z4/4 + sqrt(3/4) xi1; Z2 = Z1 + (1/3)(Z4 - Z1) + sqrt(1*2/3) xi2
    assert np.allclose(z[2], [2.0, 0.0, 0.0])
    assert np.allclose(z[0], [0.5, math.sqrt(0.75), 0.0])
    assert np.allclose(z[1], z[0] + (z[2] - z[0]) / 3 + [0.0, 0.0, math.sqrt(2 / 3)])


def test_gaussian_privacy_audit_subset_equals_least_noisy_member():
    z = _noises(GaussianFamily(), LEVELS, ORDER, 5, BasisRNG(5))
    cov = z @ z.T
    for size in range(1, 6):
        for subset in itertools.combinations(range(5), size):
            c = cov[np.ix_(subset, subset)]
            ones = np.ones(size)
            mahalanobis = ones @ np.linalg.solve(c, ones)  # squared shift / Delta^2 of the joint law
            assert mahalanobis == pytest.approx(1 / min(LEVELS[i] for i in subset), rel=1e-9)


def test_gaussian_marginals_and_covariance_statistically():
    z = _noises(GaussianFamily(), LEVELS, ORDER, 40_000, 1)
    for i, s in enumerate(LEVELS):
        assert stats.kstest(z[i], stats.norm(scale=math.sqrt(s)).cdf).pvalue > 1e-4
    assert np.abs(np.cov(z) - np.minimum.outer(LEVELS, LEVELS)).max() < 0.05 * max(LEVELS)


def _discrete_gaussian_pmf(variance: float, support: np.ndarray) -> np.ndarray:
    k = np.arange(-400, 401)
    return np.exp(-(support**2) / (2 * variance)) / np.exp(-(k**2) / (2 * variance)).sum()


@pytest.mark.parametrize("variance", [0.3, 2.0, Fraction(49, 4), 100.0])
def test_discrete_gaussian_sampler_matches_the_pmf(variance):
    n = 40_000
    z = sample_discrete_gaussian(variance, n, seed=12)
    assert z.dtype == np.int64 and z.shape == (n,)
    support = np.arange(z.min(), z.max() + 1)
    expected = _discrete_gaussian_pmf(float(variance), support) * n
    observed = np.array([np.sum(z == v) for v in support])
    keep = expected >= 5
    obs = np.append(observed[keep], n - observed[keep].sum())
    exp = np.append(expected[keep], n - expected[keep].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    var = float((_discrete_gaussian_pmf(float(variance), np.arange(-400, 401)) * np.arange(-400, 401) ** 2).sum())
    assert abs(z.var() / var - 1) < 0.05


def test_discrete_gaussian_sampler_seeded_shapes_and_bad_input():
    a, b = sample_discrete_gaussian(2.5, (3, 4), seed=7), sample_discrete_gaussian(2.5, (3, 4), seed=7)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, 4)
    assert not np.array_equal(a, sample_discrete_gaussian(2.5, (3, 4), seed=8))
    assert sample_discrete_gaussian(1.0, seed=0).shape == ()
    assert sample_discrete_gaussian(1.0, 0, seed=0).shape == (0,)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="variance"):
            sample_discrete_gaussian(bad, 3)
    with pytest.raises(TypeError, match="variance"):
        sample_discrete_gaussian("1", 3)
    with pytest.raises((TypeError, ValueError), match="shape"):
        sample_discrete_gaussian(1.0, (-1,))


def test_gaussian_exact_release_is_on_the_grid_with_the_discrete_gaussian_law():
    n, bits = 20_000, 1
    engine = GaussianMultipleRelease(np.full(n, 0.5), exact=True, grid_bits=bits, seed=3)
    y = engine.release(sigma=1.5)
    steps = (y - 0.5) * 2**bits
    np.testing.assert_array_equal(steps, np.round(steps))
    support = np.arange(steps.min(), steps.max() + 1)
    expected = _discrete_gaussian_pmf(1.5**2 * 4**bits, support) * n
    observed = np.array([np.sum(steps == v) for v in support])
    keep = expected >= 5
    assert stats.chisquare(np.append(observed[keep], n - observed[keep].sum()),
                           np.append(expected[keep], n - expected[keep].sum())).pvalue > 1e-3
    np.testing.assert_array_equal(engine.release(sigma=1.5), y)  # the same level: the stored copy
    assert engine.subset_rho([0, 1]) == pytest.approx(1 / (2 * 1.5**2))
    with pytest.raises(NotImplementedError, match="not closed under convolution"):
        engine.release(sigma=3.0)
    with pytest.raises(ValueError, match="grid"):
        GaussianMultipleRelease([0.1], exact=True, grid_bits=3)
    with pytest.raises(TypeError, match="exact"):
        GaussianFamily(exact="yes")


def test_discrete_gaussian_has_no_exact_forward_step_between_variances_1_and_2():
    """Why exact Gaussian multiple release is refused: N_Z(2) is not N_Z(1) plus independent integer noise,
    since the deconvolution (Fourier quotient of the two pmfs) has negative mass."""
    n, k = 4096, np.arange(-200, 201)
    p_lo, p_hi = np.zeros(n), np.zeros(n)
    p_lo[k % n] = _discrete_gaussian_pmf(1.0, k)
    p_hi[k % n] = _discrete_gaussian_pmf(2.0, k)
    increment = np.real(np.fft.ifft(np.fft.fft(p_hi) / np.fft.fft(p_lo)))
    assert increment.sum() == pytest.approx(1.0)
    assert increment[4] < -1e-4  # P(W = 4) would be about -2.0e-4


def test_gaussian_convenience_calibrations():
    g = GaussianMultipleRelease(np.zeros(3), l2_sensitivity=2.0, seed=0)
    g.release(rho=0.5)
    g.release(sigma=3.0)
    g.release(epsilon=1.0, delta=1e-5)
    g.release(1.0)
    assert g.releases[0][0] == pytest.approx(4.0)  # Delta^2 / (2 rho)
    assert g.releases[1][0] == pytest.approx(9.0)
    assert g.subset_rho([0, 1]) == pytest.approx(0.5)
    assert g.subset_rho([1, 3]) == pytest.approx(2.0)  # level 1.0: 4 / 2
    with pytest.raises(ValueError, match="exactly one"):
        g.release(rho=1.0, sigma=1.0)
    with pytest.raises(ValueError, match="together"):
        g.release(epsilon=1.0)


# --- Laplace (float) ------------------------------------------------------------------------------------


def test_laplace_marginals_atoms_and_covariance_any_order():
    n = 40_000
    z = _noises(LaplaceFamily(), LEVELS, ORDER, n, 2)
    for i, b in enumerate(LEVELS):
        assert stats.kstest(z[i], stats.laplace(scale=b).cdf).pvalue > 1e-4
    for i, j in itertools.combinations(range(5), 2):
        p = (LEVELS[i] / LEVELS[j]) ** 2  # all increments between the two are atoms
        eq = np.mean(z[i] == z[j])
        assert abs(eq - p) < 4.5 * math.sqrt(p * (1 - p) / n)
        prod = z[i] * z[j]
        assert abs(prod.mean() - 2 * LEVELS[i] ** 2) < 4.5 * prod.std() / math.sqrt(n)


def _conv_laplace(d, b, b_hi):
    """(f_b * f_{b_hi})(d), the closed form of the Laplace convolution."""
    return (b * math.exp(-abs(d) / b) - b_hi * math.exp(-abs(d) / b_hi)) / (2 * (b * b - b_hi * b_hi))


@pytest.mark.parametrize("d", [0.7, -2.5])
def test_laplace_bridge_posterior_matches_closed_form(d):
    b_lo, b, b_hi, n = 0.5, 1.0, 2.0, 60_000
    rng = np.random.default_rng(3)
    z = mr._laplace_bridge(np.zeros(n), np.full(n, d), b_lo, b, b_hi, rng)
    q1, q2 = (b_lo / b) ** 2, (b / b_hi) ** 2
    f = lambda v, c: math.exp(-abs(v) / c) / (2 * c)  # noqa: E731
    w0, wd = q1 * (1 - q2) * f(d, b_hi), (1 - q1) * q2 * f(d, b)
    total = w0 + wd + (1 - q1) * (1 - q2) * _conv_laplace(d, b, b_hi)
    for value, weight in [(0.0, w0), (d, wd)]:
        p = weight / total
        assert abs(np.mean(z == value) - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    # the continuous part has density ~ f_b(w) f_hi(d - w): compare its CDF by numerical integration
    cont = z[(z != 0.0) & (z != d)]
    grid = np.linspace(-15, 15, 30_001)
    dens = np.exp(-np.abs(grid) / b - np.abs(d - grid) / b_hi)
    cdf = np.cumsum(dens) / dens.sum()
    assert stats.kstest(cont, lambda v: np.interp(v, grid, cdf)).pvalue > 1e-4


def test_laplace_zero_gap_bridge_copies_the_neighbour():
    z_lo = np.array([1.5, -0.25])
    z = mr._laplace_bridge(z_lo, z_lo.copy(), 1.0, 2.0, 3.0, np.random.default_rng(0))
    assert np.array_equal(z, z_lo)


def test_laplace_atoms_copy_neighbours_bit_for_bit():
    z = _noises(LaplaceFamily(), [1.0, 1.1, 5.0, 5.5], [0, 3, 2, 1], 20_000, 4)
    # 1.1 sits between 1 and 5: equality to either neighbour must be exact when it happens
    assert np.mean(z[1] == z[0]) > 0.5 and np.mean(z[2] == z[3]) > 0.5
    p = (1.0 / 1.1) ** 2 * (5.0 / 5.5) ** 2 * (1.1 / 5.0) ** 2
    assert abs(np.mean(z[0] == z[3]) - p) < 4.5 * math.sqrt(p * (1 - p) / 20_000)


def test_laplace_convenience_epsilon():
    lap = LaplaceMultipleRelease(np.arange(4.0), l1_sensitivity=2.0, seed=0)
    lap.release(epsilon=0.5)
    lap.release(epsilon=2.0)
    assert lap.releases[0][0] == pytest.approx(4.0)
    assert lap.subset_epsilon([0, 1]) == pytest.approx(2.0)
    assert lap.subset_epsilon([0]) == pytest.approx(0.5)


# --- Laplace (exact, discrete) --------------------------------------------------------------------------


def _dlap_pmf(g, w):
    p = math.exp(-g)
    return (1 - p) / (1 + p) * p ** np.abs(w)


def _dlap_increment(g_from, g_to, w):
    pa, pb = math.exp(-g_from), math.exp(-g_to)
    q = (pa / pb) * ((1 - pb) / (1 - pa)) ** 2
    return q * (w == 0) + (1 - q) * _dlap_pmf(g_to, w)


def _chi2_pvalue(samples, support, pmf):
    expected = pmf * len(samples)
    observed = np.array([np.sum(samples == v) for v in support])
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    rest_obs, rest_exp = len(samples) - obs.sum(), len(samples) - exp.sum()
    if rest_exp > 1e-6:
        obs, exp = np.append(obs, rest_obs), np.append(exp, rest_exp)
    elif rest_obs:
        return 0.0
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


@pytest.mark.parametrize(
    ("d", "g_lo", "g", "g_hi"),
    [
        (0, Fraction(1), Fraction(1, 2), Fraction(1, 4)),
        (-5, Fraction(1), Fraction(1, 3), Fraction(1, 4)),
        (4, None, Fraction(1, 2), Fraction(1, 5)),
    ],
)
def test_exact_discrete_laplace_bridge_matches_brute_force_posterior(d, g_lo, g, g_hi):
    w = np.arange(-150, 150 + abs(d))
    prior = _dlap_pmf(float(g), w) if g_lo is None else _dlap_increment(float(g_lo), float(g), w)
    post = prior * _dlap_increment(float(g), float(g_hi), d - w)
    src, cache = mr._Bits(np.random.default_rng(5)), {}
    draws = np.array([mr._dlap_bridge_exact(src, d, g_lo, g, g_hi, cache) for _ in range(6000)])
    assert _chi2_pvalue(draws, w, post / post.sum()) > 1e-4


def test_exact_samplers_marginals():
    src = mr._Bits(np.random.default_rng(6))
    geo = np.array([mr._geometric_exact(src, Fraction(1, 3)) for _ in range(6000)])
    p = math.exp(-1 / 3)
    assert _chi2_pvalue(geo, np.arange(100), (1 - p) * p ** np.arange(100)) > 1e-4
    fwd = np.array([mr._dlap_forward_exact(src, Fraction(1), Fraction(1, 2), {}) for _ in range(6000)])
    w = np.arange(-80, 80)
    assert _chi2_pvalue(fwd, w, _dlap_increment(1.0, 0.5, w)) > 1e-4
    tg = np.array([mr._truncated_geometric_exact(src, Fraction(1, 30), 5) for _ in range(3000)])
    pmf = np.exp(-np.arange(6) / 30)
    assert _chi2_pvalue(tg, np.arange(6), pmf / pmf.sum()) > 1e-4
    pois = np.array([mr._poisson_exact(src, Fraction(3.7)) for _ in range(4000)])
    assert _chi2_pvalue(pois, np.arange(40), stats.poisson.pmf(np.arange(40), 3.7)) > 1e-4
    bern = [mr._bernoulli_exp_neg(src, 5, 2) for _ in range(20_000)]
    assert abs(np.mean(bern) - math.exp(-2.5)) < 4.5 * math.sqrt(math.exp(-2.5) / 20_000)


def test_exp_bounds_are_rigorous():
    getcontext().prec = 60
    for x in [
        Fraction(0),
        Fraction(1, 10**9),
        Fraction(1, 3),
        Fraction(7, 2),
        Fraction(123, 7),
        Fraction(40),
    ]:
        lo, hi = mr._exp_neg_fixed(x, 80)
        true = (-(Decimal(x.numerator) / Decimal(x.denominator))).exp() * (Decimal(2) ** 80)
        assert Decimal(lo) <= true <= Decimal(hi)
        assert hi - lo <= 4


def test_lazy_categorical_is_exact_on_rational_weights():
    src = mr._Bits(np.random.default_rng(7))
    weights = [(1, 1), (0, 0), (3, 3), (6, 6)]  # exact intervals: probabilities 0.1, 0, 0.3, 0.6
    draws = np.array([mr._lazy_categorical(src, lambda w: weights) for _ in range(20_000)])
    counts = np.bincount(draws, minlength=4)
    assert counts[1] == 0
    assert stats.chisquare(counts[[0, 2, 3]], 20_000 * np.array([0.1, 0.3, 0.6])).pvalue > 1e-4


def test_exact_laplace_engine_any_order_marginals_and_grid():
    n, levels = 2500, [Fraction(1), Fraction(2), Fraction(4)]
    engine = MultipleRelease(np.zeros(n), LaplaceFamily(exact=True, grid_bits=0), seed=8)
    out = {i: engine.release(levels[i]) for i in [2, 0, 1]}
    for i, b in enumerate(levels):
        assert np.array_equal(out[i], np.round(out[i]))
        w = np.arange(-60, 61)
        assert _chi2_pvalue(out[i], w, _dlap_pmf(1 / float(b), w)) > 1e-4
    # Z(1) == Z(4) iff the increment is 0: its atom q = (p1/p4)((1-p4)/(1-p1))^2 or a discrete-Laplace zero
    p1, p4 = math.exp(-1.0), math.exp(-0.25)
    q = (p1 / p4) * ((1 - p4) / (1 - p1)) ** 2
    p = q + (1 - q) * (1 - p4) / (1 + p4)
    assert abs(np.mean(out[0] == out[2]) - p) < 4.5 * math.sqrt(p * (1 - p) / n)


def test_exact_laplace_outputs_on_grid_and_epsilon_exact():
    x = np.array([0.5, 1.25, -3.0])
    lap = LaplaceMultipleRelease(x, exact=True, grid_bits=3, seed=0)
    y = lap.release(epsilon=0.7)
    lap.release(epsilon=0.1)
    lap.release(epsilon=0.3)
    assert np.array_equal(y * 8, np.round(y * 8))
    assert lap.subset_epsilon([0, 1, 2]) == pytest.approx(0.7, rel=1e-15)
    assert isinstance(lap.releases[0][0], Fraction)
    with pytest.raises(ValueError, match="grid"):
        LaplaceMultipleRelease([0.1], exact=True, grid_bits=3)


# --- Poisson --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("exact", [False, True])
def test_poisson_marginals_and_covariance(exact):
    n = 3000 if exact else 40_000
    lams = [1.0, 2.5, 6.0]
    engine = MultipleRelease(np.zeros(n, dtype=int), PoissonFamily(exact=exact), seed=9)
    out = {i: engine.release(lams[i]) for i in [1, 2, 0]}
    for i, lam in enumerate(lams):
        assert out[i].dtype == np.int64
        assert _chi2_pvalue(out[i], np.arange(40), stats.poisson.pmf(np.arange(40), lam)) > 1e-4
    assert np.all(np.diff(np.array([out[0], out[1], out[2]]), axis=0) >= 0)  # a Poisson process is monotone
    prod = (out[0] - 1.0) * (out[2] - 6.0)
    assert abs(prod.mean() - 1.0) < 4.5 * prod.std() / math.sqrt(n)


def test_poisson_convenience_and_validation():
    p = PoissonMultipleRelease([0, 3, 7], seed=0)
    a = p.release(lam=4.0)
    b = p.release(lam=1.0)
    assert np.all(b <= a) and np.all(b >= [0, 3, 7])
    assert p.subset_delta([0, 1], epsilon=1.0) == pytest.approx(poisson_delta(1.0, 1.0))
    with pytest.raises(ValueError, match="non-negative integers"):
        PoissonMultipleRelease([1.5, 2])
    with pytest.raises(ValueError, match="non-negative integers"):
        PoissonMultipleRelease([-1, 2])
    with pytest.raises(TypeError, match="counts"):
        PoissonMultipleRelease([True, False])
    with pytest.raises(ValueError, match="sensitivity"):
        PoissonFamily(sensitivity=0)


# --- Engine behaviour and bad input ---------------------------------------------------------------------


def test_same_and_nearly_same_level_return_the_stored_copy():
    g = GaussianMultipleRelease(np.ones(4), seed=0)
    y1 = g.release(2.0)
    y2 = g.release(2.0 * (1 + 1e-13))
    assert np.array_equal(y1, y2) and y1 is not y2
    assert g.levels == [2.0] and len(g.releases) == 2
    y3 = g.release(2.0 * (1 + 1e-9))
    assert not np.array_equal(y1, y3) and len(g.levels) == 2


def test_determinism_and_release_is_a_new_array():
    x = np.array([1.0, 2.0, 3.0])

    def run(seed):
        lap = LaplaceMultipleRelease(x, seed=seed)
        return [lap.release(scale=b) for b in (2.0, 0.5, 1.0, 4.0)]

    a, b, c = run(11), run(11), run(12)
    assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))
    assert not np.array_equal(a[0], c[0])
    a[0][:] = 0
    assert np.all(x == [1.0, 2.0, 3.0])


def test_secret_is_not_exposed_and_releases_are_copies():
    g = GaussianMultipleRelease(np.ones(2), seed=0)
    g.release(1.0)
    g.releases[0][1][:] = 99.0
    assert not np.any(g.releases[0][1] == 99.0)
    assert not any(hasattr(g, name) for name in ("x", "secret", "data"))


def test_zero_length_and_scalar_inputs():
    for family in (GaussianFamily(), LaplaceFamily(), LaplaceFamily(exact=True), PoissonFamily()):
        x = np.zeros(0, dtype=int) if isinstance(family, PoissonFamily) else np.zeros(0)
        engine = MultipleRelease(x, family, seed=0)
        for level in (2.0, 1.0, 1.5):
            assert engine.release(level).shape == (0,)
    engine = MultipleRelease(3.0, LaplaceFamily(), seed=0)
    engine.release(2.0)
    engine.release(1.0)
    assert engine.release(1.5).shape == ()


@pytest.mark.parametrize("x", [0.0, np.array(0.0), 2.5])
def test_exact_laplace_releases_a_scalar(x):
    """issue 19: the exact family's output of a 0-d secret raised AttributeError ('int' has no 'ravel')."""
    engine = LaplaceMultipleRelease(x, 1.0, exact=True, seed=0)
    for eps in (1.0, 2.0, 0.5):
        y = engine.release(epsilon=eps)
        assert y.shape == () and y.dtype == np.float64 and np.isfinite(y)
    assert len(engine.releases) == 3


@pytest.mark.parametrize("level", [0, -1.0, math.inf, math.nan])
def test_bad_levels_are_rejected(level):
    g = MultipleRelease(np.zeros(2), GaussianFamily(), seed=0)
    with pytest.raises(ValueError, match=r"level \(variance\) must be a real number in \(0, inf\)"):
        g.release(level)


def test_bad_inputs_are_rejected():
    with pytest.raises(TypeError, match="real number"):
        MultipleRelease(np.zeros(2), GaussianFamily(), seed=0).release("1")
    with pytest.raises(TypeError, match="real number"):
        MultipleRelease(np.zeros(2), GaussianFamily(), seed=0).release(True)
    with pytest.raises(ValueError, match="finite"):
        GaussianMultipleRelease([1.0, math.nan])
    with pytest.raises(ValueError, match="finite"):
        LaplaceMultipleRelease([math.inf])
    with pytest.raises(TypeError, match="NoiseFamily"):
        MultipleRelease(np.zeros(2), "gaussian")
    with pytest.raises(ValueError, match="l2_sensitivity"):
        GaussianFamily(0.0)
    with pytest.raises(TypeError, match=r"grid_bits must be an integer in \[-60, 60\]"):
        LaplaceFamily(grid_bits=1.5)
    with pytest.raises(ValueError, match=r"grid_bits must be an integer in \[-60, 60\]"):
        LaplaceFamily(grid_bits=61)
    with pytest.raises(TypeError, match="exact must be True or False"):
        LaplaceFamily(exact=1)
    with pytest.raises(ValueError, match="strictly increasing"):
        GaussianFamily().forward(np.zeros(2), 2.0, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="seed"):
        MultipleRelease(np.zeros(2), GaussianFamily(), seed="seed")


def test_subset_privacy():
    lap = LaplaceMultipleRelease(np.zeros(2), seed=0)
    for eps in (0.2, 1.0, 0.5):
        lap.release(epsilon=eps)
    assert lap.subset_privacy([0, 2]) == pytest.approx(2.0)
    assert lap.subset_epsilon([0, 1, 2]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least one"):
        lap.subset_privacy([])
    with pytest.raises(ValueError, match=r"indices\[0\] must be an integer in \[-3, 2\]"):
        lap.subset_privacy([5])
    with pytest.raises(TypeError, match=r"indices\[1\] must be an integer"):
        lap.subset_privacy([0, 1.0])


@pytest.mark.parametrize("family", [GaussianFamily(), LaplaceFamily(), LaplaceFamily(exact=True), PoissonFamily()])
def test_sampler_hooks_reject_bad_levels_and_noise(family):
    """issue 19: the per-step hooks raised math-domain, comparison or AttributeError on bad arguments."""
    rng = np.random.default_rng(0)
    z = np.array([1, 0, 2]) if isinstance(family, PoissonFamily) else np.array([0.5, -0.25, 0.0])
    with pytest.raises(ValueError, match="s must be a real number in"):
        family.sample(-1.0, (3,), rng)
    with pytest.raises(TypeError, match="shape"):
        family.sample(1.0, "abc", rng)
    with pytest.raises(TypeError, match="z must be an array-like"):
        family.forward(None, 1.0, 2.0, rng)
    with pytest.raises(TypeError, match="s_to must be a real number"):
        family.forward(z, 1.0, "abc", rng)
    with pytest.raises(ValueError, match="s < s_later must be strictly increasing"):
        family.backward(z, 2.0, 1.0, rng)
    with pytest.raises(ValueError, match="z_lo and z_hi must have the same shape"):
        family.bridge(z, z[:2], 1.0, 2.0, 4.0, rng)
    with pytest.raises(ValueError, match="x and z must have the same shape"):
        family.output(z[:2], z)
    assert family.sample(Fraction(1) if family.exact else 1.0, (), rng).shape == ()


def test_statistics_of_one_level_reject_bad_levels():
    """issue 19: rho(0) divided by zero; a bad lam was reported as 'rate'; bad indices raised IndexError."""
    with pytest.raises(ValueError, match="s must be"):
        GaussianFamily().rho(0.0)
    with pytest.raises(ValueError, match="b must be"):
        LaplaceFamily().epsilon(math.nan)
    with pytest.raises(TypeError, match="s must be"):
        PoissonFamily().delta("abc", 1.0)
    engine = PoissonMultipleRelease(np.array([3, 0, 5]), seed=0)
    with pytest.raises(TypeError, match="lam must be"):
        engine.release(lam="abc")
    engine.release(lam=2.0)
    with pytest.raises(TypeError, match="indices must be a sequence"):
        engine.subset_delta(None, 1.0)


@pytest.mark.parametrize("exact", [False, True])
def test_poisson_releases_a_scalar_count_in_any_order(exact):
    """issue 19: a backward or bridge step on a 0-d count raised AttributeError ('int' has no 'astype')."""
    engine = PoissonMultipleRelease(3, exact=exact, seed=0)
    for lam in (2.0, 1.0, 1.5, 4.0):
        y = engine.release(lam=lam)
        assert y.shape == () and y.dtype == np.int64 and y >= 3


@pytest.mark.parametrize("x", [0.0, np.array(0.0), 2.5])
def test_exact_gaussian_releases_a_scalar(x):
    engine = GaussianMultipleRelease(x, 1.0, exact=True, seed=0)
    y = engine.release(rho=0.5)
    assert y.shape == () and y.dtype == np.float64 and np.isfinite(y)
    assert engine.release(sigma=1.0) == y  # rho = 0.5 at sensitivity 1 is sigma = 1: the same level
