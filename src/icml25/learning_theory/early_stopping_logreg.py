"""Benefits of Early Stopping in GD for Overparameterized Logistic Regression (Wu et al., ICML 2025).

Gradient descent (GD) on the empirical logistic loss with more features than samples never
converges: its norm grows like ``log t`` and its direction tends to the max-l2-margin
separator.  The paper shows that GD *stopped early* is calibrated and consistent, that the
limit (and any interpolator) is not, and that the early-stopped GD path tracks the
l2-regularised (ridge) logistic path with ``lambda ~ 1 / (eta t)``.  This module provides

* :class:`EarlyStoppedLogisticGD`, a scikit-learn classifier that runs GD from zero, records
  the path at log-spaced optimisation lengths ``eta * t`` and stops at the checkpoint with
  the smallest held-out logistic loss (or at a given budget);
* :class:`GaussianLogisticModel`, the paper's well-specified model (Assumption 1):
  ``x ~ N(0, diag(cov_diag))``, ``P(y = 1 | x) = sigmoid(<x, w*>)``, with the population
  logistic risk, zero-one risk and calibration error computed *exactly* by quadrature;
* :func:`max_margin_direction` (hard-margin SVM, the limit direction of GD) and
  :func:`ridge_logistic_path` (the explicit l2-regularised path).

Example
-------
>>> from icml25.learning_theory import EarlyStoppedLogisticGD, GaussianLogisticModel
>>> model = GaussianLogisticModel.power_law(d=200, n_signal=10, seed=0)
>>> X, y = model.sample(100)
>>> gd = EarlyStoppedLogisticGD(max_eta_t=1e3, n_checkpoints=30, stop="none").fit(X, y)
>>> risks = model.logistic_risk(gd.path_)            # exact population risk along the path
>>> oracle = gd.stop_at(int(risks.argmin()))         # oracle early stopping
>>> bool(model.logistic_risk(oracle.coef_) < model.logistic_risk(gd.path_[-1]))
True
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
from scipy.linalg import eigvalsh
from scipy.optimize import minimize
from scipy.special import expit, ndtr
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.model_selection import train_test_split
from sklearn.utils.validation import check_array, column_or_1d, validate_data

from icml25.utils import validation
from icml25.utils.random import Seed, as_generator

__all__ = [
    "EarlyStoppedLogisticGD",
    "GaussianLogisticModel",
    "empirical_logistic_loss",
    "max_margin_direction",
    "ridge_logistic_path",
]

_STOPS = ("validation", "budget", "none")


# ----------------------------------------------------------------------------- input checks


def _as_pm_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes (sorted) and labels mapped to -1 / +1 (the larger class is +1)."""
    classes = np.unique(y)
    if classes.size != 2:
        kind = "continuous" if y.dtype.kind == "f" and np.any(y != np.round(y)) else "multiclass"
        raise ValueError(
            f"y must take exactly two values (binary task). Only binary classification is supported; "
            f"got {classes.size} values ({kind} target): {classes[:5]}"
        )
    return classes, np.where(y == classes[1], 1.0, -1.0)


def _check_data(X, y, estimator: BaseEstimator | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X`` (2-d, finite floats; recorded on ``estimator`` when given) and ``y`` (1-d, two classes)."""
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None")
    if estimator is not None:
        X = validation.named_errors("X", validate_data, estimator, X, reset=True, dtype=np.float64)
    else:
        X = validation.named_errors("X", check_array, X, dtype=np.float64, input_name="X")
    y = validation.named_errors("y", check_array, y, ensure_2d=False, dtype=None, input_name="y")
    y = validation.named_errors("y", column_or_1d, y, warn=True)
    validation.check_consistent_length(X, y, names=("X", "y"))
    if X.shape[0] < 2:
        raise ValueError(f"X must have at least 2 samples, got n_samples = {X.shape[0]}")
    classes, y_pm = _as_pm_labels(y)
    return X, y_pm, classes


def _check_weights(W, d: int) -> tuple[np.ndarray, bool]:
    """A (k, d) float array of weight vectors (k >= 1) and whether the input was a single vector."""
    W = validation.check_array(W, "W", ndim=(1, 2), dtype=np.float64, min_len=1)
    single = W.ndim == 1
    W = np.atleast_2d(W)
    if W.shape[1] != d:
        raise ValueError(f"W must have shape (d,) or (k, d) with d = {d}, got shape {np.shape(W)}")
    return W, single


# ----------------------------------------------------------------------------- empirical loss


def empirical_logistic_loss(W, X, y) -> np.ndarray | float:
    """Empirical logistic risk ``(1/n) sum_i log(1 + exp(-y_i <x_i, w>))`` for one or a batch of ``w``.

    ``y`` may be {0, 1} or {-1, +1} (any two values; the larger one is the positive class).
    Uses ``np.logaddexp`` so that large margins do not overflow.
    """
    X = validation.named_errors("X", check_array, X, dtype=np.float64, input_name="X")
    y = validation.named_errors("y", check_array, y, ensure_2d=False, dtype=None, input_name="y")
    y = validation.named_errors("y", column_or_1d, y)
    validation.check_consistent_length(X, y, names=("X", "y"))
    _, y_pm = _as_pm_labels(y)
    W, single = _check_weights(W, X.shape[1])
    loss = np.logaddexp(0.0, -(W @ X.T) * y_pm).mean(axis=1)
    return float(loss[0]) if single else loss


# ----------------------------------------------------------------------------- gradient descent


def _smoothness_eigenvalue(X: np.ndarray) -> float:
    """``lambda_max(X^T X / n)``, through the smaller of the two Gram matrices."""
    n, d = X.shape
    gram = X @ X.T if n <= d else X.T @ X
    m = gram.shape[0]
    return float(eigvalsh(gram, subset_by_index=[m - 1, m - 1])[0]) / n


def _gd_checkpoints(X: np.ndarray, y: np.ndarray, eta: float, steps: np.ndarray) -> np.ndarray:
    """GD iterates ``w_{t+1} = w_t - eta * grad Lhat(w_t)`` from ``w_0 = 0`` at the given steps.

    With ``Z = y * X`` (rows ``y_i x_i``) the gradient is ``-(1/n) Z^T sigmoid(-Z w)``.  With fewer
    samples than features the iterates stay in the row space: ``w_t = Z^T c_t`` with
    ``c_{t+1} = c_t + (eta/n) sigmoid(-Q c_t)``, ``Q = Z Z^T``.  That recursion costs ``n^2``
    instead of ``2 n d`` per step and gives the same iterates.
    """
    Z = X * y[:, None]
    n, d = Z.shape
    dual = n < d
    Q = Z @ Z.T if dual else None
    path = np.empty((steps.size, d))
    coef = np.zeros(n if dual else d)
    margins = np.zeros(n)
    buf = np.empty(n)
    scale = eta / n
    k = 0
    for t in range(1, steps[-1] + 1):
        np.negative(margins, out=buf)
        expit(buf, out=buf)
        buf *= scale
        if dual:
            coef += buf
            np.matmul(Q, coef, out=margins)
        else:
            coef += Z.T @ buf
            np.matmul(Z, coef, out=margins)
        if t == steps[k]:
            path[k] = Z.T @ coef if dual else coef
            k += 1
    return path


class EarlyStoppedLogisticGD(ClassifierMixin, BaseEstimator):
    """Logistic regression by plain gradient descent with checkpoints and early stopping.

    GD runs on the empirical logistic loss without intercept (the paper's model) from
    ``w_0 = 0`` with a constant step ``eta``; the iterates are recorded at ``n_checkpoints``
    log-spaced optimisation lengths ``eta * t`` in ``[min_eta_t, max_eta_t]``.

    Parameters
    ----------
    step_size : float or None
        GD step ``eta``.  ``None`` uses ``2 / lambda_max(X^T X / n)``.  Steps above the
        smoothness bound ``4 / lambda_max(X^T X / n)`` (the logistic loss is
        ``lambda_max / 4``-smooth) are capped there with a warning.
    max_eta_t : float
        Optimisation length the path runs to (``stop="validation"`` or ``"none"``).
    min_eta_t : float
        First checkpoint's optimisation length (at least one step is always taken).
    n_checkpoints : int
        Number of log-spaced checkpoints (fewer when several round to the same step).
    stop : {"validation", "budget", "none"}
        ``"validation"``: hold out ``validation_fraction`` of the data (stratified), run GD on
        the rest and keep the checkpoint with the smallest held-out logistic loss.
        ``"budget"``: run GD for ``eta * t = budget`` and keep the last iterate (the path then
        ends at the budget and ``max_eta_t`` is not used).  ``"none"``: keep the last iterate at
        ``max_eta_t`` (GD "at convergence").  Any checkpoint can be selected afterwards with
        :meth:`stop_at`, e.g. the oracle stop minimising a population risk.
    validation_fraction : float
        Share of samples held out when ``stop="validation"``.
    budget : float or None
        Optimisation length ``eta * t`` for ``stop="budget"``.
    random_state : int, numpy Generator or None
        Seeds the validation split.

    Attributes
    ----------
    coef_ : ndarray (d,)        the selected iterate.
    path_ : ndarray (k, d)      the iterates at the checkpoints.
    eta_t_ : ndarray (k,)       optimisation lengths ``eta * t`` of the checkpoints.
    steps_ : ndarray (k,)       GD step counts ``t`` of the checkpoints.
    stop_index_ : int           row of ``path_`` that ``coef_`` is.
    step_size_ : float          the step used.
    train_loss_ : ndarray (k,)  empirical logistic loss on the data GD ran on.
    validation_loss_ : ndarray (k,) or None   held-out loss (``stop="validation"`` only).
    classes_ : ndarray (2,)     the class labels; ``classes_[1]`` is the positive class.
    n_iter_ : int               GD steps run.
    """

    def __init__(
        self,
        step_size: float | None = None,
        max_eta_t: float = 1e5,
        min_eta_t: float = 0.1,
        n_checkpoints: int = 60,
        stop: Literal["validation", "budget", "none"] = "validation",
        validation_fraction: float = 0.2,
        budget: float | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.step_size = step_size
        self.max_eta_t = max_eta_t
        self.min_eta_t = min_eta_t
        self.n_checkpoints = n_checkpoints
        self.stop = stop
        self.validation_fraction = validation_fraction
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def _check_params(self) -> float:
        """Validate the hyperparameters; return the final optimisation length."""
        validation.check_choice(self.stop, "stop", _STOPS)
        validation.check_scalar(self.n_checkpoints, "n_checkpoints", "int", min=1)
        if self.step_size is not None:
            validation.check_scalar(self.step_size, "step_size", "real", min=0.0, inclusive="neither")
        min_eta_t = validation.check_scalar(self.min_eta_t, "min_eta_t", "real", min=0.0, inclusive="neither")
        if self.stop == "budget":
            if self.budget is None:
                raise ValueError('stop="budget" needs budget (an optimisation length eta * t > 0)')
            end = validation.check_scalar(self.budget, "budget", "real", min=0.0, inclusive="neither")
        else:
            end = validation.check_scalar(self.max_eta_t, "max_eta_t", "real", min=0.0, inclusive="neither")
        if end < min_eta_t:
            raise ValueError(f"the path must end after min_eta_t = {min_eta_t}, got end {end}")
        if self.stop == "validation":
            validation.check_scalar(self.validation_fraction, "validation_fraction", "real", min=0.0, max=1.0,
                           inclusive="neither")
        return end

    def fit(self, X, y) -> EarlyStoppedLogisticGD:
        """Run GD on ``(X, y)`` (labels: any two values), record the path and pick the stop."""
        end = self._check_params()
        as_generator(self.random_state, "random_state")
        X, y_pm, self.classes_ = _check_data(X, y, self)
        X_val = y_val = None
        if self.stop == "validation":
            X, X_val, y_pm, y_val = self._split(X, y_pm)

        lam_max = _smoothness_eigenvalue(X)
        if lam_max <= 0:
            raise ValueError("X is all zeros: the logistic loss is constant, nothing to fit")
        bound = 4.0 / lam_max
        eta = 2.0 / lam_max if self.step_size is None else float(self.step_size)
        if eta > bound:
            warnings.warn(
                f"step_size {eta:.4g} exceeds the smoothness bound 4 / lambda_max(X^T X / n) = {bound:.4g};"
                " capped at the bound",
                UserWarning,
                stacklevel=2,
            )
            eta = bound
        grid = np.geomspace(self.min_eta_t, end, int(self.n_checkpoints))
        steps = np.unique(np.maximum(1, np.rint(grid / eta).astype(np.int64)))

        self.step_size_ = eta
        self.steps_ = steps
        self.eta_t_ = eta * steps
        self.n_iter_ = int(steps[-1])
        self.path_ = _gd_checkpoints(X, y_pm, eta, steps)
        self.train_loss_ = np.logaddexp(0.0, -(self.path_ @ X.T) * y_pm).mean(axis=1)
        if self.stop == "validation":
            self.validation_loss_ = np.logaddexp(0.0, -(self.path_ @ X_val.T) * y_val).mean(axis=1)
            index = int(np.argmin(self.validation_loss_))
        else:
            self.validation_loss_ = None
            index = steps.size - 1
        return self.stop_at(index)

    def _split(self, X: np.ndarray, y_pm: np.ndarray):
        n = X.shape[0]
        n_val = int(round(self.validation_fraction * n))
        if n_val < 1 or n - n_val < 1:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves an empty train or validation"
                f" part with n = {n}"
            )
        counts = np.unique(y_pm, return_counts=True)[1]
        stratify = y_pm if counts.min() >= 2 and n_val >= 2 and n - n_val >= 2 else None
        seed = as_generator(self.random_state, "random_state").integers(2**31 - 1)
        return train_test_split(X, y_pm, test_size=n_val, stratify=stratify, random_state=int(seed))

    def stop_at(self, index: int) -> EarlyStoppedLogisticGD:
        """Select checkpoint ``index`` of ``path_`` as ``coef_`` (e.g. an oracle stop); returns self.

        ``index`` is an int in ``[-k, k)`` for ``k`` checkpoints; a negative one counts from the end.
        """
        validation.check_is_fitted(self, "path_")
        k = self.path_.shape[0]
        index = validation.check_scalar(index, "index", "int", min=-k, max=k, inclusive="left")
        self.stop_index_ = int(index) % k
        self.coef_ = self.path_[self.stop_index_].copy()
        return self

    def decision_function(self, X) -> np.ndarray:
        """Margins ``<x, coef_>``; positive means ``classes_[1]``."""
        validation.check_is_fitted(self, "coef_")
        X = validation.named_errors("X", validate_data, self, X, reset=False, dtype=np.float64)
        return X @ self.coef_

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``[1 - sigmoid(z), sigmoid(z)]`` in the order of ``classes_``."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X) -> np.ndarray:
        """The class with the larger probability (``classes_[0]`` on ties)."""
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]


# ----------------------------------------------------------------------------- baselines


def max_margin_direction(X, y, *, tol: float = 1e-6, max_iter: int = 100_000) -> np.ndarray:
    """The hard-margin SVM ``u = argmin ||w|| s.t. y_i <x_i, w> >= 1`` (no intercept).

    ``u / ||u||`` is the direction GD converges to (Soudry et al., 2018); GD iterates behave
    like ``log(t) u / ||u||^2`` for large ``t``.  Solved through the dual
    ``min_{a >= 0} 1/2 a^T Q a - sum(a)``, ``Q = (y y^T) * X X^T``, with L-BFGS-B, then polished
    by solving the equality system on the support vectors.  Raises ``ValueError`` when the data
    are not linearly separable through the origin (the dual is then unbounded).
    """
    X, y_pm, _ = _check_data(X, y)
    tol = validation.check_scalar(tol, "tol", "real", min=0.0, inclusive="neither")
    max_iter = validation.check_scalar(max_iter, "max_iter", "int", min=1)
    Z = X * y_pm[:, None]
    Q = Z @ Z.T
    n = Q.shape[0]

    def dual(a: np.ndarray) -> tuple[float, np.ndarray]:
        qa = Q @ a
        return 0.5 * a @ qa - a.sum(), qa - 1.0

    res = minimize(
        dual,
        x0=np.full(n, 1.0 / max(np.trace(Q), 1e-300)),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * n,
        options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-16, "gtol": 1e-12},
    )
    alpha = res.x
    support = alpha > 1e-8 * alpha.max()
    if support.any():  # polish: margins exactly 1 on the support vectors, if that stays feasible
        polished = np.zeros(n)
        polished[support] = np.linalg.lstsq(Q[np.ix_(support, support)], np.ones(support.sum()), rcond=None)[
            0
        ]
        if polished[support].min() > 0 and (Q @ polished).min() >= 1.0 - 1e-9:
            alpha = polished
    u = Z.T @ alpha
    if not np.all(np.isfinite(u)) or (Z @ u).min() < 1.0 - tol:
        raise ValueError(
            "the data are not linearly separable through the origin (no max-margin classifier);"
            f" smallest margin reached {(Z @ u).min():.3g} < 1"
        )
    return u


def ridge_logistic_path(X, y, lambdas, *, tol: float = 1e-10, max_iter: int = 10_000) -> np.ndarray:
    """The l2-regularised logistic path ``w_lambda = argmin Lhat(w) + lambda/2 ||w||^2``.

    Solved with L-BFGS for each ``lambda`` in decreasing order, warm-started from the previous
    solution; rows are returned in the order of ``lambdas``.  Equivalent to scikit-learn's
    ``LogisticRegression(C=1/(n lambda), fit_intercept=False)``.  The paper compares GD at
    optimisation length ``eta t`` with ``lambda = 1/(eta t)``.
    """
    X, y_pm, _ = _check_data(X, y)
    lambdas = validation.check_array(lambdas, "lambdas", ndim=1, dtype=np.float64, min_len=1)
    if np.any(lambdas <= 0):
        raise ValueError(f"lambdas must have entries > 0, got min {lambdas.min():g}")
    tol = validation.check_scalar(tol, "tol", "real", min=0.0, inclusive="neither")
    max_iter = validation.check_scalar(max_iter, "max_iter", "int", min=1)
    Z = X * y_pm[:, None]
    n = Z.shape[0]

    def objective(w: np.ndarray, lam: float) -> tuple[float, np.ndarray]:
        m = Z @ w
        value = np.logaddexp(0.0, -m).mean() + 0.5 * lam * w @ w
        grad = -(Z.T @ expit(-m)) / n + lam * w
        return value, grad

    order = np.argsort(-lambdas)
    path = np.empty((lambdas.size, X.shape[1]))
    w = np.zeros(X.shape[1])
    for i in order:
        lam = float(lambdas[i])
        res = minimize(
            objective,
            w,
            args=(lam,),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "ftol": 0.0, "gtol": tol * lam, "maxcor": 30},
        )
        w = res.x
        path[i] = w
    return path


# ----------------------------------------------------------------------------- population model


def _expected_relu(m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``E[max(Z, 0)]`` for ``Z ~ N(m, s^2)`` (``s = 0`` allowed)."""
    safe = np.where(s > 0, s, 1.0)
    r = m / safe
    value = m * ndtr(r) + s * np.exp(-0.5 * r**2) / np.sqrt(2 * np.pi)
    return np.where(s > 0, value, np.maximum(m, 0.0))


def _prob_positive(m: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``P(Z > 0) + P(Z = 0) / 2`` for ``Z ~ N(m, s^2)`` (``s = 0`` allowed)."""
    safe = np.where(s > 0, s, 1.0)
    return np.where(s > 0, ndtr(m / safe), 0.5 * (1.0 + np.sign(m)))


class GaussianLogisticModel:
    """The well-specified model of the paper (Assumption 1), with exact population risks.

    ``x ~ N(0, diag(cov_diag))`` and ``P(y = +1 | x) = sigmoid(<x, w*>)``, labels in {-1, +1}.
    For any ``w`` the pair ``(z*, z) = (<x, w*>, <x, w>)`` is bivariate Gaussian; writing
    ``z* = sqrt(a) g1`` and ``z = beta g1 + s g2`` (Cholesky, ``g1, g2`` standard normal),

    * logistic risk ``L(w) = E[sigmoid(z*) log(1 + e^{-z}) + sigmoid(-z*) log(1 + e^{z})]``
      is computed from ``log(1 + e^{-z}) = max(-z, 0) + log(1 + e^{-|z|})``: the ReLU parts
      have a closed form given ``g1``, the last part depends on ``|z|`` only;
    * zero-one risk ``E(w) = E[sigmoid(z*) P(z < 0 | g1) + sigmoid(-z*) P(z > 0 | g1)]``
      (ties ``z = 0`` count one half) with the Gaussian CDF in closed form;
    * calibration error ``CE(w) = E|sigmoid(z) - sigmoid(z*)|``, a 2-D integral.

    The remaining 1-D and 2-D integrals use Gauss-Legendre rules on ``[-10, 10]`` standard
    deviations split at the integrands' kinks, which is exact to about 1e-10 for smooth
    parts (a 64 x 64 Gauss-Hermite rule is inaccurate on the indicator of the zero-one
    risk and on large-norm ``w``; see the docs page).  All risk methods accept one ``w`` (d,)
    or a batch (k, d) and return a float or a (k,) array.

    Parameters
    ----------
    cov_diag : array (d,)   the variances ``lambda_i >= 0`` (zero-variance directions allowed).
    w_star : array (d,)     the true parameter.
    seed : int, numpy Generator or None   randomness of :meth:`sample`.
    n_nodes : int           Gauss-Legendre nodes per half-interval (default 96).
    """

    def __init__(self, cov_diag, w_star, seed: Seed = None, n_nodes: int = 96):
        cov_diag = validation.check_array(cov_diag, "cov_diag", ndim=1, dtype=np.float64, min_len=1)
        if np.any(cov_diag < 0):
            raise ValueError(f"cov_diag must hold variances >= 0, got min {cov_diag.min():g}")
        w_star = validation.check_array(w_star, "w_star", dtype=np.float64, shape=cov_diag.shape)
        n_nodes = validation.check_scalar(n_nodes, "n_nodes", "int", min=8)
        self.cov_diag = cov_diag
        self.w_star = w_star
        self.rng = as_generator(seed)
        self.n_nodes = int(n_nodes)
        self._x, self._wq = np.polynomial.legendre.leggauss(self.n_nodes)

    @classmethod
    def power_law(
        cls, d: int, n_signal: int, decay: float = 2.0, seed: Seed = None
    ) -> GaussianLogisticModel:
        """The paper's Figure 1 instance: ``lambda_i = i^-decay``, ``w*_i = 1`` for ``i <= n_signal``, else 0.

        (Figure 1: ``d = 2000``, ``n_signal = 100``, ``decay = 2``.)
        """
        d = validation.check_scalar(d, "d", "int", min=1)
        n_signal = validation.check_scalar(n_signal, "n_signal", "int", min=0, max=d)
        decay = validation.check_scalar(decay, "decay", "real", min=0.0, inclusive="neither")
        w_star = np.zeros(d)
        w_star[:n_signal] = 1.0
        return cls(np.arange(1, d + 1, dtype=np.float64) ** -decay, w_star, seed=seed)

    @property
    def dim(self) -> int:
        return self.cov_diag.size

    def sample(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``n`` i.i.d. pairs; returns ``X`` (n, d) and labels ``y`` in {-1, +1}."""
        n = validation.check_scalar(n, "n", "int", min=1)
        X = self.rng.standard_normal((int(n), self.dim)) * np.sqrt(self.cov_diag)
        y = np.where(self.rng.random(int(n)) < expit(X @ self.w_star), 1.0, -1.0)
        return X, y

    # -- quadrature helpers ------------------------------------------------------------

    def _moments(self, W) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """``sqrt(a)`` (scalar), ``beta`` (k,), ``s`` (k,) of the Cholesky form, and ``single``."""
        W, single = _check_weights(W, self.dim)
        a = float(self.w_star @ (self.cov_diag * self.w_star))
        b = W @ (self.cov_diag * self.w_star)
        c = np.einsum("kd,d,kd->k", W, self.cov_diag, W)
        sa = np.sqrt(a)
        beta = b / sa if sa > 0 else np.zeros_like(b)
        resid = c - beta**2  # Var(z | z*); clear rounding noise so that w parallel to w* is exact
        s = np.sqrt(np.where(resid > 1e-12 * c, resid, 0.0))
        return np.full_like(beta, sa), beta, s, single

    def _outer(self) -> tuple[np.ndarray, np.ndarray]:
        """Nodes ``g`` and weights (including the normal density) on [-10, 0] and [0, 10]."""
        g = np.concatenate([5.0 * (self._x - 1.0), 5.0 * (self._x + 1.0)])
        w = np.concatenate([self._wq, self._wq]) * 5.0 * np.exp(-0.5 * g**2) / np.sqrt(2 * np.pi)
        return g, w

    @staticmethod
    def _finish(values: np.ndarray, single: bool) -> np.ndarray | float:
        return float(values[0]) if single else values

    def _abs_tail(self, s_total: np.ndarray) -> np.ndarray:
        """``E[log(1 + e^{-|z|})]`` for ``z ~ N(0, s_total^2)``, integrated over ``u = |z|``."""
        upper = np.minimum(40.0, 10.0 * s_total)[:, None]
        u = 0.5 * upper * (self._x + 1.0)
        safe = np.where(s_total > 0, s_total, 1.0)[:, None]
        dens = 2.0 * np.exp(-0.5 * (u / safe) ** 2) / (np.sqrt(2 * np.pi) * safe)
        value = (0.5 * upper * self._wq * np.log1p(np.exp(-u)) * dens).sum(axis=1)
        return np.where(s_total > 0, value, np.log(2.0))

    # -- population risks --------------------------------------------------------------

    def logistic_risk(self, W) -> np.ndarray | float:
        """Population logistic risk ``L(w)`` (exact up to quadrature error ~1e-10)."""
        sa, beta, s, single = self._moments(W)
        g, wg = self._outer()
        zs = sa[:, None] * g
        m = beta[:, None] * g
        p = expit(zs)
        relu = p * _expected_relu(-m, s[:, None]) + (1.0 - p) * _expected_relu(m, s[:, None])
        values = (relu * wg).sum(axis=1) + self._abs_tail(np.sqrt(beta**2 + s**2))
        return self._finish(values, single)

    def zero_one_risk(self, W) -> np.ndarray | float:
        """Population zero-one risk ``E(w) = P(sign <x, w> != y)`` (ties count 1/2)."""
        sa, beta, s, single = self._moments(W)
        g, wg = self._outer()
        p = expit(sa[:, None] * g)
        pos = _prob_positive(beta[:, None] * g, s[:, None])
        values = ((p * (1.0 - pos) + (1.0 - p) * pos) * wg).sum(axis=1)
        return self._finish(values, single)

    def calibration_error(self, W) -> np.ndarray | float:
        """Population calibration error ``CE(w) = E|sigmoid(<x, w>) - sigmoid(<x, w*>)|``.

        Inner integral over ``g2`` split at the kink ``beta g1 + s g2 = z*``.
        """
        sa, beta, s, single = self._moments(W)
        g, wg = self._outer()
        zs = sa[:, None] * g
        m = beta[:, None] * g
        s2 = s[:, None, None]
        kink = np.divide(zs - m, s[:, None], out=np.zeros_like(m), where=s[:, None] > 0)
        kink = np.clip(kink, -10.0, 10.0)[..., None]
        x, wq = self._x, self._wq
        lo_half = 0.5 * (kink + 10.0)  # length/2 of [-10, kink]
        hi_half = 0.5 * (10.0 - kink)  # length/2 of [kink, 10]
        nodes = np.concatenate([kink - lo_half * (1.0 - x), kink + hi_half * (1.0 + x)], axis=-1)
        weights = np.concatenate([lo_half * wq, hi_half * wq], axis=-1)
        weights = weights * np.exp(-0.5 * nodes**2) / np.sqrt(2 * np.pi)
        gap = np.abs(expit(m[..., None] + s2 * nodes) - expit(zs)[..., None])
        inner = (gap * weights).sum(axis=-1)
        values = (inner * wg).sum(axis=1)
        return self._finish(values, single)

    def bayes_risks(self) -> dict[str, float]:
        """Risks of the Bayes predictor ``w*``: ``{"logistic": L(w*), "zero_one": E(w*)}``."""
        return {"logistic": self.logistic_risk(self.w_star), "zero_one": self.zero_one_risk(self.w_star)}
