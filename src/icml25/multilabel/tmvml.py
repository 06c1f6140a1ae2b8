"""Zhong et al. (ICML 2025), "Tensorized Multi-View Multi-Label Classification via Laplace Tensor Rank".

Example
-------
>>> from icml25.data.mvml import make_synthetic_mvml, split_mvml
>>> from icml25.multilabel import TMvML, mvml_report
>>> Xs, Y = make_synthetic_mvml(n_samples=400, seed=0)      # 3 views, 10 labels
>>> s = split_mvml(Xs, Y, test_size=0.3, seed=0)
>>> model = TMvML(lam=0.1, random_state=0).fit(s.Xs_train, s.Y_train)
>>> report = mvml_report(s.Y_test, model.decision_function(s.Xs_test), model.predict(s.Xs_test))
>>> round(report["average_precision"], 2) > 0.5
True

Multi-view multi-label (MVML) learning: every sample has V feature views X_v (n x d_v) and a 0/1
label vector over c labels.  TMvML learns one linear classifier W_v per view, stacks them into a
third-order tensor, *rotates* it so that every frontal slice is a (view x label) matrix, and asks
the rotated tensor to have low tubal rank, measured by the Laplace Tensor Rank

    LTR_delta(A) = (1/n3) sum_k sum_i (1 - exp(-sigma_i(A_hat^(k)) / delta)),

where A_hat = fft(A, axis=2) and sigma_i(A_hat^(k)) are the singular values of its k-th frontal
slice (the t-SVD of Kilmer & Martin).  phi(x) = 1 - exp(-x/delta) <= x/delta, so the LTR is never
looser than the (scaled) tensor nuclear norm TNN(A) = (1/n3) sum_k ||A_hat^(k)||_*, and it tends to
the average tubal multi-rank as delta -> 0.  The objective (reconstructed, see below) is

    min_W (1/n) sum_v ||X~_v W_v - Y||_F^2 + alpha sum_v ||W_v||_F^2 + lam * LTR_delta(rot(W)),

solved by ADMM with G = rot(W): a closed-form ridge step per view, a weighted singular value
thresholding step per Fourier slice (``prox_ltr``), a multiplier step and a growing penalty rho.
Scores are the average of the per-view scores; labels are ``scores > threshold``.  With
``loss="consensus"`` the data term is (1/n) ||(1/V) sum_v X~_v W_v - Y||_F^2 instead (one joint
ridge step over all views).

Reconstructed (the paper's full text was not available): the common feature map of the views
(``view_map``), the rotation (``rotation``), the exact LTR form and its default ``delta``, the
sample-averaged loss and the ridge term, the intercept handling (``intercept``), the prox by
re-weighting (``n_reweight``) and the rho schedule.  Each is a constructor option.  Baselines of the
reproduction live here too: ``ConcatRidge``, ``MultiLabelKNN``, ``LowRankRidge`` and
``TMvML(lam=0)`` (independent ridge per view, scores averaged).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from scipy.spatial.distance import cdist
from sklearn.base import BaseEstimator, clone
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import RidgeCV
from sklearn.metrics import (
    coverage_error,
    f1_score,
    hamming_loss,
    label_ranking_average_precision_score,
    label_ranking_loss,
)
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_choice,
    check_is_fitted,
    check_scalar,
    check_sequence,
)

ROTATIONS = ("view_label", "feature_view", "none")
VIEW_MAPS = ("pca", "rbf_anchors", "none")
SURROGATES = ("ltr", "tnn")
INTERCEPTS = ("centered", "column")
LOSSES = ("per_view", "consensus")
# Axis permutations from the stacked classifiers (V, m+1, c) to the rotated tensor G (n1, n2, n3).
_PERMUTATIONS = {"view_label": (0, 2, 1), "feature_view": (1, 0, 2), "none": (1, 2, 0)}


# ----------------------------------------------------------------------------------------------
# t-SVD, tensor nuclear norm, Laplace tensor rank and their proximal steps
# ----------------------------------------------------------------------------------------------


def _check_tensor(A: Any, name: str = "A") -> np.ndarray:
    A = check_array(A, name, ndim=3, dtype=None)
    if np.iscomplexobj(A):
        raise TypeError(f"{name} must be a real 3-D array (n1, n2, n3), got dtype {A.dtype}")
    if A.size == 0:
        raise ValueError(f"{name} must be a non-empty 3-D array (n1, n2, n3), got shape {A.shape}")
    return check_array(A, name, dtype=float)


def fourier_singular_values(A: np.ndarray) -> np.ndarray:
    """Singular values of every frontal slice of fft(A, axis=2): an (n3, min(n1, n2)) array."""
    A = _check_tensor(A)
    return np.linalg.svd(np.fft.fft(A, axis=2).transpose(2, 0, 1), compute_uv=False)


def t_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The t-product A * B of (n1, n2, n3) and (n2, n4, n3) tensors (slice-wise products in Fourier space)."""
    A, B = _check_tensor(A, "A"), _check_tensor(B, "B")
    if A.shape[1] != B.shape[0] or A.shape[2] != B.shape[2]:
        raise ValueError(f"t_product needs shapes (n1, n2, n3) and (n2, n4, n3), got {A.shape} and {B.shape}")
    n3 = A.shape[2]
    prod = np.einsum("ijk,jlk->ilk", np.fft.rfft(A, axis=2), np.fft.rfft(B, axis=2))
    return np.fft.irfft(prod, n=n3, axis=2)


def t_transpose(A: np.ndarray) -> np.ndarray:
    """The t-transpose: transpose every frontal slice and reverse the order of slices 2..n3."""
    A = _check_tensor(A)
    return np.concatenate([A[:, :, :1], A[:, :, :0:-1]], axis=2).transpose(1, 0, 2)


def tsvd(A: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The t-SVD A = U * S * V^T (t-product): U (n1, n1, n3), S f-diagonal (n1, n2, n3), V (n2, n2, n3).

    Computed slice by slice on rfft(A, axis=2); U and V are orthogonal tensors (U^T * U = I).
    """
    A = _check_tensor(A)
    n1, n2, n3 = A.shape
    slices = np.fft.rfft(A, axis=2).transpose(2, 0, 1)
    real = [0] + ([n3 // 2] if n3 % 2 == 0 and n3 > 1 else [])
    slices[real] = slices[real].real  # real slices get real (not phase-rotated) singular vectors
    U, s, Vh = np.linalg.svd(slices, full_matrices=True)
    S = np.zeros((slices.shape[0], n1, n2), dtype=complex)
    r = s.shape[1]
    S[:, np.arange(r), np.arange(r)] = s
    back = lambda F: np.fft.irfft(F.transpose(1, 2, 0), n=n3, axis=2)  # noqa: E731
    return back(U), back(S), back(np.conj(Vh.transpose(0, 2, 1)))


def tensor_nuclear_norm(A: np.ndarray) -> float:
    """TNN(A) = (1/n3) sum_k ||fft(A)^(k)||_* (the convex surrogate of the tubal rank)."""
    s = fourier_singular_values(A)
    return float(s.sum() / s.shape[0])


def laplace_tensor_rank(A: np.ndarray, delta: float) -> float:
    """LTR_delta(A) = (1/n3) sum_k sum_i (1 - exp(-sigma_i(fft(A)^(k)) / delta)), delta > 0."""
    delta = check_scalar(delta, "delta", "real", min=0.0, inclusive="neither")
    s = fourier_singular_values(A)
    return float(-np.expm1(-s / delta).sum() / s.shape[0])


def _fourier_shrink(A: np.ndarray, shrink) -> np.ndarray:
    """Apply ``shrink(s) -> s'`` to the singular values of each Fourier slice; return the real tensor."""
    n3 = A.shape[2]
    slices = np.fft.rfft(A, axis=2).transpose(2, 0, 1)
    U, s, Vh = np.linalg.svd(slices, full_matrices=False)
    out = (U * shrink(s)[:, None, :]) @ Vh
    return np.fft.irfft(out.transpose(1, 2, 0), n=n3, axis=2)


def prox_tnn(A: np.ndarray, tau: float) -> np.ndarray:
    """prox of tau * TNN: soft-threshold every Fourier-slice singular value by tau (t-SVT)."""
    A = _check_tensor(A)
    tau = check_scalar(tau, "tau", "real", min=0.0)
    return _fourier_shrink(A, lambda s: np.maximum(s - tau, 0.0))


def prox_ltr(A: np.ndarray, tau: float, delta: float, n_reweight: int = 1) -> np.ndarray:
    """prox of tau * LTR_delta by weighted singular value thresholding in Fourier space.

    Each slice's singular values s are shrunk to s' = max(s - tau * w, 0) with the Laplace weights
    w = exp(-s/delta) / delta (the derivative of phi at the current point); ``n_reweight > 1`` repeats
    the re-weighting at the shrunk values (a fixed-point / DC iteration).  Large singular values are
    kept almost untouched, small ones are removed: closer to hard thresholding than ``prox_tnn``.
    """
    A = _check_tensor(A)
    tau = check_scalar(tau, "tau", "real", min=0.0)
    delta = check_scalar(delta, "delta", "real", min=0.0, inclusive="neither")
    n_reweight = check_scalar(n_reweight, "n_reweight", "int", min=1)

    def shrink(s: np.ndarray) -> np.ndarray:
        current = s
        for _ in range(n_reweight):
            current = np.maximum(s - tau * np.exp(-current / delta) / delta, 0.0)
        return current

    return _fourier_shrink(A, shrink)


# ----------------------------------------------------------------------------------------------
# Input checks and metrics
# ----------------------------------------------------------------------------------------------


def _check_view(X: Any, name: str) -> np.ndarray:
    X = check_array(X, name, ndim=2, dtype=None)
    if not np.issubdtype(X.dtype, np.number) or np.iscomplexobj(X):
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}")
    if X.shape[1] == 0:
        raise ValueError(f"{name} must have at least one feature, got shape {X.shape}")
    return check_array(X, name, dtype=float)


def check_views(Xs: Any, n_views: int | None = None) -> list[np.ndarray]:
    """Validate a multi-view input: a non-empty list of finite 2-D arrays with the same number of rows."""
    if isinstance(Xs, np.ndarray) or not isinstance(Xs, (list, tuple)):
        raise TypeError(f"Xs must be a list of (n_samples, n_features_v) arrays, one per view, got {type(Xs).__name__}")
    views = check_sequence(Xs, "Xs", min_len=1, item=_check_view)
    rows = [X.shape[0] for X in views]
    if len(set(rows)) != 1 or rows[0] == 0:
        raise ValueError(f"Xs must have the same, positive number of rows in every view, got {rows}")
    if n_views is not None:
        n_views = check_scalar(n_views, "n_views", "int", min=1)
    if n_views is not None and len(views) != n_views:
        raise ValueError(f"Xs must have {n_views} views (as in fit), got {len(views)}")
    return views


def check_labels(Y: Any, n_samples: int) -> np.ndarray:
    """Validate a label matrix: 2-D, 0/1 or bool, with ``n_samples >= 1`` rows; returns an int array."""
    n_samples = check_scalar(n_samples, "n_samples", "int", min=1)
    Y = check_array(Y, "Y", dtype=None)
    if Y.ndim == 1:
        raise ValueError("Y must be a 2-D (n_samples, n_labels) 0/1 matrix (reshape a single label with "
                         f"Y[:, None]), got shape {Y.shape}")
    if Y.ndim != 2 or Y.shape[1] == 0:
        raise ValueError(f"Y must be a 2-D (n_samples, n_labels) 0/1 matrix, got shape {Y.shape}")
    if Y.shape[0] != n_samples:
        raise ValueError(f"Y must have one row per sample ({n_samples}, as the views), got {Y.shape[0]} rows")
    if not (Y.dtype == bool or (np.issubdtype(Y.dtype, np.number) and np.isin(Y, (0, 1)).all())):
        raise ValueError(f"Y must contain only 0/1 (or bool) entries, got values {np.unique(Y)[:8].tolist()}")
    return Y.astype(int)


def _warn_constant_labels(Y: np.ndarray) -> None:
    constant = np.flatnonzero(Y.min(axis=0) == Y.max(axis=0))
    if constant.size:
        warnings.warn(
            f"label columns {constant.tolist()} are constant in training; they are kept and predicted constant",
            UserWarning,
            stacklevel=3,
        )


def one_error(Y_true: np.ndarray, scores: np.ndarray) -> float:
    """Fraction of samples whose top-scored label is not relevant."""
    Y_true, scores = check_array(Y_true, "Y_true", ndim=2), check_array(scores, "scores", ndim=2, dtype=float)
    if Y_true.shape != scores.shape:
        raise ValueError(f"Y_true and scores must have one shape, got {Y_true.shape} and {scores.shape}")
    top = np.argmax(scores, axis=1)
    return float(np.mean(Y_true[np.arange(len(top)), top] == 0))


def mvml_report(Y_true: np.ndarray, scores: np.ndarray, Y_pred: np.ndarray) -> dict[str, float]:
    """The standard MVML metrics: hamming_loss, ranking_loss, one_error, coverage, average_precision,
    micro_f1, macro_f1.

    ``coverage`` is (coverage_error - 1) / c, as MVML papers report it; ranking_loss and
    average_precision follow scikit-learn, which scores a sample without relevant labels as perfect.
    """
    Y_true, Y_pred = check_array(Y_true, "Y_true"), check_array(Y_pred, "Y_pred")
    scores = check_array(scores, "scores", dtype=float)
    if not (Y_true.ndim == 2 and Y_true.shape == scores.shape == Y_pred.shape):
        raise ValueError(f"Y_true, scores and Y_pred must be 2-D of one shape, got {Y_true.shape}, "
                         f"{scores.shape}, {Y_pred.shape}")
    c = Y_true.shape[1]
    return {
        "hamming_loss": float(hamming_loss(Y_true, Y_pred)),
        "ranking_loss": float(label_ranking_loss(Y_true, scores)),
        "one_error": one_error(Y_true, scores),
        "coverage": float((coverage_error(Y_true, scores) - 1.0) / c),
        "average_precision": float(label_ranking_average_precision_score(Y_true, scores)),
        "micro_f1": float(f1_score(Y_true, Y_pred, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(Y_true, Y_pred, average="macro", zero_division=0)),
    }


def _threshold_labels(scores: np.ndarray, threshold: float, ensure_label: bool) -> np.ndarray:
    labels = (scores > threshold).astype(int)
    if ensure_label:
        empty = labels.sum(axis=1) == 0
        labels[empty, np.argmax(scores[empty], axis=1)] = 1
    return labels


class _MultiLabelMixin:
    """``predict`` and ``score`` from ``decision_function`` for the multi-view multi-label estimators."""

    threshold: float
    ensure_label: bool

    def predict(self, Xs: list[np.ndarray]) -> np.ndarray:
        """0/1 label matrix: scores > threshold; a row without labels gets its top label (if ensure_label)."""
        return _threshold_labels(self.decision_function(Xs), self.threshold, self.ensure_label)

    def score(self, Xs: list[np.ndarray], Y: np.ndarray) -> float:
        """Label-ranking average precision of ``decision_function`` (higher is better)."""
        scores = self.decision_function(Xs)
        return float(label_ranking_average_precision_score(check_labels(Y, scores.shape[0]), scores))


# ----------------------------------------------------------------------------------------------
# TMvML
# ----------------------------------------------------------------------------------------------


class TMvML(_MultiLabelMixin, BaseEstimator):
    """Tensorized multi-view multi-label classifier with a Laplace (or nuclear-norm) tensor rank.

    Parameters
    ----------
    lam : weight of the low-rank tensor penalty (0: independent ridge per view, scores averaged).
    alpha : ridge weight on the classifiers (keeps the least-squares steps well posed).
    delta : Laplace scale of the LTR; ``None``: 0.1 x the largest Fourier singular value of the
        rotated ridge solution (scale invariant; reconstructed).
    rank_surrogate : ``"ltr"`` (Laplace tensor rank) or ``"tnn"`` (tensor nuclear norm).
    rotation : ``"view_label"`` (slices are V x c view-by-label matrices, FFT along features; default),
        ``"feature_view"`` (slices (m+1) x V, FFT along labels) or ``"none"`` (slices are the per-view
        (m+1) x c classifiers, FFT along views).  Reconstructed.
    view_map : common feature map of the views (stacking needs one size m): ``"pca"`` (standardise,
        PCA to m = min(n_components, min_v d_v)), ``"rbf_anchors"`` (RBF similarities to the same m
        k-means anchors in every view; bandwidth = median distance) or ``"none"`` (standardise; needs
        equal d_v).  Reconstructed.
    n_components : m, the common feature size (capped by the smallest view and the sample size).
    intercept : ``"centered"`` (centre features and labels, unpenalised intercept = label means) or
        ``"column"`` (append a constant-1 feature that is part of W and of the tensor).  Reconstructed.
    loss : ``"per_view"`` (every view's scores fit Y: sum_v ||X~_v W_v - Y||^2) or ``"consensus"``
        (the averaged scores fit Y: ||(1/V) sum_v X~_v W_v - Y||^2).  Reconstructed.
    n_reweight : re-weightings inside ``prox_ltr`` (1 = one weighted SVT step).
    rho, rho_growth, rho_max : ADMM penalty: start (``None``: 1e-2 x mean ||Y||^2 / ||rot(W_ridge)||^2),
        growth factor per iteration and cap.
    max_iter, tol : at most ``max_iter`` ADMM iterations; stop when
        max|rot(W) - G| < tol x max|W|.  Non-convergence raises a ``ConvergenceWarning``.
    threshold, ensure_label : ``predict`` returns scores > threshold, and the top label of a row
        that would otherwise have none (if ``ensure_label``).
    random_state : seed of the k-means anchors (``view_map="rbf_anchors"``).

    Attributes
    ----------
    coef_ : list of (m_in, c) arrays, the classifier W_v of each view on its mapped features.
    intercept_ : (c,) array (zeros when ``intercept="column"``, whose bias is the last row of coef_).
    tensor_ : the rotated low-rank tensor G (ADMM's auxiliary variable at the last iterate).
    delta_ : the Laplace scale used.  history_ : dict of per-iteration "objective", "residual", "rho".
    n_iter_ : ADMM iterations run.  n_views_, n_features_in_ (list of d_v), n_labels_.
    """

    def __init__(
        self,
        lam: float = 1.0,
        alpha: float = 1e-2,
        delta: float | None = None,
        rank_surrogate: str = "ltr",
        rotation: str = "view_label",
        view_map: str = "pca",
        n_components: int = 64,
        intercept: str = "centered",
        loss: str = "per_view",
        n_reweight: int = 1,
        rho: float | None = None,
        rho_growth: float = 1.5,
        rho_max: float = 1e6,
        max_iter: int = 200,
        tol: float = 1e-6,
        threshold: float = 0.5,
        ensure_label: bool = True,
        random_state: int | None = None,
    ) -> None:
        self.lam = lam
        self.alpha = alpha
        self.delta = delta
        self.rank_surrogate = rank_surrogate
        self.rotation = rotation
        self.view_map = view_map
        self.n_components = n_components
        self.intercept = intercept
        self.loss = loss
        self.n_reweight = n_reweight
        self.rho = rho
        self.rho_growth = rho_growth
        self.rho_max = rho_max
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.ensure_label = ensure_label
        self.random_state = random_state

    # -- parameters and feature maps ------------------------------------------------------------

    def _check_params(self) -> None:
        check_scalar(self.lam, "lam", "real", min=0.0)
        check_scalar(self.alpha, "alpha", "real", min=0.0)
        if self.delta is not None:
            check_scalar(self.delta, "delta", "real", min=0.0, inclusive="neither")
        if self.rho is not None:
            check_scalar(self.rho, "rho", "real", min=0.0, inclusive="neither")
        for name, value, allowed in (
            ("rank_surrogate", self.rank_surrogate, SURROGATES),
            ("rotation", self.rotation, ROTATIONS),
            ("view_map", self.view_map, VIEW_MAPS),
            ("intercept", self.intercept, INTERCEPTS),
            ("loss", self.loss, LOSSES),
        ):
            check_choice(value, name, allowed)
        for name, value in (("max_iter", self.max_iter), ("n_components", self.n_components),
                            ("n_reweight", self.n_reweight)):
            check_scalar(value, name, "int", min=1)
        check_scalar(self.rho_growth, "rho_growth", "real", min=1.0)
        check_scalar(self.rho_max, "rho_max", "real", min=0.0, inclusive="neither")
        check_scalar(self.tol, "tol", "real", min=0.0, inclusive="neither")
        check_scalar(self.threshold, "threshold", "real")
        check_bool(self.ensure_label, "ensure_label")
        if self.random_state is not None:
            check_scalar(self.random_state, "random_state", "int", min=0)

    def _fit_view_map(self, views: list[np.ndarray]) -> list[np.ndarray]:
        n = views[0].shape[0]
        self.scalers_ = [StandardScaler().fit(X) for X in views]
        Zs = [s.transform(X) for s, X in zip(self.scalers_, views, strict=True)]
        dims = [X.shape[1] for X in views]
        if self.view_map == "none":
            if len(set(dims)) != 1:
                raise ValueError(f"view_map='none' needs equal feature sizes in every view, got {dims}")
            self.projections_ = None
            return Zs
        if self.view_map == "pca":
            m = min(self.n_components, min(dims), n)
            # Covariance eigendecomposition: exact, and far cheaper than an SVD when n >> d.
            self.projections_ = [
                PCA(n_components=m, svd_solver="covariance_eigh" if Z.shape[1] <= 1000 else "full").fit(Z) for Z in Zs
            ]
            return [p.transform(Z) for p, Z in zip(self.projections_, Zs, strict=True)]
        m = min(self.n_components, n)
        km = KMeans(n_clusters=m, n_init=3, random_state=self.random_state).fit(np.concatenate(Zs, axis=1))
        bounds = np.cumsum([0, *dims])
        anchors = [km.cluster_centers_[:, a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        sq = [cdist(Z, A, "sqeuclidean") for Z, A in zip(Zs, anchors, strict=True)]
        widths = [max(float(np.median(np.sqrt(d))), 1e-12) for d in sq]
        self.projections_ = list(zip(anchors, widths, strict=True))
        return [np.exp(-d / (2.0 * h * h)) for d, h in zip(sq, widths, strict=True)]

    def _map_views(self, views: list[np.ndarray]) -> list[np.ndarray]:
        Zs = [s.transform(X) for s, X in zip(self.scalers_, views, strict=True)]
        if self.view_map == "none":
            return Zs
        if self.view_map == "pca":
            return [p.transform(Z) for p, Z in zip(self.projections_, Zs, strict=True)]
        pairs = zip(Zs, self.projections_, strict=True)
        return [np.exp(-cdist(Z, A, "sqeuclidean") / (2.0 * h * h)) for Z, (A, h) in pairs]

    def _design(self, mapped: list[np.ndarray]) -> np.ndarray:
        """(V, n, m_in): centred mapped features, or mapped features with a constant-1 column."""
        if self.intercept == "centered":
            return np.stack([F - mu for F, mu in zip(mapped, self.feature_means_, strict=True)])
        return np.stack([np.hstack([F, np.ones((F.shape[0], 1))]) for F in mapped])

    # -- the model ------------------------------------------------------------------------------

    def rotate(self, W: np.ndarray) -> np.ndarray:
        """rot(W): the stacked classifiers (V, m_in, c) as the tensor G the rank penalty sees."""
        W = _check_tensor(W, "W")
        check_choice(self.rotation, "rotation", tuple(_PERMUTATIONS))
        return np.transpose(W, _PERMUTATIONS[self.rotation])

    def unrotate(self, G: np.ndarray) -> np.ndarray:
        """The inverse of ``rotate``: back to (V, m_in, c)."""
        G = _check_tensor(G, "G")
        check_choice(self.rotation, "rotation", tuple(_PERMUTATIONS))
        return np.transpose(G, np.argsort(_PERMUTATIONS[self.rotation]))

    def _penalty(self, G: np.ndarray) -> float:
        if self.rank_surrogate == "tnn":
            return tensor_nuclear_norm(G)
        return laplace_tensor_rank(G, self.delta_)

    def _prox(self, T: np.ndarray, tau: float) -> np.ndarray:
        if self.rank_surrogate == "tnn":
            return prox_tnn(T, tau)
        return prox_ltr(T, tau, self.delta_, self.n_reweight)

    def fit(self, Xs: list[np.ndarray], Y: np.ndarray) -> TMvML:
        """Fit the per-view classifiers jointly under the low-rank tensor penalty (ADMM)."""
        self._check_params()
        views = check_views(Xs)
        Y = check_labels(Y, views[0].shape[0])
        n, c, V = Y.shape[0], Y.shape[1], len(views)
        if V == 1:
            warnings.warn("a single view: TMvML reduces to a low-rank label model", UserWarning, stacklevel=2)
        _warn_constant_labels(Y)
        self.n_views_, self.n_features_in_, self.n_labels_ = V, [X.shape[1] for X in views], c

        mapped = self._fit_view_map(views)
        self.feature_means_ = [F.mean(axis=0) for F in mapped]
        X = self._design(mapped)
        if self.intercept == "centered":
            self.intercept_ = Y.mean(axis=0)
            T = Y - self.intercept_
        else:
            self.intercept_ = np.zeros(c)
            T = Y.astype(float)

        # One eigendecomposition of the (V m_in)-square Gram matrix (block diagonal for the per-view
        # loss): every W-step is then a diagonal solve, whatever rho is.
        m_in = X.shape[2]
        if self.loss == "per_view":
            gram = np.zeros((V * m_in, V * m_in))
            for v in range(V):
                gram[v * m_in:(v + 1) * m_in, v * m_in:(v + 1) * m_in] = X[v].T @ X[v]
            XtT = np.concatenate([X[v].T @ T for v in range(V)])
        else:
            Xc = np.concatenate(list(X), axis=1) / V
            gram, XtT = Xc.T @ Xc, Xc.T @ T
        evals, evecs = np.linalg.eigh(gram * (2.0 / n))
        XtT *= 2.0 / n

        def solve(rhs: np.ndarray, shift: float) -> np.ndarray:
            flat = evecs @ ((evecs.T @ rhs.reshape(V * m_in, c)) / (evals[:, None] + shift))
            return flat.reshape(V, m_in, c)

        W = solve(XtT, 2.0 * self.alpha + 1e-12)
        G0 = self.rotate(W)
        if self.delta is None:
            s_max = float(fourier_singular_values(G0).max())
            self.delta_ = 0.1 * s_max if s_max > 0 else 1.0
        else:
            self.delta_ = float(self.delta)

        def objective(W: np.ndarray) -> float:
            scores = np.einsum("vni,vic->vnc", X, W)
            residual = scores - T if self.loss == "per_view" else scores.mean(axis=0) - T
            value = (residual**2).sum() / n + self.alpha * (W**2).sum()
            return float(value + self.lam * self._penalty(self.rotate(W)))

        history: dict[str, list[float]] = {"objective": [objective(W)], "residual": [], "rho": []}
        self.n_iter_ = 0
        G = G0.copy()
        if self.lam > 0:
            norm_w = float((W**2).sum())
            rho = self.rho if self.rho is not None else 1e-2 * float((T**2).sum()) / n / max(norm_w, 1e-12)
            Lam = np.zeros_like(G)
            converged = False
            for it in range(1, self.max_iter + 1):
                W = solve(XtT + self.unrotate(rho * G - Lam).reshape(-1, c), 2.0 * self.alpha + rho)
                RW = self.rotate(W)
                G = self._prox(RW + Lam / rho, self.lam / rho)
                gap = RW - G
                Lam = Lam + rho * gap
                residual = float(np.abs(gap).max() / max(np.abs(W).max(), 1e-12))
                history["objective"].append(objective(W))
                history["residual"].append(residual)
                history["rho"].append(rho)
                self.n_iter_ = it
                if residual < self.tol:
                    converged = True
                    break
                rho = min(self.rho_growth * rho, self.rho_max)
            if not converged:
                warnings.warn(
                    f"TMvML did not converge in {self.max_iter} iterations (relative residual {residual:.2e})",
                    ConvergenceWarning,
                    stacklevel=2,
                )
        self.coef_ = list(W)
        self.tensor_ = G
        self.history_ = history
        return self

    def decision_function(self, Xs: list[np.ndarray]) -> np.ndarray:
        """Label scores (n, c): the average over views of X~_v W_v, plus the intercept."""
        check_is_fitted(self, "coef_")
        views = check_views(Xs, self.n_views_)
        dims = [X.shape[1] for X in views]
        if dims != self.n_features_in_:
            raise ValueError(f"Xs must have the feature sizes seen in fit {self.n_features_in_}, got {dims}")
        X = self._design(self._map_views(views))
        return np.einsum("vni,vic->nc", X, np.stack(self.coef_)) / self.n_views_ + self.intercept_


# ----------------------------------------------------------------------------------------------
# Baselines
# ----------------------------------------------------------------------------------------------


def _concatenate(scalers: list[StandardScaler], views: list[np.ndarray]) -> np.ndarray:
    return np.concatenate([s.transform(X) for s, X in zip(scalers, views, strict=True)], axis=1)


class _ConcatenatedViews(_MultiLabelMixin, BaseEstimator):
    """Shared plumbing: standardise each view, concatenate, check shapes at predict time."""

    def _fit_views(self, Xs: list[np.ndarray], Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        check_scalar(self.threshold, "threshold", "real")
        check_bool(self.ensure_label, "ensure_label")
        views = check_views(Xs)
        Y = check_labels(Y, views[0].shape[0])
        _warn_constant_labels(Y)
        self.scalers_ = [StandardScaler().fit(X) for X in views]
        self.n_views_, self.n_features_in_, self.n_labels_ = len(views), [X.shape[1] for X in views], Y.shape[1]
        return _concatenate(self.scalers_, views), Y

    def _transform_views(self, Xs: list[np.ndarray]) -> np.ndarray:
        check_is_fitted(self, "scalers_")
        views = check_views(Xs, self.n_views_)
        dims = [X.shape[1] for X in views]
        if dims != self.n_features_in_:
            raise ValueError(f"Xs must have the feature sizes seen in fit {self.n_features_in_}, got {dims}")
        return _concatenate(self.scalers_, views)


class ConcatRidge(_ConcatenatedViews):
    """Binary-relevance ridge on the concatenated standardised views; alpha by leave-one-out (RidgeCV)."""

    def __init__(self, alphas: tuple[float, ...] = tuple(np.logspace(-2, 4, 13)), threshold: float = 0.5,
                 ensure_label: bool = True) -> None:
        self.alphas = alphas
        self.threshold = threshold
        self.ensure_label = ensure_label

    def fit(self, Xs: list[np.ndarray], Y: np.ndarray) -> ConcatRidge:
        """Fit one ridge per label (shared alpha chosen by efficient leave-one-out)."""
        alphas = np.atleast_1d(check_array(self.alphas, "alphas", ndim=(0, 1), dtype=float))
        if alphas.size == 0 or not (alphas > 0).all():
            raise ValueError(f"alphas must be a non-empty sequence of positive numbers, got {self.alphas!r}")
        X, Y = self._fit_views(Xs, Y)
        self.model_ = RidgeCV(alphas=alphas).fit(X, Y)
        self.alpha_ = float(self.model_.alpha_)
        return self

    def decision_function(self, Xs: list[np.ndarray]) -> np.ndarray:
        """Ridge scores (n, c)."""
        X = self._transform_views(Xs)
        return self.model_.predict(X)


class MultiLabelKNN(_ConcatenatedViews):
    """k-nearest-neighbour label frequencies on the concatenated standardised views (sklearn KNN)."""

    def __init__(self, n_neighbors: int = 10, threshold: float = 0.5, ensure_label: bool = True) -> None:
        self.n_neighbors = n_neighbors
        self.threshold = threshold
        self.ensure_label = ensure_label

    def fit(self, Xs: list[np.ndarray], Y: np.ndarray) -> MultiLabelKNN:
        """Store the training set."""
        check_scalar(self.n_neighbors, "n_neighbors", "int", min=1)
        X, Y = self._fit_views(Xs, Y)
        self.model_ = KNeighborsClassifier(n_neighbors=min(self.n_neighbors, len(X))).fit(X, Y)
        return self

    def decision_function(self, Xs: list[np.ndarray]) -> np.ndarray:
        """Fraction of the k neighbours that carry each label (n, c)."""
        X = self._transform_views(Xs)
        probas = self.model_.predict_proba(X)
        return np.stack([p[:, list(cls).index(1)] if 1 in cls else np.zeros(len(p))
                         for p, cls in zip(probas, self.model_.classes_, strict=True)], axis=1)


class LowRankRidge(_ConcatenatedViews):
    """Matrix low-rank baseline: ridge on concatenated views + lam * ||W||_* (label correlations only).

    Minimises (1/n) ||X W - (Y - mean Y)||_F^2 + alpha ||W||_F^2 + lam ||W||_* by accelerated
    accelerated proximal gradient (FISTA with adaptive restart and singular value soft-thresholding);
    X is centred, so the intercept is the label mean.
    """

    def __init__(self, lam: float = 0.1, alpha: float = 1e-2, max_iter: int = 1000, tol: float = 1e-6,
                 threshold: float = 0.5, ensure_label: bool = True) -> None:
        self.lam = lam
        self.alpha = alpha
        self.max_iter = max_iter
        self.tol = tol
        self.threshold = threshold
        self.ensure_label = ensure_label

    def fit(self, Xs: list[np.ndarray], Y: np.ndarray) -> LowRankRidge:
        """Proximal gradient on the nuclear-norm-penalised least squares."""
        lam = check_scalar(self.lam, "lam", "real", min=0.0)
        alpha = check_scalar(self.alpha, "alpha", "real", min=0.0)
        check_scalar(self.tol, "tol", "real", min=0.0, inclusive="neither")
        check_scalar(self.max_iter, "max_iter", "int", min=1)
        X, Y = self._fit_views(Xs, Y)
        n = X.shape[0]
        self.intercept_ = Y.mean(axis=0)
        T = Y - self.intercept_
        gram, XtT = 2.0 * X.T @ X / n, 2.0 * X.T @ T / n
        step = 1.0 / (np.linalg.eigvalsh(gram)[-1] + 2.0 * alpha)
        W = Z = np.zeros((X.shape[1], T.shape[1]))
        t = 1.0
        self.n_iter_ = 0
        for _ in range(self.max_iter):
            self.n_iter_ += 1
            grad = gram @ Z - XtT + 2.0 * alpha * Z
            U, s, Vt = np.linalg.svd(Z - step * grad, full_matrices=False)
            W_new = (U * np.maximum(s - step * lam, 0.0)) @ Vt
            if np.sum((Z - W_new) * (W_new - W)) > 0:  # adaptive restart (O'Donoghue & Candes 2015)
                t = 1.0
            t_new = (1.0 + np.sqrt(1.0 + 4.0 * t * t)) / 2.0
            Z = W_new + ((t - 1.0) / t_new) * (W_new - W)
            change = np.abs(W_new - W).max() / max(np.abs(W_new).max(), 1e-12)
            W, t = W_new, t_new
            if change < self.tol:
                break
        else:
            warnings.warn(f"LowRankRidge did not converge in {self.max_iter} iterations (relative change "
                          f"{change:.2e})", ConvergenceWarning, stacklevel=2)
        self.coef_ = W
        return self

    def decision_function(self, Xs: list[np.ndarray]) -> np.ndarray:
        """Linear scores (n, c)."""
        return self._transform_views(Xs) @ self.coef_ + self.intercept_


# ----------------------------------------------------------------------------------------------
# Hyperparameter selection
# ----------------------------------------------------------------------------------------------


def select_by_validation(
    estimator: BaseEstimator,
    param: str,
    values: tuple[Any, ...],
    Xs: list[np.ndarray],
    Y: np.ndarray,
    val_size: float = 0.25,
    seed: Seed = 0,
) -> tuple[BaseEstimator, dict[Any, float]]:
    """Pick ``param`` from ``values`` by validation average precision, then refit on all of (Xs, Y).

    The validation fold is a seeded random ``val_size`` share of the rows.  Returns the refitted
    estimator and the validation score of every value (ties go to the first value).
    """
    views = check_views(Xs)
    Y = check_labels(Y, views[0].shape[0])
    values = tuple(check_sequence(values, "values", min_len=1))
    val_size = check_scalar(val_size, "val_size", "real", min=0.0, max=1.0, inclusive="neither")
    order = as_generator(seed).permutation(len(Y))
    n_val = max(1, int(round(val_size * len(Y))))
    val, train = order[:n_val], order[n_val:]
    scores: dict[Any, float] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for value in values:
            model = clone(estimator).set_params(**{param: value})
            model.fit([X[train] for X in views], Y[train])
            scores[value] = model.score([X[val] for X in views], Y[val])
    best = max(values, key=lambda v: scores[v])
    return clone(estimator).set_params(**{param: best}).fit(views, Y), scores
