"""Bandits-with-expert-advice streams from scikit-learn's bundled digits (offline).

Experts are small classifiers trained on random feature subsets of one half of the digits; the
stream draws ``horizon`` images with replacement from the other half.  Each round expert ``i``
recommends its predicted label (deterministic advice) and the loss of action ``a`` is
``1{a != label}``.
"""

from __future__ import annotations

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from icml25.data.bundled import load_digits_split
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_scalar, check_sequence

__all__ = ["digits_expert_stream"]


def digits_expert_stream(
    n_experts: int,
    horizon: int,
    seed: Seed = 0,
    n_features: int = 8,
    max_depth: tuple[int, int] = (1, 6),
) -> tuple[np.ndarray, np.ndarray]:
    """Expert advice and losses for a digits stream.

    Expert ``i`` is a decision tree of depth drawn uniformly from ``max_depth`` (inclusive; depth 1 is
    a decision stump) trained on ``n_features`` random pixels of the training half.  Returns
    ``advice`` of shape ``(horizon, n_experts)`` (recommended labels, ints) and ``losses`` of shape
    ``(horizon, 10)`` with ``losses[t, a] = 1{a != y_t}``.
    """
    n_experts = check_scalar(n_experts, "n_experts", "int", min=1)
    horizon = check_scalar(horizon, "horizon", "int", min=1)
    n_features = check_scalar(n_features, "n_features", "int", min=1, max=64)
    lo, hi = check_sequence(max_depth, "max_depth", min_len=2, item=lambda v, name: check_scalar(v, name, "int", min=1))
    if len(max_depth) != 2 or lo > hi:
        raise ValueError(f"max_depth must be a pair 1 <= low <= high, got {max_depth!r}")
    rng = as_generator(seed)
    split = load_digits_split(test_size=0.5, seed=int(rng.integers(2**31)))
    predictions = np.empty((n_experts, split.X_test.shape[0]), dtype=np.int64)
    for i in range(n_experts):
        features = rng.choice(64, size=n_features, replace=False)
        tree = DecisionTreeClassifier(
            max_depth=int(rng.integers(lo, hi + 1)), random_state=int(rng.integers(2**31))
        )
        tree.fit(split.X_train[:, features], split.y_train)
        predictions[i] = tree.predict(split.X_test[:, features])
    stream = rng.integers(split.X_test.shape[0], size=horizon)
    labels = split.y_test[stream]
    losses = np.ones((horizon, 10))
    losses[np.arange(horizon), labels] = 0.0
    return np.ascontiguousarray(predictions[:, stream].T), losses
