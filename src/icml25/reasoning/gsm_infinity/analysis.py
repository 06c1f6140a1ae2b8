"""Analysis tools: AUC over the op grid, first op below a level, sigmoid/exponential fits, pass@k.

These are what the paper's findings are measured with: accuracy decays along a sigmoid in ``op``
(Sec. 4), and repeated sampling buys AUC linearly in ``log2 k`` (Sec. 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

from icml25.utils.validation import check_array, check_bool, check_consistent_length, check_scalar


def _grid(ops: object, acc: object, names: tuple[str, str] = ("ops", "acc")) -> tuple[np.ndarray, np.ndarray]:
    x = check_array(ops, names[0], ndim=1, dtype=float, min_len=1)
    y = check_array(acc, names[1], ndim=1, dtype=float, min_len=1)
    check_consistent_length(x, y, names=names)
    order = np.argsort(x, kind="stable")
    return x[order], y[order]


def auc(ops: object, acc: object) -> float:
    """Riemann sum of accuracy over the op grid, each point weighted by its stride to the next op.

    For an even grid with stride ``s`` this is ``s * sum(acc)`` (the paper's AUC); the last point takes
    the previous stride.
    """
    x, y = _grid(ops, acc)
    if len(x) == 1:
        return float(y[0])
    widths = np.diff(x)
    widths = np.append(widths, widths[-1])
    return float(np.sum(widths * y))


def first_op_below(ops: object, acc: object, level: float) -> float | None:
    """The smallest op with accuracy below ``level`` (``None`` if it never drops below)."""
    level = check_scalar(level, "level", "real")
    x, y = _grid(ops, acc)
    below = np.flatnonzero(y < level)
    return float(x[below[0]]) if len(below) else None


def sigmoid(op: np.ndarray, op50: float, k: float) -> np.ndarray:
    """``1 / (1 + exp(k (op - op50)))``, elementwise over ``op`` (finite reals, any shape)."""
    op = check_array(op, "op", dtype=float)
    return _sigmoid(op, check_scalar(op50, "op50", "real"), check_scalar(k, "k", "real"))


def _sigmoid(op: np.ndarray, op50: float, k: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(np.clip(k * (op - op50), -60, 60)))


def _r2(y: np.ndarray, fit: np.ndarray) -> float:
    total = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - fit) ** 2)) / total if total > 0 else float("nan")


@dataclass(frozen=True)
class CurveFit:
    """A fitted decay curve: its parameters and R^2."""

    name: str
    params: dict[str, float]
    r2: float


def fit_sigmoid(ops: object, acc: object, bounded: bool = False) -> CurveFit:
    """Least-squares fit of ``acc ≈ 1/(1+exp(k (op - op50)))`` (scipy ``curve_fit``).

    With ``bounded=True`` the curve runs from a ceiling down to a floor,
    ``floor + (ceiling - floor) / (1 + exp(k (op - op50)))`` (both fitted in [0, 1]).
    """
    check_bool(bounded, "bounded")
    x, y = _grid(ops, acc)
    if len(x) < (5 if bounded else 3):
        raise ValueError(f"ops must have at least {5 if bounded else 3} entries for a sigmoid fit, got {len(x)}")
    start = first_op_below(x, y, 0.5)
    p0 = (start if start is not None else float(x[-1]), 4.0 / max(float(np.ptp(x)), 1.0))
    if not bounded:
        (op50, k), _ = curve_fit(_sigmoid, x, y, p0=p0, maxfev=20_000)
        return CurveFit("sigmoid", {"op50": float(op50), "k": float(k)}, _r2(y, _sigmoid(x, op50, k)))

    def model(op: np.ndarray, op50: float, k: float, floor: float, ceiling: float) -> np.ndarray:
        return floor + (ceiling - floor) * _sigmoid(op, op50, k)

    params, _ = curve_fit(model, x, y, p0=(*p0, float(y.min()), float(y.max())), maxfev=20_000,
                          bounds=([-np.inf, -np.inf, 0.0, 0.0], [np.inf, np.inf, 1.0, 1.0]))
    names = ("op50", "k", "floor", "ceiling")
    return CurveFit("sigmoid", dict(zip(names, map(float, params), strict=True)), _r2(y, model(x, *params)))


def fit_exponential(ops: object, acc: object) -> CurveFit:
    """Least-squares fit of ``acc ≈ a exp(-b op)``, the alternative the sigmoid is compared with."""
    x, y = _grid(ops, acc)
    if len(x) < 3:
        raise ValueError(f"ops must have at least 3 entries for an exponential fit, got {len(x)}")

    def model(op: np.ndarray, a: float, b: float) -> np.ndarray:
        return a * np.exp(np.clip(-b * op, -60, 60))

    (a, b), _ = curve_fit(model, x, y, p0=(1.0, 1.0 / max(float(x.mean()), 1.0)), maxfev=20_000)
    return CurveFit("exponential", {"a": float(a), "b": float(b)}, _r2(y, model(x, a, b)))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct: ``1 - C(n-c, k) / C(n, k)`` (Chen et al., 2021)."""
    n = check_scalar(n, "n", "int", min=1)
    c = check_scalar(c, "c", "int", min=0, max=n)
    k = check_scalar(k, "k", "int", min=1, max=n)
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def log2_slope(ks: object, values: object) -> tuple[float, float, float]:
    """Regress ``values`` on ``log2 k``: ``(slope, intercept, r2)`` — "exponential compute, linear gain"."""
    ks = check_array(ks, "ks", ndim=1, dtype=float, min_len=2)
    if np.any(ks < 1):
        raise ValueError(f"ks must have values >= 1, got min {ks.min():g}")
    x, y = _grid(np.log2(ks), values, names=("ks", "values"))
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept), _r2(y, slope * x + intercept)
