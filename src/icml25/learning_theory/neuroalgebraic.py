"""Algebra Unveils Deep Learning: An Invitation to Neuroalgebraic Geometry (Marchetti et al., ICML 2025).

A network ``f_θ(x) = W_L σ(W_{L-1} σ(… σ(W_1 x)))`` with polynomial activation ``σ(z) = z^r``
computes a vector of polynomials for every parameter ``θ``; the Zariski closure of the set of
all these functions is the *neurovariety*.  The position paper reads its dimension as
expressivity and sample complexity, and its singular points (functions of narrower
sub-networks) as attractors of training.  This module makes those invariants computable:

* :class:`PolyNet`, the parameter-to-function map (NumPy; float, complex, or exact integers);
* :func:`neurovariety_dim`, the dimension as the generic rank of the Jacobian of
  ``θ ↦ (f_θ(x_1), …, f_θ(x_M))`` at random parameters and sample points, in float64 with a
  spectral-gap check, or exactly (arithmetic modulo a large prime, or rationals, ranks by sympy);
* :func:`expected_dim` (Kileel–Trager–Bruna), :func:`ah_secant_dim` (Alexander–Hirschowitz,
  the ground truth for shallow single-output networks), :func:`linear_net_dim` (``r = 1``);
* :func:`param_rank` (critical points of the parametrisation), :func:`rank_with_samples`
  (sample complexity), :func:`activation_degree_threshold` (Finkel et al.);
* for shallow quadratic networks, the implicit equations of the neurovariety (minors of the
  symmetric matrix ``S``) and the Jacobian criterion for singular points.

Example
-------
>>> from icml25.learning_theory.neuroalgebraic import neurovariety_dim, ah_secant_dim
>>> res = neurovariety_dim((3, 5, 1), r=4, seed=0)      # the quartic AH exception
>>> (res.dim, res.expected, res.defect, ah_secant_dim(3, 5, 4))
(14, 15, 1, 14)
>>> neurovariety_dim((3, 2, 2, 1), r=2, seed=0).dim     # a deep defective architecture
7
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Any

import numpy as np
import sympy
from sympy.polys.domains import GF, QQ
from sympy.polys.matrices import DomainMatrix

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar, check_sequence

__all__ = [
    "AH_EXCEPTIONS",
    "DEFAULT_PRIME",
    "AmbiguousRankError",
    "DimResult",
    "ImplicitVariety",
    "PolyNet",
    "RankResult",
    "activation_degree_threshold",
    "ah_secant_dim",
    "exact_rank",
    "expected_dim",
    "is_singular_point",
    "linear_net_dim",
    "neurovariety_dim",
    "numerical_rank",
    "param_rank",
    "quadratic_coefficients",
    "quadratic_shallow_equations",
    "rank_with_samples",
    "singularity_report",
    "sym_coordinates",
]

DEFAULT_PRIME = 2**31 - 1
"""The prime of exact mode (a Mersenne prime; Schwartz–Zippel failure ≤ degree / p per draw)."""

AH_EXCEPTIONS = frozenset({(3, 4, 5), (4, 4, 9), (5, 3, 7), (5, 4, 14)})
"""Alexander–Hirschowitz exceptions ``(d0, r, d1)`` with ``r ≥ 3``: one less than expected."""

MAX_JACOBIAN_ENTRIES = 50_000_000
RATIONAL_BOUND = 2**10


class AmbiguousRankError(ArithmeticError):
    """The singular values of a float Jacobian show no clear gap at the numerical rank."""


# ----------------------------------------------------------------------------- input checks


def _check_theta(theta: Any, name: str = "theta") -> np.ndarray:
    """``theta`` as an array: numbers (float, complex or exact Python objects), finite when floating."""
    if theta is None or isinstance(theta, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {theta!r}")
    theta = np.asarray(theta)
    if theta.dtype.kind not in "biufcO":
        raise TypeError(f"{name} must be an array of numbers, got dtype {theta.dtype}")
    if theta.dtype.kind in "fc" and not np.all(np.isfinite(theta)):
        raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    return theta


def _check_widths(widths: Any) -> tuple[int, ...]:
    return tuple(check_sequence(widths, "widths", min_len=2,
                                item=lambda w, name: check_scalar(w, name, "int", min=1)))


# ----------------------------------------------------------------------------- the network


class PolyNet:
    """The polynomial network ``f_θ(x) = W_L σ(… σ(W_1 x + b_1) …) + b_L`` with ``σ(z) = z^r``.

    ``widths = (d_0, …, d_L)``; ``θ`` is the flat vector of the weight matrices ``W_i``
    (``d_i × d_{i-1}``, row-major), each followed by its bias ``b_i`` when ``bias=True``.
    Without biases every output is a homogeneous polynomial of degree ``r^(L-1)`` in ``d_0``
    variables; with biases an inhomogeneous one of degree at most ``r^(L-1)``.
    ``forward`` and ``jacobian`` accept float, complex or object (exact integer/rational) arrays.
    """

    def __init__(self, widths: tuple[int, ...], r: int, bias: bool = False) -> None:
        self.widths = _check_widths(widths)
        self.r = check_scalar(r, "r", "int", min=1)
        self.bias = check_bool(bias, "bias")
        self._sizes = [(d_out, d_in) for d_in, d_out in zip(self.widths[:-1], self.widths[1:], strict=True)]

    def __repr__(self) -> str:
        return f"PolyNet(widths={self.widths}, r={self.r}, bias={self.bias})"

    @property
    def n_layers(self) -> int:
        """``L``, the number of weight matrices."""
        return len(self.widths) - 1

    @property
    def n_params(self) -> int:
        """``P = Σ d_i d_{i-1}`` (plus ``Σ d_i`` biases)."""
        return sum(a * (b + self.bias) for a, b in self._sizes)

    @property
    def n_hidden(self) -> int:
        """The number of hidden neurons, one rescaling symmetry each."""
        return sum(self.widths[1:-1])

    @property
    def degree(self) -> int:
        """``r^(L-1)``, the degree of the output polynomials."""
        return self.r ** (self.n_layers - 1)

    @property
    def ambient_dim(self) -> int:
        """``d_L · C(d_0 + D - 1, D)`` (homogeneous) or ``d_L · C(d_0 + D, D)`` (with biases), ``D`` the degree."""
        d0, deg = self.widths[0], self.degree
        return self.widths[-1] * math.comb(d0 + deg - (not self.bias), deg)

    def unpack(self, theta: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Split ``θ`` into ``[(W_1, b_1), …, (W_L, b_L)]`` (``b_i`` is ``None`` without biases)."""
        theta = _check_theta(theta)
        if theta.shape != (self.n_params,):
            raise ValueError(f"theta must have shape ({self.n_params},) for {self!r}, got {theta.shape}")
        layers, start = [], 0
        for d_out, d_in in self._sizes:
            W = theta[start : start + d_out * d_in].reshape(d_out, d_in)
            start += d_out * d_in
            b = None
            if self.bias:
                b = theta[start : start + d_out]
                start += d_out
            layers.append((W, b))
        return layers

    def pack(self, layers: list[tuple[np.ndarray, np.ndarray | None]]) -> np.ndarray:
        """Inverse of :meth:`unpack`."""
        layers = check_sequence(layers, "layers")
        if len(layers) != self.n_layers:
            raise ValueError(f"expected {self.n_layers} layers, got {len(layers)}")
        parts = []
        for (d_out, d_in), (W, b) in zip(self._sizes, layers, strict=True):
            W = np.asarray(W)
            if W.shape != (d_out, d_in):
                raise ValueError(f"weight of shape {W.shape} where ({d_out}, {d_in}) is needed")
            parts.append(W.ravel())
            if self.bias:
                if b is None or np.shape(b) != (d_out,):
                    raise ValueError(f"bias of shape ({d_out},) needed, got {None if b is None else np.shape(b)}")
                parts.append(np.asarray(b).ravel())
        return np.concatenate(parts)

    def random_params(self, seed: Seed = None) -> np.ndarray:
        """Generic float parameters: ``W_i ~ N(0, 1/d_{i-1})`` entrywise, biases ``N(0, 1)``."""
        rng = as_generator(seed)
        parts = []
        for d_out, d_in in self._sizes:
            parts.append(rng.standard_normal(d_out * d_in) / math.sqrt(d_in))
            if self.bias:
                parts.append(rng.standard_normal(d_out))
        return np.concatenate(parts)

    def random_points(self, n_points: int, seed: Seed = None) -> np.ndarray:
        """Generic sample points: uniform on the unit sphere (homogeneous case), ``N(0, I)`` with biases.

        A homogeneous polynomial vanishing on the sphere vanishes everywhere, so sphere points are
        generic for it (and keep the float Jacobian well scaled); an inhomogeneous one may vanish
        on the sphere (``|x|² - 1``), hence Gaussian points with biases.
        """
        n_points = check_scalar(n_points, "n_points", "int", min=1)
        X = as_generator(seed).standard_normal((n_points, self.widths[0]))
        if not self.bias:
            X /= np.linalg.norm(X, axis=1, keepdims=True)
        return X

    def _check_points(self, X: np.ndarray) -> np.ndarray:
        X = _check_theta(X, "X")
        if X.ndim != 2 or X.shape[1] != self.widths[0] or X.shape[0] == 0:
            raise ValueError(f"X must have shape (M, {self.widths[0]}) with M >= 1, got {X.shape}")
        return X

    def forward(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """``f_θ`` at the rows of ``X`` (shape ``(M, d_0)``); returns ``(M, d_L)``."""
        X = self._check_points(X)
        h = X
        for i, (W, b) in enumerate(self.unpack(theta)):
            h = h @ W.T
            if b is not None:
                h = h + b
            if i < self.n_layers - 1:
                h = h**self.r
        return h

    def jacobian(self, theta: np.ndarray, X: np.ndarray, modulus: int | None = None) -> np.ndarray:
        """The Jacobian of ``θ ↦ (f_θ(x_1), …, f_θ(x_M))``, shape ``(M · d_L, P)`` (rows point-major).

        Exact forward-mode differentiation of the polynomial map; with object arrays of Python
        ints it is exact, and ``modulus`` reduces every intermediate modulo a prime.
        """
        X = self._check_points(X)
        M, P = X.shape[0], self.n_params
        layers = self.unpack(theta)
        dtype = np.result_type(np.asarray(theta), X)

        def reduce(a: np.ndarray) -> np.ndarray:
            return a % modulus if modulus is not None else a

        h = X
        dh = np.zeros((M, self.widths[0], P), dtype=dtype)  # ∂h/∂θ
        start = 0
        for i, (W, b) in enumerate(layers):
            d_out, d_in = W.shape
            z = reduce(h @ W.T + (b if b is not None else 0))
            dz = W @ dh  # (M, d_out, P): the dependence through earlier layers
            block = np.zeros((M, d_out, d_out, d_in), dtype=dz.dtype)  # ∂z_a/∂W_{a', b}
            block[:, np.arange(d_out), np.arange(d_out), :] = h[:, None, :]
            dz[:, :, start : start + d_out * d_in] = block.reshape(M, d_out, d_out * d_in)
            start += d_out * d_in
            if b is not None:
                dz[:, np.arange(d_out), start + np.arange(d_out)] = 1
                start += d_out
            dz = reduce(dz)
            if i < self.n_layers - 1:
                zr1 = reduce(z ** (self.r - 1))
                h, dh = reduce(zr1 * z), reduce(self.r * zr1[:, :, None] * dz)
            else:
                h, dh = z, dz
        return dh.reshape(M * self.widths[-1], P)

    def _check_size(self, n_points: int) -> None:
        largest = n_points * max(self.widths) * self.n_params
        if largest > MAX_JACOBIAN_ENTRIES:
            raise ValueError(
                f"{self!r} needs a Jacobian of {n_points} points x {max(self.widths)} outputs x {self.n_params} "
                f"parameters = {largest:.3g} entries (ambient dimension {self.ambient_dim}); the limit is "
                f"{MAX_JACOBIAN_ENTRIES:.0e}: use a smaller architecture or degree"
            )


# ----------------------------------------------------------------------------- ranks


@dataclass(frozen=True)
class RankResult:
    """A numerical rank: ``rank``, ``gap = σ_rank / σ_{rank+1}`` (``inf`` at full rank) and the singular values."""

    rank: int
    gap: float
    singular_values: np.ndarray


def numerical_rank(J: np.ndarray, rtol: float = 1e-10, min_gap: float = 1e6) -> RankResult:
    """Rank of a float matrix after equilibration (rows, then columns, to unit norm).

    ``rank = #{σ_j > σ_1 · max(J.shape) · rtol}``; raises :class:`AmbiguousRankError` when
    ``σ_rank / σ_{rank+1} < min_gap`` (no rank is reported without a clear gap).  Zero rows/columns are kept
    (they do not change the rank).

    ``J`` is a non-empty 2-d array; ``rtol`` and ``min_gap`` are reals > 0.
    """
    J = check_array(J, "J", ndim=2, dtype=None, finite=False, min_len=1)
    rtol = check_scalar(rtol, "rtol", "real", min=0.0, inclusive="neither")
    min_gap = check_scalar(min_gap, "min_gap", "real", min=0.0, inclusive="neither")
    if J.size == 0:
        raise ValueError(f"J must be a non-empty 2-d array, got shape {J.shape}")
    if not np.all(np.isfinite(J)):
        raise ValueError("J has non-finite entries (overflow?): use smaller parameters or exact mode")
    for axis in (1, 0):
        norms = np.linalg.norm(J, axis=axis, keepdims=True)
        J = J / np.where(norms > 0, norms, 1.0)
    s = np.linalg.svd(J, compute_uv=False)
    if s[0] == 0:
        return RankResult(0, math.inf, s)
    rank = int(np.sum(s > s[0] * max(J.shape) * rtol))
    gap = math.inf if rank == len(s) else float(s[rank - 1] / max(s[rank], np.finfo(float).tiny))
    if gap < min_gap:
        raise AmbiguousRankError(
            f"rank ambiguous: singular-value gap {gap:.3g} at rank {rank} is below {min_gap:.0e} "
            "(increase precision or use exact mode, exact=True)"
        )
    return RankResult(rank, gap, s)


def exact_rank(J: np.ndarray, prime: int | None = DEFAULT_PRIME) -> int:
    """Exact rank of an integer/rational matrix by sympy (``DomainMatrix`` over ``GF(prime)`` or ``QQ``).

    ``J`` is a non-empty 2-d array of ints or rationals (Python or NumPy ints, Fractions, sympy Rationals);
    ``prime`` a prime number, or ``None`` for rational arithmetic.
    """
    if J is None or isinstance(J, (str, bytes)):
        raise TypeError(f"J must be a 2-d array of integers or rationals, got {J!r}")
    J = np.asarray(J, dtype=object)
    if J.ndim != 2 or J.size == 0:
        raise ValueError(f"J must be a non-empty 2-d array, got shape {J.shape}")
    if not all(isinstance(v, (numbers.Rational, sympy.Rational)) for v in J.ravel()):
        raise TypeError("J must hold only integers or rationals (ints, Fractions or sympy Rationals); "
                        "use numerical_rank for floats")
    prime = _check_prime(prime)
    rows = J.tolist()
    if prime is None:
        return int(DomainMatrix.from_list([[QQ(Fraction(v).numerator, Fraction(v).denominator) for v in row]
                                           for row in rows], QQ).rank())
    field = GF(prime)
    return int(DomainMatrix.from_list([[field(int(v) % prime) for v in row] for row in rows], field).rank())


def _check_prime(prime: int | None) -> int | None:
    if prime is None:
        return None
    prime = check_scalar(prime, "prime", "int", min=3)
    if not sympy.isprime(prime):
        raise ValueError(f"prime must be a prime number (or None for rational arithmetic), got {prime}")
    return prime


def _exact_draw(net: PolyNet, n_points: int, rng: np.random.Generator, prime: int | None):
    """Random integer parameters and points: uniform mod ``prime``, or in ``[-2^10, 2^10]``."""
    high, low = (prime, 0) if prime is not None else (RATIONAL_BOUND + 1, -RATIONAL_BOUND)
    theta = np.array([int(v) for v in rng.integers(low, high, size=net.n_params)], dtype=object)
    X = np.array([[int(v) for v in row] for row in rng.integers(low, high, size=(n_points, net.widths[0]))],
                 dtype=object)
    return theta, X


def _rank_at(net: PolyNet, theta: np.ndarray, X: np.ndarray, exact: bool, prime: int | None) -> RankResult:
    if exact:
        return RankResult(exact_rank(net.jacobian(theta, X, modulus=prime), prime), math.inf, np.array([]))
    return numerical_rank(net.jacobian(theta, X))


def _default_points(net: PolyNet) -> int:
    """``M = ceil(2 · max(A, P) / d_L) + 10`` generic points (evaluation is injective for ``M d_L ≥ A``)."""
    return math.ceil(2 * max(net.ambient_dim, net.n_params) / net.widths[-1]) + 10


# ----------------------------------------------------------------------------- dimensions


def expected_dim(widths: tuple[int, ...], r: int, bias: bool = False) -> int:
    """Kileel–Trager–Bruna's expected dimension ``min(d_L + Σ_{i<L} (d_i - 1) d_{i+1}, A)``.

    Equal to ``min(P - #hidden neurons, A)``: parameters minus one rescaling symmetry per hidden
    neuron, capped by the ambient dimension.  With ``bias=True`` the same count is
    used (our extension; the count is stated without biases).
    """
    net = PolyNet(widths, r, bias)
    return min(net.n_params - net.n_hidden, net.ambient_dim)


def ah_secant_dim(d0: int, d1: int, r: int) -> int:
    """Alexander–Hirschowitz: dimension of shallow ``(d0, d1, 1)`` networks with ``σ = z^r``.

    The affine cone over the ``d1``-th secant variety of the degree-``r`` Veronese variety of
    ``P^{d0-1}`` has dimension ``min(d1 d0, C(d0 + r - 1, r))``, except ``r = 2`` (symmetric
    matrices of rank ≤ ``d1``: ``k d0 - C(k, 2)``, ``k = min(d1, d0)``) and the four cases of
    :data:`AH_EXCEPTIONS`, one less.
    """
    d0, d1, r = (check_scalar(v, name, "int", min=1) for name, v in (("d0", d0), ("d1", d1), ("r", r)))
    ambient = math.comb(d0 + r - 1, r)
    if r == 2:
        k = min(d1, d0)
        return k * d0 - math.comb(k, 2)
    return min(d1 * d0, ambient) - ((d0, r, d1) in AH_EXCEPTIONS)


def linear_net_dim(widths: tuple[int, ...], bias: bool = False) -> int:
    """Dimension for ``r = 1``: ``d_L × d_0`` matrices of rank ≤ ``k = min(widths)``, ``k (d_0 + d_L - k)``.

    With biases the output bias adds any vector: ``+ d_L``.
    """
    widths = _check_widths(widths)
    bias = check_bool(bias, "bias")
    d0, dL, k = widths[0], widths[-1], min(widths)
    return k * (d0 + dL - k) + (dL if bias else 0)


@dataclass(frozen=True)
class DimResult:
    """Dimension of a neurovariety and what it is compared with.

    ``dim`` (generic Jacobian rank), ``expected`` (KTB), ``ambient``, ``n_params``,
    ``defect = expected - dim`` (> 0: defective), ``filling`` (``dim == ambient``),
    ``spectral_gap`` (float mode, ``inf`` in exact mode or at full column rank),
    ``sample_complexity = ceil(dim / d_L)`` generic samples until the fit is locally determined,
    ``n_points`` the sample points used per draw.
    """

    widths: tuple[int, ...]
    r: int
    bias: bool
    dim: int
    expected: int
    ambient: int
    n_params: int
    defect: int
    filling: bool
    spectral_gap: float
    sample_complexity: int
    n_points: int
    exact: bool


def neurovariety_dim(
    widths: tuple[int, ...],
    r: int,
    *,
    bias: bool = False,
    exact: bool = False,
    prime: int | None = DEFAULT_PRIME,
    n_seeds: int = 2,
    n_points: int | None = None,
    seed: Seed = None,
) -> DimResult:
    """Dimension of the neurovariety of ``PolyNet(widths, r, bias)`` as a generic Jacobian rank.

    Draws ``n_seeds`` random parameter vectors and sets of ``n_points`` sample points (default
    ``ceil(2 max(A, P) / d_L) + 10``) and returns the largest rank (the generic rank is the
    maximum over parameters).  Float mode: float64, :func:`numerical_rank`'s gap check (raises
    :class:`AmbiguousRankError`; retry with ``exact=True``).  Exact mode: random integers and
    sympy ranks over ``GF(prime)`` (default ``2^31 - 1``) or, with ``prime=None``, over the
    rationals; each draw is a lower bound that is exact with probability ``≥ 1 - deg / p``
    (Schwartz–Zippel).
    """
    net = PolyNet(widths, r, bias)
    n_seeds = check_scalar(n_seeds, "n_seeds", "int", min=1)
    exact = check_bool(exact, "exact")
    prime = _check_prime(prime)
    n_points = _default_points(net) if n_points is None else check_scalar(n_points, "n_points", "int", min=1)
    net._check_size(n_points)
    gen = as_generator(seed)
    best: RankResult | None = None
    for _ in range(n_seeds):
        if exact:
            theta, X = _exact_draw(net, n_points, gen, prime)
        else:
            theta, X = net.random_params(gen), net.random_points(n_points, gen)
        res = _rank_at(net, theta, X, exact, prime)
        if best is None or res.rank > best.rank:
            best = res
    expected = min(net.n_params - net.n_hidden, net.ambient_dim)
    return DimResult(
        widths=net.widths,
        r=net.r,
        bias=net.bias,
        dim=best.rank,
        expected=expected,
        ambient=net.ambient_dim,
        n_params=net.n_params,
        defect=expected - best.rank,
        filling=best.rank == net.ambient_dim,
        spectral_gap=best.gap,
        sample_complexity=math.ceil(best.rank / net.widths[-1]),
        n_points=n_points,
        exact=exact,
    )


def param_rank(
    widths: tuple[int, ...],
    r: int,
    theta: np.ndarray,
    *,
    bias: bool = False,
    exact: bool = False,
    n_points: int | None = None,
    seed: Seed = None,
) -> int:
    """Rank of the differential of the parametrisation at a *given* ``θ`` (generic sample points).

    Below the generic rank exactly at critical points of the parametrisation, e.g. parameters
    of narrower sub-networks (a hidden neuron with zero outgoing weights, parallel incoming
    rows).  ``exact=True`` needs integer/rational ``θ`` and computes over the rationals.
    """
    net = PolyNet(widths, r, bias)
    exact = check_bool(exact, "exact")
    theta = _check_theta(theta)
    n_points = _default_points(net) if n_points is None else check_scalar(n_points, "n_points", "int", min=1)
    net._check_size(n_points)
    gen = as_generator(seed)
    if exact:
        theta = np.asarray(theta, dtype=object)
        if not all(isinstance(v, (numbers.Rational, sympy.Rational)) for v in theta.ravel()):
            raise TypeError("exact=True needs integer or rational theta (ints, Fractions or sympy Rationals)")
        theta = np.array([Fraction(int(sympy.Rational(v).p), int(sympy.Rational(v).q)) for v in theta.ravel()],
                         dtype=object)
        _, X = _exact_draw(net, n_points, gen, None)
        return exact_rank(net.jacobian(theta, X), None)
    theta = np.asarray(theta, dtype=float)
    return numerical_rank(net.jacobian(theta, net.random_points(n_points, gen))).rank


def rank_with_samples(
    widths: tuple[int, ...],
    r: int,
    n_samples: int,
    *,
    bias: bool = False,
    seed: Seed = None,
) -> int:
    """Generic rank of the Jacobian with only ``n_samples`` sample points.

    For single-output networks it is ``min(n_samples, dim)``: the function is locally
    determined (finite fibres) by ``dim`` generic samples and not fewer.
    """
    net = PolyNet(widths, r, bias)
    n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
    net._check_size(n_samples)
    gen = as_generator(seed)
    return numerical_rank(net.jacobian(net.random_params(gen), net.random_points(n_samples, gen))).rank


def activation_degree_threshold(
    widths: tuple[int, ...],
    r_max: int,
    *,
    seed: Seed = None,
) -> int | None:
    """Smallest ``r̂ ≤ r_max`` with ``dim = min(P - #hidden, A)`` for every ``r̂ ≤ r ≤ r_max``.

    Finkel et al. prove a threshold exists for architectures without width-one hidden layers;
    with a width-one bottleneck (or when even ``r_max`` is defective) this returns ``None``.
    Each ``r`` is checked in float mode; an ambiguous rank raises.
    """
    widths = _check_widths(widths)
    r_max = check_scalar(r_max, "r_max", "int", min=1)
    if any(w == 1 for w in widths[1:-1]):
        return None
    gen = as_generator(seed)
    threshold = None
    for r in range(r_max, 0, -1):
        res = neurovariety_dim(widths, r, seed=gen)
        if res.dim != res.expected:
            break
        threshold = r
    return threshold


# ----------------------------------------------------------------------------- implicit equations (r = 2, shallow)


def quadratic_coefficients(theta: np.ndarray, d0: int, d1: int) -> np.ndarray:
    """The symmetric ``S = W_1ᵀ diag(c) W_1`` with ``f_θ(x) = xᵀ S x`` for ``PolyNet((d0, d1, 1), r=2)``."""
    d0, d1 = check_scalar(d0, "d0", "int", min=1), check_scalar(d1, "d1", "int", min=1)
    net = PolyNet((d0, d1, 1), 2)
    (W1, _), (c, _) = net.unpack(check_array(theta, "theta", ndim=1, dtype=float))
    return W1.T @ (c.ravel()[:, None] * W1)


def sym_coordinates(S: np.ndarray) -> np.ndarray:
    """Upper-triangular entries ``(s_11, s_12, …, s_dd)`` of a symmetric matrix (row-major)."""
    S = _check_theta(S, "S")
    if S.ndim != 2 or S.shape[0] != S.shape[1]:
        raise ValueError(f"S must be a square matrix, got shape {S.shape}")
    return S[np.triu_indices(S.shape[0])]


@dataclass
class ImplicitVariety:
    """An affine variety ``{p : g(p) = 0 for g in equations}`` of known codimension.

    ``equations`` are sympy expressions in ``symbols`` (distinct sympy Symbols, at least one); ``codim``
    (an int, ``0 <= codim <= min(len(equations), len(symbols))``) is the codimension of the (irreducible)
    variety, used by the Jacobian criterion.
    """

    equations: list[sympy.Expr]
    symbols: tuple[sympy.Symbol, ...]
    codim: int

    def __post_init__(self) -> None:
        self.equations = check_sequence(self.equations, "equations",
                                        item=lambda g, name: check_instance(g, name, sympy.Expr, "a sympy expression"))
        self.symbols = tuple(check_sequence(self.symbols, "symbols", min_len=1,
                                            item=lambda v, name: check_instance(v, name, sympy.Symbol)))
        if len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"symbols must be distinct, got {self.symbols}")
        unknown = set().union(*(g.free_symbols for g in self.equations)) - set(self.symbols)
        if unknown:
            raise ValueError(f"equations use symbols not in symbols: {sorted(map(str, unknown))}")
        self.codim = check_scalar(self.codim, "codim", "int", min=0, max=len(self.symbols))
        if self.codim > len(self.equations):
            raise ValueError(f"codim must be at most the number of equations ({len(self.equations)}), got {self.codim}")
        self._values = sympy.lambdify(self.symbols, self.equations, "numpy")
        grads = [[sympy.diff(g, s) for s in self.symbols] for g in self.equations]
        self._grads = sympy.lambdify(self.symbols, grads, "numpy")

    def _check_point(self, point: np.ndarray) -> np.ndarray:
        point = check_array(point, "point", ndim=1, dtype=float)
        if point.shape != (len(self.symbols),):
            raise ValueError(f"point must have {len(self.symbols)} coordinates, got {point.shape[0]}")
        return point

    def residuals(self, point: np.ndarray) -> np.ndarray:
        """The equations evaluated at ``point``."""
        point = self._check_point(point)
        return np.asarray(self._values(*point), dtype=float).reshape(len(self.equations))

    def jacobian(self, point: np.ndarray) -> np.ndarray:
        """The Jacobian of the equations at ``point`` (``len(equations) × len(symbols)``)."""
        point = self._check_point(point)
        return np.asarray(self._grads(*point), dtype=float).reshape(len(self.equations), len(self.symbols))


def quadratic_shallow_equations(d0: int, d1: int) -> ImplicitVariety:
    """Implicit equations of the neurovariety of ``PolyNet((d0, d1, 1), r=2)``.

    In the coordinates :func:`sym_coordinates` of ``S``, the variety is ``{rank S ≤ d1}``, cut
    out (as a prime ideal) by all ``(d1 + 1)``-minors of the symmetric matrix ``S``; codimension
    ``C(d0 - d1 + 1, 2)``.  For ``d1 ≥ d0`` it fills the space (no equations).  Sub-networks
    (``rank S < d1``) are exactly its singular points.  Minors are enumerated by sympy, so keep
    ``d0`` small (≤ 5).
    """
    d0, d1 = check_scalar(d0, "d0", "int", min=1), check_scalar(d1, "d1", "int", min=1)
    if d0 > 6:
        raise ValueError(f"d0={d0} is too large for symbolic minors (at most 6)")
    symbols = tuple(sympy.symbols(f"s{i}{j}") for i in range(d0) for j in range(i, d0))
    lookup = dict(zip([(i, j) for i in range(d0) for j in range(i, d0)], symbols, strict=True))
    S = sympy.Matrix(d0, d0, lambda i, j: lookup[(min(i, j), max(i, j))])
    if d1 >= d0:
        return ImplicitVariety([], symbols, 0)
    k = d1 + 1
    minors = {sympy.expand(S.extract(list(rows), list(cols)).det())
              for rows in combinations(range(d0), k) for cols in combinations(range(d0), k)}
    equations = sorted((m for m in minors if m != 0), key=sympy.default_sort_key)
    return ImplicitVariety(equations, symbols, math.comb(d0 - d1 + 1, 2))


def singularity_report(variety: ImplicitVariety, point: np.ndarray) -> dict[str, float]:
    """Residual, gradient norm and Jacobian singular values of ``variety`` at ``point``.

    ``residual`` is the largest ``|g(p)|``; ``grad_norm`` the Frobenius norm of the Jacobian of
    the equations; ``sigma_codim`` its ``codim``-th singular value (zero at singular points by
    the Jacobian criterion; for a hypersurface it equals the gradient norm).  ``point`` is a finite 1-d array
    of ``len(variety.symbols)`` coordinates.
    """
    check_instance(variety, "variety", ImplicitVariety, "an ImplicitVariety (see quadratic_shallow_equations)")
    point = variety._check_point(point)
    if variety.codim == 0:
        return {"residual": 0.0, "grad_norm": 0.0, "sigma_codim": math.inf}
    J = variety.jacobian(point)
    s = np.linalg.svd(J, compute_uv=False)
    return {
        "residual": float(np.max(np.abs(variety.residuals(point)))),
        "grad_norm": float(np.linalg.norm(J)),
        "sigma_codim": float(s[variety.codim - 1]) if len(s) >= variety.codim else 0.0,
    }


def is_singular_point(variety: ImplicitVariety, point: np.ndarray, tol: float = 1e-9) -> bool:
    """Jacobian criterion: ``point`` lies on the variety and its equations' Jacobian has rank < codim.

    The equations are homogeneous of degree ``k`` (minors), so the tolerances are relative:
    the residual must be ``≤ tol · |p|^k`` (else ``ValueError``: the point is not on the variety)
    and the point is singular when ``σ_codim ≤ tol · |p|^(k-1)`` (``|p|`` the largest coordinate).
    A filling variety (codim 0) has no singular points; the apex ``p = 0`` of a cone is singular.
    """
    check_instance(variety, "variety", ImplicitVariety, "an ImplicitVariety (see quadratic_shallow_equations)")
    tol = check_scalar(tol, "tol", "real", min=0.0, inclusive="neither")
    point = variety._check_point(point)
    if variety.codim == 0:
        return False
    report = singularity_report(variety, point)
    scale = float(np.max(np.abs(point)))
    degree = max(int(sympy.Poly(g, *variety.symbols).total_degree()) for g in variety.equations)
    if report["residual"] > tol * scale**degree:
        raise ValueError(f"point is not on the variety: residual {report['residual']:.3g} > {tol} * |p|^{degree}")
    return report["sigma_codim"] <= tol * scale ** (degree - 1)
