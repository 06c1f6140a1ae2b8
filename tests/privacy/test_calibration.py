"""Unit tests of icml25.privacy.calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from icml25.privacy import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    gaussian_sigma_zcdp,
    laplace_scale,
    poisson_delta,
)


def test_calibration_accepts_numpy_scalars_and_rejects_bad_values():
    assert laplace_scale(np.float32(2.0), np.int64(4)) == 2.0
    for bad in (True, "1", None):
        with pytest.raises(TypeError, match=r"epsilon must be a real number in \(0, inf\)"):
            laplace_scale(bad)
    for bad in (0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"epsilon must be a real number in \(0, inf\)"):
            laplace_scale(bad)


def test_laplace_and_zcdp_closed_forms():
    assert laplace_scale(0.5, 2.0) == 4.0
    assert gaussian_sigma_zcdp(0.5, 3.0) == pytest.approx(3.0)
    assert gaussian_sigma_zcdp(2.0) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="rho"):
        gaussian_sigma_zcdp(0.0)


def test_analytic_gaussian_solves_the_balle_wang_equation():
    sigma = analytic_gaussian_sigma(1.0, 1e-5)
    assert sigma == pytest.approx(3.7306, abs=1e-3)  # Balle & Wang (2018): 3.73 vs classical 4.84
    assert analytic_gaussian_delta(sigma, 1.0) <= 1e-5
    assert analytic_gaussian_delta(sigma * (1 - 1e-9), 1.0) > 1e-5
    # scales linearly with the sensitivity; works for large epsilon without overflow
    assert analytic_gaussian_sigma(0.3, 1e-6, 5.0) == pytest.approx(
        5 * analytic_gaussian_sigma(0.3, 1e-6), rel=1e-9
    )
    assert 0 < analytic_gaussian_sigma(50.0, 1e-10) < 0.2


def test_analytic_gaussian_delta_matches_privacy_loss_tail():
    # delta(eps) = P(L > eps) - e^eps P(L' < -eps) with L ~ N(mu, 2 mu), mu = D^2 / (2 sigma^2)
    sigma, eps = 1.3, 0.8
    mu = 1 / (2 * sigma**2)
    direct = stats.norm.sf(eps, mu, math.sqrt(2 * mu)) - math.exp(eps) * stats.norm.sf(
        eps, -mu, math.sqrt(2 * mu)
    )
    assert analytic_gaussian_delta(sigma, eps) == pytest.approx(direct, rel=1e-9)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 2.0])
def test_analytic_gaussian_rejects_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        analytic_gaussian_sigma(1.0, bad)


def _poisson_delta_brute(eps, lam, shift):
    k = np.arange(0, 400)
    p = stats.poisson.pmf(k, lam)
    q = stats.poisson.pmf(k - shift, lam)
    return max(np.maximum(0, p - math.exp(eps) * q).sum(), np.maximum(0, q - math.exp(eps) * p).sum())


@pytest.mark.parametrize(
    ("eps", "lam", "shift"), [(0.5, 3.0, 1), (1.0, 20.0, 1), (0.3, 50.0, 2), (2.0, 0.5, 1)]
)
def test_poisson_delta_matches_brute_force(eps, lam, shift):
    assert poisson_delta(eps, lam, shift) == pytest.approx(
        _poisson_delta_brute(eps, lam, shift), rel=1e-9, abs=1e-15
    )


def test_poisson_delta_limits_and_monotonicity():
    # for huge epsilon only the support mismatch P(Z < 1) = e^-lam remains
    assert poisson_delta(40.0, 2.0) == pytest.approx(math.exp(-2.0), rel=1e-12)
    assert poisson_delta(0.5, 30.0) < poisson_delta(0.5, 10.0)
    assert poisson_delta(1.0, 30.0) < poisson_delta(0.5, 30.0)
    with pytest.raises(TypeError, match="sensitivity must be an integer >= 1"):
        poisson_delta(1.0, 2.0, sensitivity=1.5)
    with pytest.raises(ValueError, match="sensitivity must be an integer >= 1"):
        poisson_delta(1.0, 2.0, sensitivity=0)
    with pytest.raises(ValueError, match="lam"):
        poisson_delta(1.0, -2.0)
