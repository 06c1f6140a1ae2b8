"""Test functions with a certified ℓ: ``||∇²f(x)|| <= ℓ(||∇f(x)||)`` for every x (derivations below).

``CoshSum`` (F1, convex, (L0, L1)), ``DoubleWell`` (F2, nonconvex, ℓ = 4 + 6 s^{2/3}) and
``LogBarrier`` (F3, barrier, ℓ = (C + s)², not (L0, L1)-smooth).  Each has ``f``, ``grad``,
``hess_norm`` (spectral norm of the diagonal Hessian), ``hvp``, ``ell``, ``x_star``, ``f_star``,
``domain`` and ``check_ell(n_points, seed)``, the worst ratio ``||∇²f|| / ℓ(||∇f||)`` on random
points (<= 1 when the certificate holds).
"""

from __future__ import annotations

import numpy as np

from icml25.optim.generalized_smoothness_gd.ell import AffineEll, EllFunction, PowerEll, SquaredAffineEll
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar

__all__ = ["CertifiedFunction", "CoshSum", "DoubleWell", "LogBarrier"]


def _positive_vector(name: str, values: np.ndarray) -> np.ndarray:
    values = check_array(values, name, ndim=1, dtype=float, min_len=1, copy=True)
    if np.any(values <= 0):
        raise ValueError(f"{name} must have entries > 0, got min {values.min():g}")
    return values


class CertifiedFunction:
    """Separable ``f(x) = Σ_i φ_i(x_i)``: subclasses give φ', φ'' and φ on batches ``(..., d)``."""

    d: int
    ell: EllFunction

    def _phi(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _dphi(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _d2phi(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _in_domain(self, x: np.ndarray) -> bool:
        return True

    def _vector(self, x: np.ndarray, name: str) -> np.ndarray:
        return check_array(x, name, dtype=float, shape=(self.d,))

    def domain(self, x: np.ndarray) -> bool:
        """Whether ``x`` (finite, shape ``(d,)``) lies in the domain of ``f`` (all of R^d unless overridden)."""
        return self._in_domain(self._vector(x, "x"))

    def _point(self, x: np.ndarray) -> np.ndarray:
        x = self._vector(x, "x")
        if not self._in_domain(x):
            raise ValueError(f"x lies outside the domain of {type(self).__name__}")
        return x

    def f(self, x: np.ndarray) -> float:
        """The objective value."""
        return float(np.sum(self._phi(self._point(x))))

    def grad(self, x: np.ndarray) -> np.ndarray:
        """The gradient."""
        return self._dphi(self._point(x))

    def hess_norm(self, x: np.ndarray) -> float:
        """``||∇²f(x)||`` (the Hessian is diagonal: the largest |entry|)."""
        return float(np.max(np.abs(self._d2phi(self._point(x)))))

    def hvp(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The Hessian-vector product ``∇²f(x) v``."""
        v = self._vector(v, "v")
        return self._d2phi(self._point(x)) * v

    def check_ell(self, n_points: int = 10_000, seed: Seed = 0) -> float:
        """The worst ratio ``||∇²f(x)|| / ℓ(||∇f(x)||)`` over ``n_points`` random points (<= 1)."""
        n_points = check_scalar(n_points, "n_points", "int", min=1)
        X = self._sample(n_points, as_generator(seed))
        s = np.linalg.norm(self._dphi(X), axis=1)
        h = np.max(np.abs(self._d2phi(X)), axis=1)
        return float(np.max(h / np.asarray(self.ell(s))))

    @staticmethod
    def _sparsify(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Keep one coordinate in half of the points: the certificate is tightest in 1-D."""
        n, d = X.shape
        one = rng.random(n) < 0.5
        keep = np.zeros_like(X, dtype=bool)
        keep[np.arange(n), rng.integers(0, d, n)] = True
        return np.where(one[:, None] & ~keep, 0.0, X)


class CoshSum(CertifiedFunction):
    """F1: ``f(x) = Σ_i cosh(a_i x_i)``, convex, (L0, L1)-smooth with ``ℓ(s) = A² + A s``, A = max a_i.

    Certificate: ``∇²f = diag(a_i² cosh(a_i x_i))`` and ``cosh <= 1 + |sinh|``, so
    ``||∇²f|| <= max_i a_i² + a_i |a_i sinh(a_i x_i)| <= A² + A ||∇f||_∞ <= A² + A ||∇f||``.
    Values that overflow float64 (``|a_i x_i|`` above about 710) raise ``OverflowError``.
    """

    def __init__(self, a: np.ndarray) -> None:
        self.a = _positive_vector("a", a)
        self.d = self.a.size
        A = float(self.a.max())
        self.ell = AffineEll(A * A, A)
        self.x_star = np.zeros(self.d)
        self.f_star = float(self.d)

    @classmethod
    def random(cls, d: int = 10, seed: int | np.random.Generator | None = 0) -> CoshSum:
        """``a ~ U[0.5, 2]^d`` (F1 of the experiments)."""
        return cls(as_generator(seed).uniform(0.5, 2.0, check_scalar(d, "d", "int", min=1)))

    @property
    def affine_ell(self) -> AffineEll:
        """The (L0, L1) pair ``(A², A)`` (the same as ``ell``)."""
        return self.ell

    @staticmethod
    def _finite(values: np.ndarray) -> np.ndarray:
        if not np.all(np.isfinite(values)):
            raise OverflowError("CoshSum overflows float64 (|a_i x_i| > ~710); start closer to 0")
        return values

    def _phi(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self._finite(np.cosh(self.a * x))

    def _dphi(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self._finite(self.a * np.sinh(self.a * x))

    def _d2phi(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            return self._finite(self.a**2 * np.cosh(self.a * x))

    def f(self, x: np.ndarray) -> float:
        value = super().f(x)
        if not np.isfinite(value):
            raise OverflowError("CoshSum overflows float64 in the sum; start closer to 0")
        return value

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        scale = 10.0 ** rng.uniform(-3.0, np.log10(300.0 / self.a.max()), (n, 1))
        return self._sparsify(scale * rng.uniform(-1.0, 1.0, (n, self.d)), rng)


class DoubleWell(CertifiedFunction):
    """F2: ``f(x) = Σ_i (x_i⁴/4 − x_i²/2)``, nonconvex, ``ℓ(s) = 4 + 6 s^{2/3}`` (ρ = 2/3).

    Certificate: ``∇²f = diag(3x_i² − 1)``, ``∇f_i = x_i³ − x_i``.  For ``|x| <= 1``,
    ``|3x² − 1| <= 2``.  For ``|x| >= √2``, ``x² − 1 >= x²/2`` so ``6|x³ − x|^{2/3} >= 6 x² / 2^{2/3}
    >= 3x²``.  For ``1 < |x| < √2``, ``3x² − 1 < 5`` and ``3x² − 1 <= 4`` unless ``x² >= 5/3``, where
    ``6|x³ − x|^{2/3} >= 6 (1.29 · 0.67)^{2/3} > 5``.  Hence ``|3x_i² − 1| <= 4 + 6|∇f_i|^{2/3} <=
    4 + 6||∇f||^{2/3}``.  Global minima at ``x_i = ±1`` (``f* = −d/4``); ``x_star`` is ``1``.

    ``affine_ell = AffineEll(4, 1.2)`` is a certified (L0, L1) pair for the (L0, L1) baselines:
    ``p(x) = 1.2x³ − 3x² − 1.2x + 5`` has its minimum on ``x > 0`` at ``x ≈ 1.847`` with
    ``p ≈ 0.11 > 0``, so ``3x² − 1 <= 4 + 1.2(x³ − x)`` for ``x >= 1`` (and ``<= 4`` below).
    """

    def __init__(self, d: int = 10) -> None:
        self.d = check_scalar(d, "d", "int", min=1)
        self.ell = PowerEll(4.0, 6.0, 2.0 / 3.0)
        self.x_star = np.ones(self.d)
        self.f_star = -self.d / 4.0

    @property
    def affine_ell(self) -> AffineEll:
        """A certified (L0, L1) = (4, 1.2) for the (L0, L1) baselines."""
        return AffineEll(4.0, 1.2)

    def _phi(self, x: np.ndarray) -> np.ndarray:
        return x**4 / 4.0 - x**2 / 2.0

    def _dphi(self, x: np.ndarray) -> np.ndarray:
        return x**3 - x

    def _d2phi(self, x: np.ndarray) -> np.ndarray:
        return 3.0 * x**2 - 1.0

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        scale = 10.0 ** rng.uniform(-2.0, 2.0, (n, 1))
        return self._sparsify(scale * rng.uniform(-1.0, 1.0, (n, self.d)), rng)


class LogBarrier(CertifiedFunction):
    """F3: ``f(x) = Σ_i (c_i x_i − log x_i)`` on ``x > 0``, ``ℓ(s) = (C + s)²``, C = max c_i.

    Certificate: ``∇²f = diag(1/x_i²)`` and ``1/x_i = c_i − ∇f_i <= C + ||∇f||``, so
    ``||∇²f|| <= (C + ||∇f||)²``.  Not (L0, L1)-smooth (curvature grows like s²); the ℓ-step has
    the closed form ``1 / ((C + s)(C + 2s))``.  Minimiser ``x_i = 1/c_i``.  Points with any
    ``x_i <= 0`` are outside the domain (``ValueError``; the solvers stop with ``diverged``).
    """

    def __init__(self, c: np.ndarray) -> None:
        self.c = _positive_vector("c", c)
        self.d = self.c.size
        self.ell = SquaredAffineEll(float(self.c.max()), 1.0)
        self.x_star = 1.0 / self.c
        self.f_star = float(np.sum(1.0 + np.log(self.c)))

    @classmethod
    def random(cls, d: int = 10, seed: int | np.random.Generator | None = 0) -> LogBarrier:
        """``c ~ U[0.5, 2]^d`` (F3 of the experiments)."""
        return cls(as_generator(seed).uniform(0.5, 2.0, check_scalar(d, "d", "int", min=1)))

    def _in_domain(self, x: np.ndarray) -> bool:
        return bool(np.all(x > 0))

    def _phi(self, x: np.ndarray) -> np.ndarray:
        return self.c * x - np.log(x)

    def _dphi(self, x: np.ndarray) -> np.ndarray:
        return self.c - 1.0 / x

    def _d2phi(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / x**2

    def _sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        X = 10.0 ** rng.uniform(-6.0, 6.0, (n, self.d))
        near = rng.random(n) < 0.25
        X[near] = self.x_star * (1.0 + 0.1 * rng.uniform(-1.0, 1.0, (int(near.sum()), self.d)))
        return X
