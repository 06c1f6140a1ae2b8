"""Continual-learning metrics over an accuracy matrix ``A[t, j]`` (accuracy on task j after task t).

Definitions as in Avalanche / GEM (Lopez-Paz & Ranzato 2017): only the lower triangle ``j <= t``
is used; entries above the diagonal (tasks not yet seen) are ignored.
"""

from __future__ import annotations

import numpy as np

from icml25.utils.validation import check_array

__all__ = ["check_accuracy_matrix", "average_accuracy", "average_forgetting", "backward_transfer"]


def check_accuracy_matrix(A: np.ndarray) -> np.ndarray:
    """``A`` as a float (T, T) array whose lower triangle is finite; ValueError otherwise."""
    A = check_array(A, "A", ndim=2, dtype=float, finite=False, min_len=1)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square (T, T) accuracy matrix, got shape {A.shape}")
    if not np.isfinite(A[np.tril_indices(A.shape[0])]).all():
        raise ValueError("A must be finite on and below the diagonal, got NaN or inf")
    return A


def average_accuracy(A: np.ndarray) -> float:
    """ACC = mean_j A[T-1, j]: accuracy on every task after the last one."""
    A = check_accuracy_matrix(A)
    return float(A[-1].mean())


def average_forgetting(A: np.ndarray) -> float:
    """FGT = mean_{j < T-1} max_{j <= t < T-1} (A[t, j] - A[T-1, j]) (0 for one task)."""
    A = check_accuracy_matrix(A)
    T = A.shape[0]
    if T == 1:
        return 0.0
    return float(np.mean([np.max(A[j:T - 1, j]) - A[T - 1, j] for j in range(T - 1)]))


def backward_transfer(A: np.ndarray) -> float:
    """BWT = mean_{j < T-1} (A[T-1, j] - A[j, j]) (0 for one task; negative means forgetting)."""
    A = check_accuracy_matrix(A)
    T = A.shape[0]
    if T == 1:
        return 0.0
    return float(np.mean([A[T - 1, j] - A[j, j] for j in range(T - 1)]))
