"""ℓ functions and the ℓ-smoothness step size of Tyurin (ICML 2025).

A function ``f`` is ℓ-smooth when ``||∇²f(x)|| <= ℓ(||∇f(x)||)`` for a positive,
non-decreasing ℓ.  The paper's step size, the analogue of ``1/L``, is

    γ(s) = ∫_0^1 dv / ℓ(s + s v) = (1/s) ∫_s^{2s} du / ℓ(u),      γ(0) = 1/ℓ(0),

where ``s = ||∇f(x_k)||``.  Why: along ``x_t = x - t g`` the gradient change ``W(t)`` obeys
``W' <= s ℓ(s + W)``, ``W(0) = 0``, i.e. ``∫_0^{W(t)} dw / ℓ(s + w) = s t``; the bound
``f(x_t) <= f(x) - s² t + s ∫_0^t W`` is smallest where ``W(t) = s``, which is ``t = γ(s)``.
Since ``W`` is convex, every step then decreases ``f`` by at least ``γ s² / 2`` (descent lemma),
and the gradient norm at most doubles along the step.

Closed forms are used for constant, affine ((L0, L1)-smoothness) and squared-affine ℓ; any other
ℓ (powers, user callables) goes through a fixed 32-point Gauss-Legendre rule on ``[0, 1]``,
vectorised over ``s`` (the integrand is smooth on ``[s, 2s]`` for smooth ℓ, so 32 nodes are
exact to rounding for the ℓ used here; ``scipy.integrate.quad`` is the test oracle).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from icml25.utils.validation import check_array, check_bool, check_callable, check_scalar

__all__ = [
    "AffineEll",
    "CallableEll",
    "ConstantEll",
    "Ell",
    "EllFunction",
    "PowerEll",
    "SquaredAffineEll",
    "as_ell",
    "ell_step",
    "quadrature_step",
]

ArrayLike = float | np.ndarray


@runtime_checkable
class Ell(Protocol):
    """What the solvers need from an ℓ: its values and its step ``γ(s)``."""

    def __call__(self, s: ArrayLike) -> ArrayLike:
        raise NotImplementedError

    def step(self, s: ArrayLike) -> ArrayLike:
        raise NotImplementedError


def _gauss_legendre_01(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``1 + v_i`` (``v_i`` the Gauss-Legendre nodes on [0, 1]) and the weights."""
    x, w = np.polynomial.legendre.leggauss(n)
    return 1.0 + 0.5 * (x + 1.0), 0.5 * w


_RULE_32 = _gauss_legendre_01(32)


def _grad_norms(s: ArrayLike, name: str = "gradient norms s") -> np.ndarray:
    s = check_array(s, name, dtype=float)
    if np.any(s < 0):
        raise ValueError(f"{name} must be >= 0, got min {s.min():g}")
    return s


def _scalar(s: ArrayLike, name: str = "gradient norms s") -> float | None:
    """``s`` as a validated float when it is a scalar (the solvers' fast path), else ``None``."""
    if isinstance(s, (float, int, np.floating, np.integer)) and not isinstance(s, bool):
        s = float(s)
        if not (0.0 <= s < math.inf):
            raise ValueError(f"{name} must be a real number in [0, inf), got {s!r}")
        return s
    return None


def _out(values: np.ndarray) -> ArrayLike:
    return float(values) if values.ndim == 0 else values


class EllFunction:
    """Base class: ``step`` by Gauss-Legendre quadrature; subclasses override closed forms."""

    n_nodes: int = 32
    _validate_nodes: bool = False

    def __call__(self, s: ArrayLike) -> ArrayLike:
        raise NotImplementedError

    def _values(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self(u), dtype=float)

    def step(self, s: ArrayLike) -> ArrayLike:
        """The ℓ-step ``γ(s) = ∫_0^1 dv / ℓ(s + s v)`` for one or many gradient norms ``s``."""
        return quadrature_step(self._values, s, n_nodes=self.n_nodes, validate=self._validate_nodes)


class ConstantEll(EllFunction):
    """``ℓ(s) = L`` (classical L-smoothness); the step is exactly ``1/L``."""

    def __init__(self, L: float) -> None:
        self.L = check_scalar(L, "L", "real", min=0.0, inclusive="neither")

    def __call__(self, s: ArrayLike) -> ArrayLike:
        s = _grad_norms(s)
        return _out(np.full(s.shape, self.L))

    def step(self, s: ArrayLike) -> ArrayLike:
        if _scalar(s) is not None:
            return 1.0 / self.L
        return _out(np.full(_grad_norms(s).shape, 1.0 / self.L))

    def __repr__(self) -> str:
        return f"ConstantEll(L={self.L!r})"


class AffineEll(EllFunction):
    """``ℓ(s) = L0 + L1 s``, (L0, L1)-smoothness.

    Closed form ``γ = log1p(L1 s / (L0 + L1 s)) / (L1 s)``: ``1/L0`` for small gradients and
    ``ln 2 / (L1 s)`` for large ones (a smooth, "principled" gradient clipping).  Where
    ``L1 s <= 1e-8 L0`` (including ``L1 = 0``, which reduces to ``ConstantEll(L0)``) the limit
    ``1 / (L0 + 1.5 L1 s)`` is used, so there is no ``0/0``.
    """

    def __init__(self, L0: float, L1: float) -> None:
        self.L0 = check_scalar(L0, "L0", "real", min=0.0, inclusive="neither")
        self.L1 = check_scalar(L1, "L1", "real", min=0.0)

    def __call__(self, s: ArrayLike) -> ArrayLike:
        return _out(self.L0 + self.L1 * _grad_norms(s))

    def step(self, s: ArrayLike) -> ArrayLike:
        scalar = _scalar(s)
        if scalar is not None:
            x = self.L1 * scalar
            return 1.0 / (self.L0 + 1.5 * x) if x <= 1e-8 * self.L0 else math.log1p(x / (self.L0 + x)) / x
        x = self.L1 * _grad_norms(s)
        small = x <= 1e-8 * self.L0
        safe = np.where(small, 1.0, x)
        exact = np.log1p(safe / (self.L0 + safe)) / safe
        return _out(np.where(small, 1.0 / (self.L0 + 1.5 * x), exact))

    def __repr__(self) -> str:
        return f"AffineEll(L0={self.L0!r}, L1={self.L1!r})"


class SquaredAffineEll(EllFunction):
    """``ℓ(s) = (a + b s)²`` (e.g. log barriers); closed form ``γ = 1 / ((a + b s)(a + 2 b s))``."""

    def __init__(self, a: float, b: float) -> None:
        self.a = check_scalar(a, "a", "real", min=0.0, inclusive="neither")
        self.b = check_scalar(b, "b", "real", min=0.0)

    def __call__(self, s: ArrayLike) -> ArrayLike:
        return _out((self.a + self.b * _grad_norms(s)) ** 2)

    def step(self, s: ArrayLike) -> ArrayLike:
        scalar = _scalar(s)
        s = _grad_norms(s) if scalar is None else scalar
        return _out(np.asarray(1.0 / ((self.a + self.b * s) * (self.a + 2.0 * self.b * s))))

    def __repr__(self) -> str:
        return f"SquaredAffineEll(a={self.a!r}, b={self.b!r})"


class PowerEll(EllFunction):
    """``ℓ(s) = L0 + L1 s^ρ`` (ρ >= 0); the step by 32-point Gauss-Legendre quadrature.

    ρ = 0 and ρ = 1 use the constant and affine closed forms.
    """

    def __init__(self, L0: float, L1: float, rho: float) -> None:
        self.L0 = check_scalar(L0, "L0", "real", min=0.0, inclusive="neither")
        self.L1 = check_scalar(L1, "L1", "real", min=0.0)
        self.rho = check_scalar(rho, "rho", "real", min=0.0)
        if self.rho == 0.0:
            self._closed: EllFunction | None = ConstantEll(self.L0 + self.L1)
        elif self.rho == 1.0:
            self._closed = AffineEll(self.L0, self.L1)
        else:
            self._closed = None

    def __call__(self, s: ArrayLike) -> ArrayLike:
        return _out(self.L0 + self.L1 * _grad_norms(s) ** self.rho)

    def _values(self, u: np.ndarray) -> np.ndarray:
        return self.L0 + self.L1 * u**self.rho

    def step(self, s: ArrayLike) -> ArrayLike:
        if self._closed is not None:
            return self._closed.step(s)
        return super().step(s)

    def __repr__(self) -> str:
        return f"PowerEll(L0={self.L0!r}, L1={self.L1!r}, rho={self.rho!r})"


class CallableEll(EllFunction):
    """Any user ℓ given as a vectorised callable ``fn(u: ndarray) -> ndarray``.

    The step uses an ``n_nodes``-point Gauss-Legendre rule; at every call the values at the
    nodes are checked to be finite, positive and non-decreasing (``ValueError`` otherwise).
    Set ``vectorized=False`` for a scalar-only ``fn`` (then it is wrapped by ``np.vectorize``).
    """

    _validate_nodes = True

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], n_nodes: int = 32, vectorized: bool = True):
        check_callable(fn, "fn")
        self.n_nodes = check_scalar(n_nodes, "n_nodes", "int", min=2)
        self.fn = fn if check_bool(vectorized, "vectorized") else np.vectorize(fn, otypes=[float])

    def __call__(self, s: ArrayLike) -> ArrayLike:
        s = _grad_norms(s)
        values = np.asarray(self.fn(s), dtype=float)
        if values.shape != s.shape:
            raise ValueError(
                f"ℓ must be vectorised: it returned shape {values.shape} for input shape {s.shape} "
                "(pass vectorized=False for a scalar-only function)"
            )
        return _out(values)

    def _values(self, u: np.ndarray) -> np.ndarray:
        return np.asarray(self.fn(u), dtype=float)

    def __repr__(self) -> str:
        return f"CallableEll(fn={self.fn!r}, n_nodes={self.n_nodes})"


def quadrature_step(
    ell: Callable[[np.ndarray], np.ndarray], s: ArrayLike, *, n_nodes: int = 32, validate: bool = True
) -> ArrayLike:
    """``γ(s) = ∫_0^1 dv / ℓ(s + s v)`` by an ``n_nodes``-point Gauss-Legendre rule, vectorised in ``s``.

    With ``validate`` the values of ℓ at the nodes must be finite, > 0 and non-decreasing in ``v``
    (a relative slack of 1e-12 absorbs rounding); otherwise ``ValueError``.
    """
    check_callable(ell, "ell")
    n_nodes = check_scalar(n_nodes, "n_nodes", "int", min=1)
    validate = check_bool(validate, "validate")
    one_plus_v, weights = _RULE_32 if n_nodes == 32 else _gauss_legendre_01(n_nodes)
    scalar = _scalar(s)
    u = scalar * one_plus_v if scalar is not None else _grad_norms(s)[..., None] * one_plus_v
    values = np.asarray(ell(u), dtype=float)
    if values.shape != u.shape:
        raise ValueError(f"ℓ must be vectorised: got shape {values.shape} for input shape {u.shape}")
    if validate and values.size:
        if not values.min() > 0 or not math.isfinite(values.max()):  # NaN fails both tests
            bad = u[~(np.isfinite(values) & (values > 0))].ravel()[0]
            raise ValueError(f"ℓ must be finite and > 0, but ℓ({bad:.6g}) is not")
        if (values[..., 1:] - values[..., :-1] < -1e-12 * values[..., 1:]).any():
            raise ValueError("ℓ must be non-decreasing, but it decreases between quadrature nodes")
    return _out(np.asarray((1.0 / values) @ weights))


def as_ell(ell: Ell | Callable[[np.ndarray], np.ndarray] | float) -> Ell:
    """Turn ``ell`` into an ``Ell``: a number is a ``ConstantEll``, a bare callable a ``CallableEll``."""
    if isinstance(ell, Ell):
        return ell
    if isinstance(ell, (int, float, np.integer, np.floating)) and not isinstance(ell, bool):
        return ConstantEll(check_scalar(ell, "ell", "real", min=0.0, inclusive="neither"))
    if callable(ell):
        return CallableEll(ell)
    raise TypeError(f"ell must be an Ell, a callable or a positive number, got {type(ell).__name__}")


def ell_step(ell: Ell | Callable[[np.ndarray], np.ndarray] | float, grad_norm: ArrayLike) -> ArrayLike:
    """The paper's step size ``γ = ∫_0^1 dv / ℓ(s + s v)`` at gradient norm(s) ``grad_norm`` (>= 0, any shape)."""
    ell = as_ell(ell)
    if _scalar(grad_norm, "grad_norm") is None:
        _grad_norms(grad_norm, "grad_norm")
    return ell.step(grad_norm)
