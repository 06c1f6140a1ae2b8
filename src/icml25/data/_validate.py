"""Small argument checks shared by the data helpers."""

from __future__ import annotations

import numpy as np


def check_fraction(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must be a number strictly between 0 and 1, got {value!r}")
    return float(value)


def as_generator(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A NumPy Generator from an int seed, a Generator (used as is) or None (fresh entropy)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)):
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be an int, a numpy Generator or None, got {type(seed).__name__}")
