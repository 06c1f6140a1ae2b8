"""Learning theory made runnable: estimators and exact population quantities from theory papers."""

from icml25.learning_theory.early_stopping_logreg import (
    EarlyStoppedLogisticGD,
    GaussianLogisticModel,
    empirical_logistic_loss,
    max_margin_direction,
    ridge_logistic_path,
)

__all__ = [
    "EarlyStoppedLogisticGD",
    "GaussianLogisticModel",
    "empirical_logistic_loss",
    "max_margin_direction",
    "ridge_logistic_path",
]
