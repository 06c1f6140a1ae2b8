"""Valid calls of ``icml25.multilabel`` (TMvML, its baselines and the t-product toolkit)."""

from functools import cache

import numpy as np

from api_examples._core import Example
from icml25 import multilabel as ml


def _data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    views = [rng.normal(size=(n, 4)), rng.normal(size=(n, 3))]
    Y = (np.column_stack([views[0][:, 0], views[1][:, 0], views[0][:, 1] + views[1][:, 1]]) > 0).astype(int)
    return views, Y


def _fit_kwargs():
    Xs, Y = _data()
    return {"Xs": Xs, "Y": Y}


def _predict_kwargs():
    return {"Xs": [X[:4] for X in _data()[0]]}


def _tmvml(**kw):
    return ml.TMvML(**{"n_components": 3, "max_iter": 10, "random_state": 0, **kw})


def _fitted(make):
    """The constructor's example: scikit-learn estimators check their hyperparameters in ``fit``."""
    return lambda **kw: make(**kw).fit(*_data())


@cache
def _fitted_model(name):
    return {"TMvML": _tmvml, "ConcatRidge": lambda: ml.ConcatRidge(alphas=(0.1, 1.0)),
            "LowRankRidge": lambda: ml.LowRankRidge(max_iter=20), "MultiLabelKNN": lambda: ml.MultiLabelKNN(3)}[
        name]().fit(*_data())


def _tensor(seed=0, shape=(3, 2, 4)):
    return np.random.default_rng(seed).normal(size=shape)


def _scores():
    Y = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]])
    scores = np.array([[0.9, 0.2, 0.6], [0.1, 0.7, 0.3], [0.8, 0.4, 0.5]])
    return Y, scores



EXAMPLES = {
    "icml25.multilabel.TMvML": Example(
        _fitted(_tmvml), {"n_components": 3, "max_iter": 10, "random_state": 0},
        positive=("n_components", "max_iter", "tol", "delta", "rho", "rho_max", "n_reweight"),
        nonneg=("lam", "alpha")),
    "icml25.multilabel.TMvML.rotate": Example(
        lambda **kw: _fitted_model("TMvML").rotate(**kw), lambda: {"W": _tensor(shape=(2, 4, 3))}),
    "icml25.multilabel.TMvML.unrotate": Example(
        lambda **kw: _fitted_model("TMvML").unrotate(**kw),
        lambda: {"G": np.ascontiguousarray(_fitted_model("TMvML").rotate(_tensor(shape=(2, 4, 3))))}),
    "icml25.multilabel.TMvML.fit": Example(lambda **kw: _tmvml().fit(**kw), _fit_kwargs),
    "icml25.multilabel.TMvML.decision_function": Example(
        lambda **kw: _fitted_model("TMvML").decision_function(**kw), _predict_kwargs),
    "icml25.multilabel.ConcatRidge": Example(
        _fitted(ml.ConcatRidge), {"alphas": (0.1, 1.0)}),
    "icml25.multilabel.ConcatRidge.fit": Example(
        lambda **kw: ml.ConcatRidge(alphas=(0.1, 1.0)).fit(**kw), _fit_kwargs),
    "icml25.multilabel.ConcatRidge.decision_function": Example(
        lambda **kw: _fitted_model("ConcatRidge").decision_function(**kw), _predict_kwargs),
    "icml25.multilabel.ConcatRidge.predict": Example(
        lambda **kw: _fitted_model("ConcatRidge").predict(**kw), _predict_kwargs),
    "icml25.multilabel.ConcatRidge.score": Example(
        lambda **kw: _fitted_model("ConcatRidge").score(**kw),
        lambda: {"Xs": [X[:4] for X in _data()[0]], "Y": _data()[1][:4]}),
    "icml25.multilabel.LowRankRidge": Example(
        _fitted(ml.LowRankRidge), {"max_iter": 20}, positive=("max_iter", "tol"), nonneg=("lam", "alpha")),
    "icml25.multilabel.LowRankRidge.fit": Example(lambda **kw: ml.LowRankRidge(max_iter=20).fit(**kw), _fit_kwargs),
    "icml25.multilabel.LowRankRidge.decision_function": Example(
        lambda **kw: _fitted_model("LowRankRidge").decision_function(**kw), _predict_kwargs),
    "icml25.multilabel.MultiLabelKNN": Example(
        _fitted(ml.MultiLabelKNN), {"n_neighbors": 3}, positive=("n_neighbors",)),
    "icml25.multilabel.MultiLabelKNN.fit": Example(lambda **kw: ml.MultiLabelKNN(3).fit(**kw), _fit_kwargs),
    "icml25.multilabel.MultiLabelKNN.decision_function": Example(
        lambda **kw: _fitted_model("MultiLabelKNN").decision_function(**kw), _predict_kwargs),
    "icml25.multilabel.check_labels": Example(
        ml.check_labels, lambda: {"Y": _data()[1], "n_samples": 16}, positive=("n_samples",)),
    "icml25.multilabel.check_views": Example(
        ml.check_views, lambda: {"Xs": _data()[0], "n_views": 2}, positive=("n_views",)),
    "icml25.multilabel.fourier_singular_values": Example(ml.fourier_singular_values, lambda: {"A": _tensor()}),
    "icml25.multilabel.laplace_tensor_rank": Example(
        ml.laplace_tensor_rank, lambda: {"A": _tensor(), "delta": 0.5}, positive=("delta",)),
    "icml25.multilabel.tensor_nuclear_norm": Example(ml.tensor_nuclear_norm, lambda: {"A": _tensor()}),
    "icml25.multilabel.prox_tnn": Example(ml.prox_tnn, lambda: {"A": _tensor(), "tau": 0.5}, nonneg=("tau",)),
    "icml25.multilabel.prox_ltr": Example(
        ml.prox_ltr, lambda: {"A": _tensor(), "tau": 0.5, "delta": 0.5}, nonneg=("tau",),
        positive=("delta", "n_reweight")),
    "icml25.multilabel.t_product": Example(
        ml.t_product, lambda: {"A": _tensor(0, (3, 2, 4)), "B": _tensor(1, (2, 5, 4))}),
    "icml25.multilabel.t_transpose": Example(ml.t_transpose, lambda: {"A": _tensor()}),
    "icml25.multilabel.tsvd": Example(ml.tsvd, lambda: {"A": _tensor()}),
    "icml25.multilabel.one_error": Example(
        ml.one_error, lambda: dict(zip(("Y_true", "scores"), _scores(), strict=True)),
        paired=[("Y_true", "scores")]),
    "icml25.multilabel.mvml_report": Example(
        ml.mvml_report, lambda: {"Y_true": _scores()[0], "scores": _scores()[1],
                                 "Y_pred": (_scores()[1] > 0.5).astype(int)},
        paired=[("Y_true", "scores"), ("Y_true", "Y_pred")]),
    "icml25.multilabel.select_by_validation": Example(
        ml.select_by_validation,
        lambda: {"estimator": ml.MultiLabelKNN(3), "param": "n_neighbors", "values": (2, 3), **_fit_kwargs()},
        positive=("val_size",), skip={"param": "any hyperparameter name of the estimator (set_params checks it)"}),
}
