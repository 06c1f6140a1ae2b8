"""Valid calls of ``icml25.conformal`` (cross-conformal prediction and its baselines)."""

from functools import cache

import numpy as np

from api_examples._core import Example
from icml25 import conformal as cc

_EST = {"estimator": "any scikit-learn estimator with fit/predict (checked for the methods it needs)"}


def _reg_data(n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, X.sum(axis=1) + 0.1 * rng.normal(size=n)


def _clf_data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _fitted(cls, data):
    """The constructor's example: scikit-learn estimators check their hyperparameters in ``fit``."""
    return lambda **kw: cls(**kw).fit(*data())


@cache
def _ccr():
    return cc.CrossConformalRegressor(n_folds=3, random_state=0).fit(*_reg_data())


@cache
def _ccc():
    return cc.CrossConformalClassifier(n_folds=3, random_state=0).fit(*_clf_data())


@cache
def _scr():
    return cc.SplitConformalRegressor(random_state=0).fit(*_reg_data())


@cache
def _scc():
    return cc.SplitConformalClassifier(random_state=0).fit(*_clf_data())


@cache
def _cvp():
    return cc.CVPlusRegressor(n_folds=3, random_state=0).fit(*_reg_data())


def _xr():
    return {"X": _reg_data()[0][:4]}


def _xc():
    return {"X": _clf_data()[0][:4]}


def _fit_reg():
    X, y = _reg_data()
    return {"X": X, "y": y}


def _fit_clf():
    X, y = _clf_data()
    return {"X": X, "y": y}


def _sets():
    return {"sets": [np.array([[0.0, 1.0]]), np.array([[-1.0, 0.5], [1.0, 2.0]])], "y": np.array([0.5, 3.0])}


# The merging rules act on the last axis; leading axes are batch axes, so an extra one ("ndim") is valid.
def _pvalues():
    return {"p": np.array([[0.2, 0.4, 0.6], [0.1, 0.5, 0.9]])}

EXAMPLES = {
    "icml25.conformal.CrossConformalRegressor": Example(
        _fitted(cc.CrossConformalRegressor, _reg_data), {"n_folds": 3, "random_state": 0}, skip=_EST,
        positive=("n_folds", "n_grid", "grid_factor", "confidence_level")),
    "icml25.conformal.CrossConformalRegressor.fit": Example(
        lambda **kw: cc.CrossConformalRegressor(n_folds=3, random_state=0).fit(**kw), _fit_reg, paired=[("X", "y")]),
    "icml25.conformal.CrossConformalRegressor.predict": Example(lambda **kw: _ccr().predict(**kw), _xr),
    "icml25.conformal.CrossConformalRegressor.fold_pvalues": Example(
        lambda **kw: _ccr().fold_pvalues(**kw), lambda: {**_xr(), "y_candidates": np.array([0.0, 1.0])}),
    "icml25.conformal.CrossConformalRegressor.predict_pvalues": Example(
        lambda **kw: _ccr().predict_pvalues(**kw),
        lambda: {**_xr(), "y_candidates": np.array([0.0, 1.0]), "combine": "u", "u": np.full(4, 0.5)},
        paired=[("X", "u")]),
    "icml25.conformal.CrossConformalRegressor.predict_set": Example(
        lambda **kw: _ccr().predict_set(**kw), lambda: {**_xr(), "combine": "eu", "u": np.full(4, 0.5)},
        paired=[("X", "u")]),
    "icml25.conformal.CrossConformalClassifier": Example(
        _fitted(cc.CrossConformalClassifier, _clf_data), {"n_folds": 3, "random_state": 0}, skip=_EST,
        positive=("n_folds", "confidence_level")),
    "icml25.conformal.CrossConformalClassifier.fit": Example(
        lambda **kw: cc.CrossConformalClassifier(n_folds=3, random_state=0).fit(**kw), _fit_clf,
        paired=[("X", "y")]),
    "icml25.conformal.CrossConformalClassifier.predict_proba": Example(lambda **kw: _ccc().predict_proba(**kw), _xc),
    "icml25.conformal.CrossConformalClassifier.predict": Example(lambda **kw: _ccc().predict(**kw), _xc),
    "icml25.conformal.CrossConformalClassifier.fold_pvalues": Example(lambda **kw: _ccc().fold_pvalues(**kw), _xc),
    "icml25.conformal.CrossConformalClassifier.predict_pvalues": Example(
        lambda **kw: _ccc().predict_pvalues(**kw), lambda: {**_xc(), "combine": "u", "u": np.full(4, 0.5)},
        paired=[("X", "u")]),
    "icml25.conformal.CrossConformalClassifier.predict_set": Example(
        lambda **kw: _ccc().predict_set(**kw), lambda: {**_xc(), "combine": "eu", "u": np.full(4, 0.5)},
        paired=[("X", "u")]),
    "icml25.conformal.SplitConformalRegressor": Example(
        _fitted(cc.SplitConformalRegressor, _reg_data), {"random_state": 0}, skip=_EST,
        positive=("confidence_level", "calibration_size")),
    "icml25.conformal.SplitConformalRegressor.fit": Example(
        lambda **kw: cc.SplitConformalRegressor(random_state=0).fit(**kw), _fit_reg, paired=[("X", "y")]),
    "icml25.conformal.SplitConformalRegressor.predict": Example(lambda **kw: _scr().predict(**kw), _xr),
    "icml25.conformal.SplitConformalRegressor.predict_interval": Example(
        lambda **kw: _scr().predict_interval(**kw), _xr),
    "icml25.conformal.SplitConformalRegressor.predict_set": Example(lambda **kw: _scr().predict_set(**kw), _xr),
    "icml25.conformal.SplitConformalClassifier": Example(
        _fitted(cc.SplitConformalClassifier, _clf_data), {"random_state": 0}, skip=_EST,
        positive=("confidence_level", "calibration_size")),
    "icml25.conformal.SplitConformalClassifier.fit": Example(
        lambda **kw: cc.SplitConformalClassifier(random_state=0).fit(**kw), _fit_clf, paired=[("X", "y")]),
    "icml25.conformal.SplitConformalClassifier.predict_pvalues": Example(
        lambda **kw: _scc().predict_pvalues(**kw), _xc),
    "icml25.conformal.SplitConformalClassifier.predict_set": Example(lambda **kw: _scc().predict_set(**kw), _xc),
    "icml25.conformal.CVPlusRegressor": Example(
        _fitted(cc.CVPlusRegressor, _reg_data), {"n_folds": 3, "random_state": 0}, skip=_EST,
        positive=("n_folds", "confidence_level")),
    "icml25.conformal.CVPlusRegressor.fit": Example(
        lambda **kw: cc.CVPlusRegressor(n_folds=3, random_state=0).fit(**kw), _fit_reg, paired=[("X", "y")]),
    "icml25.conformal.CVPlusRegressor.predict": Example(lambda **kw: _cvp().predict(**kw), _xr),
    "icml25.conformal.CVPlusRegressor.predict_interval": Example(lambda **kw: _cvp().predict_interval(**kw), _xr),
    "icml25.conformal.CVPlusRegressor.predict_set": Example(lambda **kw: _cvp().predict_set(**kw), _xr),
    "icml25.conformal.coverage_guarantee": Example(
        cc.coverage_guarantee, {"alpha": 0.1, "n": 100, "n_folds": 5, "combine": "vovk"},
        positive=("alpha", "n", "n_folds")),
    "icml25.conformal.effective_alpha": Example(
        cc.effective_alpha, {"alpha": 0.1, "n": 100, "n_folds": 5, "target": "vovk"},
        positive=("alpha", "n", "n_folds")),
    "icml25.conformal.covers": Example(cc.covers, _sets, paired=[("sets", "y")]),
    "icml25.conformal.interval_length": Example(cc.interval_length, lambda: {"sets": _sets()["sets"]},
                                                allow={"sets": "empty"}),
    "icml25.conformal.grid_intervals": Example(
        cc.grid_intervals, lambda: {"mask": np.array([[True, True, False], [False, True, True]]),
                                    "grid": np.array([0.0, 0.5, 1.0])}),
    "icml25.conformal.merge_counts": Example(
        cc.merge_counts, lambda: {"counts": np.array([[1.0, 2.0], [0.0, 3.0]]), "sizes": np.array([4, 4]),
                                  "combine": "u", "u": 0.5}, allow={"counts": "ndim"}),
    "icml25.conformal.merge_mean": Example(cc.merge_mean, _pvalues, allow={"p": "ndim"}),
    "icml25.conformal.merge_exchangeable": Example(cc.merge_exchangeable, _pvalues, allow={"p": "ndim"}),
    "icml25.conformal.merge_uniform": Example(cc.merge_uniform, lambda: {**_pvalues(), "u": np.array([0.3, 0.7])},
                                              allow={"p": "ndim"}),
    "icml25.conformal.merge_eu": Example(cc.merge_eu, lambda: {**_pvalues(), "u": np.array([0.3, 0.7])},
                                         allow={"p": "ndim"}),
    "icml25.conformal.vovk_pooled": Example(
        cc.vovk_pooled, lambda: {"counts": np.array([[1.0, 2.0], [0.0, 3.0]]), "n": 8}, positive=("n",),
        allow={"counts": "ndim"}),
}
