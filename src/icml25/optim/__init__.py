"""Optimisation methods.

``generalized_smoothness_gd``: gradient descent with the ℓ-smoothness step size (Tyurin, ICML 2025).
The PyTorch parts (``EllGD``, ``scale_grad_by_ell_``) are imported on first use.

``squisher``: Adam's squared-gradient accumulator as a diagonal Fisher, with the exact Fisher and the
five applications (Li et al., ICML 2025).  Needs PyTorch; its names are imported on first use.
"""

import importlib

from icml25.optim import generalized_smoothness_gd as _gsgd

_SQUISHER_NAMES = (
    "EWCPenalty",
    "apply_masks",
    "average_merge",
    "compare_importance",
    "ewc_loss",
    "fish_mask",
    "fisher_diagonal",
    "fisher_merge",
    "magnitude_importance",
    "magnitude_prune",
    "masked_finetune",
    "obd_prune",
    "random_importance",
    "random_mask",
    "random_prune",
    "read_squisher",
    "task_arithmetic",
    "top_fraction_masks",
    "ugm_merge",
    "uniform_importance",
)
_LAZY_MODULES = {
    **dict.fromkeys(_gsgd.__all__, "icml25.optim.generalized_smoothness_gd"),
    **dict.fromkeys(_SQUISHER_NAMES, "icml25.optim.squisher"),
}

__all__ = [*_gsgd.__all__, *_SQUISHER_NAMES]


def __getattr__(name: str):
    """Resolve the exports from their modules on first use (PyTorch is only imported when needed)."""
    if name in _LAZY_MODULES:
        return getattr(importlib.import_module(_LAZY_MODULES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
