"""Feynman-style symbolic-regression data: formulas of the Feynman database expressible with {+, -, *, /, pow}.

Variables are drawn from U(low, high) = U(1, 5) as in the AI Feynman convention; optional Gaussian noise is
relative to the standard deviation of the noise-free target.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_choice, check_scalar

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
    seed: Seed = 0,
    low: float = 1.0,
    high: float = 5.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample (X, y) from a formula of :data:`FEYNMAN_FORMULAS`; ``noise`` is the relative noise level."""
    check_choice(name, "name", sorted(FEYNMAN_FORMULAS))
    n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
    noise = check_scalar(noise, "noise", "real", min=0.0)
    low = check_scalar(low, "low", "real")
    high = check_scalar(high, "high", "real", min=low, inclusive="neither")
    rng = as_generator(seed)
    _, n_vars, formula = FEYNMAN_FORMULAS[name]
    X = rng.uniform(low, high, size=(n_samples, n_vars))
    y = formula(X)
    if noise > 0:
        y = y + rng.normal(0.0, noise * y.std(), size=y.shape)
    return X, y
