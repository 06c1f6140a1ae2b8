"""Gradual release of sparse histograms in time independent of the domain size (Andersson et al., ICML 2025).

Example
-------
>>> from icml25.privacy import SparseHistogramGradualRelease
>>> counts = {3: 40, 17: 25, 10**11: 7}                      # key -> count over a domain of size 10^12
>>> hist = SparseHistogramGradualRelease(counts, domain_size=10**12, variant="B", seed=0)
>>> first = hist.release(sigma=4.0, threshold=30.0)          # noisy, heavily thresholded
>>> second = hist.release(sigma=2.0, threshold=15.0)         # more accurate, coupled to the first
>>> sorted(second)[:2]                                        # released keys (noise may add a few zero bins)
[3, 17]

OUR READING of the paper's sparse-histogram result (only its abstract was available to us).  A histogram over
a domain ``{0, ..., d-1}`` (``d`` up to 2^63) with few non-zero bins is released several times with DECREASING
Gaussian noise ``sigma_1 > sigma_2 > ...`` (gradual release); every bin's noise is a Brownian path in the
variance (the lossless Gaussian multiple release of :mod:`icml25.privacy.multiple_release`), and release ``j``
reports the bins with ``x_i + Z_i(sigma_j^2) > threshold_j``.

* Variant ``"A"`` (stability histogram, Gaussian sparse histogram mechanism): only the non-zero bins carry
  noise; zero bins are never reported.  Cost ``O(nnz)`` per release.  Its privacy needs the usual extra
  ``delta`` of the thresholds (a bin present in only one neighbour may be reported); choosing thresholds is
  the caller's job.
* Variant ``"B"`` (noise on all ``d`` bins, thresholded): exactly the Gaussian multiple release of the whole
  ``d``-vector followed by thresholding (post-processing, so the union of releases is as private as the last,
  least noisy one), but zero bins are materialised lazily.  An untouched zero bin (below every threshold so
  far) first crosses at step ``j`` with probability ``p_j = P(V_j > tau_j | V_a <= tau_a, a < j)``; the number
  of new crossings is ``Binomial(#untouched, p_j)``, their keys are drawn uniformly among untouched keys, and
  each new bin's noise path is drawn from its exact conditional law by rejection.  Cost depends on the number
  of reported bins, not on ``d``.

``p_j`` is computed by one-dimensional filtering (ours, instead of a multivariate normal CDF, which cannot
resolve the probabilities ~1e-12 needed when ``d ~ 10^12``): by time inversion ``V_a = s_a W(1/s_a)`` for a
Brownian motion ``W``, so the untouched bins follow a random walk ``W(u_a)``, ``u_a = 1/s_a`` increasing,
killed above ``theta_a = tau_a / s_a``; its density is propagated on a grid by Simpson-rule convolution.
Float64 noise: not hardened against floating-point attacks.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Mapping

import numpy as np
from scipy import stats
from scipy.interpolate import CubicSpline

from icml25.privacy.multiple_release import GaussianFamily
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_choice, check_instance, check_scalar

__all__ = ["SparseHistogramGradualRelease", "ZeroBinFilter", "clear_filter_cache"]

#: refuse a step that would materialise more zero bins than this (the threshold is far too low for the domain)
MAX_NEW_BINS = 10_000_000
_SPAN = 15.0  # grid half-width in standard deviations (density below exp(-112) of its peak is dropped)
_MIN_POINTS = 1001
_MAX_POINTS = 20001


class ZeroBinFilter:
    """Crossing probabilities of an untouched zero bin under decreasing-noise thresholded Brownian releases.

    ``step(s, tau)`` takes the next (smaller) variance ``s`` and threshold ``tau`` and returns
    ``p = P(Z(s) > tau | Z(s_a) <= tau_a for all earlier steps a)`` for ``Z`` a Brownian path in the variance.
    Internally ``W(u) = Z(1/u) / (1/u)`` is a Brownian motion in ``u = 1/s`` and the filter keeps the density
    of ``W(u_last)`` restricted to "below every threshold", on a uniform grid anchored at its upper end.
    """

    def __init__(self) -> None:
        self.u: float | None = None
        self.exhausted = False  # every untouched bin has crossed (threshold below the whole distribution)
        self._top = self._h = 0.0
        self._density = np.empty(0)

    def _grid(self, top: float, h: float, n: int) -> np.ndarray:
        return top - h * np.arange(n)

    def step(self, s: float, tau: float) -> float:
        """Advance to variance ``s`` (smaller than the previous one) with threshold ``tau``; return ``p``."""
        s = check_scalar(s, "s", "real", min=0.0, inclusive="neither")
        tau = check_scalar(tau, "tau", "real")
        u = 1.0 / s
        theta, sd = tau * u, math.sqrt(u)
        top, bottom = min(theta, _SPAN * sd), -_SPAN * sd
        if self.u is None:
            p = float(stats.norm.sf(tau / math.sqrt(s)))
            if top <= bottom:
                self.u, self.exhausted = u, True
                return 1.0
            h = (top - bottom) / (_MIN_POINTS - 1)
            density = stats.norm.pdf(self._grid(top, h, _MIN_POINTS), scale=sd)
        else:
            if self.exhausted:
                raise RuntimeError("no untouched zero bin is left; the filter cannot advance")
            if u <= self.u:
                raise ValueError(f"s must be smaller than the previous variance {1.0 / self.u} "
                                 f"(gradual release needs strictly decreasing sigma), got {s}")
            kernel_sd = math.sqrt(u - self.u)
            h = min(self._h, kernel_sd / 8.0, (top - bottom) / (_MIN_POINTS - 1) if top > bottom else self._h)
            if (top - bottom) / h > _MAX_POINTS or (self._top + _SPAN * math.sqrt(self.u)) / h > _MAX_POINTS:
                raise ValueError(
                    "consecutive sigmas are too close for the zero-bin filter (ratio above ~0.9999); "
                    "skip the step or merge it with the previous one"
                )
            old = self._refined(h)
            weights = old * _simpson_weights(old.size, h)
            old_grid = self._grid(self._top, h, old.size)
            mass = weights.sum()
            p = float(np.dot(weights, stats.norm.sf((theta - old_grid) / kernel_sd)) / mass)
            if top <= bottom:
                self.u, self.exhausted = u, True
                return p
            n_new = int((top - bottom) / h) + 1
            # density(w'_k) = sum_i weights_i phi(w'_k - w_i); w'_k - w_i = (top - self._top) + (i - k) h
            offsets = (top - self._top) + h * np.arange(-(n_new - 1), old.size)
            kernel = stats.norm.pdf(offsets, scale=kernel_sd)
            full = np.convolve(weights[::-1], kernel)
            density = full[old.size + n_new - 2 - np.arange(n_new)] / mass
        self.u, self._top, self._h, self._density = u, top, h, density
        return p

    def _refined(self, h: float) -> np.ndarray:
        """The stored density re-sampled (cubic spline of its logarithm) on spacing ``h <= self._h``."""
        if h >= self._h:
            return self._density.copy()
        bottom = self._top - self._h * (self._density.size - 1)
        n = int((self._top - bottom) / h) + 1
        old_grid = self._grid(self._top, self._h, self._density.size)[::-1]
        log_old = np.log(np.maximum(self._density[::-1], 1e-300))
        return np.exp(CubicSpline(old_grid, log_old)(self._grid(self._top, h, n)))


class SparseHistogramGradualRelease:
    """Gradual release (decreasing noise) of a sparse histogram over a huge domain; see the module docstring.

    ``counts`` maps integer keys in ``[0, domain_size)`` to non-negative integer counts (zeros are dropped).
    ``release(sigma, threshold)`` returns ``{key: noisy count}`` for the bins above the threshold at this
    step. Attributes: ``sigmas``, ``thresholds``, ``crossing_probabilities`` (``p_j`` of variant B; 0 for
    variant A), ``n_materialised`` (bins that carry a noise path).
    """

    def __init__(
        self,
        counts: Mapping[int, int],
        domain_size: int,
        *,
        variant: str = "B",
        seed: Seed = None,
    ) -> None:
        self.variant = check_choice(variant, "variant", ("A", "B"))
        self.domain_size = check_scalar(domain_size, "domain_size", "int", min=0, max=2**63 - 1)
        check_instance(counts, "counts", Mapping, "a mapping key -> count")
        items = []
        for key, value in counts.items():
            key = check_scalar(key, "counts key", "int", min=0)
            if key >= self.domain_size:
                raise ValueError(f"counts key must be an integer in [0, {self.domain_size - 1}] "
                                 f"(below domain_size={self.domain_size}), got {key}")
            value = check_scalar(value, f"counts[{key}]", "int", min=0)
            if value:
                items.append((key, value))
        items.sort()
        self._rng = as_generator(seed)
        self._family = GaussianFamily()
        self._keys = np.array([k for k, _ in items], dtype=np.int64)
        self._x = np.array([v for _, v in items], dtype=np.float64)
        self._z = np.empty(0)
        self._key_set = set(self._keys.tolist())
        self._history: tuple[tuple[float, float], ...] = ()
        self.sigmas: list[float] = []
        self.thresholds: list[float] = []
        self.crossing_probabilities: list[float] = []

    @property
    def n_materialised(self) -> int:
        """Number of bins that carry a noise path (non-zero bins and zero bins that crossed a threshold)."""
        return int(self._keys.size)

    def release(self, sigma: float, threshold: float) -> dict[int, float]:
        """Release step ``j``: noise standard deviation ``sigma`` (smaller than before) and threshold
        ``tau``."""
        sigma = check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither")
        threshold = check_scalar(threshold, "threshold", "real")
        if self.sigmas and sigma >= self.sigmas[-1]:
            raise ValueError(f"gradual release needs decreasing sigma: got {sigma} after {self.sigmas[-1]}")
        s, rng = sigma**2, self._rng
        if self.variant == "B" and self.domain_size > self._keys.size:
            history = (*self._history, (s, threshold))
            p = _filter_after(history)[1]  # the schedule is committed only if the step is accepted
            n_new = int(rng.binomial(self.domain_size - self._keys.size, min(p, 1.0)))
            if n_new > MAX_NEW_BINS:
                raise ValueError(
                    f"threshold {threshold} would report about {n_new} zero bins (> {MAX_NEW_BINS}); raise it"
                )
            self._history = history
            self.crossing_probabilities.append(p)
        else:
            n_new = 0
            self.crossing_probabilities.append(0.0)
        if not self.sigmas:
            self._z = self._family.sample(s, self._x.shape, rng)
        else:
            self._z = self._family.backward(self._z, s, self.sigmas[-1] ** 2, rng)
        self.sigmas.append(sigma)
        self.thresholds.append(threshold)
        if n_new:
            self._add_crossing_bins(n_new)
        y = self._x + self._z
        above = y > threshold
        return {int(k): float(v) for k, v in zip(self._keys[above], y[above], strict=True)}

    def _add_crossing_bins(self, n_new: int) -> None:
        keys = self._new_keys(n_new)
        paths = self._crossing_noise(n_new)
        order = np.argsort(np.concatenate([self._keys, keys]), kind="stable")
        self._keys = np.concatenate([self._keys, keys])[order]
        self._x = np.concatenate([self._x, np.zeros(n_new)])[order]
        self._z = np.concatenate([self._z, paths])[order]
        self._key_set.update(keys.tolist())

    def _new_keys(self, n_new: int) -> np.ndarray:
        """``n_new`` distinct keys uniformly among the keys that carry no noise path yet."""
        untouched = self.domain_size - len(self._key_set)
        if 2 * n_new > untouched:
            pool = np.setdiff1d(np.arange(self.domain_size, dtype=np.int64), self._keys, assume_unique=True)
            return np.sort(self._rng.choice(pool, size=n_new, replace=False))
        chosen: set[int] = set()
        while len(chosen) < n_new:
            for key in self._rng.integers(0, self.domain_size, size=2 * (n_new - len(chosen))).tolist():
                if key not in self._key_set and key not in chosen:
                    chosen.add(key)
                    if len(chosen) == n_new:
                        break
        return np.array(sorted(chosen), dtype=np.int64)

    def _crossing_noise(self, n: int, max_rounds: int = 10_000) -> np.ndarray:
        """Current noise of ``n`` zero bins conditioned on crossing now and on staying below at every earlier
        step.

        Exact rejection: ``V_j ~ N(0, s_j)`` conditioned on ``> tau_j`` (Robert's exponential proposal), then
        ``V_{a} = V_{a+1} + N(0, s_a - s_{a+1})`` backwards over the earlier (noisier) steps; keep the path if
        ``V_a <= tau_a`` for every earlier step.
        """
        s = np.array(self.sigmas) ** 2
        taus = np.array(self.thresholds)
        out: list[np.ndarray] = []
        need = n
        for _ in range(max_rounds):
            batch = max(2 * need, 64)
            v = self.sigmas[-1] * _normal_tail(self._rng, taus[-1] / self.sigmas[-1], batch)
            ok, walk = np.ones(batch, dtype=bool), v.copy()
            for a in range(len(s) - 2, -1, -1):
                walk = walk + math.sqrt(s[a] - s[a + 1]) * self._rng.standard_normal(batch)
                ok &= walk <= taus[a]
            out.append(v[ok][:need])
            need -= out[-1].size
            if need == 0:
                return np.concatenate(out)
        raise RuntimeError("rejection sampling of crossing paths did not finish; thresholds are inconsistent")


@functools.lru_cache(maxsize=512)
def _filter_after(history: tuple[tuple[float, float], ...]) -> tuple[ZeroBinFilter, float]:
    """The zero-bin filter after the steps ``history`` (``(variance, threshold)`` pairs) and the last ``p``.

    Cached: the filter depends only on the schedule, not on the data or the domain size, so many histograms
    released with the same schedule share it.  ``clear_filter_cache()`` empties the cache.
    """
    previous = _filter_after(history[:-1])[0] if len(history) > 1 else ZeroBinFilter()
    advanced = copy.copy(previous)  # step() replaces the arrays, so the cached filter stays untouched
    return advanced, advanced.step(*history[-1])


def clear_filter_cache() -> None:
    """Empty the cache of zero-bin filters (e.g. to time the whole computation)."""
    _filter_after.cache_clear()


def _simpson_weights(n: int, h: float) -> np.ndarray:
    """Composite Simpson weights on ``n`` equally spaced points (index 0 = the top end); for even ``n`` the
    last interval, at the far lower tail, uses the trapezoid rule."""
    m = n if n % 2 else n - 1
    w = np.zeros(n)
    w[:m] = 2.0
    w[1:m:2] = 4.0
    w[0] = w[m - 1] = 1.0
    w[:m] *= h / 3.0
    if m < n:
        w[m - 1] += h / 2.0
        w[m] = h / 2.0
    return w


def _normal_tail(rng: np.random.Generator, a: float, n: int) -> np.ndarray:
    """``n`` exact draws of a standard normal conditioned on ``> a`` (Robert 1995 for ``a > 0``)."""
    out: list[np.ndarray] = []
    need = n
    lam = 0.5 * (a + math.sqrt(a * a + 4.0)) if a > 0 else 0.0
    while need:
        if a <= 0:
            x = rng.standard_normal(2 * need + 16)
            x = x[x > a]
        else:
            x = a + rng.standard_exponential(2 * need + 16) / lam
            x = x[rng.random(x.size) <= np.exp(-0.5 * (x - lam) ** 2)]
        out.append(x[:need])
        need -= out[-1].size
    return np.concatenate(out)
