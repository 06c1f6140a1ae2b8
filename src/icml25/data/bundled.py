"""scikit-learn's bundled data sets with fixed, seeded train/test splits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn import datasets
from sklearn.model_selection import train_test_split

from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_scalar


@dataclass(frozen=True)
class Split:
    """A train/test split of one data set."""

    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray


def _split(X: np.ndarray, y: np.ndarray, test_size: float, seed: Seed, stratify: bool) -> Split:
    check_scalar(test_size, "test_size", "real", min=0.0, max=1.0, inclusive="neither")
    seed = int_seed(seed)
    parts = train_test_split(X, y, test_size=test_size, random_state=seed % 2**32, stratify=y if stratify else None)
    return Split(*parts)


def load_digits_split(test_size: float = 0.25, seed: Seed = 0) -> Split:
    """The 8x8 digits (1797 x 64), pixels scaled to [0, 1], stratified split.

    ``test_size`` is in (0, 1); ``seed`` an int >= 0, a Generator or None (fresh entropy).
    """
    X, y = datasets.load_digits(return_X_y=True)
    return _split(X / 16.0, y, test_size, seed, stratify=True)


def load_diabetes_split(test_size: float = 0.25, seed: Seed = 0) -> Split:
    """The diabetes regression set (442 x 10, already standardised by scikit-learn)."""
    X, y = datasets.load_diabetes(return_X_y=True)
    return _split(X, y, test_size, seed, stratify=False)


def load_breast_cancer_split(test_size: float = 0.25, seed: Seed = 0) -> Split:
    """The breast cancer set (569 x 30), stratified split; features are not scaled."""
    X, y = datasets.load_breast_cancer(return_X_y=True)
    return _split(X, y, test_size, seed, stratify=True)
