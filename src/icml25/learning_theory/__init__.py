"""Learning theory made runnable: estimators and exact population quantities from theory papers."""

from icml25.learning_theory.early_stopping_logreg import (
    EarlyStoppedLogisticGD,
    GaussianLogisticModel,
    empirical_logistic_loss,
    max_margin_direction,
    ridge_logistic_path,
)
from icml25.learning_theory.neuroalgebraic import (
    DimResult,
    PolyNet,
    activation_degree_threshold,
    ah_secant_dim,
    expected_dim,
    is_singular_point,
    linear_net_dim,
    neurovariety_dim,
    param_rank,
    quadratic_coefficients,
    quadratic_shallow_equations,
    rank_with_samples,
)

__all__ = [
    "EarlyStoppedLogisticGD",
    "GaussianLogisticModel",
    "empirical_logistic_loss",
    "max_margin_direction",
    "ridge_logistic_path",
    "DimResult",
    "PolyNet",
    "activation_degree_threshold",
    "ah_secant_dim",
    "expected_dim",
    "is_singular_point",
    "linear_net_dim",
    "neurovariety_dim",
    "param_rank",
    "quadratic_coefficients",
    "quadratic_shallow_equations",
    "rank_with_samples",
]

# cgro (Li & Li, ICML 2025) and the shared adversarial attacks need PyTorch (the ``torch`` extra):
# they are imported on first use, so ``import icml25.learning_theory`` works without torch.
_LAZY = {
    **dict.fromkeys(("adversarial_train", "clean_accuracy", "fgsm", "pgd", "robust_accuracy", "History"),
                    "icml25.learning_theory.attacks"),
    **dict.fromkeys(("DynamicsTracker", "RobustMemorizer", "TwoLayerPatchCNN", "interval_bounds", "separation"),
                    "icml25.learning_theory.cgro"),
}
__all__ += sorted(_LAZY)


def __getattr__(name: str):
    """Resolve the lazily imported PyTorch exports (attacks, cgro)."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
