"""Gasparin & Ramdas (ICML 2025), "Improving the Statistical Efficiency of Cross-Conformal Prediction".

Example
-------
>>> import numpy as np
>>> from sklearn.linear_model import LinearRegression
>>> from icml25.conformal import CrossConformalRegressor, interval_length
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 5)); y = X.sum(axis=1) + rng.normal(size=200)
>>> cc = CrossConformalRegressor(LinearRegression(), n_folds=5, combine="e", random_state=0).fit(X, y)
>>> sets = cc.predict_set(X[:3])           # one (n_intervals, 2) array per test point
>>> lengths = interval_length(sets)        # e-mod-cross sets, never longer than mod-cross ones

Cross-conformal prediction (Vovk 2015) splits the n training points into K folds S_1..S_K, fits one
model per fold complement and scores the held-out fold.  For a test point x and a candidate label y,
fold k gives the conformal p-value

    p_k(y) = (1 + #{i in S_k : R_i >= R^k(x, y)}) / (m_k + 1),    m_k = |S_k|,

and the prediction set is ``{y : merge(p_1(y), ..., p_K(y)) > alpha_eff}``.  The merging rules
(``combine``) are those of :mod:`icml25.conformal.merging`: ``"mod"`` (mean; mod-cross), ``"e"``,
``"u"``, ``"eu"`` (the paper's e-, u- and eu-mod-cross) and ``"vovk"`` (Vovk's pooled p-value).
The modified family covers with probability >= 1 - 2 alpha_eff; ``target="vovk"`` raises alpha_eff to
``alpha' = alpha + (1 - alpha)(K - 1)/(n + K)``, the level at which the modified family matches Vovk's
guarantee ``1 - 2 alpha - 2 (1 - alpha)(K - 1)/(n + K)`` (as in the authors' real-data code).

Regression sets are computed exactly: each p_k is piecewise constant in y with breakpoints
``mu_k(x) -/+ R_i``, so one sorted sweep over the 2n breakpoints gives the set as a union of closed
intervals (``method="exact"``); ``method="grid"`` evaluates the p-value on the authors' 1,000-point
grid instead.  ``SplitConformalRegressor``, ``SplitConformalClassifier`` and ``CVPlusRegressor``
(CV+ / jackknife+, Barber et al. 2021) are the baselines of the paper's experiments.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.utils import check_array as sk_check_array
from sklearn.utils.validation import column_or_1d, validate_data

from icml25.conformal.merging import merge_eu, merge_exchangeable, merge_mean, merge_uniform, vovk_pooled
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_array,
    check_choice,
    check_consistent_length,
    check_is_fitted,
    check_scalar,
    check_sequence,
    named_errors,
)

COMBINES = ("mod", "vovk", "e", "u", "eu")
TARGETS = ("mod", "vovk")
METHODS = ("exact", "grid")
_CHUNK_ELEMENTS = 2**22  # size of the largest work array when predicting, in elements
# p-values are rationals computed in floating point: a p-value equal to the threshold (a tie, excluded by
# the strict inequality p > alpha) must not slip in through rounding, nor a rank such as 0.9 * 10 round up.
_TOL = 1e-12


# ----------------------------------------------------------------------------------------------------------
# Checks and small shared pieces
# ----------------------------------------------------------------------------------------------------------


def _alpha(confidence_level: float) -> float:
    """``alpha = 1 - confidence_level``; the level must lie in (0.5, 1), since the coverage guarantee
    1 - 2 alpha of cross-conformal prediction is vacuous for alpha >= 0.5."""
    level = check_scalar(confidence_level, "confidence_level", "real", min=0.5, max=1.0, inclusive="neither")
    return round(1.0 - level, 12)


def _above(p: np.ndarray, threshold: float) -> np.ndarray:
    """``p > threshold`` for p-values, robust to rounding (a p-value equal to the threshold is excluded)."""
    return p > threshold + _TOL


def _floor(x: float) -> int:
    return int(np.floor(x + _TOL * max(1.0, abs(x))))


def _ceil(x: float) -> int:
    return int(np.ceil(x - _TOL * max(1.0, abs(x))))


def _check_estimator(estimator: object, default: BaseEstimator, methods: tuple[str, ...]) -> BaseEstimator:
    if estimator is None:
        return default
    missing = [m for m in methods if not callable(getattr(estimator, m, None))]
    if missing:
        raise TypeError(
            f"estimator must implement {', '.join(methods)}; {type(estimator).__name__} lacks {missing}"
        )
    return estimator


def _fit_data(
    estimator: BaseEstimator, X: np.ndarray, y: np.ndarray, *, y_numeric: bool, min_samples: int
) -> tuple[np.ndarray, np.ndarray]:
    """``X`` (2-d, finite, recorded as ``n_features_in_``) and ``y`` (1-d, finite, as long as X) for ``fit``."""
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None")
    X = named_errors("X", validate_data, estimator, X, reset=True)
    y = named_errors("y", sk_check_array, y, ensure_2d=False, dtype="numeric" if y_numeric else None,
               input_name="y")
    y = named_errors("y", column_or_1d, y, warn=True)
    check_consistent_length(X, y, names=("X", "y"))
    if X.shape[0] < min_samples:
        raise ValueError(
            f"X has n_samples = {X.shape[0]}, but {type(estimator).__name__} needs at least {min_samples}"
        )
    return X, y


def _check_features(estimator: BaseEstimator, X: np.ndarray) -> np.ndarray:
    """``X`` for prediction: a fitted estimator, finite 2-d data with the fitted number of features."""
    check_is_fitted(estimator, "n_features_in_")
    return named_errors("X", validate_data, estimator, X, reset=False)


class _OneClassModel:
    """The fitted model of a training part that holds a single class: that class with probability 1."""

    def __init__(self, label: object) -> None:
        self.classes_ = np.array([label])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return np.ones((X.shape[0], 1))


def _fit_model(estimator: BaseEstimator, X: np.ndarray, y: np.ndarray, classify: bool):
    """A clone of ``estimator`` fitted on ``(X, y)``; a classifier's part with one class gets a constant model
    (most classifiers refuse to fit a single class)."""
    if classify:
        labels = np.unique(y)
        if labels.size == 1:
            return _OneClassModel(labels[0])
    return clone(estimator).fit(X, y)


def _fold_indices(n: int, n_folds: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A random partition of range(n) into n_folds folds (sizes differ by at most one), in random order."""
    folds = np.array_split(rng.permutation(n), n_folds)
    return [np.sort(folds[k]) for k in rng.permutation(n_folds)]


def _chunks(n_rows: int, elements_per_row: int) -> list[slice]:
    step = max(1, _CHUNK_ELEMENTS // max(1, elements_per_row))
    return [slice(i, min(i + step, n_rows)) for i in range(0, n_rows, step)]


def _counts_at_least(sorted_scores: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``#{i : sorted_scores[i] >= s}`` for every ``s`` in ``scores`` (ties count, as in the p-value)."""
    return sorted_scores.size - np.searchsorted(sorted_scores, scores, side="left")


def _folds_last(per_fold: list[np.ndarray] | np.ndarray) -> np.ndarray:
    """Per-fold arrays as one array with the folds on the last axis, stored fold by fold in memory: the
    merging rules then read each fold as one contiguous block (many times faster than interleaved)."""
    return np.moveaxis(np.asarray(per_fold), 0, -1)


def _class_scores(model: BaseEstimator, X: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Scores ``1 - p_hat(y | x)`` for every class of ``classes``; classes the model never saw get score 1."""
    proba = model.predict_proba(X)
    full = np.zeros((X.shape[0], classes.size))
    full[:, np.searchsorted(classes, model.classes_)] = proba
    return 1.0 - full


def _check_level(alpha: float, n: int, n_folds: int, combine: str, target: str) -> None:
    check_scalar(alpha, "alpha", "real", min=0.0, max=1.0, inclusive="neither")
    n = check_scalar(n, "n", "int", min=1)
    check_scalar(n_folds, "n_folds", "int", min=2, max=max(n, 2))
    check_choice(combine, "combine", COMBINES)
    check_choice(target, "target", TARGETS)


def effective_alpha(alpha: float, n: int, n_folds: int, combine: str = "mod", target: str = "mod") -> float:
    """The threshold ``alpha_eff`` of the set ``{y : p(y) > alpha_eff}``.

    ``combine="vovk"`` always uses ``alpha`` (Vovk's rule).  The modified family (``"mod"``, ``"e"``,
    ``"u"``, ``"eu"``) uses ``alpha`` for ``target="mod"`` (coverage >= 1 - 2 alpha) and
    ``alpha + (1 - alpha)(K - 1)/(n + K)`` for ``target="vovk"`` (Vovk's guarantee).

    ``alpha`` lies in (0, 1), ``n >= 1`` is the number of training points and ``2 <= n_folds <= n``.
    """
    _check_level(alpha, n, n_folds, combine, target)
    if combine == "vovk" or target == "mod":
        return float(alpha)
    return float(alpha + (1.0 - alpha) * (n_folds - 1) / (n + n_folds))


def coverage_guarantee(
    alpha: float, n: int, n_folds: int, combine: str = "mod", target: str = "mod"
) -> float:
    """The marginal coverage the set is guaranteed to reach (Vovk 2015; Gasparin & Ramdas 2025).

    ``1 - 2 alpha_eff`` for the modified family; ``1 - 2 alpha - 2 (1 - alpha)(K - 1)/(n + K)`` for Vovk's
    pooled p-value (the bound holds for n >> K and equal folds).  Arguments as in :func:`effective_alpha`.
    """
    _check_level(alpha, n, n_folds, combine, target)
    if combine == "vovk":
        return float(1.0 - 2.0 * alpha - 2.0 * (1.0 - alpha) * (n_folds - 1) / (n + n_folds))
    return float(1.0 - 2.0 * effective_alpha(alpha, n, n_folds, combine, target))


def merge_counts(
    counts: np.ndarray, sizes: np.ndarray, combine: str, u: np.ndarray | float = 1.0
) -> np.ndarray:
    """Merged p-value from per-fold counts ``counts[..., k] = #{i in S_k : R_i >= R^k(y)}``.

    ``sizes[k] = m_k``; the fold p-values are ``(1 + counts) / (m_k + 1)``.  ``u`` (one uniform draw per
    test point, broadcast over the batch axes) is used by ``"u"`` and ``"eu"`` only.
    """
    check_choice(combine, "combine", COMBINES)
    counts = check_array(counts, "counts")
    if counts.ndim == 0 or counts.size == 0:
        raise ValueError(f"counts must be non-empty, with one count per fold on the last axis, got {counts.shape}")
    sizes = check_array(sizes, "sizes", shape=(counts.shape[-1],))
    if np.any(sizes < 1):
        raise ValueError(f"sizes must hold fold sizes >= 1, got min {sizes.min():g}")
    if np.any(counts < 0) or np.any(counts > sizes):
        raise ValueError("counts must lie between 0 and the fold sizes")
    if combine == "vovk":
        return vovk_pooled(counts, int(sizes.sum()))
    p = (1.0 + counts) / (sizes + 1.0)
    if combine == "mod":
        return merge_mean(p)
    if combine == "e":
        return merge_exchangeable(p)
    if combine == "u":
        return merge_uniform(p, u)
    return merge_eu(p, u)


def _check_sets(sets: list[np.ndarray]) -> list[np.ndarray]:
    """Prediction sets: a sequence of ``(n_intervals, 2)`` arrays of interval end points (infinite allowed)."""
    return check_sequence(sets, "sets", item=lambda s, name: check_array(s, name, shape=(None, 2), dtype=float,
                                                                         finite=False))


def interval_length(sets: list[np.ndarray]) -> np.ndarray:
    """Total length of each prediction set (a union of disjoint closed intervals); ``inf`` if unbounded."""
    sets = _check_sets(sets)
    return np.array([float(np.sum(s[:, 1] - s[:, 0])) if len(s) else 0.0 for s in sets])


def covers(sets: list[np.ndarray], y: np.ndarray) -> np.ndarray:
    """Whether ``y[i]`` lies in ``sets[i]`` (closed intervals), for every test point ``i``."""
    sets = _check_sets(sets)
    y = check_array(y, "y", ndim=(0, 1), dtype=float).ravel()
    if len(sets) != y.size:
        raise ValueError(f"sets and y must have the same length, got {len(sets)} sets for {y.size} labels")
    return np.array([bool(np.any((s[:, 0] <= t) & (t <= s[:, 1]))) for s, t in zip(sets, y, strict=True)])


def grid_intervals(mask: np.ndarray, grid: np.ndarray) -> list[np.ndarray]:
    """The grid method's sets: each run of grid points with ``mask`` true becomes ``[first, last]``.

    ``mask`` has shape ``(n_test, n_grid)`` over the sorted ``grid``; returns one ``(n_intervals, 2)``
    array per row (as the authors' ``set_cc``, but keeping a run that reaches the last grid point).
    """
    mask = check_array(mask, "mask", ndim=2, dtype=bool, min_len=1)
    grid = check_array(grid, "grid", ndim=1, dtype=float)
    if grid.shape != (mask.shape[1],):
        raise ValueError(
            f"mask must have shape (n_test, len(grid)), got {mask.shape} for a grid of shape {grid.shape}"
        )
    points = np.broadcast_to(grid, mask.shape)
    return _runs_to_intervals(mask, points, points)


def _runs_to_intervals(mask: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> list[np.ndarray]:
    """Turn each row's runs of ``True`` into intervals ``[lower[start], upper[end]]``."""
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=bool)
    padded[:, 1:-1] = mask
    rows_s, starts = np.nonzero(padded[:, 1:-1] & ~padded[:, :-2])
    rows_e, ends = np.nonzero(padded[:, 1:-1] & ~padded[:, 2:])
    intervals = np.column_stack([lower[rows_s, starts], upper[rows_e, ends]])
    return np.split(intervals, np.cumsum(np.bincount(rows_s, minlength=mask.shape[0]))[:-1])


# ----------------------------------------------------------------------------------------------------------
# Cross-conformal prediction: regression and classification
# ----------------------------------------------------------------------------------------------------------


class _CrossConformal(BaseEstimator):
    """Fold making, per-fold fitting and merging shared by the regressor and the classifier."""

    _classify = False

    def _validate_params(self) -> None:
        self.alpha_ = _alpha(self.confidence_level)
        check_scalar(self.n_folds, "n_folds", "int", min=2)
        check_choice(self.combine, "combine", COMBINES)
        check_choice(self.target, "target", TARGETS)

    def _fit_folds(
        self, X: np.ndarray, y: np.ndarray, default: BaseEstimator, methods: tuple[str, ...]
    ) -> None:
        estimator = _check_estimator(self.estimator, default, methods)
        n = X.shape[0]
        if self.n_folds > n:
            raise ValueError(
                f"n_folds must be at most the number of training points n = {n}, got {self.n_folds}"
            )
        rng = as_generator(self.random_state, "random_state")
        self.folds_ = _fold_indices(n, self.n_folds, rng)
        self.fold_sizes_ = np.array([f.size for f in self.folds_])
        self.estimators_ = []
        self.fold_scores_ = []
        for fold in self.folds_:
            train = np.ones(n, dtype=bool)
            train[fold] = False
            model = _fit_model(estimator, X[train], y[train], self._classify)
            self.estimators_.append(model)
            self.fold_scores_.append(np.sort(self._train_scores(model, X[fold], y[fold])))
        self.u_seed_ = int(rng.integers(2**62))
        self.n_features_in_ = X.shape[1]
        self.n_train_ = n
        self.coverage_guarantee_ = coverage_guarantee(self.alpha_, n, self.n_folds, self.combine, self.target)

    def _threshold_and_u(
        self, n_test: int, combine: str | None, u: np.ndarray | None
    ) -> tuple[str, float, np.ndarray]:
        combine = self.combine if combine is None else check_choice(combine, "combine", COMBINES)
        alpha_eff = effective_alpha(self.alpha_, self.n_train_, self.n_folds, combine, self.target)
        if u is None:
            u = np.random.default_rng(self.u_seed_).random(n_test)
        u = check_array(u, "u", shape=(n_test,), dtype=float)
        if u.min(initial=0.0) < 0.0 or u.max(initial=0.0) > 1.0:
            raise ValueError("u must hold one uniform draw in [0, 1] per test point, got values outside [0, 1]")
        return combine, alpha_eff, u


class CrossConformalRegressor(_CrossConformal):
    """Cross-conformal regression sets with the paper's merging rules (absolute-residual score).

    Parameters
    ----------
    estimator : scikit-learn regressor, default ``LinearRegression()``; cloned once per fold.
    n_folds : K >= 2 (at most n); folds differ in size by at most one when K does not divide n.
    confidence_level : 1 - alpha, in (0.5, 1).
    combine : ``"mod"`` | ``"vovk"`` | ``"e"`` | ``"u"`` | ``"eu"`` (see :mod:`icml25.conformal.merging`).
    target : ``"mod"`` (coverage >= 1 - 2 alpha) or ``"vovk"`` (threshold alpha', Vovk's guarantee).
    method : ``"exact"`` (sorted sweep over the 2n breakpoints) or ``"grid"`` (the authors' grid).
    n_grid, grid_factor : the grid of ``method="grid"``: ``n_grid`` points over the training range of y,
        widened ``grid_factor`` times about its centre.
    random_state : seed or Generator for the folds, their order and the draws U of ``"u"`` / ``"eu"``.

    Attributes: ``folds_``, ``fold_sizes_``, ``estimators_`` (one per fold), ``fold_scores_`` (sorted
    out-of-fold residuals), ``alpha_``, ``coverage_guarantee_``, ``u_seed_``, ``grid_`` (the grid).
    """

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        n_folds: int = 5,
        confidence_level: float = 0.9,
        combine: str = "mod",
        target: str = "mod",
        method: str = "exact",
        n_grid: int = 1000,
        grid_factor: float = 1.0,
        random_state: Seed = None,
    ) -> None:
        self.estimator = estimator
        self.n_folds = n_folds
        self.confidence_level = confidence_level
        self.combine = combine
        self.target = target
        self.method = method
        self.n_grid = n_grid
        self.grid_factor = grid_factor
        self.random_state = random_state

    @staticmethod
    def _train_scores(model: BaseEstimator, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.abs(y - model.predict(X))

    def fit(self, X: np.ndarray, y: np.ndarray) -> CrossConformalRegressor:
        """Fit one model per fold complement and store the sorted out-of-fold absolute residuals."""
        self._validate_params()
        check_choice(self.method, "method", METHODS)
        check_scalar(self.n_grid, "n_grid", "int", min=2)
        check_scalar(self.grid_factor, "grid_factor", "real", min=0.0, inclusive="neither")
        X, y = _fit_data(self, X, y, y_numeric=True, min_samples=2)
        y = y.astype(float)
        self._fit_folds(X, y, LinearRegression(), ("fit", "predict"))
        low, high = float(y.min()), float(y.max())
        centre, half = (low + high) / 2.0, self.grid_factor * max(high - low, 1e-12) / 2.0
        self.grid_ = np.linspace(centre - half, centre + half, self.n_grid)
        return self

    def _fold_predictions(self, X: np.ndarray) -> np.ndarray:
        return np.column_stack([model.predict(X) for model in self.estimators_])

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Point prediction: the mean of the K fold models' predictions."""
        return self._fold_predictions(_check_features(self, X)).mean(axis=1)

    def _counts(self, mu: np.ndarray, y_candidates: np.ndarray) -> np.ndarray:
        return _folds_last(
            [
                _counts_at_least(s, np.abs(y_candidates - mu[:, k, None]))
                for k, s in enumerate(self.fold_scores_)
            ]
        )

    def _candidates(self, y_candidates: np.ndarray, n_test: int) -> np.ndarray:
        y_candidates = check_array(y_candidates, "y_candidates", ndim=(1, 2), dtype=float)
        if y_candidates.size == 0:
            raise ValueError(f"y_candidates must be non-empty, got shape {y_candidates.shape}")
        if y_candidates.ndim == 1:
            y_candidates = np.broadcast_to(y_candidates, (n_test, y_candidates.size))
        if y_candidates.ndim != 2 or y_candidates.shape[0] != n_test or not np.isfinite(y_candidates).all():
            raise ValueError(
                f"y_candidates must be finite, of shape (n_candidates,) or (n_test={n_test}, n_candidates); "
                f"got shape {y_candidates.shape}"
            )
        return y_candidates

    def fold_pvalues(self, X: np.ndarray, y_candidates: np.ndarray) -> np.ndarray:
        """Per-fold p-values ``p_k(y)``, shape ``(n_test, n_candidates, K)``, in the fitted fold order."""
        X = _check_features(self, X)
        y_candidates = self._candidates(y_candidates, X.shape[0])
        counts = self._counts(self._fold_predictions(X), y_candidates)
        return (1.0 + counts) / (self.fold_sizes_ + 1.0)

    def predict_pvalues(
        self,
        X: np.ndarray,
        y_candidates: np.ndarray,
        *,
        combine: str | None = None,
        u: np.ndarray | None = None,
    ) -> np.ndarray:
        """Merged p-values, shape ``(n_test, n_candidates)``; ``combine`` overrides the fitted rule."""
        X = _check_features(self, X)
        y_candidates = self._candidates(y_candidates, X.shape[0])
        combine, _, u = self._threshold_and_u(X.shape[0], combine, u)
        mu = self._fold_predictions(X)
        out = np.empty(y_candidates.shape)
        for rows in _chunks(X.shape[0], y_candidates.shape[1] * self.n_folds):
            counts = self._counts(mu[rows], y_candidates[rows])
            out[rows] = merge_counts(counts, self.fold_sizes_, combine, u[rows, None])
        return out

    def predict_set(
        self, X: np.ndarray, *, combine: str | None = None, u: np.ndarray | None = None
    ) -> list[np.ndarray]:
        """Prediction sets ``{y : p(y) > alpha_eff}``: per test point an ``(n_intervals, 2)`` array of
        disjoint closed intervals, sorted; ``(0, 2)`` when empty, ``[[-inf, inf]]`` when it is every y.

        ``combine`` overrides the fitted rule (the folds, models and draws ``u`` stay the same, so the
        nesting C_e, C_u within C_mod and C_eu within C_e holds between calls); ``u`` fixes the draws.
        """
        X = _check_features(self, X)
        combine, alpha_eff, u = self._threshold_and_u(X.shape[0], combine, u)
        mu = self._fold_predictions(X)
        base = merge_counts(np.zeros((X.shape[0], self.n_folds)), self.fold_sizes_, combine, u)
        whole = _above(base, alpha_eff)  # p(y) >= p(+-inf) for every y, so the set is the whole line
        sets: list[np.ndarray] = []
        if self.method == "exact":
            per_row = 2 * self.n_train_ * self.n_folds
        else:
            per_row = self.n_grid * self.n_folds
        for rows in _chunks(X.shape[0], per_row):
            if self.method == "exact":
                sets.extend(self._exact_sets(mu[rows], combine, alpha_eff, u[rows]))
            else:
                sets.extend(self._grid_sets(mu[rows], combine, alpha_eff, u[rows]))
        return [np.array([[-np.inf, np.inf]]) if w else s for s, w in zip(sets, whole, strict=True)]

    def _exact_sets(self, mu: np.ndarray, combine: str, alpha_eff: float, u: np.ndarray) -> list[np.ndarray]:
        """Exact sets by one sorted sweep over the breakpoints ``mu_k -/+ R_i`` of every fold.

        Fold k's count ``#{i in S_k : R_i >= |y - mu_k|}`` rises by one when y reaches ``mu_k - R_i``
        ("entry", inclusive) and falls by one just after ``mu_k + R_i`` ("exit").  Sorting the 2n events
        with entries before exits at equal positions, the state after each event is either the value at
        that breakpoint (after its last entry) or the value on the open gap to its right (after its last
        event); intermediate states at one position lie between these, so a run of states above
        ``alpha_eff`` maps to the closed interval from its first position to its last position, or to the
        next breakpoint when the run covers the gap after it.
        """
        n_test, n_folds = mu.shape
        sizes = self.fold_sizes_
        entries = [mu[:, k, None] - s[None, ::-1] for k, s in enumerate(self.fold_scores_)]
        exits = [mu[:, k, None] + s[None, :] for k, s in enumerate(self.fold_scores_)]
        positions = np.concatenate(entries + exits, axis=1)
        fold_of = np.concatenate([np.repeat(np.arange(n_folds), sizes)] * 2)
        step = np.concatenate(
            [np.ones(self.n_train_, dtype=np.int32), -np.ones(self.n_train_, dtype=np.int32)]
        )
        order = np.argsort(positions, axis=1, kind="stable")
        positions = np.take_along_axis(positions, order, axis=1)
        n_events = positions.shape[1]
        increments = np.zeros((n_folds, n_test, n_events), dtype=np.int32)
        cell = fold_of[order] * (n_test * n_events) + np.arange(n_test * n_events).reshape(n_test, n_events)
        increments.reshape(-1)[cell.ravel()] = step[order].ravel()
        counts = _folds_last(np.cumsum(increments, axis=2, dtype=np.int32))
        mask = _above(merge_counts(counts, sizes, combine, u[:, None]), alpha_eff)
        last_at_position = np.ones(positions.shape, dtype=bool)
        last_at_position[:, :-1] = positions[:, 1:] != positions[:, :-1]
        # The state after the final event is p(+inf), so a run never ends on the final event.
        upper = np.where(last_at_position[:, :-1], positions[:, 1:], positions[:, :-1])
        upper = np.concatenate([upper, positions[:, -1:]], axis=1)
        return _runs_to_intervals(mask, positions, upper)

    def _grid_sets(self, mu: np.ndarray, combine: str, alpha_eff: float, u: np.ndarray) -> list[np.ndarray]:
        """The authors' grid method: the runs of grid points with ``p > alpha_eff``, as ``[first, last]``."""
        p = merge_counts(self._counts(mu, self.grid_[None, :]), self.fold_sizes_, combine, u[:, None])
        return grid_intervals(_above(p, alpha_eff), self.grid_)


class CrossConformalClassifier(_CrossConformal):
    """Cross-conformal classification sets with the paper's merging rules (score ``1 - p_hat(y | x)``).

    Parameters are those of :class:`CrossConformalRegressor` without the grid; ``estimator`` must have
    ``predict_proba`` (default ``LogisticRegression(max_iter=1000)``).  A class missing from a fold's
    training part gets probability 0 (score 1) from that fold's model; a training part holding a single
    class gets a constant model giving it probability 1 (most classifiers refuse to fit one class).
    ``predict_set`` returns a boolean mask of shape ``(n_test, n_classes)`` over ``classes_``.
    """

    _classify = True

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        n_folds: int = 5,
        confidence_level: float = 0.9,
        combine: str = "mod",
        target: str = "mod",
        random_state: Seed = None,
    ) -> None:
        self.estimator = estimator
        self.n_folds = n_folds
        self.confidence_level = confidence_level
        self.combine = combine
        self.target = target
        self.random_state = random_state

    def _train_scores(self, model: BaseEstimator, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        scores = _class_scores(model, X, self.classes_)
        return scores[np.arange(y.size), np.searchsorted(self.classes_, y)]

    def fit(self, X: np.ndarray, y: np.ndarray) -> CrossConformalClassifier:
        """Fit one classifier per fold complement and store the sorted out-of-fold scores."""
        self._validate_params()
        X, y = _fit_data(self, X, y, y_numeric=False, min_samples=2)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y must contain at least 2 classes, got {self.classes_.size}")
        self._fit_folds(X, y, LogisticRegression(max_iter=1000), ("fit", "predict_proba"))
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities averaged over the K fold models, columns in ``classes_`` order."""
        X = _check_features(self, X)
        return np.mean([1.0 - _class_scores(m, X, self.classes_) for m in self.estimators_], axis=0)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Point prediction: the class with the largest averaged probability."""
        check_is_fitted(self, "classes_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def _counts(self, X: np.ndarray) -> np.ndarray:
        return _folds_last(
            [
                _counts_at_least(s, _class_scores(m, X, self.classes_))
                for m, s in zip(self.estimators_, self.fold_scores_, strict=True)
            ]
        )

    def fold_pvalues(self, X: np.ndarray) -> np.ndarray:
        """Per-fold p-values ``p_k(y)`` for every class, shape ``(n_test, n_classes, K)``."""
        X = _check_features(self, X)
        return (1.0 + self._counts(X)) / (self.fold_sizes_ + 1.0)

    def predict_pvalues(
        self, X: np.ndarray, *, combine: str | None = None, u: np.ndarray | None = None
    ) -> np.ndarray:
        """Merged p-values for every class, shape ``(n_test, n_classes)``."""
        X = _check_features(self, X)
        combine, _, u = self._threshold_and_u(X.shape[0], combine, u)
        return merge_counts(self._counts(X), self.fold_sizes_, combine, u[:, None])

    def predict_set(
        self, X: np.ndarray, *, combine: str | None = None, u: np.ndarray | None = None
    ) -> np.ndarray:
        """Prediction sets as a boolean mask ``(n_test, n_classes)``: ``p(y) > alpha_eff``."""
        X = _check_features(self, X)
        combine, alpha_eff, u = self._threshold_and_u(X.shape[0], combine, u)
        return _above(merge_counts(self._counts(X), self.fold_sizes_, combine, u[:, None]), alpha_eff)


# ----------------------------------------------------------------------------------------------------------
# Baselines: split conformal and CV+ / jackknife+
# ----------------------------------------------------------------------------------------------------------


class _SplitConformal(BaseEstimator):
    """Shared hyperparameters and the train/calibration split of the split-conformal baselines."""

    _classify = False

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        confidence_level: float = 0.9,
        calibration_size: float = 0.5,
        random_state: Seed = None,
    ) -> None:
        self.estimator = estimator
        self.confidence_level = confidence_level
        self.calibration_size = calibration_size
        self.random_state = random_state

    def _split_fit(
        self, X: np.ndarray, y: np.ndarray, default: BaseEstimator, methods: tuple[str, ...]
    ) -> None:
        self.alpha_ = _alpha(self.confidence_level)
        check_scalar(self.calibration_size, "calibration_size", "real", min=0.0, max=1.0, inclusive="neither")
        n = X.shape[0]
        n_cal = int(round(self.calibration_size * n))
        rng = as_generator(self.random_state, "random_state")
        if not 1 <= n_cal <= n - 1:
            raise ValueError(
                f"calibration_size {self.calibration_size} leaves no training or calibration point of {n}"
            )
        estimator = _check_estimator(self.estimator, default, methods)
        perm = rng.permutation(n)
        self.calibration_indices_ = np.sort(perm[:n_cal])
        train = np.sort(perm[n_cal:])
        self.estimator_ = _fit_model(estimator, X[train], y[train], self._classify)
        self.calibration_scores_ = np.sort(
            self._train_scores(self.estimator_, X[self.calibration_indices_], y[self.calibration_indices_])
        )
        self.n_features_in_ = X.shape[1]


class SplitConformalRegressor(_SplitConformal):
    """Split conformal regression (Papadopoulos et al. 2002; Lei et al. 2018), absolute-residual score.

    ``calibration_size`` is the fraction of points held out for calibration (the authors use 0.5).  The
    interval is ``mu(x) -/+ q`` with q the ``ceil((1 - alpha)(m + 1))``-th smallest calibration residual
    (infinite when that exceeds m), i.e. ``{y : (1 + #{R_i >= |y - mu(x)|}) / (m + 1) > alpha}``.
    """

    @staticmethod
    def _train_scores(model: BaseEstimator, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.abs(y - model.predict(X))

    def fit(self, X: np.ndarray, y: np.ndarray) -> SplitConformalRegressor:
        """Fit on the training part and store the sorted calibration residuals."""
        X, y = _fit_data(self, X, y, y_numeric=True, min_samples=2)
        self._split_fit(X, y.astype(float), LinearRegression(), ("fit", "predict"))
        m = self.calibration_scores_.size
        rank = _ceil((1.0 - self.alpha_) * (m + 1))
        self.quantile_ = float(self.calibration_scores_[rank - 1]) if rank <= m else np.inf
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Point prediction of the fitted model."""
        X = _check_features(self, X)
        return self.estimator_.predict(X)

    def predict_interval(self, X: np.ndarray) -> np.ndarray:
        """Intervals ``[mu(x) - q, mu(x) + q]``, shape ``(n_test, 2)``."""
        mu = self.predict(X)
        return np.column_stack([mu - self.quantile_, mu + self.quantile_])

    def predict_set(self, X: np.ndarray) -> list[np.ndarray]:
        """The intervals as a list of ``(1, 2)`` arrays, like :meth:`CrossConformalRegressor.predict_set`."""
        return [row[None, :] for row in self.predict_interval(X)]


class SplitConformalClassifier(_SplitConformal):
    """Split conformal classification with score ``1 - p_hat(y | x)``: the set ``{y : p(y) > alpha}``."""

    _classify = True

    def _train_scores(self, model: BaseEstimator, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return _class_scores(model, X, self.classes_)[np.arange(y.size), np.searchsorted(self.classes_, y)]

    def fit(self, X: np.ndarray, y: np.ndarray) -> SplitConformalClassifier:
        """Fit on the training part and store the sorted calibration scores."""
        X, y = _fit_data(self, X, y, y_numeric=False, min_samples=2)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError(f"y must contain at least 2 classes, got {self.classes_.size}")
        self._split_fit(X, y, LogisticRegression(max_iter=1000), ("fit", "predict_proba"))
        return self

    def predict_pvalues(self, X: np.ndarray) -> np.ndarray:
        """Conformal p-values ``(1 + #{R_i >= s(x, y)}) / (m + 1)`` for every class."""
        X = _check_features(self, X)
        scores = _class_scores(self.estimator_, X, self.classes_)
        return (1.0 + _counts_at_least(self.calibration_scores_, scores)) / (
            self.calibration_scores_.size + 1.0
        )

    def predict_set(self, X: np.ndarray) -> np.ndarray:
        """Boolean mask ``(n_test, n_classes)`` of the classes with p-value above alpha."""
        return _above(self.predict_pvalues(X), self.alpha_)


class CVPlusRegressor(BaseEstimator):
    """CV+ prediction intervals (Barber, Candes, Ramdas & Tibshirani 2021); jackknife+ when ``n_folds = n``.

    With ``k(i)`` the fold of training point i and ``R_i`` its out-of-fold residual, the interval is
    ``[q^-_alpha{mu_{-k(i)}(x) - R_i}, q^+_alpha{mu_{-k(i)}(x) + R_i}]``: the ``floor(alpha (n + 1))``-th
    smallest and the ``ceil((1 - alpha)(n + 1))``-th smallest values (infinite when out of range).
    Coverage >= 1 - 2 alpha.  This is what MAPIE's ``CrossConformalRegressor(method="plus")`` computes.
    """

    def __init__(
        self,
        estimator: BaseEstimator | None = None,
        n_folds: int = 5,
        confidence_level: float = 0.9,
        random_state: Seed = None,
    ) -> None:
        self.estimator = estimator
        self.n_folds = n_folds
        self.confidence_level = confidence_level
        self.random_state = random_state

    def fit(self, X: np.ndarray, y: np.ndarray) -> CVPlusRegressor:
        """Fit one model per fold complement and store every point's fold and out-of-fold residual."""
        self.alpha_ = _alpha(self.confidence_level)
        check_scalar(self.n_folds, "n_folds", "int", min=2)
        X, y = _fit_data(self, X, y, y_numeric=True, min_samples=2)
        y = y.astype(float)
        n = X.shape[0]
        if self.n_folds > n:
            raise ValueError(
                f"n_folds must be at most the number of training points n = {n}, got {self.n_folds}"
            )
        estimator = _check_estimator(self.estimator, LinearRegression(), ("fit", "predict"))
        self.folds_ = _fold_indices(n, self.n_folds, as_generator(self.random_state, "random_state"))
        self.estimators_ = []
        self.fold_of_ = np.empty(n, dtype=int)
        self.residuals_ = np.empty(n)
        for k, fold in enumerate(self.folds_):
            train = np.ones(n, dtype=bool)
            train[fold] = False
            model = clone(estimator).fit(X[train], y[train])
            self.estimators_.append(model)
            self.fold_of_[fold] = k
            self.residuals_[fold] = np.abs(y[fold] - model.predict(X[fold]))
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Point prediction: the mean of the K fold models' predictions."""
        X = _check_features(self, X)
        return np.mean([m.predict(X) for m in self.estimators_], axis=0)

    def predict_interval(self, X: np.ndarray) -> np.ndarray:
        """CV+ intervals, shape ``(n_test, 2)``."""
        X = _check_features(self, X)
        mu = np.column_stack([m.predict(X) for m in self.estimators_])
        n = self.residuals_.size
        k_low = _floor(self.alpha_ * (n + 1))
        k_high = _ceil((1.0 - self.alpha_) * (n + 1))
        out = np.full((X.shape[0], 2), [-np.inf, np.inf])
        for rows in _chunks(X.shape[0], n):
            centre = mu[rows][:, self.fold_of_]
            if k_low >= 1:
                out[rows, 0] = np.partition(centre - self.residuals_, k_low - 1, axis=1)[:, k_low - 1]
            if k_high <= n:
                out[rows, 1] = np.partition(centre + self.residuals_, k_high - 1, axis=1)[:, k_high - 1]
        return out

    def predict_set(self, X: np.ndarray) -> list[np.ndarray]:
        """The intervals as a list of ``(1, 2)`` arrays, like :meth:`CrossConformalRegressor.predict_set`."""
        return [row[None, :] for row in self.predict_interval(X)]
