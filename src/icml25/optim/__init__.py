"""Optimisation methods.

``generalized_smoothness_gd``: gradient descent with the ℓ-smoothness step size (Tyurin, ICML 2025).
The PyTorch parts (``EllGD``, ``scale_grad_by_ell_``) are imported on first use.
"""

from icml25.optim import generalized_smoothness_gd as _gsgd
from icml25.optim.generalized_smoothness_gd import (
    AffineEll,
    CallableEll,
    CertifiedFunction,
    ConstantEll,
    CoshSum,
    DoubleWell,
    Ell,
    EllFunction,
    GDResult,
    GridResult,
    LogBarrier,
    PowerEll,
    SquaredAffineEll,
    armijo_gd,
    as_ell,
    clipped_gd,
    constant_gd,
    ell_gd,
    ell_step,
    estimate_ell,
    fit_affine_envelope,
    grid_search,
    l0l1_gd,
    measure_curvature,
    normalized_gd,
    quadrature_step,
    theory_constant_step,
)

_LAZY = {"EllGD": _gsgd, "scale_grad_by_ell_": _gsgd}

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
    """Resolve the lazily imported PyTorch exports."""
    if name in _LAZY:
        return getattr(_LAZY[name], name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
