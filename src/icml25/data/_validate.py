"""Small argument checks shared by the data helpers and the library modules."""

from __future__ import annotations

import numbers

import numpy as np


def check_int(name: str, value: object, low: int) -> int:
    """``value`` as an int if it is an integer (not a bool) >= ``low``; else one clear ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


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
