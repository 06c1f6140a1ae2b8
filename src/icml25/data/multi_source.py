"""Multi-source data for learning across K distributions: a seeded synthetic logistic task
and corruptions of the 8x8 digits (one source per corruption).

Used by ``icml25.bandits.ucb_ogd``; nothing here downloads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy import ndimage
from scipy.special import expit

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_choice, check_scalar

DIGIT_CORRUPTIONS = ("clean", "noise", "occlusion", "rotation")

# Gauss-Hermite rule for E f(Z), Z ~ N(0, 1); 160 nodes: error < 1e-7 for softplus(a + s Z), s <= 5.
_GH_NODES, _GH_WEIGHTS = hermegauss(160)
_GH_WEIGHTS = _GH_WEIGHTS / np.sqrt(2.0 * np.pi)


@dataclass(frozen=True)
class MultiSourceLogistic:
    """K logistic-regression sources: x ~ N(means[k], I), y ~ Bernoulli(sigmoid(<weights[k], x>))."""

    means: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        means = check_array(self.means, "means", ndim=2, dtype=float, min_len=1)
        weights = check_array(self.weights, "weights", shape=means.shape, dtype=float)
        object.__setattr__(self, "means", means)
        object.__setattr__(self, "weights", weights)

    @property
    def n_sources(self) -> int:
        return self.means.shape[0]

    @property
    def n_features(self) -> int:
        return self.means.shape[1]

    def sample(self, source: int, n: int, seed: Seed = None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` labelled samples ``(X (n, d), y (n,) in {0, 1})`` from source ``source``."""
        source = check_scalar(source, "source", "int", min=0, max=self.n_sources - 1)
        n = check_scalar(n, "n", "int", min=1)
        rng = as_generator(seed)
        X = self.means[source] + rng.standard_normal((n, self.n_features))
        p = 1.0 / (1.0 + np.exp(-(X @ self.weights[source])))
        return X, (rng.random(n) < p).astype(float)

    def samplers(self) -> list:
        """One sampler ``f(rng, n) -> (X, y)`` per source (the labelling oracles of a collector)."""
        return [lambda rng, n, k=k: self.sample(k, n, rng) for k in range(self.n_sources)]

    def _gaussian_means(self, a: np.ndarray, s: np.ndarray, f) -> np.ndarray:
        """``E f(a + s Z)`` for ``Z ~ N(0, 1)``, elementwise over broadcast ``a`` and ``s``."""
        return f(a[..., None] + s[..., None] * _GH_NODES) @ _GH_WEIGHTS

    def _label_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Per source ``E sigmoid(v)`` and ``E sigmoid'(v)`` for ``v = <w_k, x>``."""
        b, r = self.weights @ self.means.T, np.linalg.norm(self.weights, axis=1)
        b = np.diag(b)
        return self._gaussian_means(b, r, expit), self._gaussian_means(b, r, lambda v: expit(v) * expit(-v))

    def _check_params(self, params: np.ndarray) -> np.ndarray:
        params = np.asarray(params, dtype=float)
        if params.shape[-1:] != (self.n_features,) or params.ndim > 2 or not np.isfinite(params).all():
            raise ValueError(
                f"params must be finite with shape (d,) or (m, d), d = {self.n_features}; got {params.shape}"
            )
        return params

    def population_losses(self, params: np.ndarray) -> np.ndarray:
        """Exact expected log-loss ``L_k(theta)`` of a logistic model ``p(y=1|x) = sigmoid(<theta, x>)``.

        ``params`` is ``theta (d,)`` or a trajectory ``(m, d)``; returns ``(K,)`` or ``(m, K)``.
        With ``u = <theta, x>``, ``v = <w_k, x>`` jointly Gaussian, Stein's lemma gives
        ``L_k = E softplus(u) - E[u] E sigmoid(v) - Cov(u, v) E sigmoid'(v)``: three 1-D Gaussian
        integrals, computed by Gauss-Hermite quadrature (no sampling error).
        """
        theta = self._check_params(params)
        p, q = self._label_moments()
        a, cov = theta @ self.means.T, theta @ self.weights.T
        s = np.broadcast_to(np.linalg.norm(theta, axis=-1)[..., None], a.shape)
        return self._gaussian_means(a, s, lambda u: np.logaddexp(0.0, u)) - a * p - cov * q

    def population_grads(self, theta: np.ndarray) -> np.ndarray:
        """Gradients ``(K, d)`` of ``population_losses`` at ``theta (d,)``:
        ``mu_k (E sigmoid(u) - E sigmoid(v)) + theta E sigmoid'(u) - w_k E sigmoid'(v)``."""
        theta = self._check_params(theta)
        if theta.ndim != 1:
            raise ValueError(f"theta must be one parameter vector (d,), got shape {theta.shape}")
        p, q = self._label_moments()
        a, s = self.means @ theta, np.full(self.n_sources, np.linalg.norm(theta))
        su = self._gaussian_means(a, s, expit)
        dsu = self._gaussian_means(a, s, lambda u: expit(u) * expit(-u))
        return self.means * (su - p)[:, None] + np.outer(dsu, theta) - self.weights * q[:, None]

    def eval_sets(self, n: int, seed: Seed = 0) -> list[tuple[np.ndarray, np.ndarray]]:
        """Held-out ``(X, y)`` per source, ``n`` samples each (population-loss estimates)."""
        rng = as_generator(seed)
        return [self.sample(k, n, rng) for k in range(self.n_sources)]


def make_multisource_logistic(
    n_sources: int = 5,
    n_features: int = 20,
    *,
    n_hard: int = 1,
    signal: float = 3.0,
    spread: float = 0.5,
    conflict: float = 3.0,
    mean_shift: float = 1.0,
    seed: Seed = 0,
) -> MultiSourceLogistic:
    """The synthetic task of the ucb_ogd reproduction: ``w_k = w_0 + delta_k`` with ``|w_0| = signal``.

    The first ``n_sources - n_hard`` sources are close to ``w_0`` (``|delta_k| = spread``); the
    last ``n_hard`` are "hard" minority sources whose ``delta_k`` has norm ``conflict`` and points
    away from ``w_0`` (half along ``-w_0``, half orthogonal), so that the average-loss minimiser
    fits them badly.  Source means ``mu_k`` are random with norm ``mean_shift``.
    """
    n_sources = check_scalar(n_sources, "n_sources", "int", min=1)
    n_features = check_scalar(n_features, "n_features", "int", min=1)
    n_hard = check_scalar(n_hard, "n_hard", "int", min=0, max=n_sources)
    if n_features < 2 and n_hard > 0:
        raise ValueError(f"n_features must be >= 2 when n_hard > 0 (an orthogonal direction), got {n_features}")
    signal = check_scalar(signal, "signal", "real", min=0.0)
    spread = check_scalar(spread, "spread", "real", min=0.0)
    conflict = check_scalar(conflict, "conflict", "real", min=0.0)
    mean_shift = check_scalar(mean_shift, "mean_shift", "real", min=0.0)
    rng = as_generator(seed)

    def unit(v: np.ndarray) -> np.ndarray:
        return v / np.linalg.norm(v)

    w0 = unit(rng.standard_normal(n_features))
    weights = np.empty((n_sources, n_features))
    for k in range(n_sources):
        if k < n_sources - n_hard:
            delta = spread * unit(rng.standard_normal(n_features))
        else:
            v = rng.standard_normal(n_features)
            ortho = unit(v - (v @ w0) * w0)
            delta = conflict * unit(-w0 + ortho)
        weights[k] = signal * w0 + delta
    means = mean_shift * np.array([unit(rng.standard_normal(n_features)) for _ in range(n_sources)])
    return MultiSourceLogistic(means=means, weights=weights)


def corrupt_digits(
    X: np.ndarray,
    kind: str,
    seed: Seed = None,
    *,
    noise_sd: float = 0.25,
    occlusion: float = 0.3,
    angle: float = 30.0,
) -> np.ndarray:
    """Corrupt flattened 8x8 digits ``X (n, 64)`` with pixels in [0, 1] (``load_digits_split``).

    ``kind`` is one of ``DIGIT_CORRUPTIONS``: ``clean`` (a copy), ``noise`` (Gaussian pixel noise
    with sd ``noise_sd``; 0.25 is sd 4 on the raw 0..16 scale), ``occlusion`` (a random fraction
    ``occlusion`` of each image's pixels set to 0), ``rotation`` (rotated by ``angle`` degrees,
    bilinear, same size).  Noise and occlusion are drawn from ``as_generator(seed)``: pass a Generator
    for fresh draws on every call.
    """
    X = check_array(X, "X", shape=(None, 64), dtype=float)
    check_choice(kind, "kind", DIGIT_CORRUPTIONS)
    rng = as_generator(seed)
    if kind == "clean":
        return X.copy()
    if kind == "noise":
        return X + check_scalar(noise_sd, "noise_sd", "real", min=0.0) * rng.standard_normal(X.shape)
    if kind == "occlusion":
        occlusion = check_scalar(occlusion, "occlusion", "real", min=0.0, max=1.0)
        n_off = int(round(occlusion * 64))
        off = np.argsort(rng.random(X.shape), axis=1)[:, :n_off]
        out = X.copy()
        np.put_along_axis(out, off, 0.0, axis=1)
        return out
    angle = check_scalar(angle, "angle", "real")
    images = ndimage.rotate(X.reshape(-1, 8, 8), angle, axes=(1, 2), reshape=False, order=1)
    return images.reshape(-1, 64)
