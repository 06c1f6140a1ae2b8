"""Seed statistics: every claim that aggregates over seeds reports the same summary."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from icml25.utils.validation import check_array


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
