"""Noise calibration for single releases (one place in the package; bandits use it too).

* Laplace, pure epsilon-DP: ``b = Delta_1 / epsilon``.
* Gaussian, rho-zCDP (Bun & Steinke 2016): ``sigma = Delta_2 / sqrt(2 rho)``.
* Gaussian, (epsilon, delta)-DP: the analytic Gaussian mechanism of Balle & Wang (ICML 2018, Theorem 8),
  solved for ``sigma`` by bisection.
* Poisson (additive ``Poisson(lam)`` noise on integer counts): the tight ``delta(epsilon)`` computed from the
  two neighbouring probability mass functions.

Float-based research code: not hardened against floating-point attacks (Mironov 2012).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from icml25.utils.validation import check_scalar

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "gaussian_sigma_zcdp",
    "laplace_scale",
    "poisson_delta",
]


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """Scale ``b = Delta_1 / epsilon`` of the Laplace mechanism for pure epsilon-DP."""
    sensitivity = check_scalar(sensitivity, "sensitivity", "real", min=0.0, inclusive="neither")
    return sensitivity / check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")


def gaussian_sigma_zcdp(rho: float, sensitivity: float = 1.0) -> float:
    """Standard deviation ``sigma = Delta_2 / sqrt(2 rho)`` of the Gaussian mechanism for rho-zCDP."""
    sensitivity = check_scalar(sensitivity, "sensitivity", "real", min=0.0, inclusive="neither")
    return sensitivity / math.sqrt(2.0 * check_scalar(rho, "rho", "real", min=0.0, inclusive="neither"))


def analytic_gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """The exact ``delta`` of the Gaussian mechanism at ``epsilon`` (Balle & Wang 2018, Theorem 8).

    ``delta = Phi(D/(2 sigma) - eps sigma/D) - exp(eps) Phi(-D/(2 sigma) - eps sigma/D)`` with ``D`` the
    l2 sensitivity; the second term is evaluated in log space so large ``epsilon`` does not overflow.
    """
    sigma = check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither")
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    sens = check_scalar(sensitivity, "sensitivity", "real", min=0.0, inclusive="neither")
    a, b = sens / (2.0 * sigma), epsilon * sigma / sens
    return float(special.ndtr(a - b) - math.exp(epsilon + special.log_ndtr(-a - b)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ``sigma`` (to relative 1e-12) for which the Gaussian mechanism is (epsilon, delta)-DP.

    Bisection on :func:`analytic_gaussian_delta`, which decreases in ``sigma`` (Balle & Wang 2018,
    Algorithm 1 solves the same equation).  The returned value is the upper end of the final bracket, so
    the mechanism is (epsilon, delta)-DP at it.
    """
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    delta = check_scalar(delta, "delta", "real", min=0.0, max=1.0, inclusive="neither")
    sens = check_scalar(sensitivity, "sensitivity", "real", min=0.0, inclusive="neither")
    hi = sens
    while analytic_gaussian_delta(hi, epsilon, sens) > delta:
        hi *= 2.0
    lo = hi
    while lo > 1e-300 and analytic_gaussian_delta(lo, epsilon, sens) <= delta:
        lo /= 2.0
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        if analytic_gaussian_delta(mid, epsilon, sens) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def poisson_delta(epsilon: float, lam: float, sensitivity: int = 1) -> float:
    """Tight ``delta(epsilon)`` of adding ``Poisson(lam)`` noise to a count with sensitivity ``Delta``.

    OUR READING of the "Poisson mechanism": ``y = x + Z``, ``Z ~ Poisson(lam)``, neighbours differ by at most
    ``Delta`` (an integer).  The hockey-stick divergence is worst for the largest shift, so with
    ``P = Poisson(lam)`` and ``Q = P`` shifted by ``Delta``
    ``delta = max(sum_k max(0, P(k) - e^eps Q(k)), sum_k max(0, Q(k) - e^eps P(k)))``; the support mismatch
    (``k < Delta``, where ``Q = 0``) counts in full.  The sum runs until the remaining upper tail is below
    1e-17 and that tail is added, so the value is an upper bound accurate to ~1e-16.  There is no pure DP
    (``delta > 0`` for every epsilon).
    """
    epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither")
    lam = check_scalar(lam, "lam", "real", min=0.0, inclusive="neither")
    shift = check_scalar(sensitivity, "sensitivity", "int", min=1)
    k_max = math.ceil(lam + 10.0 * math.sqrt(lam) + 30.0)
    while stats.poisson.sf(k_max, lam) > 1e-17:
        k_max *= 2
    k_max += shift
    k = np.arange(k_max + 1)
    log_p = stats.poisson.logpmf(k, lam)
    log_q = stats.poisson.logpmf(k - shift, lam)
    with np.errstate(invalid="ignore", over="ignore"):
        d_pq = np.where(
            np.isneginf(log_q),
            np.exp(log_p),
            np.exp(log_p) * -np.expm1(np.minimum(0.0, epsilon + log_q - log_p)),
        )
        d_qp = np.where(
            np.isneginf(log_q), 0.0, np.exp(log_q) * -np.expm1(np.minimum(0.0, epsilon + log_p - log_q))
        )
    tail = float(stats.poisson.sf(k_max - shift, lam))
    return float(min(1.0, max(d_pq.sum(), d_qp.sum()) + tail))
