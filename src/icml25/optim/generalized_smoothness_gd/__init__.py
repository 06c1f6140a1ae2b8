"""Toward a Unified Theory of Gradient Descent under Generalized Smoothness (Tyurin, ICML 2025).

Gradient descent for ℓ-smooth functions, ``||∇²f(x)|| <= ℓ(||∇f(x)||)``, with the paper's step
``γ_k = ∫_0^1 dv / ℓ(||∇f(x_k)|| + ||∇f(x_k)|| v)``: closed forms for constant, affine
((L0, L1)) and squared-affine ℓ, Gauss-Legendre quadrature otherwise; the NumPy solver
``ell_gd`` with its baselines, the PyTorch optimizer ``EllGD``, certified test functions and a
heuristic ``estimate_ell``.

Example
-------
>>> import numpy as np
>>> from icml25.optim import AffineEll, CoshSum, ell_gd
>>> fn = CoshSum(np.array([0.5, 1.0, 2.0]))        # ℓ(s) = 4 + 2 s, certified
>>> res = ell_gd(fn.grad, 5.0 * np.ones(3), fn.ell, f=fn.f, tol=1e-8)
>>> res.converged, res.descent_violations()
(True, 0)
>>> round(AffineEll(1.0, 1.0).step(0.0), 6)        # 1/L0 at a zero gradient
1.0
"""

from icml25.optim.generalized_smoothness_gd.ell import (
    AffineEll,
    CallableEll,
    ConstantEll,
    Ell,
    EllFunction,
    PowerEll,
    SquaredAffineEll,
    as_ell,
    ell_step,
    quadrature_step,
)
from icml25.optim.generalized_smoothness_gd.estimate import estimate_ell, fit_affine_envelope, measure_curvature
from icml25.optim.generalized_smoothness_gd.gd import (
    GDResult,
    GridResult,
    armijo_gd,
    clipped_gd,
    constant_gd,
    ell_gd,
    grid_search,
    l0l1_gd,
    normalized_gd,
    theory_constant_step,
)
from icml25.optim.generalized_smoothness_gd.testfns import CertifiedFunction, CoshSum, DoubleWell, LogBarrier

_TORCH = ("EllGD", "scale_grad_by_ell_")

__all__ = [
    "AffineEll",
    "CallableEll",
    "CertifiedFunction",
    "ConstantEll",
    "CoshSum",
    "DoubleWell",
    "Ell",
    "EllFunction",
    "EllGD",
    "GDResult",
    "GridResult",
    "LogBarrier",
    "PowerEll",
    "SquaredAffineEll",
    "armijo_gd",
    "as_ell",
    "clipped_gd",
    "constant_gd",
    "ell_gd",
    "ell_step",
    "estimate_ell",
    "fit_affine_envelope",
    "grid_search",
    "l0l1_gd",
    "measure_curvature",
    "normalized_gd",
    "quadrature_step",
    "scale_grad_by_ell_",
    "theory_constant_step",
]


def __getattr__(name: str):
    """Import the PyTorch part (``EllGD``, ``scale_grad_by_ell_``) only when it is used."""
    if name in _TORCH:
        from icml25.optim.generalized_smoothness_gd import torch_opt

        return getattr(torch_opt, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
