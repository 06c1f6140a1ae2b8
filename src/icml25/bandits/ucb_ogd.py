"""UCB-OGD of "Adaptive Data Collection for Robust Learning Across Multiple Distributions" (ICML 2025).

Example
-------
>>> from icml25.bandits.ucb_ogd import UCBOGD, AdaptiveCollector, LogisticModel, UniformSelector
>>> from icml25.data.multi_source import make_multisource_logistic
>>> task = make_multisource_logistic(n_sources=5, n_features=20, seed=0)   # source 4 conflicts
>>> ucb = UCBOGD(5, LogisticModel(20), loss_bound=2.0, bonus_scale=0.5, eta0=0.5, radius=2.5, seed=0)
>>> history = ucb.run(task.samplers(), budget=2000)
>>> int(history.counts.argmax())                     # the hard source gets the most labels
4
>>> uniform = AdaptiveCollector(LogisticModel(20), UniformSelector(5), eta0=0.5, radius=2.5, seed=0)
>>> _ = uniform.run(task.samplers(), budget=2000)
>>> worst = lambda c: task.population_losses(c.averaged_params_).max()   # exact max_k L_k
>>> bool(worst(ucb) < 0.9 * worst(uniform))
True

A learner with a labelling budget chooses, each round, one of K data sources, labels one
sample (or a mini-batch) from it and takes one online-gradient-descent step.  The goal is
a model that is good on every source: ``min_theta max_k L_k(theta)``.  UCB-OGD treats the
sources as bandit arms whose reward is the current model's loss and samples the source with
the highest upper confidence bound on it (the max player), while OGD is the min player.

Pieces, all sharing one interface so that any selector drives the same learner:

* models (``OnlineModel``): ``LogisticModel``, ``SoftmaxModel`` (NumPy) and ``TorchModel``
  (adapter for an ``nn.Module`` and a ``torch.optim.Optimizer``, mini-batch variant);
* selectors (``SourceSelector``): ``UCBSelector`` (the paper's), and the baselines
  ``UniformSelector``, ``RoundRobinSelector``, ``GreedySelector``, ``EXP3Selector``,
  ``UncertaintySelector`` (entropy or margin active learning);
* the budget-driven loop ``AdaptiveCollector`` (``UCBOGD`` = collector + ``UCBSelector``);
* metrics: ``source_losses``, ``worst_source_loss``, ``source_accuracies``,
  ``worst_source_accuracy``, ``minimax_reference`` / ``solve_minimax`` (offline group-DRO
  optimum L*), ``worst_loss_path``, ``regret_curve`` and ``regret_exponent``.

Only the abstract of the paper could be read: the confidence radius, step sizes and regret
definition below are the natural reading of it (marked OUR READING), see docs/papers/ucb_ogd.md.
"""

from __future__ import annotations

import copy
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
from scipy import optimize
from scipy.special import expit

from icml25.bandits.base import EXP3
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_probability_vector,
    check_scalar,
    check_sequence,
)

SourceSampler = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]
EvalSets = Sequence[tuple[np.ndarray, np.ndarray]]


# --------------------------------------------------------------------------- validation
def _features(X: Any, n_features: int) -> np.ndarray:
    X = check_array(X, "X", ndim=(1, 2), dtype=float)
    if X.ndim == 1:
        X = X[None, :]
    return check_array(X, "X", shape=(None, n_features), min_len=1)


def _labels(y: Any, n: int, n_classes: int) -> np.ndarray:
    y = check_array(y, "y")
    if y.ndim == 0:
        y = y.reshape(1)
    if y.shape != (n,):
        raise ValueError(f"y must hold one label per row of X ({n}), got shape {y.shape}")
    labels = y if y.dtype.kind in "iu" else y.astype(np.int64)
    if y.dtype.kind not in "iub" and not (labels == y).all():
        raise ValueError(f"labels must be integers in {{0, ..., {n_classes - 1}}}, got {y[labels != y][:3]}")
    if labels.min() < 0 or labels.max() >= n_classes:
        raise ValueError(
            f"labels must be in {{0, ..., {n_classes - 1}}}, got values in [{labels.min()}, {labels.max()}]"
        )
    return labels


_MODEL_METHODS = ("loss", "grad", "loss_grad", "step", "project", "predict_proba")


def _check_model(model: Any, methods: Sequence[str] = _MODEL_METHODS) -> Any:
    """``model`` if it has ``params`` and the ``OnlineModel`` methods named in ``methods``; else a TypeError."""
    missing = [m for m in methods if not callable(getattr(model, m, None))]
    if missing or not hasattr(model, "params"):
        raise TypeError(f"model must implement OnlineModel; {type(model).__name__} lacks {missing or ['params']}")
    return model


def _softmax(Z: np.ndarray) -> np.ndarray:
    E = np.exp(Z - Z.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


# ------------------------------------------------------------------------------ models
@runtime_checkable
class OnlineModel(Protocol):
    """What the collector needs from a model (all on mini-batches; a 1-D ``x`` is one sample).

    ``loss``/``grad`` are the mean loss and its gradient w.r.t. the flat parameter vector
    ``params`` (``loss_grad`` returns both from one pass); ``step(grad, lr)`` takes one descent
    step; ``project(radius)`` projects the parameters onto the l2 ball of that radius (Theta of
    the OGD analysis).
    """

    params: np.ndarray

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        """Mean loss on the batch ``(X, y)``."""
        raise NotImplementedError

    def grad(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Gradient of the mean loss w.r.t. the flat ``params``."""
        raise NotImplementedError

    def loss_grad(self, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        """``(loss, grad)`` from one pass."""
        raise NotImplementedError

    def step(self, grad: np.ndarray, lr: float) -> None:
        """One descent step with learning rate ``lr``."""
        raise NotImplementedError

    def project(self, radius: float) -> None:
        """Project ``params`` onto the l2 ball of ``radius``."""
        raise NotImplementedError

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities ``(n, C)``."""
        raise NotImplementedError


class _LinearNumpyModel:
    """Shared parameter handling of the NumPy models: a flat vector ``theta``."""

    theta: np.ndarray

    @property
    def params(self) -> np.ndarray:
        return self.theta.copy()

    @params.setter
    def params(self, value: np.ndarray) -> None:
        self.theta = check_array(value, "params", dtype=float, shape=self.theta.shape, copy=True)

    def step(self, grad: np.ndarray, lr: float) -> None:
        """Gradient step ``theta <- theta - lr * grad`` (``grad`` finite, of the shape of ``params``; ``lr > 0``)."""
        if not (type(grad) is np.ndarray and grad.dtype == np.float64 and grad.shape == self.theta.shape
                and math.isfinite(grad.sum())):  # the collector's per-round call takes this cheap test only
            grad = check_array(grad, "grad", shape=self.theta.shape, dtype=float)
        if type(lr) is not float or not 0.0 < lr < math.inf:
            lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        self.theta = self.theta - lr * grad

    def project(self, radius: float) -> None:
        """Euclidean projection onto the ball ``||theta|| <= radius`` (``radius > 0``)."""
        if type(radius) is not float or not 0.0 < radius < math.inf:
            radius = check_scalar(radius, "radius", "real", min=0.0, inclusive="neither")
        norm = math.sqrt(self.theta @ self.theta)
        if norm > radius:
            self.theta = self.theta * (radius / norm)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Most probable class of each row."""
        return np.argmax(self.predict_proba(X), axis=1)


class LogisticModel(_LinearNumpyModel):
    """Binary logistic regression with log-loss, labels in {0, 1}; ``params = [w, (b)]``."""

    def __init__(self, n_features: int, *, fit_intercept: bool = False) -> None:
        self.n_features = check_scalar(n_features, "n_features", "int", min=1)
        self.fit_intercept = check_bool(fit_intercept, "fit_intercept")
        self.theta = np.zeros(self.n_features + self.fit_intercept)

    def _logits(self, X: np.ndarray, theta: np.ndarray) -> np.ndarray:
        z = X @ theta[..., : self.n_features].T
        return z + theta[..., self.n_features] if self.fit_intercept else z

    def loss_grad(self, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        X = _features(X, self.n_features)
        y = _labels(y, len(X), 2)
        z = self._logits(X, self.theta)
        r = expit(z) - y
        g = r @ X / len(X)
        loss = float(np.mean(np.logaddexp(0.0, z) - y * z))
        return loss, (np.append(g, r.mean()) if self.fit_intercept else g)

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        X = _features(X, self.n_features)
        z = self._logits(X, self.theta)
        return float(np.mean(np.logaddexp(0.0, z) - _labels(y, len(X), 2) * z))

    def grad(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.loss_grad(X, y)[1]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        p = expit(self._logits(_features(X, self.n_features), self.theta))
        return np.column_stack([1.0 - p, p])

    def loss_path(self, params: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Mean loss on ``(X, y)`` of each row of ``params`` (m, p), vectorised (regret curves)."""
        X = _features(X, self.n_features)
        y = _labels(y, len(X), 2)
        params = check_array(params, "params", ndim=2, dtype=float, min_len=1, shape=(None, self.theta.size))
        Z = self._logits(X, params)  # (n, m)
        return np.mean(np.logaddexp(0.0, Z) - y[:, None] * Z, axis=0)


class SoftmaxModel(_LinearNumpyModel):
    """Multinomial logistic (softmax) regression with cross-entropy; ``params = W (C, d [+1]).ravel()``."""

    def __init__(self, n_features: int, n_classes: int, *, fit_intercept: bool = True) -> None:
        self.n_features = check_scalar(n_features, "n_features", "int", min=1)
        self.n_classes = check_scalar(n_classes, "n_classes", "int", min=2)
        self.fit_intercept = check_bool(fit_intercept, "fit_intercept")
        self.theta = np.zeros(self.n_classes * (self.n_features + self.fit_intercept))

    def _logits(self, X: np.ndarray) -> np.ndarray:
        W = self.theta.reshape(self.n_classes, -1)
        Z = X @ W[:, : self.n_features].T
        return Z + W[:, self.n_features] if self.fit_intercept else Z

    def loss_grad(self, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        X = _features(X, self.n_features)
        y = _labels(y, len(X), self.n_classes)
        rows = np.arange(len(X))
        Z = self._logits(X)
        Z = Z - Z.max(axis=1, keepdims=True)
        E = np.exp(Z)
        S = E.sum(axis=1, keepdims=True)
        loss = float(np.mean(np.log(S[:, 0]) - Z[rows, y]))
        R = E / S
        R[rows, y] -= 1.0
        G = R.T @ X / len(X)
        return loss, (np.column_stack([G, R.mean(axis=0)]) if self.fit_intercept else G).ravel()

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        X = _features(X, self.n_features)
        y = _labels(y, len(X), self.n_classes)
        Z = self._logits(X)
        Z = Z - Z.max(axis=1, keepdims=True)
        return float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(len(X)), y]))

    def grad(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.loss_grad(X, y)[1]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        return _softmax(self._logits(_features(X, self.n_features)))


def _torch() -> Any:
    """PyTorch, imported on first use (the NumPy models do not need it)."""
    import torch

    return torch


class TorchModel:
    """Adapter of an ``nn.Module`` (inputs -> logits) and a ``torch.optim.Optimizer`` to ``OnlineModel``.

    ``step(grad, lr)`` writes ``grad`` into the parameters' ``.grad``, sets every parameter
    group's learning rate to ``lr`` and calls ``optimizer.step()`` (the mini-batch SGD/Adam
    variant).  Without an optimizer, plain SGD is used.  Inputs are converted to
    the module's dtype and device; ``loss_fn(logits, targets)`` defaults to cross-entropy.
    """

    def __init__(self, module: Any, optimizer: Any = None, loss_fn: Callable | None = None) -> None:
        torch = _torch()
        self.module = check_instance(module, "module", torch.nn.Module, "a torch.nn.Module")
        self._parameters = [p for p in module.parameters() if p.requires_grad]
        if not self._parameters:
            raise ValueError("module has no trainable parameters")
        self.optimizer = check_instance(
            optimizer if optimizer is not None else torch.optim.SGD(self._parameters, lr=1.0),
            "optimizer",
            torch.optim.Optimizer,
            "a torch.optim.Optimizer",
        )
        self.loss_fn = torch.nn.functional.cross_entropy if loss_fn is None else check_callable(loss_fn, "loss_fn")

    def _inputs(self, X: np.ndarray) -> Any:
        ref = self._parameters[0]
        X = check_array(X, "X", dtype=float, min_len=1)
        if X.ndim < 2:
            raise ValueError(f"X must be a batch of samples (n, ...), got shape {X.shape}")
        return _torch().as_tensor(X, dtype=ref.dtype, device=ref.device)

    def _targets(self, y: np.ndarray, n: int) -> Any:
        ref = self._parameters[0]
        y = check_array(y, "y", ndim=(0, 1))
        y = np.atleast_1d(y)
        if y.shape[0] != n:
            raise ValueError(f"y must hold one target per row of X ({n}), got shape {y.shape}")
        yt = _torch().as_tensor(y, device=ref.device)
        return yt.long() if y.dtype.kind in "iub" else yt.to(ref.dtype)

    def _logits(self, Xt: Any) -> Any:
        logits = self.module(Xt)
        if logits.ndim != 2 or logits.shape[0] != Xt.shape[0]:
            raise ValueError(f"X must map to (n, n_classes) logits, got logits of shape {tuple(logits.shape)}")
        return logits

    def loss(self, X: np.ndarray, y: np.ndarray) -> float:
        Xt = self._inputs(X)
        yt = self._targets(y, Xt.shape[0])
        with _torch().no_grad():
            return float(self.loss_fn(self._logits(Xt), yt))

    def loss_grad(self, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        Xt = self._inputs(X)
        yt = self._targets(y, Xt.shape[0])
        loss = self.loss_fn(self._logits(Xt), yt)
        grads = _torch().autograd.grad(loss, self._parameters)
        flat = np.concatenate([g.detach().cpu().numpy().ravel() for g in grads]).astype(float)
        return float(loss.detach()), flat

    def grad(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        return self.loss_grad(X, y)[1]

    def step(self, grad: np.ndarray, lr: float) -> None:
        torch = _torch()
        grad = check_array(grad, "grad", shape=(sum(p.numel() for p in self._parameters),), dtype=float)
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        flat = torch.as_tensor(grad, dtype=self._parameters[0].dtype, device=self._parameters[0].device)
        offset = 0
        for p in self._parameters:
            p.grad = flat[offset : offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()

    def project(self, radius: float) -> None:
        torch = _torch()
        radius = check_scalar(radius, "radius", "real", min=0.0, inclusive="neither")
        with torch.no_grad():
            norm = float(torch.sqrt(sum((p**2).sum() for p in self._parameters)))
            if norm > radius:
                for p in self._parameters:
                    p.mul_(radius / norm)

    @property
    def params(self) -> np.ndarray:
        return np.concatenate([p.detach().cpu().numpy().ravel() for p in self._parameters]).astype(float)

    @params.setter
    def params(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=float)
        total = sum(p.numel() for p in self._parameters)
        if value.shape != (total,):
            raise ValueError(f"params must have shape ({total},), got {value.shape}")
        _torch().nn.utils.vector_to_parameters(
            _torch().as_tensor(value, dtype=self._parameters[0].dtype, device=self._parameters[0].device),
            self._parameters,
        )

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        Xt = self._inputs(X)
        with _torch().no_grad():
            return _torch().softmax(self._logits(Xt), dim=1).cpu().numpy().astype(float)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.argmax(self.predict_proba(X), axis=1)


# ---------------------------------------------------------------------------- selectors
class SourceSelector:
    """Chooses the next source to label.  Interface shared by UCB and every baseline:

    ``select(rng, model=None, candidates=None) -> int`` then ``update(source, loss)`` with the
    (clipped) loss the current model suffered on the new sample.  Selectors with
    ``needs_candidates = True`` (active learning) also get one unlabelled candidate batch per
    source and the model.  ``counts_[k]`` is the number of rounds source ``k`` was chosen.
    """

    needs_candidates: ClassVar[bool] = False

    def __init__(self, n_sources: int) -> None:
        self.n_sources = check_scalar(n_sources, "n_sources", "int", min=1)
        self.counts_ = np.zeros(self.n_sources, dtype=int)

    @property
    def t_(self) -> int:
        """Rounds observed so far."""
        return int(self.counts_.sum())

    def select(
        self,
        rng: np.random.Generator,
        model: OnlineModel | None = None,
        candidates: Sequence[np.ndarray] | None = None,
    ) -> int:
        raise NotImplementedError

    def update(self, source: int, loss: float) -> None:
        """Record that ``source`` was sampled and the model's loss on it was ``loss``."""
        source = check_scalar(source, "source", "int", min=0, max=self.n_sources - 1)
        self._observe(source, check_scalar(loss, "loss", "real"))
        self.counts_[source] += 1

    def _observe(self, source: int, loss: float) -> None:
        """Selector-specific statistics (called before ``counts_`` is incremented)."""

    def _unvisited(self) -> int | None:
        zero = np.flatnonzero(self.counts_ == 0)
        return int(zero[0]) if zero.size else None


class _MeanTracker(SourceSelector):
    """Running (or sliding-window) mean loss per source: ``Lhat_k``."""

    def __init__(self, n_sources: int, window: int | None = None) -> None:
        super().__init__(n_sources)
        self.window = None if window is None else check_scalar(window, "window", "int", min=1)
        self.sums_ = np.zeros(self.n_sources)
        self._recent: list[deque] = [deque(maxlen=self.window) for _ in range(self.n_sources)]

    def _observe(self, source: int, loss: float) -> None:
        if self.window is None:
            self.sums_[source] += loss
        else:
            self._recent[source].append(loss)
            self.sums_[source] = sum(self._recent[source])

    def effective_counts(self) -> np.ndarray:
        """``n_k``, capped at ``window`` when a sliding window is used."""
        return self.counts_ if self.window is None else np.minimum(self.counts_, self.window)

    def means(self) -> np.ndarray:
        """``Lhat_k = S_k / n_k`` (NaN for unvisited sources)."""
        n = self.effective_counts()
        out = np.full(self.n_sources, np.nan)
        seen = n > 0
        out[seen] = self.sums_[seen] / n[seen]
        return out


class UCBSelector(_MeanTracker):
    """UCB on losses (the max player of UCB-OGD): ``argmax_k Lhat_k + c B sqrt(2 ln t / n_k)``.

    ``B = loss_bound``, ``c = bonus_scale``, ``t`` the current round (1-based); unvisited sources
    have index +inf, so the first K rounds sample every source once (warm start); ties go to the
    smallest index.  ``window`` (OUR READING) replaces the running mean by the mean of the last
    ``window`` losses of each source, since losses drift as the model learns.
    """

    def __init__(
        self, n_sources: int, *, loss_bound: float = 1.0, bonus_scale: float = 1.0, window: int | None = None
    ) -> None:
        super().__init__(n_sources, window)
        self.loss_bound = check_scalar(loss_bound, "loss_bound", "real", min=0.0, inclusive="neither")
        self.bonus_scale = check_scalar(bonus_scale, "bonus_scale", "real", min=0.0)

    def indices(self) -> np.ndarray:
        """The upper confidence bounds ``UCB_k`` of the current round (+inf when ``n_k = 0``)."""
        n = self.effective_counts()
        out = np.full(self.n_sources, np.inf)
        seen = n > 0
        bonus = self.bonus_scale * self.loss_bound * np.sqrt(2.0 * math.log(self.t_ + 1) / n[seen])
        out[seen] = self.sums_[seen] / n[seen] + bonus
        return out

    def select(self, rng, model=None, candidates=None) -> int:
        return int(np.argmax(self.indices()))


class UniformSelector(SourceSelector):
    """Baseline: a uniformly random source every round."""

    def select(self, rng, model=None, candidates=None) -> int:
        return int(rng.integers(self.n_sources))


class RoundRobinSelector(SourceSelector):
    """Baseline: sources in turn, 0, 1, ..., K-1, 0, ..."""

    def select(self, rng, model=None, candidates=None) -> int:
        return self.t_ % self.n_sources


class GreedySelector(_MeanTracker):
    """Baseline: epsilon-greedy on losses, ``argmax_k Lhat_k`` (no bonus), random with prob. ``epsilon``."""

    def __init__(self, n_sources: int, *, epsilon: float = 0.05, window: int | None = None) -> None:
        super().__init__(n_sources, window)
        self.epsilon = check_scalar(epsilon, "epsilon", "real", min=0.0, max=1.0)

    def select(self, rng, model=None, candidates=None) -> int:
        first = self._unvisited()
        if first is not None:
            return first
        if rng.random() < self.epsilon:
            return int(rng.integers(self.n_sources))
        return int(np.argmax(self.means()))


class EXP3Selector(SourceSelector):
    """Baseline: adversarial bandit over sources, rewarding high loss: ``icml25.bandits.EXP3``
    (Auer et al. 2002, with its default ``eta`` and exploration ``gamma`` for ``horizon`` rounds)
    fed the bandit loss ``1 - clip(loss / loss_bound, 0, 1)``."""

    def __init__(
        self, n_sources: int, horizon: int, *, loss_bound: float = 1.0, gamma: float | None = None
    ) -> None:
        super().__init__(n_sources)
        self.loss_bound = check_scalar(loss_bound, "loss_bound", "real", min=0.0, inclusive="neither")
        self.exp3_ = EXP3(self.n_sources, check_scalar(horizon, "horizon", "int", min=1), gamma=gamma)

    def select(self, rng, model=None, candidates=None) -> int:
        return self.exp3_.act(rng)

    def _observe(self, source: int, loss: float) -> None:
        self.exp3_.update(source, 1.0 - min(max(loss / self.loss_bound, 0.0), 1.0))


class UncertaintySelector(SourceSelector):
    """Active-learning baseline: label the source whose candidate the model is least sure about.

    ``measure="entropy"``: highest mean predictive entropy; ``measure="margin"``: smallest mean
    margin between the two most probable classes (modAL's uncertainty / margin sampling,
    applied to one unlabelled candidate batch per source).  Ties go to the smallest index.
    """

    needs_candidates: ClassVar[bool] = True
    MEASURES: ClassVar[tuple[str, ...]] = ("entropy", "margin")

    def __init__(self, n_sources: int, *, measure: str = "entropy") -> None:
        super().__init__(n_sources)
        self.measure = check_choice(measure, "measure", self.MEASURES)

    def uncertainty(self, proba: np.ndarray) -> float:
        """Mean uncertainty of predicted class probabilities ``proba`` (n, C); larger = less sure."""
        proba = np.clip(check_probability_vector(proba, "proba", ndim=2, atol=1e-6), 1e-300, 1.0)
        if self.measure == "entropy":
            return float(np.mean(-np.sum(proba * np.log(proba), axis=1)))
        top2 = np.sort(proba, axis=1)[:, -2:]
        return float(np.mean(1.0 - (top2[:, 1] - top2[:, 0])))

    def select(self, rng, model=None, candidates=None) -> int:
        if model is None or candidates is None:
            raise ValueError(
                f"{type(self).__name__} needs the model and one candidate batch per source (model, candidates)"
            )
        _check_model(model, ("predict_proba",))
        candidates = check_sequence(candidates, "candidates")
        if len(candidates) != self.n_sources:
            raise ValueError(f"candidates must hold one batch per source ({self.n_sources}), got {len(candidates)}")
        return int(np.argmax([self.uncertainty(model.predict_proba(c)) for c in candidates]))


# --------------------------------------------------------------------------- the loop
@dataclass
class History:
    """What one ``run`` did: chosen sources and clipped losses per round, counts per source,
    the parameter trajectory ``params[t] = theta_t`` (when recorded), last and averaged iterates."""

    sources: np.ndarray
    losses: np.ndarray
    counts: np.ndarray
    final_params: np.ndarray
    averaged_params: np.ndarray
    clips: int
    params: np.ndarray | None = None


class ArraySource:
    """A labelling oracle over a pool ``(X, y)``: draws rows with replacement, optionally
    transformed by ``transform(X_batch, rng)`` (e.g. a fresh corruption every draw)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, transform: Callable | None = None) -> None:
        X = check_array(X, "X", ndim=2, min_len=1)
        y = check_array(y, "y", shape=(len(X),))
        self.X, self.y = X, y
        self.transform = None if transform is None else check_callable(transform, "transform")

    def __call__(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(len(self.X), size=n)
        X = self.X[idx]
        return (self.transform(X, rng) if self.transform is not None else X), self.y[idx]


class AdaptiveCollector:
    """Budget-driven data collection: a ``SourceSelector`` picks a source, ``batch_size``
    samples are labelled from it, the current model's loss on them is fed back to the
    selector (test-then-train) and one projected OGD step is taken:
    ``theta_{t+1} = Proj_{||theta|| <= radius}(theta_t - eta0 / sqrt(t) * grad)`` (OUR READING
    of the step size ``R / (G sqrt t)``; ``radius=None`` skips the projection).

    Losses fed to the selector are clipped to ``[0, loss_bound]`` (``clips_`` counts clipped
    rounds).  ``averaged_params_`` is the averaged iterate ``(1/T) sum_t theta_t`` of the theory,
    ``model`` holds the last iterate.
    """

    def __init__(
        self,
        model: OnlineModel,
        selector: SourceSelector,
        *,
        loss_bound: float = 1.0,
        eta0: float = 0.1,
        radius: float | None = None,
        batch_size: int = 1,
        seed: Seed = None,
    ) -> None:
        self.model = _check_model(model)
        self.selector = check_instance(selector, "selector", SourceSelector)
        self.n_sources = selector.n_sources
        self.loss_bound = check_scalar(loss_bound, "loss_bound", "real", min=0.0, inclusive="neither")
        self.eta0 = check_scalar(eta0, "eta0", "real", min=0.0, inclusive="neither")
        self.radius = None if radius is None else check_scalar(radius, "radius", "real", min=0.0, inclusive="neither")
        self.batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        self.rng = as_generator(seed)
        self.n_steps_ = 0
        self.clips_ = 0
        self._param_sum = np.zeros_like(np.asarray(model.params, dtype=float))

    @property
    def counts_(self) -> np.ndarray:
        """Rounds spent on each source so far."""
        return self.selector.counts_.copy()

    @property
    def averaged_params_(self) -> np.ndarray:
        """The averaged iterate ``(1/T) sum_{t<=T} theta_t`` (``theta_1`` before any step)."""
        if self.n_steps_ == 0:
            return np.asarray(self.model.params, dtype=float)
        return self._param_sum / self.n_steps_

    def averaged_model(self) -> OnlineModel:
        """A copy of the model holding the averaged iterate."""
        model = copy.deepcopy(self.model)
        model.params = self.averaged_params_
        return model

    def select_source(self, candidates: Sequence[np.ndarray] | None = None) -> int:
        """The selector's choice for the next round (candidates: unlabelled batches, if it needs them)."""
        return self.selector.select(self.rng, model=self.model, candidates=candidates)

    def observe(self, source: int, X: np.ndarray, y: np.ndarray) -> float:
        """Labelled batch ``(X, y)`` from ``source``: feed the current loss back, take one OGD step.

        Returns the loss (clipped to ``[0, loss_bound]``) of the model *before* the step.
        """
        if type(source) is not int or not 0 <= source < self.n_sources:
            source = check_scalar(source, "source", "int", min=0, max=self.n_sources - 1)
        loss, grad = self.model.loss_grad(X, y)
        loss, grad = float(loss), np.asarray(grad, dtype=float)
        if not math.isfinite(loss):
            raise ValueError(f"the model's loss on source {source} is not finite ({loss})")
        if not np.isfinite(grad).all():
            raise ValueError(f"the gradient on source {source} contains NaN or infinite values")
        clipped = min(max(loss, 0.0), self.loss_bound)
        self.selector.update(source, clipped)
        self.clips_ += clipped != loss
        self._param_sum += self.model.params
        self.n_steps_ += 1
        self.model.step(grad, self.eta0 / math.sqrt(self.n_steps_))
        if self.radius is not None:
            self.model.project(self.radius)
        return clipped

    def _draw(self, sampler: SourceSampler, source: int) -> tuple[np.ndarray, np.ndarray]:
        try:
            X, y = sampler(self.rng, self.batch_size)
        except Exception as exc:
            raise RuntimeError(f"the sampler of source {source} failed: {exc}") from exc
        X, y = np.asarray(X), np.asarray(y)
        if X.ndim != 2 or X.shape[0] != self.batch_size or y.shape[:1] != (self.batch_size,):
            raise ValueError(
                f"the sampler of source {source} must return X (batch_size={self.batch_size}, d) and y "
                f"({self.batch_size},); got {X.shape} and {y.shape}"
            )
        return X, y

    def run(self, sources: Sequence[SourceSampler], budget: int, *, record_params: bool = False) -> History:
        """Spend ``budget`` rounds (``budget * batch_size`` labels) on ``sources``, one sampler per source.

        A sampler is ``f(rng, n) -> (X (n, d), y (n,))``.  ``budget`` must be at least the
        number of sources (the warm start samples each source once).
        """
        sources = check_sequence(sources, "sources", item=check_callable)
        record_params = check_bool(record_params, "record_params")
        if len(sources) != self.n_sources:
            raise ValueError(
                f"sources must be {self.n_sources} callables f(rng, n) -> (X, y), got {len(sources)}"
            )
        budget = check_scalar(budget, "budget", "int", min=1)
        if budget < self.n_sources:
            raise ValueError(
                f"budget ({budget}) must be >= n_sources ({self.n_sources}) to warm-start every source"
            )
        chosen, losses = np.empty(budget, dtype=int), np.empty(budget)
        trajectory = [] if record_params else None
        clips0 = self.clips_
        for t in range(budget):
            if self.selector.needs_candidates:
                batches = [self._draw(s, k) for k, s in enumerate(sources)]
                k = self.select_source([b[0] for b in batches])
                X, y = batches[k]
            else:
                k = self.select_source()
                X, y = self._draw(sources[k], k)
            if trajectory is not None:
                trajectory.append(self.model.params)
            chosen[t], losses[t] = k, self.observe(k, X, y)
        return History(
            sources=chosen,
            losses=losses,
            counts=np.bincount(chosen, minlength=self.n_sources),
            final_params=np.asarray(self.model.params, dtype=float),
            averaged_params=self.averaged_params_,
            clips=self.clips_ - clips0,
            params=None if trajectory is None else np.array(trajectory),
        )


class UCBOGD(AdaptiveCollector):
    """UCB-OGD (Zang et al. 2025): ``AdaptiveCollector`` driven by a ``UCBSelector``.

    Round t: ``k_t = argmax_k Lhat_k + bonus_scale * loss_bound * sqrt(2 ln t / n_k)``; label a
    sample from ``k_t``; feed back the current model's loss; OGD step with ``eta0 / sqrt(t)``
    and projection on ``||theta|| <= radius``.  Regret ``O(sqrt(T K ln T))`` (the paper's bound).
    """

    def __init__(
        self,
        n_sources: int,
        model: OnlineModel,
        *,
        loss_bound: float = 1.0,
        eta0: float = 0.1,
        radius: float | None = None,
        bonus_scale: float = 1.0,
        window: int | None = None,
        batch_size: int = 1,
        seed: Seed = None,
    ) -> None:
        selector = UCBSelector(n_sources, loss_bound=loss_bound, bonus_scale=bonus_scale, window=window)
        super().__init__(
            model, selector, loss_bound=loss_bound, eta0=eta0, radius=radius, batch_size=batch_size, seed=seed
        )


# ------------------------------------------------------------------------------ metrics
def _check_eval_sets(eval_sets: EvalSets) -> list[tuple[np.ndarray, np.ndarray]]:
    sets = check_sequence(eval_sets, "eval_sets")
    if not sets or not all(isinstance(s, (tuple, list)) and len(s) == 2 for s in sets):
        raise ValueError("eval_sets must be a non-empty sequence of (X, y) pairs, one per source")
    return [(np.asarray(X), np.asarray(y)) for X, y in sets]


def source_losses(model: OnlineModel, eval_sets: EvalSets) -> np.ndarray:
    """``L_k(theta)`` estimated on each source's held-out set ``(X_k, y_k)``."""
    _check_model(model, ("loss",))
    return np.array([model.loss(X, y) for X, y in _check_eval_sets(eval_sets)])


def worst_source_loss(model: OnlineModel, eval_sets: EvalSets) -> float:
    """``max_k L_k(theta)``: the objective of robust learning across sources."""
    return float(source_losses(model, eval_sets).max())


def source_accuracies(model: OnlineModel, eval_sets: EvalSets) -> np.ndarray:
    """Accuracy of ``argmax predict_proba`` on each source's held-out set."""
    _check_model(model, ("predict_proba",))
    return np.array(
        [np.mean(np.argmax(model.predict_proba(X), axis=1) == y) for X, y in _check_eval_sets(eval_sets)]
    )


def worst_source_accuracy(model: OnlineModel, eval_sets: EvalSets) -> float:
    """``min_k`` accuracy on source ``k``."""
    return float(source_accuracies(model, eval_sets).min())


def solve_minimax(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    theta0: np.ndarray,
    *,
    radius: float | None = None,
    max_iter: int = 500,
) -> tuple[float, np.ndarray]:
    """``min_{||theta|| <= radius} max_k L_k(theta)`` for convex ``L_k``, from ``theta0``.

    ``losses_and_grads(theta)`` returns the K losses ``(K,)`` and their gradients ``(K, p)``.
    Solved as the smooth program ``min_{theta, s} s`` s.t. ``L_k(theta) <= s`` (and the ball)
    with SciPy's SLSQP.  Returns ``(max_k L_k(theta*), theta*)``.
    """
    check_callable(losses_and_grads, "losses_and_grads")
    theta0 = check_array(theta0, "theta0", ndim=1, dtype=float, min_len=1)
    radius = None if radius is None else check_scalar(radius, "radius", "real", min=0.0, inclusive="neither")
    if radius is not None and np.linalg.norm(theta0) > radius:
        theta0 = theta0 * (radius / np.linalg.norm(theta0))
    cache: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}

    def evaluate(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = theta.tobytes()
        if key not in cache:
            L, G = losses_and_grads(theta)
            cache.clear()
            cache[key] = (np.asarray(L, dtype=float), np.asarray(G, dtype=float))
        return cache[key]

    constraints = [
        {
            "type": "ineq",
            "fun": lambda z: z[-1] - evaluate(z[:-1])[0],
            "jac": lambda z: np.column_stack([-evaluate(z[:-1])[1], np.ones(len(evaluate(z[:-1])[0]))]),
        }
    ]
    if radius is not None:
        constraints.append(
            {
                "type": "ineq",
                "fun": lambda z: radius**2 - z[:-1] @ z[:-1],
                "jac": lambda z: np.append(-2 * z[:-1], 0.0),
            }
        )
    objective_grad = np.zeros(theta0.size + 1)
    objective_grad[-1] = 1.0
    res = optimize.minimize(
        lambda z: (z[-1], objective_grad),
        np.append(theta0, evaluate(theta0)[0].max()),
        jac=True,
        constraints=constraints,
        method="SLSQP",
        options={"maxiter": check_scalar(max_iter, "max_iter", "int", min=1), "ftol": 1e-12},
    )
    theta = res.x[:-1]
    if radius is not None and np.linalg.norm(theta) > radius:
        theta = theta * (radius / np.linalg.norm(theta))
    return float(np.max(losses_and_grads(theta)[0])), theta.copy()


def minimax_reference(
    model: OnlineModel, eval_sets: EvalSets, *, radius: float | None = None, max_iter: int = 500
) -> tuple[float, np.ndarray]:
    """The offline group-DRO optimum ``L* = min_{||theta|| <= radius} max_k L_k(theta)`` on held-out sets.

    ``solve_minimax`` on the empirical losses of ``eval_sets``, started from the minimiser of
    the average loss.  Returns ``(L*, theta*)``; ``model`` is not modified.  Suited to convex
    models (logistic, softmax).
    """
    _check_model(model, ("loss", "grad"))
    sets = _check_eval_sets(eval_sets)
    work = copy.deepcopy(model)

    def losses_and_grads(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        work.params = theta
        return np.array([work.loss(X, y) for X, y in sets]), np.array([work.grad(X, y) for X, y in sets])

    def mean_loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        L, G = losses_and_grads(theta)
        return float(L.mean()), G.mean(axis=0)

    start = optimize.minimize(mean_loss, np.asarray(model.params, float), jac=True, method="L-BFGS-B").x
    return solve_minimax(losses_and_grads, start, radius=radius, max_iter=max_iter)


def worst_loss_path(model: OnlineModel, params: np.ndarray, eval_sets: EvalSets) -> np.ndarray:
    """``max_k L_k(theta_t)`` for each iterate of a trajectory ``params (T, p)`` (``History.params``).

    Uses the model's vectorised ``loss_path`` when it has one, else evaluates each iterate
    on a copy of the model.
    """
    _check_model(model, ("loss",))
    params = check_array(params, "params", ndim=2, dtype=float, min_len=1)
    sets = _check_eval_sets(eval_sets)
    if hasattr(model, "loss_path"):
        return np.concatenate(
            [
                np.max([model.loss_path(params[i : i + 256], X, y) for X, y in sets], axis=0)
                for i in range(0, len(params), 256)
            ]
        )
    work = copy.deepcopy(model)
    worst = np.empty(len(params))
    for t, theta in enumerate(params):
        work.params = theta
        worst[t] = worst_source_loss(work, sets)
    return worst


def regret_curve(worst_losses: np.ndarray, L_star: float) -> np.ndarray:
    """Cumulative regret ``R_t = sum_{s<=t} max_k L_k(theta_s) - t L*`` (OUR READING of the paper's regret).

    ``worst_losses[s] = max_k L_k(theta_s)`` (``worst_loss_path``, or exact population losses).
    """
    worst = check_array(worst_losses, "worst_losses", ndim=1, dtype=float, min_len=1)
    return np.cumsum(worst - check_scalar(L_star, "L_star", "real"))


def regret_exponent(horizons: Sequence[float], regrets: Sequence[float]) -> float:
    """Least-squares slope of ``log R_T`` against ``log T`` (0.5 for ``sqrt T`` growth)."""
    T = check_array(horizons, "horizons", ndim=1, dtype=float, min_len=2)
    R = check_array(regrets, "regrets", ndim=1, dtype=float, min_len=2)
    check_consistent_length(T, R, names=("horizons", "regrets"))
    if (T <= 0).any() or (R <= 0).any():
        raise ValueError("horizons and regrets must be > 0 to take logarithms")
    return float(np.polyfit(np.log(T), np.log(R), 1)[0])
