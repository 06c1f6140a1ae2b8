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
