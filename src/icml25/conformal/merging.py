"""Merging rules for the K per-fold conformal p-values of cross-conformal prediction.

Gasparin & Ramdas (ICML 2025), Sections 2-3.  Every function acts on the last axis, which holds the
K fold p-values ``p_1, ..., p_K`` in the (random) fold order; leading axes are batch axes (test
points, candidate labels).  With ``a`` one of these merged values, the set ``{y : a(y) > alpha}``
covers with probability at least ``1 - 2 alpha``:

* ``merge_mean``         modified cross-conformal (Vovk 2015): the arithmetic mean.
* ``merge_exchangeable`` e-modified: ``min_j (1/j) sum_{k <= j} p_k``, valid because the fold
  p-values are exchangeable (Gasparin, Wang & Ramdas 2024); it is never above the mean.
* ``merge_uniform``      u-modified: ``mean / (2 - U)`` with ``U ~ Unif(0, 1)`` independent of the
  data (randomised merging); never above the mean.
* ``merge_eu``           eu-modified: ``min(p_1 / (2 - U), merge_exchangeable(p))``; never above
  ``merge_exchangeable``.
* ``vovk_pooled``        Vovk's original cross-conformal p-value from the per-fold counts.
"""

from __future__ import annotations

import numpy as np

from icml25.utils.validation import check_array, check_scalar


def _check_pvalues(p: np.ndarray) -> np.ndarray:
    p = check_array(p, "p", dtype=float)
    if p.ndim == 0 or p.size == 0:
        raise ValueError(f"p must be non-empty, with a non-empty last axis of fold p-values, got shape {p.shape}")
    if p.min() < 0.0 or p.max() > 1.0:
        raise ValueError(f"p must hold p-values in [0, 1], got values in [{p.min():g}, {p.max():g}]")
    return p


def _check_u(u: float | np.ndarray, batch_shape: tuple[int, ...]) -> np.ndarray:
    u = check_array(u, "u", dtype=float)
    if u.min(initial=0.0) < 0.0 or u.max(initial=0.0) > 1.0:
        raise ValueError(f"u must hold uniform draws in [0, 1], got values in [{u.min():g}, {u.max():g}]")
    try:
        np.broadcast_to(u, batch_shape)
    except ValueError:
        raise ValueError(
            f"u of shape {u.shape} does not broadcast to the batch shape {batch_shape}"
        ) from None
    return u


def _mean(p: np.ndarray) -> np.ndarray:
    return p.sum(axis=-1) / p.shape[-1]


def _exchangeable(p: np.ndarray) -> np.ndarray:
    # The j = K term is computed exactly as ``_mean``, so the result never exceeds the mean bit for bit
    # (the nesting of C_e in C_mod then holds in floating point too).
    best = _mean(p)
    running = np.zeros(p.shape[:-1])
    for j in range(p.shape[-1] - 1):
        running = running + p[..., j]
        best = np.minimum(best, running / (j + 1))
    return best


def merge_mean(p: np.ndarray) -> np.ndarray:
    """Modified cross-conformal p-value: the mean of the K fold p-values (last axis)."""
    return _mean(_check_pvalues(p))


def merge_exchangeable(p: np.ndarray) -> np.ndarray:
    """e-modified p-value: the minimum over j of the mean of the first j fold p-values (at most the mean)."""
    return _exchangeable(_check_pvalues(p))


def merge_uniform(p: np.ndarray, u: float | np.ndarray) -> np.ndarray:
    """u-modified p-value: ``mean(p) / (2 - u)``; ``u`` broadcasts to the batch shape ``p.shape[:-1]``."""
    p = _check_pvalues(p)
    u = _check_u(u, p.shape[:-1])
    return _mean(p) / (2.0 - u)


def merge_eu(p: np.ndarray, u: float | np.ndarray) -> np.ndarray:
    """eu-modified p-value: ``min(p_1 / (2 - u), merge_exchangeable(p))``."""
    p = _check_pvalues(p)
    u = _check_u(u, p.shape[:-1])
    return np.minimum(p[..., 0] / (2.0 - u), _exchangeable(p))


def vovk_pooled(counts: np.ndarray, n: int) -> np.ndarray:
    """Vovk's cross-conformal p-value ``(1 + sum_k counts_k) / (n + 1)``.

    ``counts[..., k]`` is ``#{i in S_k : R_i >= R^k(y)}``, the number of out-of-fold scores of fold
    ``k`` at least as large as the candidate's score, and ``n`` the total number of training points.
    """
    counts = check_array(counts, "counts")
    if counts.ndim == 0 or counts.size == 0:
        raise ValueError(
            f"counts must be non-empty, with a non-empty last axis (one count per fold), got shape {counts.shape}"
        )
    n = check_scalar(n, "n", "int", min=1)
    if counts.min() < 0 or counts.sum(axis=-1).max() > n:
        raise ValueError(f"counts must be non-negative and sum to at most n = {n} over the folds")
    return (1.0 + counts.sum(axis=-1)) / (n + 1.0)
