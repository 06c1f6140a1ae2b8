"""Seeded offline stand-ins for word embeddings and bag-of-words documents, plus digits as
histograms on the 8x8 pixel grid (used by the tree-Wasserstein papers).

* :func:`hierarchical_cloud` -- points from a hierarchical Gaussian mixture (a "word embedding").
* :func:`sparse_documents` -- sparse histograms over those points with a topic label each.
* :func:`digit_histograms` -- scikit-learn's digits, each image normalised to a histogram.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn import datasets

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_consistent_length, check_scalar, check_sequence


@dataclass(frozen=True)
class Cloud:
    """Support points and, per point, the index of its mixture component at every level."""

    points: np.ndarray  # (n_points, dim)
    labels: np.ndarray  # (n_points, n_levels); column 0 is the top level


@dataclass(frozen=True)
class Documents:
    """Histograms over a support (one per row, each sums to 1) and one integer label per row."""

    histograms: np.ndarray  # (n_docs, n_points)
    labels: np.ndarray  # (n_docs,)


def hierarchical_cloud(
    n_points: int = 200,
    dim: int = 16,
    *,
    branching: tuple[int, ...] = (4, 3, 3),
    spreads: tuple[float, ...] = (3.0, 1.4, 0.6),
    noise: float = 0.3,
    seed: Seed = 0,
) -> Cloud:
    """A hierarchical Gaussian mixture in ``R^dim``.

    Level-1 centres are ``N(0, spreads[0]^2 I)``; each level-``l`` centre has ``branching[l]``
    children drawn around it with ``N(0, spreads[l]^2 I)``; the points are spread evenly over the
    finest components and drawn around their centre with ``N(0, noise^2 I)``.
    """
    n_points = check_scalar(n_points, "n_points", "int", min=1)
    dim = check_scalar(dim, "dim", "int", min=1)
    branching = tuple(check_sequence(branching, "branching", min_len=1,
                                     item=lambda b, name: check_scalar(b, name, "int", min=1)))
    spreads = tuple(check_sequence(spreads, "spreads", item=lambda s, name: check_scalar(s, name, "real", min=0.0)))
    check_consistent_length(branching, spreads, names=("branching", "spreads"))
    noise = check_scalar(noise, "noise", "real", min=0.0)
    rng = as_generator(seed)
    centres = np.zeros((1, dim))
    for b, s in zip(branching, spreads, strict=True):  # children of centre i are i*b .. i*b + b-1
        centres = np.repeat(centres, b, axis=0) + rng.normal(0.0, s, size=(centres.shape[0] * b, dim))
    component = np.arange(n_points) % centres.shape[0]
    points = centres[component] + rng.normal(0.0, noise, size=(n_points, dim))
    below = [int(np.prod(branching[level + 1 :])) for level in range(len(branching))]
    labels = np.column_stack([component // size for size in below])
    return Cloud(points=points, labels=labels)


def sparse_documents(
    cloud: Cloud,
    n_docs: int = 120,
    *,
    words: tuple[int, int] = (10, 30),
    second_topic_prob: float = 0.5,
    focus: float = 0.7,
    seed: Seed = 0,
) -> Documents:
    """Sparse documents over the points of ``cloud``, each labelled by its dominant top-level topic.

    A document draws a topic ``t`` (a top-level component) and a subtopic inside it (a
    level-2 component); it picks ``U{words}`` distinct points, each from the subtopic with
    probability ``focus``, else from the whole topic.  With probability ``second_topic_prob``
    a share ``U(0.1, 0.45)`` of its points comes from another topic instead.  Weights are
    Dirichlet(1); the label is the topic holding the most mass.
    """
    n_docs = check_scalar(n_docs, "n_docs", "int", min=1)
    low, high = check_sequence(words, "words", item=lambda w, name: check_scalar(w, name, "int"))
    if not 1 <= low <= high:
        raise ValueError(f"words must be (low, high) with 1 <= low <= high, got {words!r}")
    words = (low, high)
    second_topic_prob = check_scalar(second_topic_prob, "second_topic_prob", "real", min=0.0, max=1.0)
    focus = check_scalar(focus, "focus", "real", min=0.0, max=1.0)
    rng = as_generator(seed)
    topic, sub = cloud.labels[:, 0], cloud.labels[:, min(1, cloud.labels.shape[1] - 1)]
    n_topics, n = int(topic.max()) + 1, cloud.points.shape[0]
    histograms, labels = np.zeros((n_docs, n)), np.zeros(n_docs, dtype=int)
    for d in range(n_docs):
        t = int(rng.integers(n_topics))
        in_topic = np.flatnonzero(topic == t)
        in_sub = in_topic[sub[in_topic] == sub[rng.choice(in_topic)]]
        k = int(rng.integers(words[0], words[1] + 1))
        mixed = n_topics > 1 and rng.random() < second_topic_prob
        n_other = int(round(k * rng.uniform(0.1, 0.45))) if mixed else 0
        pool_main = np.where(rng.random(k - n_other) < focus, 1, 0)
        chosen = [rng.choice(in_sub) if f else rng.choice(in_topic) for f in pool_main]
        if n_other:
            other = int(rng.choice([s for s in range(n_topics) if s != t]))
            chosen += list(rng.choice(np.flatnonzero(topic == other), size=n_other))
        chosen = np.unique(chosen)
        histograms[d, chosen] = rng.dirichlet(np.ones(chosen.size))
        labels[d] = int(np.argmax(np.bincount(topic, weights=histograms[d], minlength=n_topics)))
    return Documents(histograms=histograms, labels=labels)


def digit_histograms(
    n_train: int = 200, n_test: int = 100, *, seed: Seed = 0
) -> tuple[np.ndarray, Documents, Documents]:
    """scikit-learn's 8x8 digits as histograms on the pixel grid, classes balanced.

    Returns the 64 grid coordinates ``(row, col)`` and the train / test documents (images scaled
    to sum 1, labelled by digit); ``n_train`` and ``n_test`` must be multiples of 10.
    """
    n_train = check_scalar(n_train, "n_train", "int", min=1)
    n_test = check_scalar(n_test, "n_test", "int", min=1)
    if n_train % 10 or n_test % 10:
        raise ValueError(f"n_train and n_test must be multiples of 10 (balanced), got {n_train}, {n_test}")
    X, y = datasets.load_digits(return_X_y=True)
    rng = as_generator(seed)
    train, test = [], []
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        if idx.size < (n_train + n_test) // 10:
            raise ValueError(f"n_train + n_test must be at most {10 * idx.size} (digit {c} has {idx.size} images), "
                             f"got {n_train + n_test}")
        train.extend(idx[: n_train // 10])
        test.extend(idx[n_train // 10 : (n_train + n_test) // 10])
    train, test = rng.permutation(train), rng.permutation(test)
    grid = np.array([(r, c) for r in range(8) for c in range(8)], dtype=float)
    H = X / X.sum(axis=1, keepdims=True)
    return grid, Documents(H[train], y[train]), Documents(H[test], y[test])
