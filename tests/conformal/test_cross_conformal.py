"""Unit tests of icml25.conformal: merging rules, cross-conformal sets, split conformal and CV+."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LinearRegression, LogisticRegression

from icml25.conformal import (
    CrossConformalClassifier,
    CrossConformalRegressor,
    CVPlusRegressor,
    SplitConformalClassifier,
    SplitConformalRegressor,
    coverage_guarantee,
    covers,
    effective_alpha,
    grid_intervals,
    interval_length,
    merge_counts,
    merge_eu,
    merge_exchangeable,
    merge_mean,
    merge_uniform,
    vovk_pooled,
)

COMBINES = ("mod", "vovk", "e", "u", "eu")


def linear_data(n: int, p: int, seed: int, noise: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + noise * rng.normal(size=n)


def brute_pvalues(
    model: CrossConformalRegressor,
    X: np.ndarray,
    y: np.ndarray,
    x: np.ndarray,
    candidates: np.ndarray,
    combine: str,
    u: float,
) -> np.ndarray:
    """Merged p-values from their definition, by direct comparison (no sorting, no searchsorted); the
    out-of-fold residuals are recomputed from the training data and the fitted folds."""
    counts = []
    for est, fold in zip(model.estimators_, model.folds_, strict=True):
        residuals = np.abs(y[fold] - est.predict(X[fold]))
        scores = np.abs(candidates - est.predict(x[None, :])[0])
        counts.append((residuals[None, :] >= scores[:, None]).sum(axis=1))
    return merge_counts(np.stack(counts, axis=-1), model.fold_sizes_, combine, u)


def is_subset(inner: np.ndarray, outer: np.ndarray) -> bool:
    return all(np.any((outer[:, 0] <= a) & (b <= outer[:, 1])) for a, b in inner)


# ---------------------------------------------------------------------------------------------- merging rules


def test_merging_rules_on_a_known_vector():
    p = np.array([0.2, 0.6, 0.1])
    assert merge_mean(p) == pytest.approx(0.3)
    assert merge_exchangeable(p) == pytest.approx(0.2)  # running means 0.2, 0.4, 0.3
    assert merge_uniform(p, 0.5) == pytest.approx(0.3 / 1.5)
    assert merge_eu(p, 0.5) == pytest.approx(min(0.2 / 1.5, 0.2))
    assert merge_eu(np.array([0.9, 0.1, 0.1]), 0.0) == pytest.approx(min(0.45, 0.5, 1.1 / 3))
    assert vovk_pooled(np.array([3, 4]), 10) == pytest.approx(8 / 11)


def test_merging_rules_are_ordered_bit_for_bit_on_random_batches():
    rng = np.random.default_rng(0)
    p = rng.random((500, 7, 5))
    u = rng.random((500, 7))
    mean, exch = merge_mean(p), merge_exchangeable(p)
    assert mean.shape == (500, 7)
    assert np.all(exch <= mean)
    assert np.all(merge_uniform(p, u) <= mean)
    assert np.all(merge_eu(p, u) <= exch)
    assert np.any(exch < mean) and np.any(merge_eu(p, u) < exch)


def test_merge_counts_matches_the_fold_pvalues_and_vovk():
    counts = np.array([[2, 0, 3], [4, 4, 3]])
    sizes = np.array([4, 4, 3])
    p = (1.0 + counts) / (sizes + 1.0)
    np.testing.assert_allclose(merge_counts(counts, sizes, "mod"), p.mean(axis=1))
    np.testing.assert_allclose(merge_counts(counts, sizes, "vovk"), (1 + counts.sum(axis=1)) / 12)
    np.testing.assert_allclose(
        merge_counts(counts, sizes, "u", np.array([0.0, 1.0])), p.mean(axis=1) / [2.0, 1.0]
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: merge_mean(np.array([0.2, 1.5])), r"\[0, 1\]"),
        (lambda: merge_exchangeable(np.array([0.2, np.nan])), "NaN"),
        (lambda: merge_mean(np.zeros((3, 0))), "non-empty last axis"),
        (lambda: merge_uniform(np.array([0.2, 0.3]), 1.5), "uniform draws"),
        (lambda: merge_eu(np.full((4, 3), 0.5), np.full(3, 0.5)), "does not broadcast"),
        (lambda: vovk_pooled(np.array([-1, 2]), 10), "non-negative"),
        (lambda: vovk_pooled(np.array([6, 6]), 10), "at most n"),
        (lambda: vovk_pooled(np.array([1, 2]), 0), "n must be an integer >= 1"),
        (lambda: merge_counts(np.array([1, 2]), np.array([3, 3]), "median"), "combine must be one of"),
    ],
)
def test_merging_rejects_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --------------------------------------------------------------- cross-conformal regression: answers


def test_hand_computed_sets_with_a_constant_predictor_and_ties():
    # mu_k(x) = 0 for every fold, residuals |y_i| = 1,1,2,2,3,3,4,4 (ties); K = 2 equal folds of m = 4, so
    # p_mod(y) = (2 + #{i : |y_i| >= |y|}) / 10 whatever the folds are.
    X = np.zeros((8, 1))
    y = np.array([1, -1, 2, -2, 3, -3, 4, -4], dtype=float)
    est = DummyRegressor(strategy="constant", constant=0.0)
    model = CrossConformalRegressor(est, n_folds=2, confidence_level=0.6, random_state=0).fit(X, y)
    # alpha = 0.4: need #{|y_i| >= |y|} >= 3, i.e. |y| <= 3, closed at 3 because ties count.
    np.testing.assert_array_equal(model.predict_set(np.zeros((1, 1)))[0], [[-3.0, 3.0]])
    np.testing.assert_allclose(model.predict_pvalues(np.zeros((1, 1)), [3.0, 3.5]), [[0.6, 0.4]])
    vovk = model.predict_set(np.zeros((1, 1)), combine="vovk")[0]  # (1 + c) / 9 > 0.4 iff c >= 3
    np.testing.assert_array_equal(vovk, [[-3.0, 3.0]])
    grid = clone(model).set_params(method="grid", n_grid=17, grid_factor=2.0).fit(X, y)  # grid step 1
    np.testing.assert_array_equal(grid.predict_set(np.zeros((1, 1)))[0], [[-3.0, 3.0]])
    # alpha = 0.1 is below p(+-inf) = 2 / 10, so every y is in the set.
    wide = clone(model).set_params(confidence_level=0.9).fit(X, y)
    np.testing.assert_array_equal(wide.predict_set(np.zeros((1, 1)))[0], [[-np.inf, np.inf]])
    assert interval_length(wide.predict_set(np.zeros((1, 1))))[0] == np.inf


@pytest.mark.parametrize("combine", COMBINES)
def test_exact_sets_agree_with_the_definition_at_many_points(combine):
    X, y = linear_data(61, 8, seed=1)
    model = CrossConformalRegressor(LinearRegression(), n_folds=4, combine=combine, random_state=3)
    model.fit(X[:50], y[:50])  # unequal folds
    assert sorted(model.fold_sizes_) == [12, 12, 13, 13]
    X_test = X[50:]
    u = np.random.default_rng(7).random(X_test.shape[0])
    sets = model.predict_set(X_test, u=u)
    alpha_eff = effective_alpha(model.alpha_, 50, 4, combine)
    rng = np.random.default_rng(2)
    for i, s in enumerate(sets):
        assert np.all(s[:, 0] <= s[:, 1]) and np.all(s[1:, 0] > s[:-1, 1])  # sorted, disjoint
        probes = np.concatenate([rng.uniform(-15, 15, 60), s.ravel() + 1e-7, s.ravel() - 1e-7])
        inside = covers([s] * probes.size, probes)
        expected = brute_pvalues(model, X[:50], y[:50], X_test[i], probes, combine, u[i]) > alpha_eff
        np.testing.assert_array_equal(inside, expected)


def test_sets_can_be_disjoint_unions_or_empty():
    # Far from the data the fold models disagree by much more than their residuals: each fold then
    # contributes its own short interval, and Vovk's pooled p-value stays below alpha = 0.3 everywhere.
    X, y = linear_data(100, 3, seed=0, noise=0.01)
    x_far = np.full((1, 3), 1e4)
    model = CrossConformalRegressor(LinearRegression(), n_folds=5, random_state=0).fit(X, y)
    mod = model.predict_set(x_far)[0]
    assert mod.shape == (5, 2)
    probes = np.concatenate([mod.mean(axis=1), mod[:, 1] + 1e-6, mod[:, 0] - 1e-6])
    expected = brute_pvalues(model, X, y, x_far[0], probes, "mod", 0.5) > 0.1
    np.testing.assert_array_equal(covers([mod] * probes.size, probes), expected)
    assert expected[:5].all() and not expected[5:].any()
    empty = clone(model).set_params(confidence_level=0.7, combine="vovk").fit(X, y).predict_set(x_far)[0]
    assert empty.shape == (0, 2)
    assert interval_length([empty])[0] == 0.0 and not covers([empty], [0.0])[0]


@pytest.mark.parametrize("combine", COMBINES)
def test_grid_method_agrees_with_exact_sets_up_to_grid_resolution(combine):
    X, y = linear_data(230, 5, seed=4)
    kwargs = dict(n_folds=5, combine=combine, random_state=1)
    exact = CrossConformalRegressor(LinearRegression(), **kwargs).fit(X[:200], y[:200])
    grid = CrossConformalRegressor(LinearRegression(), method="grid", grid_factor=1.5, **kwargs).fit(
        X[:200], y[:200]
    )
    exact_sets, grid_sets = exact.predict_set(X[200:]), grid.predict_set(X[200:])
    points = grid.grid_
    step = points[1] - points[0]
    for e, g in zip(exact_sets, grid_sets, strict=True):
        np.testing.assert_array_equal(covers([e] * points.size, points), covers([g] * points.size, points))
        assert abs(interval_length([e])[0] - interval_length([g])[0]) <= 2 * step * len(e)


def test_grid_intervals_turn_runs_of_grid_points_into_intervals():
    grid = np.arange(6.0)
    mask = np.array([[0, 1, 1, 0, 1, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=bool)
    sets = grid_intervals(mask, grid)
    np.testing.assert_array_equal(sets[0], [[1, 2], [4, 5]])
    assert sets[1].shape == (0, 2)
    np.testing.assert_array_equal(sets[2], [[0, 5]])
    with pytest.raises(ValueError, match="mask must have shape"):
        grid_intervals(mask, np.arange(5.0))


def test_nesting_of_the_paper_variants_holds_pointwise_for_a_fixed_u():
    X, y = linear_data(180, 20, seed=5)
    model = CrossConformalRegressor(LinearRegression(), n_folds=5, random_state=2).fit(X[:100], y[:100])
    X_test = X[100:]
    sets = {c: model.predict_set(X_test, combine=c) for c in COMBINES}
    for i in range(X_test.shape[0]):
        assert is_subset(sets["e"][i], sets["mod"][i])
        assert is_subset(sets["u"][i], sets["mod"][i])
        assert is_subset(sets["eu"][i], sets["e"][i])
    lengths = {c: interval_length(s).mean() for c, s in sets.items()}
    assert lengths["eu"] <= lengths["e"] < lengths["mod"] and lengths["u"] < lengths["mod"]


def test_vovk_target_raises_the_threshold_and_matches_vovks_guarantee():
    n, K, alpha = 100, 5, 0.1
    alpha_prime = alpha + (1 - alpha) * (K - 1) / (n + K)
    assert effective_alpha(alpha, n, K, "e", "vovk") == pytest.approx(alpha_prime)
    assert effective_alpha(alpha, n, K, "vovk", "vovk") == alpha == effective_alpha(alpha, n, K, "u", "mod")
    vovk_bound = 1 - 2 * alpha - 2 * (1 - alpha) * (K - 1) / (n + K)
    assert coverage_guarantee(alpha, n, K, "eu", "vovk") == pytest.approx(vovk_bound)
    assert coverage_guarantee(alpha, n, K, "vovk") == pytest.approx(vovk_bound)
    assert coverage_guarantee(alpha, n, K, "mod", "mod") == pytest.approx(0.8)
    X, y = linear_data(130, 10, seed=6)
    mod = CrossConformalRegressor(LinearRegression(), random_state=0).fit(X[:n], y[:n])
    vov = clone(mod).set_params(target="vovk").fit(X[:n], y[:n])
    assert vov.coverage_guarantee_ == pytest.approx(vovk_bound)
    for a, b in zip(vov.predict_set(X[n:]), mod.predict_set(X[n:]), strict=True):
        assert is_subset(a, b)


def test_same_seed_same_sets_and_u_controls_the_randomised_variants():
    X, y = linear_data(120, 6, seed=8)
    first = CrossConformalRegressor(LinearRegression(), combine="u", random_state=11).fit(X[:100], y[:100])
    second = clone(first).fit(X[:100], y[:100])
    for a, b in zip(first.predict_set(X[100:]), second.predict_set(X[100:]), strict=True):
        np.testing.assert_array_equal(a, b)
    ones = first.predict_set(X[100:], u=np.ones(20))  # U = 1 turns u-mod-cross into mod-cross
    mods = first.predict_set(X[100:], combine="mod")
    for a, b in zip(ones, mods, strict=True):
        np.testing.assert_array_equal(a, b)
    other = clone(first).set_params(random_state=12).fit(X[:100], y[:100])
    assert not np.array_equal(
        interval_length(first.predict_set(X[100:])), interval_length(other.predict_set(X[100:]))
    )


def test_fold_pvalues_use_each_folds_own_size():
    X, y = linear_data(23, 2, seed=9)
    model = CrossConformalRegressor(n_folds=5, random_state=0).fit(X, y)
    assert model.fold_sizes_.sum() == 23 and set(model.fold_sizes_) == {4, 5}
    p = model.fold_pvalues(X[:3], np.linspace(-5, 5, 11))
    assert p.shape == (3, 11, 5)
    scaled = p * (model.fold_sizes_ + 1)
    np.testing.assert_allclose(scaled, np.round(scaled))
    np.testing.assert_allclose(model.predict_pvalues(X[:3], np.linspace(-5, 5, 11)), p.mean(axis=2))
    assert np.allclose(model.predict(X[:3]), np.mean([m.predict(X[:3]) for m in model.estimators_], axis=0))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(n_folds=1), ValueError, "n_folds must be an integer >= 2"),
        (dict(n_folds=2.5), TypeError, "n_folds must be an integer"),
        (dict(n_folds=31), ValueError, "at most the number of training points"),
        (dict(confidence_level=0.5), ValueError, r"confidence_level must be a real number in \(0.5, 1\)"),
        (dict(confidence_level=1.0), ValueError, "confidence_level"),
        (dict(confidence_level="0.9"), TypeError, "confidence_level"),
        (dict(combine="max"), ValueError, "combine must be one of"),
        (dict(target="full"), ValueError, "target must be one of"),
        (dict(method="bisect"), ValueError, "method must be one of"),
        (dict(n_grid=1), ValueError, "n_grid must be an integer >= 2"),
        (dict(grid_factor=0.0), ValueError, r"grid_factor must be a real number in \(0, inf\)"),
    ],
)
def test_regressor_rejects_bad_parameters(kwargs, error, match):
    X, y = linear_data(30, 2, seed=0)
    with pytest.raises(error, match=match):
        CrossConformalRegressor(**kwargs).fit(X, y)


def test_regressor_rejects_bad_data_and_calls():
    X, y = linear_data(30, 2, seed=0)
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        CrossConformalRegressor().fit(bad_X, y)
    with pytest.raises(ValueError, match="NaN"):
        CrossConformalRegressor().fit(X, np.where(np.arange(30) == 4, np.nan, y))
    with pytest.raises(TypeError, match="must implement fit, predict"):
        CrossConformalRegressor(estimator=object()).fit(X, y)
    model = CrossConformalRegressor(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict_set(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"u must have shape \(4\)"):
        model.predict_set(X[:4], combine="u", u=np.full(3, 0.5))
    with pytest.raises(ValueError, match="one uniform draw in"):
        model.predict_set(X[:2], combine="u", u=np.array([0.5, 2.0]))
    with pytest.raises(ValueError, match="y_candidates must be finite"):
        model.predict_pvalues(X[:4], np.zeros((3, 5)))
    with pytest.raises(ValueError, match="combine must be one of"):
        model.predict_set(X[:2], combine="avg")
    with pytest.raises(ValueError, match="got 2 sets for 3 labels"):
        covers(model.predict_set(X[:2]), np.zeros(3))


# ------------------------------------------------------------------------------- classification


def three_blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, size=n)
    centres = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
    return centres[y] + rng.normal(size=(n, 2)), y


@pytest.mark.parametrize("combine", COMBINES)
def test_classifier_pvalues_match_the_definition(combine):
    X, y = three_blobs(90, seed=0)
    model = CrossConformalClassifier(LogisticRegression(), n_folds=3, combine=combine, random_state=0).fit(
        X, y
    )
    X_test = three_blobs(7, seed=1)[0]
    u = np.linspace(0.05, 0.95, 7)
    pvals = model.predict_pvalues(X_test, u=u)
    for k_test in range(7):
        for c in range(3):
            counts = []
            for est, fold in zip(model.estimators_, model.folds_, strict=True):
                cal = 1.0 - est.predict_proba(X[fold])[np.arange(fold.size), y[fold]]
                counts.append(np.sum(cal >= 1.0 - est.predict_proba(X_test[k_test : k_test + 1])[0, c]))
            expected = merge_counts(np.array(counts), model.fold_sizes_, combine, u[k_test])
            assert pvals[k_test, c] == pytest.approx(expected)
    alpha_eff = effective_alpha(model.alpha_, 90, 3, combine)
    np.testing.assert_array_equal(model.predict_set(X_test, u=u), pvals > alpha_eff)


def test_classifier_nesting_and_interface():
    X, y = three_blobs(300, seed=2)
    model = CrossConformalClassifier(n_folds=5, random_state=0).fit(X[:200], y[:200])
    sets = {c: model.predict_set(X[200:], combine=c) for c in COMBINES}
    assert sets["mod"].shape == (100, 3) and sets["mod"].dtype == bool
    assert (
        np.all(sets["e"] <= sets["mod"])
        and np.all(sets["u"] <= sets["mod"])
        and np.all(sets["eu"] <= sets["e"])
    )
    assert sets["u"].sum() < sets["mod"].sum()
    assert model.fold_pvalues(X[200:]).shape == (100, 3, 5)
    np.testing.assert_allclose(model.predict_proba(X[200:]).sum(axis=1), 1.0)
    assert np.mean(model.predict(X[200:]) == y[200:]) > 0.6


def test_classifier_handles_a_class_missing_from_a_folds_training_part():
    X, y = three_blobs(40, seed=3)
    y[:] = 0
    y[:20] = 1
    y[20] = 2  # class 2 has one point: the fold holding it trains without class 2
    model = CrossConformalClassifier(n_folds=4, random_state=0).fit(X, y)
    fold = next(k for k, f in enumerate(model.folds_) if 20 in f)
    assert 2 not in model.estimators_[fold].classes_
    np.testing.assert_array_equal(model.classes_, [0, 1, 2])
    # That point's out-of-fold score is 1 (probability 0 for a class its model never saw).
    assert model.fold_scores_[fold][-1] == 1.0
    assert model.fold_pvalues(X[:5]).shape == (5, 3, 4)


def test_classifier_rejects_bad_input():
    X, y = three_blobs(30, seed=0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        CrossConformalClassifier().fit(X, np.zeros(30))
    with pytest.raises(TypeError, match="predict_proba"):
        CrossConformalClassifier(estimator=LinearRegression()).fit(X, y)
    with pytest.raises(ValueError, match="confidence_level"):
        CrossConformalClassifier(confidence_level=0.3).fit(X, y)


# ------------------------------------------------------------------------------- baselines


def test_split_conformal_interval_is_the_pvalue_set():
    X, y = linear_data(121, 4, seed=3)
    split = SplitConformalRegressor(LinearRegression(), calibration_size=0.5, random_state=0).fit(
        X[:101], y[:101]
    )
    m = split.calibration_scores_.size
    assert m == 50
    # The 46th smallest of 50 residuals: ceil(0.9 * 51) = 46.
    assert split.quantile_ == split.calibration_scores_[45]
    intervals = split.predict_interval(X[101:])
    mu = split.predict(X[101:])
    for (low, high), centre in zip(intervals, mu, strict=True):
        for t in (low + 1e-9, high - 1e-9, low - 1e-9, high + 1e-9, centre):
            p = (1 + np.sum(split.calibration_scores_ >= abs(t - centre))) / (m + 1)
            assert (low <= t <= high) == (p > 0.1)
    assert [s.shape for s in split.predict_set(X[101:104])] == [(1, 2)] * 3
    tiny = SplitConformalRegressor(confidence_level=0.99, calibration_size=0.2, random_state=0).fit(
        X[:50], y[:50]
    )
    assert np.all(np.isinf(tiny.predict_interval(X[:2])))  # ceil(0.99 * 11) > 10 residuals
    with pytest.raises(ValueError, match="calibration_size"):
        SplitConformalRegressor(calibration_size=1.0).fit(X, y)
    with pytest.raises(ValueError, match="leaves no training or calibration point"):
        SplitConformalRegressor(calibration_size=0.001).fit(X[:20], y[:20])


def test_split_conformal_classifier_pvalues():
    X, y = three_blobs(200, seed=4)
    split = SplitConformalClassifier(random_state=0).fit(X[:150], y[:150])
    pvals = split.predict_pvalues(X[150:])
    proba = split.estimator_.predict_proba(X[150:])
    m = split.calibration_scores_.size
    expected = (1 + (split.calibration_scores_[None, None, :] >= 1 - proba[..., None]).sum(-1)) / (m + 1)
    np.testing.assert_allclose(pvals, expected)
    np.testing.assert_array_equal(split.predict_set(X[150:]), pvals > 0.1)


def test_cv_plus_and_jackknife_plus_match_their_definition():
    X, y = linear_data(45, 3, seed=5)
    X_test = X[40:]
    for n_folds in (4, 40):  # CV+ and jackknife+
        model = CVPlusRegressor(LinearRegression(), n_folds=n_folds, random_state=0).fit(X[:40], y[:40])
        intervals = model.predict_interval(X_test)
        for i, x in enumerate(X_test):
            centres = np.array(
                [model.estimators_[model.fold_of_[j]].predict(x[None, :])[0] for j in range(40)]
            )
            low = np.sort(centres - model.residuals_)[int(np.floor(0.1 * 41)) - 1]
            high = np.sort(centres + model.residuals_)[int(np.ceil(0.9 * 41)) - 1]
            np.testing.assert_allclose(intervals[i], [low, high])
    constant = CVPlusRegressor(DummyRegressor(strategy="constant", constant=0.0), n_folds=3).fit(X[:9], y[:9])
    # n = 9, alpha = 0.1: the 1st and 9th order statistics, i.e. -+ the largest |y_i|.
    np.testing.assert_allclose(
        constant.predict_interval(X_test[:1])[0], [-np.abs(y[:9]).max(), np.abs(y[:9]).max()]
    )
    wide = CVPlusRegressor(n_folds=2, confidence_level=0.95).fit(X[:10], y[:10])
    assert np.all(np.isinf(wide.predict_interval(X_test)))  # floor(0.05 * 11) = 0
    with pytest.raises(ValueError, match="at most the number of training points"):
        CVPlusRegressor(n_folds=11).fit(X[:10], y[:10])


def test_empirical_coverage_of_all_methods_is_near_nominal():
    rng = np.random.default_rng(0)
    hits = {name: [] for name in ("mod", "e", "u", "eu", "vovk", "split", "cv+")}
    for rep in range(40):
        X, y = linear_data(150, 5, seed=100 + rep)
        cc = CrossConformalRegressor(LinearRegression(), random_state=int(rng.integers(1 << 30))).fit(
            X[:100], y[:100]
        )
        for c in COMBINES:
            hits[c].extend(covers(cc.predict_set(X[100:], combine=c), y[100:]))
        split = SplitConformalRegressor(random_state=rep).fit(X[:100], y[:100])
        hits["split"].extend(covers(split.predict_set(X[100:]), y[100:]))
        cvp = CVPlusRegressor(random_state=rep).fit(X[:100], y[:100])
        hits["cv+"].extend(covers(cvp.predict_set(X[100:]), y[100:]))
    coverage = {k: float(np.mean(v)) for k, v in hits.items()}
    assert all(0.8 <= c <= 0.97 for c in coverage.values()), coverage


# ---------------------------------------------------------------- argument checks (issue 19)


@pytest.mark.parametrize(
    ("estimator", "method"),
    [
        (CrossConformalClassifier(), "predict"),
        (CrossConformalClassifier(), "predict_set"),
        (CrossConformalRegressor(), "predict_set"),
        (SplitConformalRegressor(), "predict"),
        (SplitConformalRegressor(), "predict_interval"),
        (SplitConformalClassifier(), "predict_set"),
        (CVPlusRegressor(), "predict_interval"),
    ],
)
def test_unfitted_estimators_raise_not_fitted_error(estimator, method):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        getattr(estimator, method)(np.zeros((2, 3)))


def test_cross_conformal_classifier_fits_a_fold_whose_training_part_has_one_class():
    # The fold holding the only point of class 1 leaves a training part of class 0 alone, on which
    # LogisticRegression refuses to fit; that fold's model now gives class 0 probability 1.
    X = np.arange(10, dtype=float)[:, None]
    y = np.array([0] * 9 + [1])
    model = CrossConformalClassifier(n_folds=5, random_state=0).fit(X, y)
    proba = model.predict_proba(X[:3])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert model.predict_set(X[:3]).shape == (3, 2)


def test_split_conformal_classifier_fits_when_the_training_part_has_one_class():
    X = np.arange(10, dtype=float)[:, None]
    y = np.array([0] * 9 + [1])
    model = SplitConformalClassifier(calibration_size=0.2, random_state=3).fit(X, y)
    assert model.predict_pvalues(X[:2]).shape == (2, 2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"alpha": 1.5}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"n": 0}, "n must"),
        ({"n_folds": 1}, "n_folds"),
        ({"target": "nope"}, "target"),
    ],
)
@pytest.mark.parametrize("function", [coverage_guarantee, effective_alpha])
def test_guarantee_functions_validate_their_arguments(function, kwargs, match):
    args = {"alpha": 0.1, "n": 100, "n_folds": 5, "combine": "vovk", **kwargs}
    with pytest.raises(ValueError, match=match):
        function(**args)


def test_fit_messages_name_the_argument():
    X, y = linear_data(20, 3, seed=0)
    with pytest.raises(ValueError, match="n_samples = 1"):
        CrossConformalRegressor().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="X and y must have the same length"):
        SplitConformalRegressor().fit(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        CVPlusRegressor().fit(X, np.where(np.arange(20) == 0, np.nan, y))
    model = CrossConformalRegressor(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="X has 2 features, but CrossConformalRegressor is expecting 3"):
        model.predict(X[:, :2])
    with pytest.raises(TypeError, match="random_state"):
        SplitConformalRegressor(random_state="abc").fit(X, y)
