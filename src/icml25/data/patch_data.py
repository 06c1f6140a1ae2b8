"""Synthetic "signal patch + noise patches" data of feature-learning theory (binary labels).

Each input has ``patches`` patches in R^d: one (at a random position) is the signal ``alpha * y * w_star``
with ``‖w_star‖ = 1``; the others are Gaussian noise ``ξ ~ N(0, (sigma²/d)(I − w_star w_starᵀ))``, so that
``‖ξ‖ ≈ sigma`` and the noise is orthogonal to the feature.  In high dimension the noise vectors of
different examples are nearly orthogonal, which is what lets a network memorize them one by one.  This is
the data model of the training-dynamics part of Li & Li (ICML 2025, ``cgro``) in the style of Allen-Zhu &
Li (2023) and Cao et al. (2022); the constants are ours.  NumPy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from icml25.utils.random import as_generator


@dataclass(frozen=True)
class PatchData:
    """Inputs ``X`` (n, patches, d), labels ``y`` in {-1, +1}, the feature ``w_star`` (d,), the noise
    patches ``noise`` (n, patches - 1, d) and the position of each example's signal patch (n,)."""

    X: np.ndarray
    y: np.ndarray
    w_star: np.ndarray
    noise: np.ndarray
    signal_position: np.ndarray


def random_feature(d: int, seed: int | np.random.Generator | None = 0) -> np.ndarray:
    """A uniformly random unit vector in R^d (the feature ``w_star``)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"d must be an integer >= 2, got {d!r}")
    v = as_generator(seed).standard_normal(int(d))
    return v / np.linalg.norm(v)


def make_patch_data(n: int, *, d: int = 200, patches: int = 2, alpha: float = 1.0, sigma: float = 2.0,
                    w_star: np.ndarray | None = None, seed: int | np.random.Generator | None = 0) -> PatchData:
    """Draw ``n`` examples of the signal/noise patch model (float32 arrays).

    Pass the same ``w_star`` (e.g. from ``random_feature``) to draw a training and a test set of one
    distribution; without it a feature is drawn from ``seed`` first.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if isinstance(patches, bool) or not isinstance(patches, (int, np.integer)) or patches < 2:
        raise ValueError(f"patches must be an integer >= 2 (one signal patch and at least one noise patch), "
                         f"got {patches!r}")
    for name, value in (("alpha", alpha), ("sigma", sigma)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a number > 0, got {value!r}")
    rng = as_generator(seed)
    if w_star is None:
        w_star = random_feature(d, rng)
    w_star = np.asarray(w_star, dtype=float)
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
