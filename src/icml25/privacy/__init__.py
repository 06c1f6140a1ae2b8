"""Differential privacy: noise calibration and lossless multiple release."""

from icml25.privacy.calibration import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    gaussian_sigma_zcdp,
    laplace_scale,
    poisson_delta,
)
from icml25.privacy.multiple_release import (
    GaussianFamily,
    GaussianMultipleRelease,
    LaplaceFamily,
    LaplaceMultipleRelease,
    MultipleRelease,
    NoiseFamily,
    PoissonFamily,
    PoissonMultipleRelease,
    sample_discrete_gaussian,
)
from icml25.privacy.sparse_histogram import SparseHistogramGradualRelease, ZeroBinFilter

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "gaussian_sigma_zcdp",
    "laplace_scale",
    "poisson_delta",
    "NoiseFamily",
    "GaussianFamily",
    "LaplaceFamily",
    "PoissonFamily",
    "MultipleRelease",
    "GaussianMultipleRelease",
    "LaplaceMultipleRelease",
    "PoissonMultipleRelease",
    "sample_discrete_gaussian",
    "SparseHistogramGradualRelease",
    "ZeroBinFilter",
]
