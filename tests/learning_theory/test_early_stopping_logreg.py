"""Unit tests of icml25.learning_theory.early_stopping_logreg."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import minimize
from scipy.special import expit, ndtr
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression

import icml25.learning_theory.early_stopping_logreg as esl
from icml25.learning_theory import (
    EarlyStoppedLogisticGD,
    GaussianLogisticModel,
    empirical_logistic_loss,
    max_margin_direction,
    ridge_logistic_path,
)


def _data(n: int = 40, d: int = 80, seed: int = 0):
    model = GaussianLogisticModel.power_law(d=d, n_signal=5, seed=seed)
    return model, *model.sample(n)


def _phi(x, scale=1.0):
    return np.exp(-0.5 * (x / scale) ** 2) / (scale * np.sqrt(2 * np.pi))


def _naive_gd(X, y, eta, steps):
    w = np.zeros(X.shape[1])
    out = []
    for t in range(1, max(steps) + 1):
        w = w + eta * X.T @ (y * expit(-y * (X @ w))) / X.shape[0]
        if t in steps:
            out.append(w.copy())
    return np.array(out)


# ----------------------------------------------------------------------------- gradient descent


@pytest.mark.parametrize("shape", [(30, 60), (60, 10)], ids=["dual n<d", "primal n>=d"])
def test_gd_path_equals_plain_gd_recursion(shape):
    rng = np.random.default_rng(1)
    X = rng.standard_normal(shape)
    y = np.where(rng.random(shape[0]) < 0.5, -1.0, 1.0)
    gd = EarlyStoppedLogisticGD(step_size=0.3, min_eta_t=0.3, max_eta_t=60.0, n_checkpoints=7, stop="none")
    gd.fit(X, y)
    np.testing.assert_array_equal(gd.eta_t_, 0.3 * gd.steps_)
    np.testing.assert_allclose(
        gd.path_, _naive_gd(X, y, 0.3, set(gd.steps_.tolist())), rtol=1e-10, atol=1e-12
    )
    assert gd.n_iter_ == gd.steps_[-1] == 200


def test_first_gd_step_is_scaled_label_correlation():
    _, X, y = _data()
    gd = EarlyStoppedLogisticGD(min_eta_t=1e-3, max_eta_t=1e-3, n_checkpoints=1, stop="none").fit(X, y)
    np.testing.assert_allclose(gd.path_[0], gd.step_size_ * X.T @ y / (2 * len(y)), rtol=1e-12)


def test_default_step_and_training_loss_decreases():
    _, X, y = _data()
    gd = EarlyStoppedLogisticGD(max_eta_t=1e3, n_checkpoints=25, stop="none").fit(X, y)
    lam_max = np.linalg.eigvalsh(X.T @ X / len(y)).max()
    assert gd.step_size_ == pytest.approx(2.0 / lam_max, rel=1e-10)
    assert np.all(np.diff(gd.train_loss_) < 0)  # eta <= 1/L: monotone descent
    np.testing.assert_allclose(gd.train_loss_, empirical_logistic_loss(gd.path_, X, y), rtol=1e-12)


def test_gd_direction_converges_to_max_margin():
    # u = (0.5, -0.5); the third point is not a support vector.
    X = np.array([[2.0, 0.0], [0.0, 2.0], [3.0, 0.5]])
    y = np.array([1, -1, 1])
    u = max_margin_direction(X, y)
    gd = EarlyStoppedLogisticGD(max_eta_t=1e5, n_checkpoints=6, stop="none").fit(X, y)
    cos = gd.path_ @ u / (np.linalg.norm(gd.path_, axis=1) * np.linalg.norm(u))
    assert np.all(np.diff(cos) > 0) and cos[-1] > 0.995
    norms = np.linalg.norm(gd.path_, axis=1)
    assert np.all(np.diff(norms) > 0)  # the norm diverges (like log t)


def test_gd_tracks_ridge_at_small_times():
    _, X, y = _data()
    gd = EarlyStoppedLogisticGD(step_size=0.01, min_eta_t=0.01, max_eta_t=0.05, n_checkpoints=3, stop="none")
    gd.fit(X, y)
    ridge = ridge_logistic_path(X, y, 1.0 / gd.eta_t_)
    np.testing.assert_allclose(
        np.linalg.norm(gd.path_, axis=1) / np.linalg.norm(ridge, axis=1), 1.0, atol=0.02
    )


def test_validation_stop_picks_smallest_held_out_loss_and_is_deterministic():
    _, X, y = _data(n=60)
    est = EarlyStoppedLogisticGD(max_eta_t=1e3, n_checkpoints=20, random_state=3).fit(X, y)
    assert est.stop_index_ == int(np.argmin(est.validation_loss_))
    np.testing.assert_array_equal(est.coef_, est.path_[est.stop_index_])
    again = clone(est).fit(X, y)
    np.testing.assert_array_equal(again.coef_, est.coef_)
    other = EarlyStoppedLogisticGD(max_eta_t=1e3, n_checkpoints=20, random_state=4).fit(X, y)
    assert not np.array_equal(other.path_, est.path_)  # a different split


def test_budget_and_none_stops():
    _, X, y = _data()
    est = EarlyStoppedLogisticGD(stop="budget", budget=50.0, n_checkpoints=10).fit(X, y)
    assert est.stop_index_ == len(est.eta_t_) - 1
    assert abs(est.eta_t_[-1] - 50.0) <= est.step_size_ / 2
    assert est.validation_loss_ is None
    full = EarlyStoppedLogisticGD(stop="none", max_eta_t=1e3, n_checkpoints=10).fit(X, y)
    assert full.eta_t_[-1] == pytest.approx(1e3, abs=full.step_size_)


def test_labels_any_two_values_and_predictions():
    _, X, y = _data()
    paths = []
    for labels in (y, (y > 0).astype(int), np.where(y > 0, "spam", "ham")):
        est = EarlyStoppedLogisticGD(max_eta_t=1e4, n_checkpoints=5, stop="none").fit(X, labels)
        paths.append(est.path_)
        proba = est.predict_proba(X)
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        pred = est.predict(X)
        assert set(pred) <= set(labels)
        np.testing.assert_array_equal(pred == est.classes_[1], est.decision_function(X) > 0)
    np.testing.assert_allclose(paths[0], paths[1])
    np.testing.assert_allclose(paths[0], paths[2])
    assert est.score(X, labels) == 1.0  # d > n: GD interpolates the training labels


def test_estimator_is_tagged_binary_only():
    assert EarlyStoppedLogisticGD().__sklearn_tags__().classifier_tags.multi_class is False


def test_stop_at_selects_checkpoint():
    model, X, y = _data()
    est = EarlyStoppedLogisticGD(max_eta_t=1e3, n_checkpoints=15, stop="none").fit(X, y)
    risks = model.logistic_risk(est.path_)
    est.stop_at(int(np.argmin(risks)))
    assert model.logistic_risk(est.coef_) == pytest.approx(risks.min())
    assert est.stop_at(-1).stop_index_ == len(est.path_) - 1


def test_step_above_smoothness_bound_is_capped_with_warning():
    _, X, y = _data()
    with pytest.warns(UserWarning, match="capped"):
        est = EarlyStoppedLogisticGD(step_size=1e3, max_eta_t=10, n_checkpoints=3, stop="none").fit(X, y)
    assert est.step_size_ == pytest.approx(4.0 / np.linalg.eigvalsh(X.T @ X / len(y)).max())


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"stop": "early"}, "stop must be one of"),
        ({"stop": "budget"}, "needs budget"),
        ({"stop": "budget", "budget": -1.0}, r"budget must be a real number in \(0, inf\)"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"n_checkpoints": 0}, "n_checkpoints"),
        ({"step_size": -0.1}, r"step_size must be a real number in \(0, inf\)"),
        ({"max_eta_t": np.inf}, r"max_eta_t must be a real number in \(0, inf\), got inf"),
        ({"min_eta_t": 10.0, "max_eta_t": 1.0}, "must end after min_eta_t"),
    ],
)
def test_bad_hyperparameters(params, match):
    _, X, y = _data()
    with pytest.raises(ValueError, match=match):
        EarlyStoppedLogisticGD(**params).fit(X, y)


def test_bad_data():
    _, X, y = _data()
    est = EarlyStoppedLogisticGD(max_eta_t=10, stop="none")
    with pytest.raises(ValueError, match="exactly two values"):
        est.fit(X, np.arange(len(y)) % 3)
    with pytest.raises(ValueError, match="exactly two values"):
        est.fit(X, np.ones(len(y)))
    with pytest.raises(ValueError, match="at least 2 samples"):
        est.fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="NaN"):
        est.fit(np.where(np.eye(*X.shape) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="all zeros"):
        est.fit(np.zeros_like(X), y)
    with pytest.raises(ValueError, match="empty train or validation"):
        EarlyStoppedLogisticGD(validation_fraction=0.1).fit(X[:3], np.array([1, -1, 1]))
    with pytest.raises(NotFittedError):
        est.predict(X)
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :3])
    with pytest.raises(ValueError, match="index must be an int"):
        est.stop_at(len(est.path_))


def test_empirical_loss_no_overflow_and_batch():
    _, X, y = _data()
    w = 1e6 * np.ones(X.shape[1])
    value = empirical_logistic_loss(w, X, y)
    assert np.isfinite(value) and value > 1e3
    batch = empirical_logistic_loss(np.vstack([np.zeros(X.shape[1]), w]), X, y)
    assert batch[0] == pytest.approx(np.log(2)) and batch[1] == pytest.approx(value)
    with pytest.raises(ValueError, match="shape"):
        empirical_logistic_loss(np.ones(3), X, y)


# ----------------------------------------------------------------------------- max margin and ridge


def test_max_margin_known_answer_and_non_support_vector():
    X = np.array([[2.0, 0.0], [0.0, 2.0], [3.0, 1.0]])
    np.testing.assert_allclose(max_margin_direction(X[:2], [1, -1]), [0.5, -0.5], atol=1e-10)
    np.testing.assert_allclose(max_margin_direction(X, [1, -1, 1]), [0.5, -0.5], atol=1e-10)


def test_max_margin_matches_primal_qp():
    _, X, y = _data(n=12, d=20, seed=2)
    u = max_margin_direction(X, y)
    cons = {"type": "ineq", "fun": lambda w: y * (X @ w) - 1.0, "jac": lambda w: y[:, None] * X}
    ref = minimize(
        lambda w: (0.5 * w @ w, w),
        u * 1.5,
        jac=True,
        constraints=[cons],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 1000},
    ).x
    np.testing.assert_allclose(u, ref, atol=1e-6 * np.linalg.norm(ref))
    assert (y * (X @ u)).min() == pytest.approx(1.0, abs=1e-8)


def test_max_margin_rejects_non_separable():
    with pytest.raises(ValueError, match="not linearly separable"):
        max_margin_direction([[1.0], [2.0]], [1, -1])
    with pytest.raises(ValueError, match="exactly two values"):
        max_margin_direction([[1.0], [2.0]], [1, 1])


def test_ridge_path_matches_sklearn_and_first_order_condition():
    _, X, y = _data(n=40, d=30)
    lambdas = np.array([0.01, 1.0, 0.1])
    path = ridge_logistic_path(X, y, lambdas)
    n = len(y)
    for lam, w in zip(lambdas, path, strict=True):
        grad = -X.T @ (y * expit(-y * (X @ w))) / n + lam * w
        assert np.linalg.norm(grad) < 1e-8
        ref = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=1e-12, max_iter=10_000).fit(X, y)
        np.testing.assert_allclose(w, ref.coef_[0], rtol=1e-5, atol=1e-7)


def test_ridge_path_in_the_large_lambda_limit():
    # lambda * w_lambda -> -grad Lhat(0) = X^T y / (2n) as lambda -> infinity.
    _, X, y = _data()
    lam = 1e5
    w = ridge_logistic_path(X, y, [lam])[0]
    np.testing.assert_allclose(lam * w, X.T @ y / (2 * len(y)), rtol=1e-4)


def test_ridge_path_bad_input():
    _, X, y = _data()
    with pytest.raises(ValueError, match="lambdas must have entries > 0"):
        ridge_logistic_path(X, y, [1.0, 0.0])
    with pytest.raises(ValueError, match="lambdas must have at least 1 entries"):
        ridge_logistic_path(X, y, [])


# ----------------------------------------------------------------------------- population model


def test_risks_of_zero_and_bayes_predictor():
    model = GaussianLogisticModel.power_law(d=30, n_signal=4)
    zero = np.zeros(30)
    assert model.logistic_risk(zero) == pytest.approx(np.log(2), abs=1e-12)
    assert model.zero_one_risk(zero) == pytest.approx(0.5, abs=1e-12)
    assert model.calibration_error(model.w_star) == pytest.approx(0.0, abs=1e-12)
    a = model.w_star @ (model.cov_diag * model.w_star)
    ref_ce0 = integrate.quad(lambda z: abs(expit(z) - 0.5) * _phi(z, np.sqrt(a)), -40, 40, points=[0.0])[0]
    assert model.calibration_error(zero) == pytest.approx(ref_ce0, abs=1e-9)
    bayes = model.bayes_risks()
    rng = np.random.default_rng(0)
    others = np.vstack([model.w_star + 0.3 * rng.standard_normal((5, 30)), 2 * model.w_star])
    assert np.all(model.logistic_risk(others) > bayes["logistic"])
    assert np.all(model.zero_one_risk(others[:5]) > bayes["zero_one"])
    # The zero-one risk is scale invariant, so 2 w* is Bayes optimal too.
    assert model.zero_one_risk(2 * model.w_star) == pytest.approx(bayes["zero_one"], abs=1e-10)


def _reference_risk(model: GaussianLogisticModel, w: np.ndarray, kind: str) -> float:
    """Nested adaptive quadrature (scipy.integrate.quad) over z* and then z given z*."""
    S = model.cov_diag
    a, b, c = model.w_star @ (S * model.w_star), model.w_star @ (S * w), w @ (S * w)
    slope, s = b / a, np.sqrt(c - b**2 / a)

    def given(zs: float) -> float:
        m, p = slope * zs, expit(zs)
        if kind == "zero_one":
            return p * ndtr(-m / s) + (1 - p) * ndtr(m / s)
        if kind == "logistic":
            f = lambda z: p * np.logaddexp(0, -z) + (1 - p) * np.logaddexp(0, z)  # noqa: E731
        else:
            f = lambda z: abs(expit(z) - p)  # noqa: E731
        return integrate.quad(lambda g: f(m + s * g) * _phi(g), -12, 12, limit=200, epsabs=1e-12)[0]

    r = 12 * np.sqrt(a)
    return integrate.quad(
        lambda zs: given(zs) * _phi(zs, np.sqrt(a)), -r, r, points=[0.0], limit=200, epsabs=1e-12
    )[0]


def test_risks_match_adaptive_quadrature():
    model = GaussianLogisticModel.power_law(d=10, n_signal=3)
    rng = np.random.default_rng(5)
    for w in (rng.standard_normal(10), 40 * rng.standard_normal(10)):
        assert model.logistic_risk(w) == pytest.approx(_reference_risk(model, w, "logistic"), rel=1e-6)
        assert model.zero_one_risk(w) == pytest.approx(_reference_risk(model, w, "zero_one"), rel=1e-6)
        assert model.calibration_error(w) == pytest.approx(_reference_risk(model, w, "calibration"), rel=1e-6)


def test_risks_match_monte_carlo():
    model = GaussianLogisticModel.power_law(d=20, n_signal=3, seed=11)
    w = np.random.default_rng(1).standard_normal(20)
    X, y = model.sample(400_000)
    z = X @ w
    for value, sample in (
        (model.logistic_risk(w), np.logaddexp(0, -y * z)),
        (model.zero_one_risk(w), (np.sign(z) != y).astype(float)),
        (model.calibration_error(w), np.abs(expit(z) - expit(X @ model.w_star))),
    ):
        assert abs(value - sample.mean()) < 4 * sample.std() / np.sqrt(len(sample))


def test_batch_single_and_zero_variance_directions():
    model = GaussianLogisticModel(np.array([1.0, 0.5, 0.0]), np.array([1.0, -1.0, 5.0]))
    W = np.array([[0.3, 0.2, 0.0], [0.3, 0.2, 100.0], [1.0, 1.0, 1.0]])
    batch = model.logistic_risk(W)
    assert batch.shape == (3,)
    assert batch[0] == pytest.approx(model.logistic_risk(W[0]))
    assert batch[0] == pytest.approx(batch[1])  # the third coordinate has zero variance
    flat = GaussianLogisticModel(np.array([1.0, 0.0]), np.array([0.0, 3.0]))  # z* = 0: pure noise labels
    assert flat.bayes_risks()["logistic"] == pytest.approx(np.log(2))
    assert flat.zero_one_risk(np.array([1.0, 0.0])) == pytest.approx(0.5)


def test_sampling_is_deterministic_and_well_specified():
    m1 = GaussianLogisticModel.power_law(d=5, n_signal=2, seed=7)
    m2 = GaussianLogisticModel.power_law(d=5, n_signal=2, seed=7)
    X1, y1 = m1.sample(20_000)
    X2, y2 = m2.sample(20_000)
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    assert set(np.unique(y1)) == {-1.0, 1.0}
    np.testing.assert_allclose(X1.var(axis=0), m1.cov_diag, rtol=0.05)
    # Well specified: the Bayes logistic risk equals the expected log loss of w*.
    assert np.logaddexp(0, -y1 * (X1 @ m1.w_star)).mean() == pytest.approx(
        m1.bayes_risks()["logistic"], abs=0.01
    )


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (([1.0, -1.0], [1.0, 1.0]), "variances >= 0"),
        (([1.0, 1.0], [1.0]), "w_star must have shape"),
        (([], []), "cov_diag must have at least 1 entries"),
    ],
)
def test_model_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        GaussianLogisticModel(*args)


def test_model_bad_calls():
    model = GaussianLogisticModel.power_law(d=4, n_signal=1)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        model.sample(0)
    with pytest.raises(ValueError, match="shape"):
        model.logistic_risk(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        model.zero_one_risk(np.array([np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match="n_signal"):
        GaussianLogisticModel.power_law(d=4, n_signal=5)
    with pytest.raises(ValueError, match="n_nodes"):
        GaussianLogisticModel([1.0], [1.0], n_nodes=2)
    with pytest.raises(TypeError, match="seed"):
        GaussianLogisticModel([1.0], [1.0], seed="zero")


def test_module_docstring_example_runs():
    result = doctest.testmod(esl, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------- argument checks (issue 19)


@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function"])
def test_unfitted_gd_raises_not_fitted_error(method):
    with pytest.raises(NotFittedError):
        getattr(EarlyStoppedLogisticGD(), method)(np.zeros((2, 3)))


def test_gd_messages_use_the_scikit_learn_forms():
    _, X, y = _data()
    with pytest.raises(ValueError, match="n_samples = 1"):
        EarlyStoppedLogisticGD().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="X and y must have the same length"):
        EarlyStoppedLogisticGD().fit(X, y[:-1])
    with pytest.raises(ValueError, match="requires y to be passed"):
        EarlyStoppedLogisticGD().fit(X, None)
    with pytest.raises(ValueError, match="continuous"):
        EarlyStoppedLogisticGD().fit(X, np.linspace(0.0, 1.0, len(y)))
    with pytest.raises(TypeError, match="random_state"):
        EarlyStoppedLogisticGD(random_state="abc").fit(X, y)
    gd = EarlyStoppedLogisticGD(max_eta_t=10.0, n_checkpoints=3, stop="none").fit(X, y)
    with pytest.raises(ValueError, match=f"X has 3 features, but EarlyStoppedLogisticGD is expecting {X.shape[1]}"):
        gd.predict(X[:, :3])
    with pytest.raises(ValueError, match="max_iter"):
        ridge_logistic_path(X, y, [1.0], max_iter=0)
