"""Andersson, Retschmeier, Nelson & Pagh, "Private Lossless Multiple Release" (ICML 2025, arXiv:2505.22449).

Example
-------
>>> import numpy as np
>>> from icml25.privacy import GaussianMultipleRelease, LaplaceMultipleRelease
>>> x = np.array([10.0, 20.0, 30.0])
>>> gauss = GaussianMultipleRelease(x, l2_sensitivity=1.0, seed=0)
>>> y_public = gauss.release(rho=0.1)          # noisy copy for the least trusted analyst
>>> y_trusted = gauss.release(rho=1.0)         # a more accurate copy, requested later
>>> gauss.subset_rho([0, 1])                   # both together cost only the larger rho
1.0
>>> lap = LaplaceMultipleRelease(x, l1_sensitivity=1.0, seed=1)
>>> y1, y2 = lap.release(epsilon=1.0), lap.release(epsilon=0.2)   # any order
>>> lap.subset_epsilon([0, 1])
1.0

A curator holding ``x`` hands out noisy copies ``y_i = x + Z_i`` one at a time, at privacy levels requested in
ANY order.  The release is *lossless*: each ``y_i`` has exactly the distribution of a single fresh release at
its own level, and any subset of the releases is exactly as private as its least noisy member.  The noises are
the values of one Markov process with independent increments at the requested "times" ``s_i`` (noise levels);
a new level is sampled conditionally on its already sampled neighbours (forward increment, backward "earlier
point given a later one", or bridge between two points):

* Gaussian, ``s = sigma^2``: Brownian motion (Brownian bridge); ``Cov(Z_i, Z_j) = min(s_i, s_j) I``.
* Laplace, ``s = b``: the decomposition of Koufogiannis, Han & Pappas (2016):
  ``Lap(b2) = Lap(b1) + W`` with ``W = 0`` w.p. ``(b1/b2)^2`` else ``W ~ Lap(b2)``; backward and bridge
  posteriors are two atoms plus a piecewise-exponential part, sampled in closed form.
* Poisson, ``s = lam``: a Poisson process (forward ``Poisson`` increments, binomial thinning backwards).

Everything noisier than the least noisy release of a subset is that release plus increments independent of
``x`` (post-processing), hence losslessness.  Related: Whitehouse, Ramdas, Wu & Rogers (NeurIPS 2022),
"Brownian noise reduction" (the forward-only Gaussian case).

Floating-point caveat: the default noise paths draw float64 NumPy noise and are NOT hardened against
floating-point attacks (Mironov 2012; Jin et al. 2022); do not use them for production releases.
``exact=True`` (Laplace, Poisson) samples on an integer grid with exact integer/rational arithmetic
(Canonne, Kamath & Steinke 2020 style Bernoulli(exp(-gamma)) and geometric samplers; exact lazy
comparisons for the posterior mixture weights), so outputs are exact grid points.  Gaussian ``exact=True``
gives one exact discrete-Gaussian release (:func:`sample_discrete_gaussian`, Canonne, Kamath & Steinke 2020,
Algorithm 3) and refuses a second level: the discrete Gaussian is not closed under convolution, so there is no
exact Brownian coupling (see :class:`GaussianFamily`).  Exact mode loops over the coordinates in Python
(roughly 10^3 - 10^4 coordinates per second).  The random bits come from the NumPy generator you pass
(seedable, not a cryptographic generator).
"""

from __future__ import annotations

import bisect
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction

import numpy as np

from icml25.privacy.calibration import analytic_gaussian_sigma, laplace_scale, poisson_delta
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar, check_sequence

__all__ = [
    "NoiseFamily",
    "GaussianFamily",
    "LaplaceFamily",
    "PoissonFamily",
    "MultipleRelease",
    "GaussianMultipleRelease",
    "LaplaceMultipleRelease",
    "PoissonMultipleRelease",
    "sample_discrete_gaussian",
]

#: Two levels closer than this relative gap are treated as the same level (the stored release is returned).
RELATIVE_LEVEL_TOLERANCE = 1e-12

Level = float | Fraction


def _check_levels(**levels: Level) -> None:
    """Each named level a finite number > 0 (left in its own type), strictly increasing in the order given."""
    for name, value in levels.items():
        check_scalar(value, name, "real", min=0.0, inclusive="neither")
    values = list(levels.values())
    if any(a >= b for a, b in zip(values, values[1:], strict=False)):
        shown = ", ".join(f"{name}={value}" for name, value in levels.items())
        raise ValueError(f"noise levels {' < '.join(levels)} must be strictly increasing, got {shown}")


def _check_noise(z: object, name: str, like: np.ndarray | None = None, like_name: str = "") -> np.ndarray:
    """``z`` as an array of finite noise values (floats, or the exact grid integers; any shape, empty and 0-d
    included) of the shape of ``like`` when given; exact integer (object) arrays are returned unchanged."""
    arr = check_array(z, name)
    if like is not None and arr.shape != np.shape(like):
        raise ValueError(f"{like_name} and {name} must have the same shape, got {np.shape(like)} and {arr.shape}")
    return z if isinstance(z, np.ndarray) and z.dtype == object else arr


def _check_shape(shape: object) -> tuple[int, ...]:
    """A noise shape: a tuple of non-negative ints (``()`` is one scalar), or one int."""
    if isinstance(shape, numbers.Integral) and not isinstance(shape, (bool, np.bool_)):
        shape = (shape,)
    return tuple(check_sequence(shape, "shape", item=lambda v, name: check_scalar(v, name, "int", min=0)))


# ----------------------------------------------------------------------------------------------------------
# Noise families
# ----------------------------------------------------------------------------------------------------------


class NoiseFamily(ABC):
    """A family ``D_s`` of additive noise laws closed under convolution: ``D_s2 = D_s1 * C_{s1 -> s2}``.

    The meta-theorem (OUR READING of the paper's general result): the noise at levels ``s_1 < s_2 < ...`` is a
    Markov chain with independent increments ``C``; a release engine needs four samplers, all elementwise over
    arrays and none of them looking at the secret ``x``:

    * ``sample(s, shape, rng)``: a fresh draw from ``D_s``;
    * ``forward(z, s_from, s_to, rng)``: ``z + C_{s_from -> s_to}`` (``s_from < s_to``);
    * ``backward(z_later, s, s_later, rng)``: the noise at ``s < s_later`` given the noise at ``s_later``;
    * ``bridge(z_lo, z_hi, s_lo, s, s_hi, rng)``: the noise at ``s_lo < s < s_hi`` given both neighbours.

    ``check_x`` validates the secret and returns its internal form, ``check_level`` a level, and
    ``output(x, z)`` builds the released array (always a new array).
    """

    #: what the level means for this family (``variance``, ``scale``, ``rate``)
    level_name: str = "level"

    @abstractmethod
    def check_x(self, x: object) -> np.ndarray:
        """Validate the secret and return its internal representation (a new array)."""

    def check_level(self, level: object) -> Level:
        """Validate a noise level (finite, > 0) and return it in the family's internal number type."""
        return check_scalar(level, f"level ({self.level_name})", "real", min=0.0, inclusive="neither")

    @abstractmethod
    def sample(self, s: Level, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """A fresh noise array from ``D_s``."""

    @abstractmethod
    def forward(self, z: np.ndarray, s_from: Level, s_to: Level, rng: np.random.Generator) -> np.ndarray:
        """Noise at the larger level ``s_to`` given the noise ``z`` at ``s_from``."""

    @abstractmethod
    def backward(self, z_later: np.ndarray, s: Level, s_later: Level, rng: np.random.Generator) -> np.ndarray:
        """Noise at the smaller level ``s`` given the noise ``z_later`` at ``s_later``."""

    @abstractmethod
    def bridge(
        self, z_lo: np.ndarray, z_hi: np.ndarray, s_lo: Level, s: Level, s_hi: Level, rng: np.random.Generator
    ) -> np.ndarray:
        """Noise at ``s`` given the noises at the neighbouring levels ``s_lo < s < s_hi``."""

    @abstractmethod
    def output(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The release ``x + z`` as a new array."""


class GaussianFamily(NoiseFamily):
    """Gaussian noise ``N(0, s I)``, level ``s = sigma^2``: Brownian motion indexed by the variance.

    Backward: ``Z = (s/t) Z_t + sqrt(s (t - s)/t) N``; bridge:
    ``Z = Z_lo + (s - s_lo)/(s_hi - s_lo) (Z_hi - Z_lo) + sqrt((s - s_lo)(s_hi - s)/(s_hi - s_lo)) N``.  The
    stored noises have ``Cov(Z_i, Z_j) = min(s_i, s_j) I`` whatever the request order.  Float64 noise: not
    hardened against floating-point attacks.

    ``exact=True``: the first release is the discrete Gaussian on the grid ``2^-grid_bits`` (variance ``s`` in
    the units of ``x``, i.e. ``s 4^grid_bits`` grid steps squared), sampled exactly with Python integers and
    rationals (Canonne, Kamath & Steinke 2020, Algorithm 3: :func:`sample_discrete_gaussian`); for a secret on
    the grid it is ``rho = Delta_2^2 / (2 s)``-zCDP, the bound of the continuous Gaussian (their Sec. 2).  A second,
    different level raises ``NotImplementedError``: the discrete Gaussian is not closed under convolution,
    and for some pairs of levels (e.g. variances 1 and 2 grid steps squared) ``N_Z(s_hi)`` is not
    ``N_Z(s_lo)`` plus any independent integer noise (the deconvolution has negative mass), so no exact
    lossless coupling of the two exists (the paper leaves finite-precision Gaussian release open).
    """

    level_name = "variance"

    def __init__(self, l2_sensitivity: float = 1.0, *, exact: bool = False, grid_bits: int = 20) -> None:
        self.l2_sensitivity = check_scalar(l2_sensitivity, "l2_sensitivity", "real", min=0.0, inclusive="neither")
        self.exact = check_bool(exact, "exact")
        self.grid_bits = check_scalar(grid_bits, "grid_bits", "int", min=-60, max=60)

    def check_x(self, x: object) -> np.ndarray:
        arr = _check_noise(check_array(x, "x", dtype=np.float64, copy=True), "x")
        return _grid_ints(arr, self.grid_bits) if self.exact else arr

    def check_level(self, level):
        value = check_scalar(level, f"level ({self.level_name})", "real", min=0.0, inclusive="neither")
        return Fraction(level) if self.exact else value

    def rho(self, s: Level) -> float:
        """zCDP parameter ``rho = Delta_2^2 / (2 s)`` of a single release at variance ``s`` (also for the exact
        discrete Gaussian with the secret on its grid)."""
        return self.l2_sensitivity**2 / (2.0 * float(check_scalar(s, "s", "real", min=0.0, inclusive="neither")))

    def _no_exact_coupling(self) -> None:
        if self.exact:
            raise NotImplementedError(
                "exact Gaussian multiple release supports one level: the discrete Gaussian is not closed under "
                "convolution and for some pairs of levels no exact lossless coupling exists (the paper leaves "
                "finite-precision Gaussian release open); use LaplaceFamily(exact=True) or "
                "PoissonFamily(exact=True) for several exact releases"
            )

    def sample(self, s, shape, rng):
        _check_levels(s=s)
        shape = _check_shape(shape)
        if not self.exact:
            return math.sqrt(s) * rng.standard_normal(shape)
        variance, src = Fraction(s) * Fraction(4) ** self.grid_bits, _Bits(rng)
        return _object_ints([_discrete_gaussian_exact(src, variance) for _ in range(math.prod(shape))], shape)

    def forward(self, z, s_from, s_to, rng):
        z = _check_noise(z, "z")
        _check_levels(s_from=s_from, s_to=s_to)
        self._no_exact_coupling()
        return z + math.sqrt(s_to - s_from) * rng.standard_normal(z.shape)

    def backward(self, z_later, s, s_later, rng):
        z_later = _check_noise(z_later, "z_later")
        _check_levels(s=s, s_later=s_later)
        self._no_exact_coupling()
        return (s / s_later) * z_later + math.sqrt(s * (s_later - s) / s_later) * rng.standard_normal(
            z_later.shape
        )

    def bridge(self, z_lo, z_hi, s_lo, s, s_hi, rng):
        z_lo = _check_noise(z_lo, "z_lo")
        z_hi = _check_noise(z_hi, "z_hi", z_lo, "z_lo")
        _check_levels(s_lo=s_lo, s=s, s_hi=s_hi)
        self._no_exact_coupling()
        gap = s_hi - s_lo
        mean = z_lo + ((s - s_lo) / gap) * (z_hi - z_lo)
        return mean + math.sqrt((s - s_lo) * (s_hi - s) / gap) * rng.standard_normal(z_lo.shape)

    def output(self, x, z):
        x, z = _check_noise(x, "x"), _check_noise(z, "z", x, "x")
        return _grid_output(x + z, self.grid_bits) if self.exact else x + z

    def __repr__(self) -> str:
        extra = f", exact=True, grid_bits={self.grid_bits}" if self.exact else ""
        return f"GaussianFamily(l2_sensitivity={self.l2_sensitivity}{extra})"


class LaplaceFamily(NoiseFamily):
    """Laplace noise ``Lap(b)``, level ``s = b`` (pure epsilon-DP with ``epsilon = Delta_1 / b``).

    Koufogiannis decomposition, arbitrary order: for ``b1 < b2``, ``Lap(b2) = Lap(b1) + W`` with ``W = 0``
    with probability ``q = (b1/b2)^2`` and ``W ~ Lap(b2)`` otherwise.  Given both neighbours (bridge), the
    increment ``W1 = Z - Z_lo`` has a posterior with an atom at 0 (weight ``q1 (1 - q2) f_{b_hi}(D)``), an
    atom at ``D`` (weight ``(1 - q1) q2 f_b(D)``) and a continuous part
    ``(1 - q1)(1 - q2) f_b(w) f_{b_hi}(D - w)`` that is piecewise exponential on the three intervals cut by 0
    and ``D``; ``D == 0`` exactly means both increments were atoms, so ``W1 = 0``.  Backward sampling is the
    bridge from the point ``Z = 0`` at ``b = 0``.  The float path is NOT hardened against floating-point
    attacks.

    ``exact=True``: discrete Laplace on the grid ``2^-grid_bits`` (``P(z) ~ exp(-|z| / b)`` for grid points
    ``z``).  The same decomposition holds exactly for the discrete Laplace with
    ``q = (p1/p2) ((1 - p2)/(1 - p1))^2``, ``p = exp(-2^-grid_bits / b)``; all sampling uses Python integers
    and rationals (exact Bernoulli(exp(-gamma)), geometric and lazy-uniform comparisons), the secret must lie
    on the grid, and the l1 sensitivity on the grid is ``ceil(Delta_1 2^grid_bits)`` grid steps.
    """

    level_name = "scale"

    def __init__(self, l1_sensitivity: float = 1.0, *, exact: bool = False, grid_bits: int = 20) -> None:
        self.l1_sensitivity = check_scalar(l1_sensitivity, "l1_sensitivity", "real", min=0.0, inclusive="neither")
        self.exact = check_bool(exact, "exact")
        self.grid_bits = check_scalar(grid_bits, "grid_bits", "int", min=-60, max=60)
        #: sensitivity in grid steps (exact mode)
        self.grid_sensitivity = math.ceil(Fraction(self.l1_sensitivity) * Fraction(2) ** self.grid_bits)

    def check_x(self, x):
        arr = _check_noise(check_array(x, "x", dtype=np.float64, copy=True), "x")
        return _grid_ints(arr, self.grid_bits) if self.exact else arr

    def check_level(self, level):
        value = check_scalar(level, f"level ({self.level_name})", "real", min=0.0, inclusive="neither")
        return Fraction(level) if self.exact else value

    def epsilon(self, b: Level) -> float:
        """Pure-DP parameter of one release at scale ``b``: ``Delta_1 / b`` (grid sensitivity in exact
        mode)."""
        check_scalar(b, "b", "real", min=0.0, inclusive="neither")
        if self.exact:
            return float(self.grid_sensitivity / (Fraction(b) * Fraction(2) ** self.grid_bits))
        return self.l1_sensitivity / float(b)

    def scale_for_epsilon(self, epsilon: float) -> Level:
        """The scale ``b`` giving exactly ``epsilon``-DP (a ``Fraction`` in exact mode)."""
        if self.exact:
            eps = Fraction(check_scalar(epsilon, "epsilon", "real", min=0.0, inclusive="neither"))
            return Fraction(self.grid_sensitivity) / (eps * Fraction(2) ** self.grid_bits)
        return laplace_scale(epsilon, self.l1_sensitivity)

    def _gamma(self, b: Fraction) -> Fraction:
        """Decay per grid step: ``P(z) ~ exp(-gamma |z|)`` with ``gamma = 2^-grid_bits / b``."""
        return 1 / (Fraction(b) * Fraction(2) ** self.grid_bits)

    def sample(self, s, shape, rng):
        _check_levels(s=s)
        shape = _check_shape(shape)
        if not self.exact:
            return rng.laplace(0.0, s, size=shape)
        gamma, src = self._gamma(s), _Bits(rng)
        return _object_ints([_discrete_laplace_exact(src, gamma) for _ in range(math.prod(shape))], shape)

    def forward(self, z, s_from, s_to, rng):
        z = _check_noise(z, "z")
        _check_levels(s_from=s_from, s_to=s_to)
        if not self.exact:
            keep = rng.random(z.shape) < (s_from / s_to) ** 2
            return z + np.where(keep, 0.0, rng.laplace(0.0, s_to, size=z.shape))
        g_from, g_to, src, cache = self._gamma(s_from), self._gamma(s_to), _Bits(rng), {}
        out = [int(v) + _dlap_forward_exact(src, g_from, g_to, cache) for v in z.ravel()]
        return _object_ints(out, z.shape)

    def backward(self, z_later, s, s_later, rng):
        z_later = _check_noise(z_later, "z_later")
        _check_levels(s=s, s_later=s_later)
        if not self.exact:
            return _laplace_bridge(np.zeros_like(z_later), z_later, 0.0, s, s_later, rng)
        return self._bridge_exact(_object_ints(np.zeros(z_later.shape)), z_later, None, s, s_later, rng)

    def bridge(self, z_lo, z_hi, s_lo, s, s_hi, rng):
        z_lo = _check_noise(z_lo, "z_lo")
        z_hi = _check_noise(z_hi, "z_hi", z_lo, "z_lo")
        _check_levels(s_lo=s_lo, s=s, s_hi=s_hi)
        if not self.exact:
            return _laplace_bridge(z_lo, z_hi, s_lo, s, s_hi, rng)
        return self._bridge_exact(z_lo, z_hi, s_lo, s, s_hi, rng)

    def _bridge_exact(self, z_lo, z_hi, s_lo, s, s_hi, rng):
        g_lo = None if s_lo is None else self._gamma(s_lo)
        g, g_hi, src, cache = self._gamma(s), self._gamma(s_hi), _Bits(rng), {}
        out = [
            int(a) + _dlap_bridge_exact(src, int(b) - int(a), g_lo, g, g_hi, cache)
            for a, b in zip(z_lo.ravel(), z_hi.ravel(), strict=True)
        ]
        return _object_ints(out, z_lo.shape)

    def output(self, x, z):
        x, z = _check_noise(x, "x"), _check_noise(z, "z", x, "x")
        return _grid_output(x + z, self.grid_bits) if self.exact else x + z

    def __repr__(self) -> str:
        extra = f", exact=True, grid_bits={self.grid_bits}" if self.exact else ""
        return f"LaplaceFamily(l1_sensitivity={self.l1_sensitivity}{extra})"


class PoissonFamily(NoiseFamily):
    """Additive ``Poisson(lam)`` noise on non-negative integer counts, level ``s = lam``: a Poisson process.

    Forward: ``Z + Poisson(lam - lam_max)``; backward (binomial thinning): ``Binomial(Z_min, lam / lam_min)``;
    bridge: ``Z_lo + Binomial(Z_hi - Z_lo, (lam - lam_lo)/(lam_hi - lam_lo))``.  Outputs are integers.  The
    default path uses NumPy's Poisson/binomial samplers (float probabilities); ``exact=True`` samples them
    with exact rational arithmetic (Bernoulli by integer comparison, Poisson by exact lazy inversion).
    Privacy of one release: :func:`icml25.privacy.calibration.poisson_delta` (no pure DP).
    """

    level_name = "rate"

    def __init__(self, sensitivity: int = 1, *, exact: bool = False) -> None:
        self.sensitivity = check_scalar(sensitivity, "sensitivity", "int", min=1)
        self.exact = check_bool(exact, "exact")

    def check_x(self, x):
        arr = check_array(x, "counts", dtype=None)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"counts must be an array of non-negative integers, got dtype {arr.dtype}")
        arr = _check_noise(arr, "counts")
        if np.any(arr != np.round(arr)) or np.any(arr < 0):
            raise ValueError("counts must be an array of non-negative integers, got a negative or fractional entry")
        return arr.astype(np.int64)

    def check_level(self, level):
        value = check_scalar(level, f"level ({self.level_name})", "real", min=0.0, inclusive="neither")
        return Fraction(level) if self.exact else value

    def delta(self, s: Level, epsilon: float) -> float:
        """Tight ``delta(epsilon)`` of one release at rate ``s`` (:func:`poisson_delta`)."""
        s = check_scalar(s, "s", "real", min=0.0, inclusive="neither")
        return poisson_delta(epsilon, s, self.sensitivity)

    def sample(self, s, shape, rng):
        _check_levels(s=s)
        shape = _check_shape(shape)
        if not self.exact:
            return rng.poisson(s, size=shape).astype(np.int64)
        src = _Bits(rng)
        return np.array([_poisson_exact(src, s) for _ in range(math.prod(shape))], dtype=np.int64).reshape(
            shape
        )

    def forward(self, z, s_from, s_to, rng):
        z = _check_noise(z, "z")
        _check_levels(s_from=s_from, s_to=s_to)
        return z + self.sample(s_to - s_from, z.shape, rng)

    def backward(self, z_later, s, s_later, rng):
        z_later = _check_noise(z_later, "z_later")
        _check_levels(s=s, s_later=s_later)
        return self._binomial(z_later, s / s_later, rng)

    def bridge(self, z_lo, z_hi, s_lo, s, s_hi, rng):
        z_lo = _check_noise(z_lo, "z_lo")
        z_hi = _check_noise(z_hi, "z_hi", z_lo, "z_lo")
        _check_levels(s_lo=s_lo, s=s, s_hi=s_hi)
        return z_lo + self._binomial(z_hi - z_lo, (s - s_lo) / (s_hi - s_lo), rng)

    def _binomial(self, n: np.ndarray, p: Level, rng: np.random.Generator) -> np.ndarray:
        if not self.exact:
            return np.asarray(rng.binomial(n, float(p)), dtype=np.int64)  # a 0-d n gives a Python int
        src = _Bits(rng)
        out = [_binomial_exact(rng, src, int(k), Fraction(p)) for k in n.ravel()]
        return np.array(out, dtype=np.int64).reshape(n.shape)

    def output(self, x, z):
        x, z = _check_noise(x, "x"), _check_noise(z, "z", x, "x")
        return x + z

    def __repr__(self) -> str:
        return f"PoissonFamily(sensitivity={self.sensitivity}{', exact=True' if self.exact else ''})"


def _laplace_bridge(z_lo, z_hi, b_lo, b, b_hi, rng):
    """Vectorised float Laplace bridge (``b_lo = 0`` with ``z_lo = 0`` is the backward step).

    With ``D = Z_hi - Z_lo`` (sampled for ``a = |D|`` and mirrored), ``q1 = (b_lo/b)^2``, ``q2 = (b/b_hi)^2``,
    ``alpha = 1/b + 1/b_hi`` and ``beta = 1/b - 1/b_hi``, the five posterior components of ``W1 = Z - Z_lo``
    have (up to the common factor ``exp(-a/b_hi)``) the weights
    atom 0: ``q1 (1 - q2) / (2 b_hi)``; atom D: ``(1 - q1) q2 e^{-beta a} / (2 b)``; and, with
    ``c = (1 - q1)(1 - q2) / (4 b b_hi)``, ``w < 0``: ``c / alpha``; ``0 <= w <= a``:
    ``c (1 - e^{-beta a}) / beta``; ``w > a``: ``c e^{-beta a} / alpha``.  One uniform picks the component;
    the continuous parts are exponential (outer) and truncated exponential (middle).
    """
    lo, hi = np.ravel(z_lo), np.ravel(z_hi)
    d = hi - lo
    a = np.abs(d)
    q1, q2 = (b_lo / b) ** 2, (b / b_hi) ** 2
    alpha, beta = 1.0 / b + 1.0 / b_hi, 1.0 / b - 1.0 / b_hi
    c = (1.0 - q1) * (1.0 - q2) / (4.0 * b * b_hi)
    em = np.expm1(-beta * a)  # e^{-beta a} - 1
    cum_atom0 = q1 * (1.0 - q2) / (2.0 * b_hi)
    cum_atom_d = cum_atom0 + (1.0 - q1) * q2 / (2.0 * b) * (1.0 + em)
    cum_left = cum_atom_d + c / alpha
    cum_middle = cum_left - c * em / beta
    total = cum_middle + c / alpha * (1.0 + em)
    u = rng.random(a.size) * total
    outer = rng.standard_exponential(a.size) / alpha
    middle = -np.log1p(rng.random(a.size) * em) / beta
    w = np.where(u < cum_left, -outer, np.where(u < cum_middle, middle, a + outer))
    z = lo + np.where(d < 0, -w, w)
    # the atoms copy a neighbour exactly (z_lo + (z_hi - z_lo) need not equal z_hi in floating point), so a
    # later bridge sees D == 0 exactly; D == 0 itself means both increments were atoms, so Z = Z_lo
    z = np.where(u < cum_atom0, lo, np.where(u < cum_atom_d, hi, z))
    if q1 > 0:
        z = np.where(d == 0, lo, z)
    return z.reshape(np.shape(z_lo))


# ----------------------------------------------------------------------------------------------------------
# The release engine
# ----------------------------------------------------------------------------------------------------------


class MultipleRelease:
    """Lossless multiple release of ``x`` under a :class:`NoiseFamily`, levels requested in any order.

    ``release(level)`` returns a new array ``x + Z`` with ``Z ~ D_level``, coupled to the earlier releases:
    the first level is a fresh draw; a level above all stored ones is a forward increment from the noisiest;
    one below all is a backward draw from the least noisy; one in between is a bridge between its two
    neighbours (found with ``bisect``).  A level equal to a stored one (relative gap below
    ``RELATIVE_LEVEL_TOLERANCE``) returns that release again.  The secret is kept private (no attribute
    returns it); the noises never depend on it.

    Attributes: ``levels`` (sorted stored levels), ``releases`` (``(level, y)`` in request order), ``shape``.
    """

    def __init__(self, x: object, family: NoiseFamily, *, seed: Seed = None) -> None:
        self.family = check_instance(family, "family", NoiseFamily, "a NoiseFamily (GaussianFamily, ...)")
        self._x = family.check_x(x)
        self._rng = as_generator(seed)
        self._levels: list[Level] = []
        self._noise: dict[Level, np.ndarray] = {}
        self._releases: list[tuple[Level, np.ndarray]] = []

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of every release."""
        return self._x.shape

    @property
    def levels(self) -> list[Level]:
        """The distinct stored levels, sorted increasingly (least noisy first)."""
        return list(self._levels)

    @property
    def releases(self) -> list[tuple[Level, np.ndarray]]:
        """``(level, y)`` for every call of :meth:`release`, in request order (copies)."""
        return [(level, y.copy()) for level, y in self._releases]

    def _stored(self, s: Level) -> Level | None:
        i = bisect.bisect_left(self._levels, s)
        for j in (i - 1, i):
            if 0 <= j < len(self._levels):
                t = self._levels[j]
                if abs(t - s) <= RELATIVE_LEVEL_TOLERANCE * max(t, s):
                    return t
        return None

    def release(self, level: Level) -> np.ndarray:
        """Release ``x + Z`` with noise at ``level`` (variance / scale / rate, see the family)."""
        s = self.family.check_level(level)
        stored = self._stored(s)
        if stored is not None:
            s = stored
        else:
            levels, noise, rng = self._levels, self._noise, self._rng
            i = bisect.bisect_left(levels, s)
            if not levels:
                z = self.family.sample(s, self._x.shape, rng)
            elif i == len(levels):
                z = self.family.forward(noise[levels[-1]], levels[-1], s, rng)
            elif i == 0:
                z = self.family.backward(noise[levels[0]], s, levels[0], rng)
            else:
                lo, hi = levels[i - 1], levels[i]
                z = self.family.bridge(noise[lo], noise[hi], lo, s, hi, rng)
            levels.insert(i, s)
            noise[s] = z
        y = np.asarray(self.family.output(self._x, self._noise[s]))
        self._releases.append((s, y.copy()))
        return y

    def subset_privacy(self, indices: Iterable[int]) -> Level:
        """Level of the least noisy release among ``releases[i]`` for ``i`` in ``indices``.

        By losslessness the subset is exactly as private as one release at this level.
        """
        n = len(self._releases)
        idx = check_sequence(indices, "indices", item=lambda i, name: check_scalar(i, name, "int", min=-n, max=n - 1))
        if not idx:
            raise ValueError("indices must name at least one release")
        return min(self._releases[i][0] for i in idx)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(shape={self.shape}, family={self.family!r}, levels={len(self._levels)})"
        )


def _one_of(**given: object) -> str:
    names = [k for k, v in given.items() if v is not None]
    if len(names) != 1:
        raise ValueError(f"exactly one of {', '.join(given)} must be given, got {names or 'none'}")
    return names[0]


class GaussianMultipleRelease(MultipleRelease):
    """Gaussian lossless multiple release;
    ``release(rho=... | sigma=... | epsilon=..., delta=... | level=...)``.

    ``level`` is the variance.  ``rho`` uses zCDP calibration, ``(epsilon, delta)`` the analytic Gaussian
    mechanism (Balle & Wang 2018).  A subset costs ``subset_rho(indices)`` = the largest rho in it.
    Float64 noise by default: not hardened against floating-point attacks; ``exact=True`` gives one exact
    discrete-Gaussian release on the grid ``2^-grid_bits`` (see :class:`GaussianFamily`).
    """

    def __init__(
        self,
        x: object,
        l2_sensitivity: float = 1.0,
        *,
        exact: bool = False,
        grid_bits: int = 20,
        seed: Seed = None,
    ):
        super().__init__(x, GaussianFamily(l2_sensitivity, exact=exact, grid_bits=grid_bits), seed=seed)

    def release(
        self,
        level: float | None = None,
        *,
        sigma: float | None = None,
        rho: float | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
    ) -> np.ndarray:
        """Release at one privacy specification: ``level`` (variance), ``sigma``, ``rho`` or
        ``(epsilon, delta)``."""
        pair = None if epsilon is None and delta is None else (epsilon, delta)
        which = _one_of(level=level, sigma=sigma, rho=rho, epsilon_delta=pair)
        sens = self.family.l2_sensitivity
        if which == "sigma":
            level = check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither") ** 2
        elif which == "rho":
            rho = check_scalar(rho, "rho", "real", min=0.0, inclusive="neither")
            level = sens**2 / (2.0 * rho)  # gaussian_sigma_zcdp squared, no sqrt
        elif which == "epsilon_delta":
            if epsilon is None or delta is None:
                raise ValueError("epsilon and delta must be given together")
            level = analytic_gaussian_sigma(epsilon, delta, sens) ** 2
        return super().release(level)

    def subset_rho(self, indices: Iterable[int]) -> float:
        """zCDP parameter of the subset: that of its least noisy member (lossless)."""
        return self.family.rho(self.subset_privacy(indices))


class LaplaceMultipleRelease(MultipleRelease):
    """Laplace lossless multiple release; ``release(epsilon=... | scale=... | level=...)`` (level = scale b).

    Float path (default) is not hardened against floating-point attacks; ``exact=True`` uses the discrete
    Laplace on the grid ``2^-grid_bits`` with exact arithmetic (see :class:`LaplaceFamily`).
    """

    def __init__(
        self,
        x: object,
        l1_sensitivity: float = 1.0,
        *,
        exact: bool = False,
        grid_bits: int = 20,
        seed: Seed = None,
    ):
        super().__init__(x, LaplaceFamily(l1_sensitivity, exact=exact, grid_bits=grid_bits), seed=seed)

    def release(
        self, level: Level | None = None, *, epsilon: float | None = None, scale: Level | None = None
    ) -> np.ndarray:
        """Release at ``epsilon`` (pure DP), or at a Laplace ``scale`` / ``level``."""
        which = _one_of(level=level, epsilon=epsilon, scale=scale)
        if which == "epsilon":
            level = self.family.scale_for_epsilon(epsilon)
        elif which == "scale":
            level = scale
        return super().release(level)

    def subset_epsilon(self, indices: Iterable[int]) -> float:
        """Pure-DP epsilon of the subset: that of its least noisy member (lossless)."""
        return self.family.epsilon(self.subset_privacy(indices))


class PoissonMultipleRelease(MultipleRelease):
    """Poisson lossless multiple release of integer counts; ``release(lam=... | level=...)``."""

    def __init__(
        self,
        counts: object,
        *,
        sensitivity: int = 1,
        exact: bool = False,
        seed: Seed = None,
    ):
        super().__init__(counts, PoissonFamily(sensitivity, exact=exact), seed=seed)

    def release(self, level: Level | None = None, *, lam: Level | None = None) -> np.ndarray:
        """Release ``counts + Poisson(lam)`` noise coupled to the earlier releases."""
        _one_of(level=level, lam=lam)
        if lam is not None:
            check_scalar(lam, "lam", "real", min=0.0, inclusive="neither")
        return super().release(lam if level is None else level)

    def subset_delta(self, indices: Iterable[int], epsilon: float) -> float:
        """Tight ``delta(epsilon)`` of the subset: that of its least noisy member (lossless)."""
        return self.family.delta(self.subset_privacy(indices), epsilon)


# ----------------------------------------------------------------------------------------------------------
# Exact samplers (Python integers only)
# ----------------------------------------------------------------------------------------------------------


def _object_ints(values: object, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """An object array of Python ints (exact, unbounded) from integer-valued input."""
    flat = [int(v) for v in np.asarray(values, dtype=object).ravel()]
    out = np.empty(len(flat), dtype=object)
    out[:] = flat
    return out.reshape(np.shape(values) if shape is None else shape)


def _grid_ints(arr: np.ndarray, grid_bits: int) -> np.ndarray:
    """The secret ``arr`` as exact grid integers ``arr 2^grid_bits`` (it must lie on the grid)."""
    scaled = np.ldexp(arr, grid_bits)
    if np.any(scaled != np.round(scaled)) or np.any(np.abs(scaled) >= 2.0**53):
        raise ValueError(
            f"exact mode needs x on the grid 2^-{grid_bits} (|x| < 2^{53 - grid_bits}); "
            f"round it first, e.g. np.round(x * 2**{grid_bits}) / 2**{grid_bits}, and account "
            "for the rounding in the sensitivity"
        )
    return _object_ints(scaled)


def _grid_output(total: object, grid_bits: int) -> np.ndarray:
    """Grid integers (an object array, or a Python int for 0-d) back to exact float64 values."""
    total = np.asarray(total, dtype=object)
    if any(abs(int(v)) >= 2**53 for v in total.ravel()):
        raise OverflowError("a released grid value does not fit a float64 exactly; use fewer grid_bits")
    return np.array([math.ldexp(float(int(v)), -grid_bits) for v in total.ravel()]).reshape(total.shape)


class _Bits:
    """Uniform random bits from a NumPy generator, buffered as 64-bit words."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._words: list[int] = []

    def bits(self, k: int) -> int:
        """A uniform integer in ``[0, 2^k)``."""
        value, have = 0, 0
        while have < k:
            if not self._words:
                self._words = self._rng.integers(0, 2**64, size=256, dtype=np.uint64).tolist()
            value, have = (value << 64) | self._words.pop(), have + 64
        return value >> (have - k)

    def below(self, n: int) -> int:
        """An exactly uniform integer in ``[0, n)`` (rejection sampling, ``n >= 1``)."""
        k = (n - 1).bit_length()
        while True:
            v = self.bits(k)
            if v < n:
                return v


def _bernoulli_exp_neg(src: _Bits, num: int, den: int) -> bool:
    """Exact Bernoulli(exp(-num/den)) for integers ``num >= 0``, ``den >= 1`` (Canonne, Kamath & Steinke 2020,
    Algorithm 1: for ``gamma <= 1`` the first ``k`` with a failed Bernoulli(gamma/k) is odd w.p.
    ``e^-gamma``)."""
    while num > den:
        if not _bernoulli_exp_neg(src, 1, 1):
            return False
        num -= den
    k = 1
    while src.below(den * k) < num:
        k += 1
    return k % 2 == 1


def _geometric_exact(src: _Bits, gamma: Fraction) -> int:
    """Exact ``G >= 0`` with ``P(G = g) ~ exp(-gamma g)`` for rational ``gamma > 0`` (CKS 2020, Alg. 2 core).

    With ``gamma = s / t``: ``X = U + t V`` (``U`` uniform on ``[0, t)`` kept w.p. ``exp(-U/t)``,
    ``V ~ Geometric(1 - e^-1)``) has ``P(X = x) ~ exp(-x/t)``, and ``floor(X / s)`` is the answer.
    """
    s, t = gamma.numerator, gamma.denominator
    while True:
        u = src.below(t)
        if not _bernoulli_exp_neg(src, u, t):
            continue
        v = 0
        while _bernoulli_exp_neg(src, 1, 1):
            v += 1
        return (u + t * v) // s


def _discrete_laplace_exact(src: _Bits, gamma: Fraction) -> int:
    """Exact discrete Laplace: ``P(z) ~ exp(-gamma |z|)`` on the integers."""
    while True:
        negative = src.bits(1) == 1
        g = _geometric_exact(src, gamma)
        if not (negative and g == 0):
            return -g if negative else g


def _discrete_gaussian_exact(src: _Bits, variance: Fraction) -> int:
    """Exact discrete Gaussian ``P(z) ~ exp(-z^2 / (2 variance))`` on the integers for rational ``variance``
    (Canonne, Kamath & Steinke 2020, Algorithm 3): with ``t = floor(sigma) + 1``, propose ``Y`` from the
    discrete Laplace ``P(y) ~ exp(-|y|/t)`` and accept it w.p. ``exp(-(|Y| - variance/t)^2 / (2 variance))``."""
    t = math.isqrt(variance.numerator // variance.denominator) + 1
    gamma, center = Fraction(1, t), variance / t
    while True:
        y = _discrete_laplace_exact(src, gamma)
        exponent = (abs(y) - center) ** 2 / (2 * variance)
        if _bernoulli_exp_neg(src, exponent.numerator, exponent.denominator):
            return y


def sample_discrete_gaussian(variance: float | Fraction, shape: object = (), *, seed: Seed = None) -> np.ndarray:
    """Exact draws from the discrete Gaussian ``P(z) ~ exp(-z^2 / (2 variance))`` on the integers.

    Canonne, Kamath & Steinke (2020), "The Discrete Gaussian for Differential Privacy" (arXiv:2004.00010),
    Algorithm 3: discrete Laplace proposals accepted by exact Bernoulli(exp(-gamma)) trials; only Python
    integers and rationals are used (a float ``variance`` is read as the exact rational it stores), so the law
    is exact, not a float approximation.  The random bits come from the NumPy generator of ``seed``.

    Parameters
    ----------
    variance : float or Fraction
        ``sigma^2 > 0`` in grid units (the pmf's parameter; the variance of the law is slightly below it for
        ``sigma < 1``).
    shape : int or tuple of int
        Output shape (``()``: one draw).
    seed : int, Generator or None
        Randomness.

    Returns
    -------
    numpy.ndarray of int64
    """
    variance = Fraction(check_scalar(variance, "variance", "real", min=0.0, inclusive="neither"))
    shape = _check_shape(shape)
    src = _Bits(as_generator(seed))
    return np.array([_discrete_gaussian_exact(src, variance) for _ in range(math.prod(shape))],
                    dtype=np.int64).reshape(shape)


def _truncated_geometric_exact(src: _Bits, gamma: Fraction, n_max: int) -> int:
    """Exact ``w`` in ``{0, ..., n_max}`` with ``P(w) ~ exp(-gamma w)``; expected O(1) trials either way."""
    if gamma * n_max <= 1:
        while True:
            w = src.below(n_max + 1)
            if _bernoulli_exp_neg(src, gamma.numerator * w, gamma.denominator):
                return w
    while True:
        w = _geometric_exact(src, gamma)
        if w <= n_max:
            return w


def _binomial_exact(rng: np.random.Generator, src: _Bits, n: int, p: Fraction) -> int:
    """Exact Binomial(n, p) for rational ``p``: ``n`` exact Bernoulli(p) draws by integer comparison."""
    if n == 0 or p == 0:
        return 0
    if p.denominator < 2**62:
        return int((rng.integers(0, p.denominator, size=n) < p.numerator).sum())
    return sum(src.below(p.denominator) < p.numerator for _ in range(n))


# Fixed-point interval arithmetic: an interval is a pair of ints (lo, hi) meaning [lo 2^-W, hi 2^-W].

Interval = tuple[int, int]


class _ImpreciseError(Exception):
    """An interval computation needs more bits (a denominator interval still reaches 0)."""


def _exp_neg_fixed(x: Fraction, w: int) -> Interval:
    """Rigorous fixed-point bounds on ``exp(-x)`` for rational ``x >= 0``, absolute error about ``2^-w``.

    ``exp(-x) = exp(-y)^(2^m)`` with ``y = x / 2^m <= 1``; ``exp(-y)`` lies between consecutive partial sums
    of its alternating Taylor series (odd ones below, even ones above); terms and squarings round outward.
    """
    one = 1 << w
    if x == 0:
        return one, one
    m = (x.numerator // x.denominator).bit_length()
    wk = w + m + 8
    scaled, den = x.numerator << wk, x.denominator << m
    unit = 1 << wk

    def partial_sum(y: int, lower: bool) -> int:
        total, t_lo, t_hi, k = unit, unit, unit, 0
        while True:
            k += 1
            t_lo, t_hi = (t_lo * y) // (k << wk), -((-t_hi * y) // (k << wk))
            if k % 2:
                total -= t_hi if lower else t_lo
            else:
                total += t_lo if lower else t_hi
            if t_hi <= 1 and k % 2 == lower:
                return total

    lo, hi = max(0, partial_sum(-(-scaled // den), True)), min(unit, partial_sum(scaled // den, False))
    for _ in range(m):
        lo, hi = (lo * lo) >> wk, -((-hi * hi) >> wk)
    shift = wk - w
    return lo >> shift, min(one, -((-hi) >> shift))


class _FixedPoint:
    """Interval operations at ``w`` fractional bits (all intervals non-negative); memoises exp bounds."""

    def __init__(self, w: int, cache: dict) -> None:
        self.w, self.one, self._cache = w, 1 << w, cache

    def exp(self, x: Fraction) -> Interval:
        key = (x, self.w)
        if key not in self._cache:
            self._cache[key] = _exp_neg_fixed(x, self.w)
        return self._cache[key]

    def mul(self, *factors: Interval) -> Interval:
        lo, hi = self.one, self.one
        for a, b in factors:
            lo, hi = (lo * a) >> self.w, -((-hi * b) >> self.w)
        return lo, hi

    def div(self, a: Interval, b: Interval) -> Interval:
        if b[0] <= 0:
            raise _ImpreciseError
        return (a[0] << self.w) // b[1], -((-a[1] << self.w) // b[0])

    def one_minus(self, a: Interval) -> Interval:
        return max(0, self.one - a[1]), self.one - a[0]

    def one_plus(self, a: Interval) -> Interval:
        return self.one + a[0], self.one + a[1]


def _lazy_index(src: _Bits, cdf_bounds: Callable[[int], Iterator[tuple[int, int, int, int]]]) -> int:
    """Exact inversion: the first ``k`` with ``U < F(k)`` for ``U ~ Uniform[0, 1)``.

    ``cdf_bounds(w)`` yields ``(a, b, c, d)`` with ``a/b <= F(k) <= c/d`` for the non-decreasing ``F(0), F(1),
    ...`` (width about ``2^-w``).  ``U`` is revealed 64 bits at a time, so the comparison is exact; more bits
    (and a finer ``w``) are needed only when ``U`` falls very close to a boundary.
    """
    num, n, w = src.bits(64), 64, 64
    while True:
        scale = 1 << n
        try:
            for k, (a, b, c, d) in enumerate(cdf_bounds(w)):
                if (num + 1) * b <= a * scale:
                    return k
                if num * d < c * scale:
                    break
        except _ImpreciseError:
            pass
        num, n, w = (num << 64) | src.bits(64), n + 64, 2 * w


def _lazy_categorical(src: _Bits, weights: Callable[[int], list[Interval]]) -> int:
    """Exact draw of an index with probability proportional to weights known as intervals at any precision."""

    def cdf_bounds(w: int) -> Iterator[tuple[int, int, int, int]]:
        ws = weights(w)
        total_lo, total_hi = sum(a for a, _ in ws), sum(b for _, b in ws)
        pre_lo = pre_hi = 0
        for a, b in ws[:-1]:
            pre_lo, pre_hi = pre_lo + a, pre_hi + b
            den_lo, den_hi = pre_lo + (total_hi - pre_hi), pre_hi + (total_lo - pre_lo)
            if den_lo <= 0:
                raise _ImpreciseError
            yield (pre_lo, den_lo, pre_hi, den_hi) if den_hi > 0 else (pre_lo, den_lo, 1, 1)
        yield 1, 1, 1, 1

    return _lazy_index(src, cdf_bounds)


def _poisson_exact(src: _Bits, mu: Fraction) -> int:
    """Exact Poisson(mu) for rational ``mu > 0`` by lazy inversion of ``F(k) = e^-mu sum_{j<=k} mu^j / j!``.

    The fixed point carries ``1.45 mu`` extra bits so that ``e^-mu`` keeps its relative precision.
    """
    a, b = mu.numerator, mu.denominator
    extra = math.ceil(mu * Fraction(29, 20)) + 8

    def cdf_bounds(w: int) -> Iterator[tuple[int, int, int, int]]:
        w += extra
        one = 1 << w
        t_lo, t_hi = _exp_neg_fixed(mu, w)
        f_lo, f_hi, k = t_lo, t_hi, 0
        while True:
            yield f_lo, one, min(f_hi, one), one
            k += 1
            t_lo, t_hi = (t_lo * a) // (b * k), -((-t_hi * a) // (b * k))
            f_lo, f_hi = f_lo + t_lo, f_hi + t_hi

    return _lazy_index(src, cdf_bounds)


def _dlap_q(fp: _FixedPoint, g_from: Fraction, g_to: Fraction) -> Interval:
    """Atom probability ``q = (p_from/p_to) ((1 - p_to)/(1 - p_from))^2`` of the discrete Laplace increment
    from decay ``g_from`` to the noisier ``g_to`` (``p = e^-g``)."""
    ratio = fp.div(fp.one_minus(fp.exp(g_to)), fp.one_minus(fp.exp(g_from)))
    return fp.mul(fp.exp(g_from - g_to), ratio, ratio)


def _dlap_forward_exact(src: _Bits, g_from: Fraction, g_to: Fraction, cache: dict) -> int:
    """Increment from decay ``g_from`` to the noisier ``g_to < g_from``: 0 w.p. q, else discrete Laplace."""

    def weights(w: int) -> list[Interval]:
        fp = _FixedPoint(w, cache)
        q = _dlap_q(fp, g_from, g_to)
        return [q, fp.one_minus(q)]

    return 0 if _lazy_categorical(src, weights) == 0 else _discrete_laplace_exact(src, g_to)


def _dlap_bridge_exact(
    src: _Bits, d: int, g_lo: Fraction | None, g: Fraction, g_hi: Fraction, cache: dict
) -> int:
    """Exact increment ``W1 = Z - Z_lo`` given ``Z_hi - Z_lo = d`` (discrete Laplace; ``g_lo=None``:
    backward).

    Decays ``g_lo > g > g_hi`` (``p = e^-g``, ``c_g = (1 - p)/(1 + p)`` the pmf at 0).  For ``d >= 0`` (mirror
    otherwise), with ``r = e^-(g - g_hi)`` and ``s = e^-(g + g_hi)``, the posterior weights divided by
    ``c_g c_hi e^{-g_hi d}`` are: atom 0: ``q1 (1 - q2) / c_g + [d = 0] q1 q2 / (c_g c_hi)``; atom d:
    ``(1 - q1) q2 r^d / c_hi``; and with ``K = (1 - q1)(1 - q2)``: ``w < 0``: ``K s/(1 - s)``;
    ``0 <= w <= d``: ``K (1 - r^{d+1})/(1 - r)``; ``w > d``: ``K r^d s/(1 - s)``.
    """
    sign, d = (-1, -d) if d < 0 else (1, d)
    g_r, g_s = g - g_hi, g + g_hi

    def weights(w: int) -> list[Interval]:
        fp = _FixedPoint(w, cache)
        p, p_hi, r, s = fp.exp(g), fp.exp(g_hi), fp.exp(g_r), fp.exp(g_s)
        r_d, r_d1 = _exp_neg_fixed(g_r * d, w), _exp_neg_fixed(g_r * (d + 1), w)
        q1 = (0, 0) if g_lo is None else _dlap_q(fp, g_lo, g)
        q2 = _dlap_q(fp, g, g_hi)
        inv_c = fp.div(fp.one_plus(p), fp.one_minus(p))
        inv_c_hi = fp.div(fp.one_plus(p_hi), fp.one_minus(p_hi))
        k = fp.mul(fp.one_minus(q1), fp.one_minus(q2))
        side = fp.div(s, fp.one_minus(s))
        atom0 = fp.mul(q1, fp.one_minus(q2), inv_c)
        if d == 0:
            both = fp.mul(q1, q2, inv_c, inv_c_hi)
            atom0 = (atom0[0] + both[0], atom0[1] + both[1])
        return [
            atom0,
            fp.mul(fp.one_minus(q1), q2, r_d, inv_c_hi),
            fp.mul(k, side),
            fp.mul(k, fp.div(fp.one_minus(r_d1), fp.one_minus(r))),
            fp.mul(k, r_d, side),
        ]

    component = _lazy_categorical(src, weights)
    if component == 0:
        w1 = 0
    elif component == 1:
        w1 = d
    elif component == 2:
        w1 = -1 - _geometric_exact(src, g_s)
    elif component == 3:
        w1 = _truncated_geometric_exact(src, g_r, d)
    else:
        w1 = d + 1 + _geometric_exact(src, g_s)
    return sign * w1
