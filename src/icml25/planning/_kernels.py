"""Unvalidated worst-case kernels shared by the ambiguity operators and the tree search (package-internal).

The public, validated entry points are :func:`icml25.planning.worst_case`, :func:`~icml25.planning.w1_worst`
and :func:`~icml25.planning.robust_expectation`; the search calls these kernels on the inputs it builds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def w1_kernel(p: np.ndarray, v: np.ndarray, rho: float, dist: np.ndarray) -> np.ndarray:
    """Unvalidated :func:`~icml25.planning.w1_worst` (callers validate)."""
    p, v = np.broadcast_arrays(np.asarray(p, float), np.asarray(v, float))
    d = np.broadcast_to(np.asarray(dist, float), p.shape + p.shape[-1:])
    nominal = np.einsum("...i,...i->...", p, v)
    if rho == 0.0:
        return nominal
    v_min = v.min(axis=-1)
    if math.isinf(rho):
        return v_min
    slope = d[..., :, :, None] - d[..., :, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (v[..., None, None, :] - v[..., None, :, None]) / slope
    keep = (slope != 0) & np.isfinite(lam) & (lam > 0) & (p[..., :, None, None] > 0)
    lam = np.where(keep, lam, 0.0).reshape(p.shape[:-1] + (-1,))
    inner = (v[..., None, None, :] + lam[..., :, None, None] * d[..., None, :, :]).min(axis=-1)
    dual = np.einsum("...ki,...i->...k", inner, p) - rho * lam
    return np.clip(dual.max(axis=-1), v_min, nominal)


def worst_case_kernel(p: Sequence[float], v: Sequence[float], rho: float, kind: str, dist: np.ndarray | None) -> float:
    """Unvalidated :func:`~icml25.planning.worst_case`: the tree search's backup (arguments assumed valid)."""
    nominal = math.fsum(pi * vi for pi, vi in zip(p, v, strict=True))
    if kind == "none" or rho == 0.0:
        return nominal
    if len(p) == 1:
        return float(v[0])
    if kind == "chi2":
        pairs = sorted((vi, pi) for pi, vi in zip(p, v, strict=True) if pi > 0)
    else:
        pairs = sorted(zip(v, p, strict=True))
    v_min = pairs[0][0]
    if math.isinf(rho):
        return v_min
    if kind == "tv":
        if rho >= 1.0 - pairs[0][1]:
            return v_min
        moved = rho
        out = nominal
        for vi, pi in reversed(pairs):
            if moved <= 0.0:
                break
            taken = min(pi, moved)
            out -= taken * (vi - v_min)
            moved -= taken
        return min(max(out, v_min), nominal)
    if kind == "chi2":
        c = 1.0 + rho
        best = 0.0  # eta = v_min: the dual is 0 after shifting by v_min
        mass = first = second = 0.0
        for j, (vj, pj) in enumerate(pairs):
            x = vj - v_min
            mass += pj
            first += pj * x
            second += pj * x * x
            upper = pairs[j + 1][0] - v_min if j + 1 < len(pairs) else math.inf
            candidates = [x]
            if c * mass > 1.0:
                mean = first / mass
                var = max(second / mass - mean * mean, 0.0)
                candidates.append(min(max(mean + math.sqrt(var / (c * mass - 1.0)), x), upper))
            for eta in candidates:
                g = max(mass * eta * eta - 2.0 * first * eta + second, 0.0)
                best = max(best, eta - math.sqrt(c * g))
        return min(max(best + v_min, v_min), nominal)
    k = len(p)
    if k > 4:
        return float(w1_kernel(np.asarray(p, float), np.asarray(v, float), rho, dist))
    d = dist.tolist() if isinstance(dist, np.ndarray) else dist
    lams = [0.0]
    for i in range(k):
        if p[i] > 0:
            for j in range(k):
                for m in range(k):
                    slope = d[i][j] - d[i][m]
                    if slope != 0.0 and (v[m] - v[j]) / slope > 0.0:
                        lams.append((v[m] - v[j]) / slope)
    best = max(
        sum(p[i] * min(v[j] + lam * d[i][j] for j in range(k)) for i in range(k) if p[i] > 0) - rho * lam
        for lam in lams
    )
    return min(max(best, v_min), nominal)
