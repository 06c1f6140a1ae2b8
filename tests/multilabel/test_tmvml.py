"""Unit tests of icml25.multilabel.tmvml (t-SVD, LTR/TNN and their proxes, TMvML, baselines) and
icml25.data.mvml (SynthMVML, DigitsMVML)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge, RidgeCV
from threadpoolctl import threadpool_limits

from icml25.data.mvml import (
    DIGITS_MVML_LABELS,
    digits_mvml_labels,
    digits_mvml_views,
    load_digits_mvml,
    make_synthetic_mvml,
    split_mvml,
    synthetic_mvml_model,
)
from icml25.multilabel import (
    ConcatRidge,
    LowRankRidge,
    MultiLabelKNN,
    TMvML,
    fourier_singular_values,
    laplace_tensor_rank,
    mvml_report,
    one_error,
    prox_ltr,
    prox_tnn,
    select_by_validation,
    t_product,
    t_transpose,
    tensor_nuclear_norm,
    tsvd,
)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


@pytest.fixture(scope="module")
def synth():
    Xs, Y = make_synthetic_mvml(n_samples=300, seed=0)
    return split_mvml(Xs, Y, test_size=0.3, seed=0)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _naive_t_product(A, B):
    """Circular convolution of frontal slices: C_k = sum_j A_j B_{(k - j) mod n3}."""
    n3 = A.shape[2]
    return np.stack([sum(A[:, :, j] @ B[:, :, (k - j) % n3] for j in range(n3)) for k in range(n3)], axis=2)


def _identity_tensor(n, n3):
    eye = np.zeros((n, n, n3))
    eye[:, :, 0] = np.eye(n)
    return eye


# ---------------------------------------------------------------------------------------------
# t-SVD algebra
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n3", [1, 4, 5])
def test_t_product_is_circular_convolution_of_slices(n3):
    A, B = _rng().standard_normal((3, 4, n3)), _rng(1).standard_normal((4, 2, n3))
    np.testing.assert_allclose(t_product(A, B), _naive_t_product(A, B), atol=1e-12)


def test_t_transpose_reverses_products():
    A, B = _rng().standard_normal((3, 4, 6)), _rng(1).standard_normal((4, 2, 6))
    np.testing.assert_allclose(t_transpose(t_product(A, B)), t_product(t_transpose(B), t_transpose(A)), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 6, 8), (5, 3, 7), (3, 3, 1)])
def test_tsvd_reconstructs_with_orthogonal_factors(shape):
    A = _rng().standard_normal(shape)
    U, S, V = tsvd(A)
    np.testing.assert_allclose(t_product(t_product(U, S), t_transpose(V)), A, atol=1e-10)
    np.testing.assert_allclose(t_product(t_transpose(U), U), _identity_tensor(shape[0], shape[2]), atol=1e-10)
    np.testing.assert_allclose(t_product(t_transpose(V), V), _identity_tensor(shape[1], shape[2]), atol=1e-10)
    off_diagonal = S.copy()
    r = min(shape[:2])
    off_diagonal[np.arange(r), np.arange(r), :] = 0
    assert np.abs(off_diagonal).max() < 1e-10  # S is f-diagonal


def test_tnn_of_repeated_slices_is_the_matrix_nuclear_norm():
    M = _rng().standard_normal((4, 5))
    A = np.repeat(M[:, :, None], 6, axis=2)
    assert tensor_nuclear_norm(A) == pytest.approx(np.linalg.svd(M, compute_uv=False).sum())
    assert tensor_nuclear_norm(M[:, :, None]) == pytest.approx(np.linalg.norm(M, "nuc"))


def test_ltr_counts_ranks_for_small_delta_and_is_below_tnn_over_delta():
    low_rank = t_product(_rng().standard_normal((6, 2, 8)), _rng(1).standard_normal((2, 7, 8)))
    s = fourier_singular_values(low_rank)
    assert s.shape == (8, 6)
    # Tubal rank 2: every Fourier slice has exactly two non-zero singular values.
    assert laplace_tensor_rank(low_rank, 1e-8) == pytest.approx(2.0, abs=1e-4)
    for delta in (0.1, 1.0, 10.0):
        assert laplace_tensor_rank(low_rank, delta) <= tensor_nuclear_norm(low_rank) / delta + 1e-12
    assert laplace_tensor_rank(np.zeros((3, 3, 4)), 1.0) == 0.0
    assert laplace_tensor_rank(low_rank, 1e-3) <= 2.0 + 1e-9  # at most the tubal rank


def test_prox_tnn_soft_thresholds_fourier_singular_values():
    A = _rng().standard_normal((5, 4, 6))
    tau = 1.5
    out = prox_tnn(A, tau)
    assert np.isrealobj(out) and out.shape == A.shape
    np.testing.assert_allclose(np.sort(fourier_singular_values(out), axis=1),
                               np.sort(np.maximum(fourier_singular_values(A) - tau, 0), axis=1), atol=1e-10)
    M = A[:, :, :1]
    U, s, Vt = np.linalg.svd(M[:, :, 0], full_matrices=False)
    np.testing.assert_allclose(prox_tnn(M, tau)[:, :, 0], (U * np.maximum(s - tau, 0)) @ Vt, atol=1e-12)


def test_prox_ltr_weighted_shrinkage_on_a_matrix():
    M = _rng().standard_normal((5, 4))
    U, s, Vt = np.linalg.svd(M, full_matrices=False)
    tau, delta = 0.5, 1.0
    expected = (U * np.maximum(s - tau * np.exp(-s / delta) / delta, 0)) @ Vt
    np.testing.assert_allclose(prox_ltr(M[:, :, None], tau, delta)[:, :, 0], expected, atol=1e-12)
    shrunk = np.maximum(s - tau * np.exp(-s / delta) / delta, 0)
    twice = (U * np.maximum(s - tau * np.exp(-shrunk / delta) / delta, 0)) @ Vt
    np.testing.assert_allclose(prox_ltr(M[:, :, None], tau, delta, n_reweight=2)[:, :, 0], twice, atol=1e-12)


def test_prox_ltr_keeps_large_and_removes_small_singular_values():
    signal = t_product(_rng().standard_normal((6, 2, 16)), _rng(1).standard_normal((2, 8, 16)))
    noisy = signal + 0.05 * _rng(2).standard_normal(signal.shape)
    np.testing.assert_allclose(prox_ltr(noisy, 0.0, 1.0), noisy, atol=1e-12)
    delta = 0.1 * fourier_singular_values(noisy).max()
    out = prox_ltr(noisy, 5 * delta, delta)
    s = fourier_singular_values(out)
    assert (s[:, 2:] < 1e-9).all()  # noise singular values are removed
    big = fourier_singular_values(noisy)[:, :2]
    assert np.abs(s[:, :2] - big).max() < 0.05 * big.max()  # the signal ones barely move
    # t-SVT removing the same noise shrinks the signal by the full threshold.
    tnn_out = prox_tnn(noisy, float(fourier_singular_values(noisy)[:, 2:].max()))
    assert np.linalg.norm(out - signal) < np.linalg.norm(tnn_out - signal)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: prox_ltr(np.ones((3, 3)), 1.0, 1.0), "3-d"),
        (lambda: prox_ltr(np.ones((3, 3, 2)), -1.0, 1.0), "tau"),
        (lambda: prox_ltr(np.ones((3, 3, 2)), 1.0, 0.0), "delta"),
        (lambda: prox_ltr(np.ones((3, 3, 2)), 1.0, 1.0, n_reweight=0), "n_reweight"),
        (lambda: prox_tnn(np.full((2, 2, 2), np.nan), 1.0), "finite"),
        (lambda: laplace_tensor_rank(np.ones((2, 2, 2)), -1.0), "delta"),
        (lambda: t_product(np.ones((2, 3, 4)), np.ones((2, 3, 4))), "t_product"),
    ],
)
def test_tensor_functions_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_tensor_functions_reject_complex_input():
    with pytest.raises(TypeError, match="real"):
        tsvd(np.ones((2, 2, 2), dtype=complex))


# ---------------------------------------------------------------------------------------------
# TMvML
# ---------------------------------------------------------------------------------------------


def test_tmvml_fit_predict_shapes_and_labels(synth):
    model = TMvML(lam=0.1).fit(synth.Xs_train, synth.Y_train)
    scores = model.decision_function(synth.Xs_test)
    labels = model.predict(synth.Xs_test)
    assert scores.shape == labels.shape == synth.Y_test.shape
    assert set(np.unique(labels)) <= {0, 1} and (labels.sum(axis=1) >= 1).all()
    assert len(model.coef_) == 3 and model.coef_[0].shape == (20, 10)  # m = min(64, 20, 40, 60)
    assert model.tensor_.shape == (3, 10, 20)  # view_label: V x c x m
    assert 0.75 < model.score(synth.Xs_test, synth.Y_test) <= 1.0


def test_lam_zero_is_per_view_ridge():
    rng = _rng()
    Xs = [rng.standard_normal((80, 5)) for _ in range(2)]
    Y = (rng.random((80, 3)) < 0.4).astype(int)
    alpha = 0.05
    model = TMvML(lam=0.0, alpha=alpha, view_map="none").fit(Xs, Y)
    scores = np.zeros(Y.shape)
    for v, X in enumerate(Xs):
        Z = (X - X.mean(0)) / X.std(0)
        ridge = Ridge(alpha=alpha * len(Y)).fit(Z, Y)  # (1/n)||.||^2 + alpha||W||^2 <=> Ridge(alpha * n)
        np.testing.assert_allclose(model.coef_[v], ridge.coef_.T, atol=1e-10)
        scores += ridge.predict(Z) / 2
    np.testing.assert_allclose(model.decision_function(Xs), scores, atol=1e-10)
    assert model.n_iter_ == 0 and model.history_["residual"] == []


def test_consensus_loss_with_lam_zero_is_ridge_on_averaged_views():
    rng = _rng(1)
    Xs = [rng.standard_normal((90, 4)), rng.standard_normal((90, 4))]
    Y = (rng.random((90, 2)) < 0.5).astype(int)
    model = TMvML(lam=0.0, alpha=0.02, view_map="none", loss="consensus").fit(Xs, Y)
    Z = np.concatenate([(X - X.mean(0)) / X.std(0) for X in Xs], axis=1) / 2
    ridge = Ridge(alpha=0.02 * 90).fit(Z, Y)
    np.testing.assert_allclose(model.decision_function(Xs), ridge.predict(Z), atol=1e-10)


@pytest.mark.parametrize("surrogate", ["ltr", "tnn"])
@pytest.mark.parametrize("rotation", ["view_label", "feature_view", "none"])
def test_admm_converges_and_lowers_the_objective(synth, surrogate, rotation):
    model = TMvML(lam=1.0, rank_surrogate=surrogate, rotation=rotation).fit(synth.Xs_train, synth.Y_train)
    h = model.history_
    assert min(h["residual"]) < 1e-4 and model.n_iter_ <= 200
    assert len(h["objective"]) == model.n_iter_ + 1 == len(h["residual"]) + 1
    assert h["objective"][-1] <= h["objective"][0]
    W = np.stack(model.coef_)
    assert np.allclose(model.unrotate(model.rotate(W)), W)
    assert np.abs(model.rotate(W) - model.tensor_).max() < 1e-4 * np.abs(W).max()


def test_stronger_penalty_lowers_the_laplace_rank(synth):
    weak = TMvML(lam=0.0).fit(synth.Xs_train, synth.Y_train)
    strong = TMvML(lam=3.0, delta=weak.delta_).fit(synth.Xs_train, synth.Y_train)
    rank = lambda m: laplace_tensor_rank(m.rotate(np.stack(m.coef_)), weak.delta_)  # noqa: E731
    assert rank(strong) < 0.8 * rank(weak)


def test_rotations_have_the_documented_shapes(synth):
    shapes = {"view_label": (3, 10, 21), "feature_view": (21, 3, 10), "none": (21, 10, 3)}
    for rotation, shape in shapes.items():
        model = TMvML(lam=0.1, rotation=rotation, intercept="column", max_iter=3)
        with pytest.warns(ConvergenceWarning, match="did not converge"):
            model.fit(synth.Xs_train, synth.Y_train)
        assert model.tensor_.shape == shape  # the constant column makes m + 1 = 21 features
        assert np.all(model.intercept_ == 0)


def test_rbf_anchor_map_is_deterministic_under_a_seed(synth):
    a = TMvML(lam=0.1, view_map="rbf_anchors", n_components=16, random_state=3).fit(synth.Xs_train, synth.Y_train)
    b = TMvML(lam=0.1, view_map="rbf_anchors", n_components=16, random_state=3).fit(synth.Xs_train, synth.Y_train)
    np.testing.assert_array_equal(a.decision_function(synth.Xs_test), b.decision_function(synth.Xs_test))
    assert a.coef_[0].shape == (16, 10)


def test_single_view_warns_and_constant_label_is_kept():
    rng = _rng(2)
    X = rng.standard_normal((60, 4))
    Y = np.column_stack([(X[:, 0] > 0).astype(int), np.zeros(60, dtype=int)])
    with pytest.warns(UserWarning) as record:
        model = TMvML(lam=0.1).fit([X], Y)
    messages = " ".join(str(w.message) for w in record)
    assert "single view" in messages and "constant" in messages
    assert np.allclose(model.decision_function([X])[:, 1], 0.0)


@pytest.mark.parametrize(
    "Xs, Y, match",
    [
        ([], np.ones((10, 2)), "at least 1 entries"),
        ([np.ones((10, 3)), np.ones((9, 3))], np.ones((10, 2)), "same"),
        ([np.ones(10)], np.ones((10, 2)), "2-d"),
        ([np.full((10, 3), np.nan)], np.ones((10, 2)), "NaN"),
        ([np.ones((10, 3))], np.ones(10), "reshape"),
        ([np.ones((10, 3))], np.full((10, 2), 2), "0/1"),
        ([np.ones((10, 3))], np.ones((9, 2)), "rows"),
    ],
)
def test_tmvml_rejects_bad_data(Xs, Y, match):
    with pytest.raises(ValueError, match=match):
        TMvML().fit(Xs, Y)


def test_tmvml_rejects_views_that_are_not_a_list():
    with pytest.raises(TypeError, match="list"):
        TMvML().fit(np.ones((10, 3)), np.ones((10, 2)))
    with pytest.raises(TypeError, match="lam must be a real number"):
        TMvML(lam="1").fit([np.ones((10, 3))], np.ones((10, 2)))


@pytest.mark.parametrize(
    "params, match",
    [
        ({"lam": -1.0}, "lam"),
        ({"alpha": -0.1}, "alpha"),
        ({"delta": 0.0}, "delta"),
        ({"max_iter": 0}, "max_iter"),
        ({"rotation": "diagonal"}, "rotation"),
        ({"rank_surrogate": "log"}, "rank_surrogate"),
        ({"view_map": "cca"}, "view_map"),
        ({"loss": "hinge"}, "loss"),
        ({"rho_growth": 0.5}, "rho_growth"),
        ({"view_map": "none"}, "equal feature sizes"),
    ],
)
def test_tmvml_rejects_bad_parameters(synth, params, match):
    with pytest.raises(ValueError, match=match):
        TMvML(**params).fit(synth.Xs_train, synth.Y_train)


def test_predict_checks_views_against_fit(synth):
    model = TMvML(lam=0.0).fit(synth.Xs_train, synth.Y_train)
    with pytest.raises(ValueError, match="must have 3 views"):
        model.predict(synth.Xs_test[:2])
    with pytest.raises(ValueError, match="feature sizes"):
        model.predict([synth.Xs_test[0][:, :5], *synth.Xs_test[1:]])
    with pytest.raises(ValueError, match="not fitted"):
        TMvML().predict(synth.Xs_test)


def test_tmvml_is_deterministic(synth):
    a = TMvML(lam=1.0).fit(synth.Xs_train, synth.Y_train).decision_function(synth.Xs_test)
    b = TMvML(lam=1.0).fit(synth.Xs_train, synth.Y_train).decision_function(synth.Xs_test)
    np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------------------------
# Baselines, metrics, validation
# ---------------------------------------------------------------------------------------------


def test_concat_ridge_matches_ridgecv_on_standardised_views(synth):
    model = ConcatRidge().fit(synth.Xs_train, synth.Y_train)
    Z = lambda Xs: np.concatenate([(X - A.mean(0)) / A.std(0) for X, A in zip(Xs, synth.Xs_train, strict=True)], 1)  # noqa: E731
    reference = RidgeCV(alphas=model.alphas).fit(Z(synth.Xs_train), synth.Y_train)
    np.testing.assert_allclose(model.decision_function(synth.Xs_test), reference.predict(Z(synth.Xs_test)),
                               atol=1e-8)
    assert model.alpha_ == reference.alpha_


def test_knn_scores_are_neighbour_label_frequencies(synth):
    one = MultiLabelKNN(n_neighbors=1).fit(synth.Xs_train, synth.Y_train)
    np.testing.assert_array_equal(one.decision_function(synth.Xs_train), synth.Y_train)
    ten = MultiLabelKNN().fit(synth.Xs_train, synth.Y_train).decision_function(synth.Xs_test)
    assert np.allclose(ten * 10, np.round(ten * 10)) and ten.min() >= 0 and ten.max() <= 1
    with pytest.raises(ValueError, match="n_neighbors"):
        MultiLabelKNN(n_neighbors=0).fit(synth.Xs_train, synth.Y_train)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_low_rank_ridge_limits(synth):
    n = len(synth.Y_train)
    free = LowRankRidge(lam=0.0, alpha=0.01, max_iter=5000, tol=1e-10).fit(synth.Xs_train, synth.Y_train)
    Z = np.concatenate([(X - X.mean(0)) / X.std(0) for X in synth.Xs_train], axis=1)
    np.testing.assert_allclose(free.coef_, Ridge(alpha=0.01 * n).fit(Z, synth.Y_train).coef_.T, atol=1e-5)
    ranks = [np.linalg.matrix_rank(LowRankRidge(lam=lam).fit(synth.Xs_train, synth.Y_train).coef_, tol=1e-8)
             for lam in (1e-3, 0.3, 10.0)]
    assert ranks[0] > ranks[1] > ranks[2] == 0
    with pytest.raises(ValueError, match="lam"):
        LowRankRidge(lam=-1).fit(synth.Xs_train, synth.Y_train)


def test_mvml_report_known_values():
    Y = np.array([[1, 0, 0], [0, 1, 1]])
    scores = np.array([[0.9, 0.5, 0.1], [0.8, 0.7, 0.2]])
    pred = np.array([[1, 0, 0], [1, 1, 0]])
    r = mvml_report(Y, scores, pred)
    assert r["hamming_loss"] == pytest.approx(2 / 6)
    assert r["one_error"] == one_error(Y, scores) == pytest.approx(0.5)  # row 2's top label is wrong
    # coverage_error: row 1 needs depth 1, row 2 depth 3 -> mean 2; (2 - 1) / 3
    assert r["coverage"] == pytest.approx(1 / 3)
    assert r["average_precision"] == pytest.approx((1.0 + (1 / 2 + 2 / 3) / 2) / 2)
    assert r["ranking_loss"] == pytest.approx((0 + 2 / 2) / 2)
    with pytest.raises(ValueError, match="one shape"):
        mvml_report(Y, scores[:, :2], pred)


def test_select_by_validation_avoids_a_collapsing_penalty(synth):
    model, scores = select_by_validation(TMvML(rank_surrogate="tnn"), "lam", (0.01, 100.0), synth.Xs_train,
                                         synth.Y_train, seed=0)
    assert model.lam == 0.01 and scores[0.01] > scores[100.0]
    assert hasattr(model, "coef_") and model.coef_[0].shape[0] == 20
    with pytest.raises(ValueError, match="values"):
        select_by_validation(TMvML(), "lam", (), synth.Xs_train, synth.Y_train)


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def test_synthetic_mvml_shapes_frequencies_and_determinism():
    Xs, Y = make_synthetic_mvml(n_samples=4000, seed=1)
    assert [X.shape for X in Xs] == [(4000, 20), (4000, 40), (4000, 60)] and Y.shape == (4000, 10)
    frequencies = Y.mean(axis=0)
    assert (frequencies > 0.07).all() and (frequencies < 0.43).all()
    Xs2, Y2 = make_synthetic_mvml(n_samples=4000, seed=1)
    np.testing.assert_array_equal(Y, Y2)
    np.testing.assert_array_equal(Xs[2], Xs2[2])
    model = synthetic_mvml_model(seed=1)
    _, Y3, oracle = model.sample(50_000, seed=5)
    target = np.random.default_rng(1)
    target.standard_normal((5, 20)), target.standard_normal((5, 40)), target.standard_normal((5, 60))
    target.standard_normal((5, 10))
    np.testing.assert_allclose(Y3.mean(axis=0), target.uniform(0.1, 0.4, 10), atol=0.01)
    assert oracle.shape == Y3.shape


def test_split_mvml_keeps_rows_together():
    Xs = [np.arange(20)[:, None] * 1.0, np.arange(20)[:, None] * 2.0]
    Y = (np.arange(20)[:, None] % 2).astype(int)
    s = split_mvml(Xs, Y, test_size=0.25, seed=0)
    assert len(s.Y_test) == 5 and len(s.Y_train) == 15
    np.testing.assert_array_equal(s.Xs_test[1], 2 * s.Xs_test[0])
    np.testing.assert_array_equal(s.Y_test[:, 0], s.Xs_test[0][:, 0].astype(int) % 2)
    with pytest.raises(ValueError, match="rows"):
        split_mvml([np.ones((5, 1))], np.ones((4, 1)))


def test_digits_views_and_labels():
    images = np.zeros((1, 8, 8))
    images[0, 2:6, 3] = 16.0  # a vertical bar
    pixels, profiles, gradients, dct = digits_mvml_views(images, n_views=4)
    assert (pixels.shape, profiles.shape, gradients.shape, dct.shape) == ((1, 64), (1, 16), (1, 36), (1, 20))
    np.testing.assert_array_equal(profiles[0, :8], images[0].sum(axis=1))
    assert dct[0, 0] == pytest.approx(images.sum() / 8)  # orthonormal DC coefficient
    # A vertical bar: horizontal gradients along its sides (bin 0), vertical ones at its ends (bin 2, pi/2),
    # no diagonal ones; np.gradient gives 8 per edge pixel (central differences of a 16-high step).
    bins = gradients.reshape(9, 4).sum(axis=0)
    np.testing.assert_allclose(bins, [2 * 4 * 8, 0, 2 * 2 * 8, 0])
    labels = dict(zip(DIGITS_MVML_LABELS, digits_mvml_labels(np.array([7]))[0], strict=True))
    assert labels == {"even": 0, "prime": 1, "at_least_5": 1, "closed_loop": 0, "vertical_stroke": 1, "curved": 0}
    with pytest.raises(ValueError, match="0..9"):
        digits_mvml_labels(np.array([10]))
    with pytest.raises(ValueError, match="n_views"):
        digits_mvml_views(images, n_views=2)


def test_load_digits_mvml_flips_training_labels_only():
    clean = load_digits_mvml(label_noise=0.0, seed=0)
    noisy = load_digits_mvml(label_noise=0.05, seed=0)
    assert [X.shape[1] for X in clean.Xs_train] == [64, 16, 36] and len(clean.Y_train) == 1258
    np.testing.assert_array_equal(clean.Y_test, noisy.Y_test)
    assert 0.03 < np.mean(clean.Y_train != noisy.Y_train) < 0.07
    with pytest.raises(ValueError, match="label_noise"):
        load_digits_mvml(label_noise=1.0)


def test_docs_example_in_module_docstring_runs():
    import doctest

    import icml25.multilabel.tmvml as module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted >= 5


# ---------------------------------------------------------------- argument checks (issue 19)


def _tiny_views(n: int = 12):
    rng = np.random.default_rng(0)
    views = [rng.normal(size=(n, 3)), rng.normal(size=(n, 2))]
    Y = (np.column_stack([views[0][:, 0], views[1][:, 0]]) > 0).astype(int)
    return views, Y


@pytest.mark.parametrize("estimator", [TMvML(), ConcatRidge(), LowRankRidge(), MultiLabelKNN()])
def test_unfitted_multilabel_estimators_raise_not_fitted_error(estimator):
    from sklearn.exceptions import NotFittedError

    views, _ = _tiny_views()
    with pytest.raises(NotFittedError):
        estimator.decision_function(views)
    with pytest.raises(NotFittedError):
        estimator.predict(views)


@pytest.mark.parametrize(
    ("estimator", "error", "match"),
    [
        (MultiLabelKNN(3, threshold="0.5"), TypeError, "threshold"),
        (ConcatRidge(ensure_label=None), TypeError, "ensure_label"),
        (TMvML(random_state="abc", max_iter=2), TypeError, "random_state"),
    ],
)
def test_multilabel_hyperparameters_are_checked_in_fit(estimator, error, match):
    with pytest.raises(error, match=match):
        estimator.fit(*_tiny_views())


def test_score_and_view_helpers_name_their_arguments():
    views, Y = _tiny_views()
    model = MultiLabelKNN(3).fit(views, Y)
    with pytest.raises(TypeError, match="Y must be"):
        model.score(views, None)
    with pytest.raises(ValueError, match="Y must have one row per sample"):
        model.score(views, Y[:-1])
    from icml25.multilabel import check_labels, check_views

    with pytest.raises(ValueError, match="n_samples"):
        check_labels(Y, 0)
    with pytest.raises(TypeError, match="n_views"):
        check_views(views, "2")
    with pytest.raises(ValueError, match="W must"):
        TMvML().rotate(np.zeros((2, 3)))
