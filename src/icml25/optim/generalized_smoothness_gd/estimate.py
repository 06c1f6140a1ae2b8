"""Heuristic (L0, L1) estimation from measured (||∇f||, ||∇²f||) pairs (not from the paper).

As Zhang et al. (2020) did to motivate (L0, L1)-smoothness: at points along a trajectory,
measure ``s = ||∇f(x)||`` and ``h = ||∇²f(x)||`` (power iteration on Hessian-vector products,
20 iterations by default; a lower estimate of the norm), then fit the smallest line above all
pairs by a linear program: minimise ``L0 + w L1`` subject to ``L0 + L1 s_j >= h_j``,
``L0, L1 >= 0``, with ``w`` the median measured ``s``.  A fitted ℓ is only as good as the points
it saw: it certifies nothing outside them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import linprog

from icml25.optim.generalized_smoothness_gd.ell import AffineEll
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_callable, check_consistent_length, check_scalar

__all__ = ["estimate_ell", "fit_affine_envelope", "measure_curvature"]

GradFn = Callable[[np.ndarray], np.ndarray]
HvpFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _finite_difference_hvp(grad_fn: GradFn) -> HvpFn:
    def hvp(x: np.ndarray, v: np.ndarray) -> np.ndarray:
        eps = np.sqrt(np.finfo(float).eps) * max(1.0, float(np.linalg.norm(x)))
        return (np.asarray(grad_fn(x + eps * v)) - np.asarray(grad_fn(x - eps * v))) / (2.0 * eps)

    return hvp


def measure_curvature(
    grad_fn: GradFn,
    hvp_fn: HvpFn | None,
    points: np.ndarray,
    *,
    n_power_iter: int = 20,
    seed: Seed = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(s_j, h_j) = (||∇f(x_j)||, ||∇²f(x_j)||)`` for the rows ``x_j`` of ``points``.

    ``h_j`` is the power-iteration estimate of the spectral norm from ``hvp_fn(x, v)``
    (central finite differences of ``grad_fn`` when ``hvp_fn`` is ``None``).
    """
    check_callable(grad_fn, "grad_fn")
    if hvp_fn is not None:
        check_callable(hvp_fn, "hvp_fn")
    points = check_array(points, "points", ndim=2, dtype=float, min_len=1)
    n_power_iter = check_scalar(n_power_iter, "n_power_iter", "int", min=1)
    hvp = _finite_difference_hvp(grad_fn) if hvp_fn is None else hvp_fn
    rng = as_generator(seed)
    s = np.empty(len(points))
    h = np.empty(len(points))
    for j, x in enumerate(points):
        s[j] = np.linalg.norm(grad_fn(x))
        v = rng.standard_normal(x.shape)
        v /= np.linalg.norm(v)
        norm = 0.0
        for _ in range(n_power_iter):
            w = np.asarray(hvp(x, v), dtype=float)
            norm = float(np.linalg.norm(w))
            if norm == 0.0:
                break
            v = w / norm
        h[j] = norm
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(h))):
        raise FloatingPointError("non-finite gradient or Hessian-vector product at one of the points")
    return s, h


def fit_affine_envelope(s: np.ndarray, h: np.ndarray, weight: float | None = None) -> AffineEll:
    """The line ``L0 + L1 s`` above all pairs minimising ``L0 + weight L1`` (a linear program).

    ``weight`` defaults to the median of ``s``: the line is lowest at a typical gradient norm.
    """
    s = check_array(s, "s", ndim=1, dtype=float, min_len=1)
    h = check_array(h, "h", ndim=1, dtype=float, min_len=1)
    check_consistent_length(s, h, names=("s", "h"))
    if np.any(s < 0) or np.any(h < 0):
        raise ValueError(f"s and h must have entries >= 0, got min {min(s.min(), h.min()):g}")
    weight = float(np.median(s)) if weight is None else check_scalar(weight, "weight", "real", min=0.0)
    floor = 1e-12 * max(float(h.max()), 1e-300)
    res = linprog(
        c=[1.0, max(weight, 1e-12)],
        A_ub=-np.column_stack([np.ones_like(s), s]),
        b_ub=-h,
        bounds=[(floor, None), (0.0, None)],
        method="highs",
    )
    if not res.success:
        raise RuntimeError(f"the envelope linear program failed: {res.message}")
    L0, L1 = (float(v) for v in res.x)
    return AffineEll(max(L0, floor), max(L1, 0.0))


def estimate_ell(
    grad_fn: GradFn,
    hvp_fn: HvpFn | None,
    points: np.ndarray,
    *,
    n_power_iter: int = 20,
    weight: float | None = None,
    seed: Seed = 0,
) -> AffineEll:
    """Heuristic (L0, L1) envelope of the curvature measured at ``points`` (see module docstring)."""
    if weight is not None:
        weight = check_scalar(weight, "weight", "real", min=0.0)
    s, h = measure_curvature(grad_fn, hvp_fn, points, n_power_iter=n_power_iter, seed=seed)
    return fit_affine_envelope(s, h, weight)
