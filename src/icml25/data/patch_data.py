"""Synthetic "signal patch + noise patches" data of feature-learning theory (binary labels).

Each input has ``patches`` patches in R^d: one (at a random position) is the signal ``alpha * y * w_star``
with ``‖w_star‖ = 1``; the others are Gaussian noise ``ξ ~ N(0, (sigma²/d)(I − w_star w_starᵀ))``, so that
``‖ξ‖ ≈ sigma`` and the noise is orthogonal to the feature.  In high dimension the noise vectors of
different examples are nearly orthogonal, which is what lets a network memorize them one by one.  This is
the data model of the training-dynamics part of Li & Li (ICML 2025, ``cgro``) in the style of Allen-Zhu &
Li (2023) and Cao et al. (2022); the constants are our choice.  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar


@dataclass(frozen=True)
class PatchData:
    """Inputs ``X`` (n, patches, d), labels ``y`` in {-1, +1}, the feature ``w_star`` (d,), the noise
    patches ``noise`` (n, patches - 1, d) and the position of each example's signal patch (n,)."""

    X: np.ndarray
    y: np.ndarray
    w_star: np.ndarray
    noise: np.ndarray
    signal_position: np.ndarray


def random_feature(d: int, seed: Seed = 0) -> np.ndarray:
    """A uniformly random unit vector in R^d (the feature ``w_star``)."""
    d = check_scalar(d, "d", "int", min=2)
    v = as_generator(seed).standard_normal(d)
    return v / np.linalg.norm(v)


def make_patch_data(n: int, *, d: int = 200, patches: int = 2, alpha: float = 1.0, sigma: float = 2.0,
                    w_star: np.ndarray | None = None, seed: Seed = 0) -> PatchData:
    """Draw ``n`` examples of the signal/noise patch model (float32 arrays).

    Pass the same ``w_star`` (e.g. from ``random_feature``) to draw a training and a test set of one
    distribution; without it a feature is drawn from ``seed`` first.
    """
    n = check_scalar(n, "n", "int", min=1)
    d = check_scalar(d, "d", "int", min=2)
    patches = check_scalar(patches, "patches", "int", min=2)  # one signal patch and at least one noise patch
    alpha = check_scalar(alpha, "alpha", "real", min=0.0, inclusive="neither")
    sigma = check_scalar(sigma, "sigma", "real", min=0.0, inclusive="neither")
    rng = as_generator(seed)
    if w_star is None:
        w_star = random_feature(d, rng)
    w_star = check_array(w_star, "w_star", ndim=1, dtype=float)
    if w_star.shape != (d,) or not np.isclose(np.linalg.norm(w_star), 1.0, atol=1e-6):
        raise ValueError(f"w_star must be a unit vector of shape ({d},), got shape {w_star.shape}")
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    noise = rng.standard_normal((n, patches - 1, d)) * (sigma / np.sqrt(d))
    noise -= (noise @ w_star)[..., None] * w_star
    position = rng.integers(0, patches, size=n)
    X = np.empty((n, patches, d))
    X[np.arange(n), position] = alpha * y[:, None] * w_star
    X[np.arange(patches)[None, :] != position[:, None]] = noise.reshape(-1, d)
    return PatchData(X.astype(np.float32), y.astype(np.float32), w_star.astype(np.float32),
                     noise.astype(np.float32), position)
