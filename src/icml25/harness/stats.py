"""Seed statistics (every claim that aggregates over seeds reports the same summary) and cost-vs-size slopes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from icml25.utils.validation import check_array, check_consistent_length


def summary(values: Iterable[float]) -> dict[str, Any]:
    """``{"mean", "sd", "n", "values"}`` of per-seed values; ``sd`` is the sample standard deviation
    (``ddof=1``), ``None`` for a single value.  NaN or inf is an error, not a summary."""
    arr = check_array(list(values), "values", ndim=1, dtype=float, min_len=1)
    n = int(arr.size)
    mean = float(arr.mean())
    sd = float(math.sqrt(((arr - mean) ** 2).sum() / (n - 1))) if n > 1 else None
    return {"mean": mean, "sd": sd, "n": n, "values": [float(v) for v in arr]}


def is_summary(value: Any) -> bool:
    """Whether ``value`` is a :func:`summary` (as stored: a dict with mean, sd, n and values)."""
    return isinstance(value, dict) and {"mean", "sd", "n", "values"} <= set(value)


def loglog_slope(sizes: Iterable[float], costs: Iterable[float]) -> float:
    """Least-squares slope of ``log(cost)`` against ``log(size)``: the empirical exponent ``p`` of
    ``cost ~ size^p`` (0: flat, 1: linear, 3: cubic).  Needs at least two distinct positive sizes and
    positive costs, the same number of each."""
    x = check_array(list(sizes), "sizes", ndim=1, dtype=float, min_len=2)
    y = check_array(list(costs), "costs", ndim=1, dtype=float, min_len=2)
    check_consistent_length(x, y, names=("sizes", "costs"))
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("sizes and costs must be positive (their logarithms are fitted)")
    if np.ptp(x) == 0:
        raise ValueError("sizes must contain at least two distinct values")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])
