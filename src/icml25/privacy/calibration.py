"""Noise calibration for single releases (one place in the package; bandits use it too).

Float-based research code: not hardened against floating-point attacks (Mironov 2012).
"""

from __future__ import annotations

import math


def check_positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """Scale ``b = Delta_1 / epsilon`` of the Laplace mechanism for pure epsilon-DP."""
    return check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)
