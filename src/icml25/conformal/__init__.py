"""Conformal prediction: cross-conformal sets with efficient p-value merging, and their baselines."""

from icml25.conformal.cross_conformal import (
    CrossConformalClassifier,
    CrossConformalRegressor,
    CVPlusRegressor,
    SplitConformalClassifier,
    SplitConformalRegressor,
    coverage_guarantee,
    covers,
    effective_alpha,
    grid_intervals,
    interval_length,
    merge_counts,
)
from icml25.conformal.merging import merge_eu, merge_exchangeable, merge_mean, merge_uniform, vovk_pooled

__all__ = [
    "CVPlusRegressor",
    "CrossConformalClassifier",
    "CrossConformalRegressor",
    "SplitConformalClassifier",
    "SplitConformalRegressor",
    "coverage_guarantee",
    "covers",
    "effective_alpha",
    "grid_intervals",
    "interval_length",
    "merge_counts",
    "merge_eu",
    "merge_exchangeable",
    "merge_mean",
    "merge_uniform",
    "vovk_pooled",
]
