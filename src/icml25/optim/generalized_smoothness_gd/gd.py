"""Gradient descent with the ℓ-step (Tyurin, ICML 2025) and the baselines it is compared with.

Every solver runs ``x_{k+1} = x_k - γ_k ∇f(x_k)`` and differs only in the step rule ``γ_k``:

=================  ==========================================================================
``ell_gd``         γ = ∫_0^1 dv / ℓ(s + s v), the paper's step (s = ||∇f(x_k)||)
``constant_gd``    γ = η fixed (``theory_constant_step`` gives the earlier analyses' 1/ℓ(2 s_0))
``clipped_gd``     γ = min(1/(2 L0), 1/(2 L1 s))            (clipped GD, Zhang et al. 2020 style)
``normalized_gd``  γ = c / s                                (normalized GD)
``l0l1_gd``        γ = 1 / (L0 + L1 s)                      (the simple (L0, L1) step)
``armijo_gd``      backtracking line search on f (reference; counts function evaluations)
=================  ==========================================================================

All stop when ``||∇f(x_k)|| <= tol`` (``converged``), after ``max_iter`` steps, or when a step
leaves ``domain`` / produces a non-finite iterate (``diverged``; the last valid iterate is kept,
nothing continues with NaN).  A non-finite gradient raises ``FloatingPointError`` naming the
iteration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from icml25.optim.generalized_smoothness_gd.ell import Ell, as_ell
from icml25.utils.validation import check_array, check_callable, check_scalar

__all__ = [
    "GDResult",
    "GridResult",
    "armijo_gd",
    "clipped_gd",
    "constant_gd",
    "ell_gd",
    "grid_search",
    "l0l1_gd",
    "normalized_gd",
    "theory_constant_step",
]

GradFn = Callable[[np.ndarray], np.ndarray]
Objective = Callable[[np.ndarray], float]
Domain = Callable[[np.ndarray], bool]
Callback = Callable[[int, np.ndarray, float], "bool | None"]


@dataclass
class GDResult:
    """The outcome of one run.

    ``grad_norms[k]`` and ``f_values[k]`` belong to iterate ``x_k`` (``n_iter + 1`` entries;
    ``f_values`` is ``None`` without ``f``), ``steps[k]`` is the step taken from ``x_k``.
    """

    x: np.ndarray
    n_iter: int
    grad_norms: np.ndarray
    f_values: np.ndarray | None
    steps: np.ndarray
    converged: bool
    diverged: bool
    n_grad_evals: int
    n_f_evals: int
    message: str

    def descent_gaps(self) -> np.ndarray:
        """``f(x_k) - γ_k ||∇f(x_k)||²/2 - f(x_{k+1})`` per step: >= 0 is the descent lemma."""
        if self.f_values is None:
            raise ValueError("descent gaps need f values: run the solver with f=...")
        n = self.steps.size
        return self.f_values[:n] - 0.5 * self.steps * self.grad_norms[:n] ** 2 - self.f_values[1 : n + 1]

    def descent_violations(self, rtol: float = 1e-9) -> int:
        """Steps where ``f(x_{k+1}) > f(x_k) - γ_k s_k²/2`` by more than ``rtol`` times ``|f|``."""
        check_scalar(rtol, "rtol", "real", min=0.0)
        n = self.steps.size
        scale = np.maximum(np.abs(self.f_values[:n]), np.abs(self.f_values[1 : n + 1])) if n else 0.0
        return int(np.sum(self.descent_gaps() < -rtol * scale))


@dataclass
class GridResult:
    """A grid search over one hyperparameter: the fastest converged run, and all runs."""

    best_value: float | None
    best: GDResult | None
    results: dict[float, GDResult]


def _check_x0(x0: np.ndarray) -> np.ndarray:
    return check_array(x0, "x0", ndim=1, dtype=float, min_len=1, copy=True)


def _check_common(grad_fn: GradFn, max_iter: int, tol: float, **optional: Callable | None) -> None:
    """The checks every solver shares: ``grad_fn`` callable, the stopping rule, optional callables."""
    check_callable(grad_fn, "grad_fn")
    check_scalar(max_iter, "max_iter", "int", min=0)
    check_scalar(tol, "tol", "real", min=0.0)
    for name, fn in optional.items():
        if fn is not None:
            check_callable(fn, name)


def _gradient(grad_fn: GradFn, x: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    g = np.asarray(grad_fn(x), dtype=float)
    if g.shape != x.shape:
        raise ValueError(f"grad_fn returned shape {g.shape} for x of shape {x.shape}")
    s = math.sqrt(float(np.vdot(g, g)))
    if not math.isfinite(s):
        if not np.all(np.isfinite(g)):
            raise FloatingPointError(f"non-finite gradient at iteration {k}")
        m = float(np.max(np.abs(g)))
        s = m * float(np.linalg.norm(g / m))
    return g, s


def _descend(
    grad_fn: GradFn,
    x0: np.ndarray,
    rule: Callable[[float], float],
    *,
    f: Objective | None,
    max_iter: int,
    tol: float,
    domain: Domain | None,
    callback: Callback | None,
) -> GDResult:
    """The loop shared by every fixed-rule method: ``x <- x - rule(||g||) g``."""
    _check_common(grad_fn, max_iter, tol, f=f, domain=domain, callback=callback)
    x = _check_x0(x0)
    if domain is not None and not domain(x):
        raise ValueError("x0 lies outside the domain")
    norms: list[float] = []
    values: list[float] = []
    steps: list[float] = []
    converged = diverged = False
    message = f"reached max_iter={max_iter}"
    for k in range(max_iter + 1):
        g, s = _gradient(grad_fn, x, k)
        norms.append(s)
        if f is not None:
            values.append(float(f(x)))
        if s <= tol:
            converged, message = True, f"||grad|| <= tol at iteration {k}"
            break
        if callback is not None and callback(k, x, s):
            message = f"stopped by callback at iteration {k}"
            break
        if k == max_iter:
            break
        gamma = float(rule(s))
        x_new = x - gamma * g
        if not np.all(np.isfinite(x_new)) or (domain is not None and not domain(x_new)):
            diverged, message = True, f"step {k} left the domain (or overflowed); stopped at x_{k}"
            break
        x = x_new
        steps.append(gamma)
    return GDResult(
        x=x,
        n_iter=len(steps),
        grad_norms=np.asarray(norms),
        f_values=np.asarray(values) if f is not None else None,
        steps=np.asarray(steps),
        converged=converged,
        diverged=diverged,
        n_grad_evals=len(norms),
        n_f_evals=len(values),
        message=message,
    )


def ell_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    ell: Ell | Callable[[np.ndarray], np.ndarray] | float,
    *,
    f: Objective | None = None,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """GD with the ℓ-step ``γ_k = ∫_0^1 dv / ℓ(s_k + s_k v)`` (the paper's method).

    ``ell`` is an ``Ell`` (``AffineEll``, ``PowerEll``, ...), a vectorised callable (integrated
    by quadrature) or a number ``L`` (plain GD with step ``1/L``).  ``f`` is optional and only
    recorded (e.g. to check the descent lemma with ``result.descent_violations()``).
    """
    ell = as_ell(ell)
    return _descend(grad_fn, x0, ell.step, f=f, max_iter=max_iter, tol=tol, domain=domain, callback=callback)


def constant_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    step: float,
    *,
    f: Objective | None = None,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """Plain GD with a constant step ``step``."""
    step = check_scalar(step, "step", "real", min=0.0, inclusive="neither")
    return _descend(grad_fn, x0, lambda s: step, f=f, max_iter=max_iter, tol=tol, domain=domain,
                    callback=callback)


def theory_constant_step(ell: Ell | Callable[[np.ndarray], np.ndarray] | float, grad_norm0: float) -> float:
    """The constant step ``1/ℓ(2 ||∇f(x_0)||)`` of earlier constant-step analyses (our reading of them)."""
    grad_norm0 = check_scalar(grad_norm0, "grad_norm0", "real", min=0.0)
    return 1.0 / float(as_ell(ell)(np.asarray(2.0 * grad_norm0)))


def clipped_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    L0: float,
    L1: float,
    *,
    f: Objective | None = None,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """Clipped GD, ``γ = min(1/(2 L0), 1/(2 L1 s))`` (``L1 = 0`` gives ``1/(2 L0)``)."""
    L0 = check_scalar(L0, "L0", "real", min=0.0, inclusive="neither")
    L1 = check_scalar(L1, "L1", "real", min=0.0)

    def rule(s: float) -> float:
        return 0.5 / L0 if L1 * s <= L0 else 0.5 / (L1 * s)

    return _descend(grad_fn, x0, rule, f=f, max_iter=max_iter, tol=tol, domain=domain, callback=callback)


def normalized_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    c: float,
    *,
    f: Objective | None = None,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """Normalized GD, ``γ = c / s``: every step has length ``c``."""
    c = check_scalar(c, "c", "real", min=0.0, inclusive="neither")
    return _descend(grad_fn, x0, lambda s: c / s, f=f, max_iter=max_iter, tol=tol, domain=domain,
                    callback=callback)


def l0l1_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    L0: float,
    L1: float,
    *,
    f: Objective | None = None,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """GD with the simple (L0, L1) step ``γ = 1 / (L0 + L1 s)``."""
    L0 = check_scalar(L0, "L0", "real", min=0.0, inclusive="neither")
    L1 = check_scalar(L1, "L1", "real", min=0.0)
    return _descend(grad_fn, x0, lambda s: 1.0 / (L0 + L1 * s), f=f, max_iter=max_iter, tol=tol,
                    domain=domain, callback=callback)


def armijo_gd(
    grad_fn: GradFn,
    x0: np.ndarray,
    f: Objective,
    *,
    step0: float = 1.0,
    shrink: float = 0.5,
    growth: float = 2.0,
    c1: float = 1e-4,
    max_backtracks: int = 100,
    max_iter: int = 10_000,
    tol: float = 1e-6,
    domain: Domain | None = None,
    callback: Callback | None = None,
) -> GDResult:
    """GD with Armijo backtracking: shrink ``γ`` until ``f(x - γ g) <= f(x) - c1 γ s²``.

    Each search starts at ``min(step0, growth * previous γ)``; trial points outside ``domain``
    are shrunk without evaluating ``f``, and an ``f`` that overflows counts as too far a step.
    ``n_f_evals`` counts every evaluation of ``f``.  A
    search that fails after ``max_backtracks`` shrinks stops the run (``diverged=False``).
    """
    check_callable(f, "f")
    step0 = check_scalar(step0, "step0", "real", min=0.0, inclusive="neither")
    growth = check_scalar(growth, "growth", "real", min=0.0, inclusive="neither")
    shrink = check_scalar(shrink, "shrink", "real", min=0.0, max=1.0, inclusive="neither")
    c1 = check_scalar(c1, "c1", "real", min=0.0, max=1.0, inclusive="neither")
    max_backtracks = check_scalar(max_backtracks, "max_backtracks", "int", min=1)
    _check_common(grad_fn, max_iter, tol, domain=domain, callback=callback)
    x = _check_x0(x0)
    if domain is not None and not domain(x):
        raise ValueError("x0 lies outside the domain")
    fx = float(f(x))
    norms, values, steps = [], [fx], []
    n_f = 1
    converged = False
    message = f"reached max_iter={max_iter}"
    gamma = step0
    for k in range(max_iter + 1):
        g, s = _gradient(grad_fn, x, k)
        norms.append(s)
        if s <= tol:
            converged, message = True, f"||grad|| <= tol at iteration {k}"
            break
        if callback is not None and callback(k, x, s):
            message = f"stopped by callback at iteration {k}"
            break
        if k == max_iter:
            break
        gamma = min(step0, growth * gamma)
        for _ in range(max_backtracks):
            trial = x - gamma * g
            if np.all(np.isfinite(trial)) and (domain is None or domain(trial)):
                n_f += 1
                try:
                    f_trial = float(f(trial))
                except (OverflowError, FloatingPointError):
                    f_trial = math.inf
                if f_trial <= fx - c1 * gamma * s * s:
                    break
            gamma *= shrink
        else:
            message = f"line search failed at iteration {k}"
            break
        x, fx = trial, f_trial
        values.append(fx)
        steps.append(gamma)
    return GDResult(
        x=x,
        n_iter=len(steps),
        grad_norms=np.asarray(norms),
        f_values=np.asarray(values),
        steps=np.asarray(steps),
        converged=converged,
        diverged=False,
        n_grad_evals=len(norms),
        n_f_evals=n_f,
        message=message,
    )


def grid_search(run: Callable[[float], GDResult], values: Sequence[float]) -> GridResult:
    """Run ``run(v)`` for each ``v`` (finite numbers); the best is the converged run with the fewest iterations."""
    check_callable(run, "run")
    if values is None or isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"values must be a sequence of numbers, got {values!r}")
    values = list(values)
    if not values:
        raise ValueError("values must not be empty")
    values = check_array(values, "values", ndim=1, dtype=float).tolist()
    results = {v: run(v) for v in values}
    done = {v: r for v, r in results.items() if r.converged and not r.diverged}
    if not done:
        return GridResult(best_value=None, best=None, results=results)
    best_value = min(done, key=lambda v: (done[v].n_iter, v))
    return GridResult(best_value=best_value, best=done[best_value], results=results)
