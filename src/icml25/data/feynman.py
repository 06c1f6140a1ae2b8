"""Feynman-style symbolic-regression data: formulas of the Feynman database expressible with {+, -, *, /, pow}.

Variables are drawn from U(low, high) = U(1, 5) as in the AI Feynman convention; optional Gaussian noise is
relative to the standard deviation of the noise-free target.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icml25.utils.random import as_generator

FEYNMAN_FORMULAS: dict[str, tuple[str, int, Callable[[np.ndarray], np.ndarray]]] = {
    "I.12.1": ("F = mu * N", 2, lambda x: x[:, 0] * x[:, 1]),
    "I.14.3": ("U = m * g * z", 3, lambda x: x[:, 0] * x[:, 1] * x[:, 2]),
    "I.14.4": ("U = k * x**2 / 2", 2, lambda x: x[:, 0] * x[:, 1] ** 2 / 2),
    "I.25.13": ("V = q / C", 2, lambda x: x[:, 0] / x[:, 1]),
    "I.39.1": ("E = 1.5 * p * V", 2, lambda x: 1.5 * x[:, 0] * x[:, 1]),
    "II.3.24": ("h = P / (4 pi r**2)", 2, lambda x: x[:, 0] / (4 * np.pi * x[:, 1] ** 2)),
}
"""name -> (formula, number of variables, f(X))."""


def make_feynman(
    name: str,
    n_samples: int = 200,
    noise: float = 0.0,
    seed: int | np.random.Generator | None = 0,
    low: float = 1.0,
    high: float = 5.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample (X, y) from a formula of :data:`FEYNMAN_FORMULAS`; ``noise`` is the relative noise level."""
    if name not in FEYNMAN_FORMULAS:
        raise ValueError(f"unknown formula {name!r}; available: {sorted(FEYNMAN_FORMULAS)}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    if not low < high:
        raise ValueError(f"need low < high, got {low!r}, {high!r}")
    rng = as_generator(seed)
    _, n_vars, formula = FEYNMAN_FORMULAS[name]
    X = rng.uniform(low, high, size=(int(n_samples), n_vars))
    y = formula(X)
    if noise > 0:
        y = y + rng.normal(0.0, noise * y.std(), size=y.shape)
    return X, y
