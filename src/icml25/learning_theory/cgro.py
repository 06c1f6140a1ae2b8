"""Li & Li (ICML 2025): Clean Generalization and Robust Overfitting (CGRO) through robust memorization.

Two views of why adversarially trained networks fit the training set robustly, generalize on clean data
and still fail under attack at test time:

* representation-complexity view: ``RobustMemorizer`` wraps any clean classifier ``g`` with O(N·D) extra
  ReLU units, a "bump" of the perturbation radius around every training point, so that the result is
  certifiably robust on every training point while it equals ``g`` away from them (clean behaviour kept,
  robust test behaviour as poor as ``g``'s).  ``interval_bounds`` and ``RobustMemorizer.certify`` give the
  certificates; ``extra_parameters`` counts what the construction costs.
* training-dynamics view: ``TwoLayerPatchCNN`` (shared filters, cubic or smoothed-ReLU
  activation) trained adversarially on ``icml25.data.patch_data`` learns the true feature first and then
  memorizes the per-example noise; ``DynamicsTracker`` records feature learning ``Φ_t = max_r |⟨w_r, w*⟩|``
  and noise memorization ``Ψ_t = mean_i max_r |⟨w_r, ξ_i⟩|`` and splits the run into stages.

Attacks and adversarial training live in ``icml25.learning_theory.attacks``.

Example
-------
>>> import torch
>>> from icml25.data.tensors import digits_tensors
>>> from icml25.utils.nn import make_mlp, train_classifier
>>> from icml25.learning_theory.cgro import RobustMemorizer
>>> data = digits_tensors(test_size=0.2, seed=0)
>>> g = make_mlp([64, 32, 10], seed=0)
>>> _ = train_classifier(g, data.X_train, data.y_train, epochs=5)
>>> F = RobustMemorizer(g, data.X_train, data.y_train, eps=0.05)
>>> bool(F.certify(data.X_train, data.y_train).all())   # robust on every training ball
True
>>> F.extra_parameters == data.X_train.shape[0] * (6 * 64 + 2)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from icml25.learning_theory.attacks import Clip, check_clip
from icml25.utils.random import Seed, torch_generator
from icml25.utils.validation import (
    check_array,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_tensor,
)

CONFLICT_RULES = ("raise", "drop")
ACTIVATIONS = ("cubic", "smooth_relu")

_MONOTONE = (nn.ReLU, nn.LeakyReLU, nn.Tanh, nn.Sigmoid, nn.ELU, nn.Softplus, nn.Hardtanh)
_IDENTITY = (nn.Identity, nn.Dropout, nn.Flatten, nn.Unflatten)


def interval_bounds(model: nn.Module, lower: torch.Tensor, upper: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Sound output bounds of ``model`` over the box ``[lower, upper]`` (interval bound propagation).

    Supports ``nn.Sequential`` stacks of ``Linear``, monotone activations (ReLU, LeakyReLU, Tanh,
    Sigmoid, ELU, Softplus, Hardtanh), ``Flatten``/``Unflatten``, ``Identity`` and ``Dropout`` (eval).
    """
    check_instance(model, "model", nn.Module, "a torch.nn.Module")
    check_tensor(lower, "lower", floating=True, finite=True)
    check_tensor(upper, "upper", floating=True, finite=True)
    if lower.shape != upper.shape or bool((lower > upper).any()):
        raise ValueError("lower and upper must have the same shape with lower <= upper")
    layers = list(model) if isinstance(model, nn.Sequential) else [model]
    lo, hi = lower, upper
    for layer in layers:
        if isinstance(layer, nn.Sequential):
            lo, hi = interval_bounds(layer, lo, hi)
        elif isinstance(layer, nn.Linear):
            mid, rad = (hi + lo) / 2, (hi - lo) / 2
            mid = functional.linear(mid, layer.weight, layer.bias)
            rad = functional.linear(rad, layer.weight.abs())
            lo, hi = mid - rad, mid + rad
        elif isinstance(layer, _MONOTONE):
            lo, hi = layer(lo), layer(hi)
        elif isinstance(layer, _IDENTITY):
            lo, hi = (layer(lo), layer(hi)) if not isinstance(layer, nn.Dropout) else (lo, hi)
        else:
            raise TypeError(f"interval_bounds supports Linear, monotone activations, Flatten, Identity and Dropout "
                            f"inside nn.Sequential, not {type(layer).__name__}; pass M explicitly")
    return lo, hi


def separation(X: torch.Tensor, y: torch.Tensor | None = None, norm: str = "linf") -> float:
    """Smallest pairwise distance between the rows of ``X`` (flattened); only between different labels if
    ``y`` is given.  ``norm`` is ``"linf"`` or ``"l2"``.  Returns ``inf`` when no pair qualifies."""
    check_choice(norm, "norm", ("linf", "l2"))
    check_tensor(X, "X", ndim=tuple(range(1, 9)), finite=True)
    if X.shape[0] == 0:
        raise ValueError(f"X must have at least one row, got shape {tuple(X.shape)}")
    if y is not None:
        check_tensor(y, "y", ndim=1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
    flat = X.reshape(X.shape[0], -1).to(torch.float64)
    dist = torch.cdist(flat, flat, p=float("inf") if norm == "linf" else 2.0)
    mask = torch.ones_like(dist, dtype=torch.bool).triu(diagonal=1)
    if y is not None:
        mask &= y[:, None] != y[None, :]
    return float(dist[mask].min()) if bool(mask.any()) else float("inf")


class RobustMemorizer(nn.Module):
    """The robust-memorization construction of the representation view: ``F(x) = g(x) + M Σ_i y_i b_i(x)``.

    Per training point ``x_i`` and coordinate ``d`` two ReLUs give ``s_i(x) = Σ_d [ReLU(x_d − x_{i,d} − ε) +
    ReLU(x_{i,d} − x_d − ε)]``, zero exactly on the ℓ∞ ball of radius ``eps`` around ``x_i``; the bump
    ``b_i(x) = ReLU(1 − s_i(x)/τ)`` is 1 on that ball and 0 once ``s_i ≥ τ`` (so outside the ℓ∞ ball of radius
    ``eps + tau``).  For logits ``(n, C)`` the bump adds ``M`` to the logit of class ``y_i``; for one score
    ``(n,)`` it adds ``M·y_i`` (labels ±1).  ``M`` defaults to twice the largest logit gap of ``g`` over the
    bounding box of the bump supports, bounded soundly by ``interval_bounds`` (pass ``M`` for models it
    does not support).

    Precondition: training points with *different* labels are more than ``2(eps + tau)`` apart in ℓ∞, so
    the supports of opposite bumps are disjoint (overlapping bumps of the same label only add to the true
    logit).  Pairs closer than ``2 eps`` make robust memorization impossible and always raise; pairs in
    between raise with ``on_conflict="raise"`` or, with ``"drop"``, the later point of each pair is dropped
    (``dropped_`` lists them).  ``norm="l2"`` uses the same ℓ∞ plateau, which contains the ℓ2 ball of radius
    ``eps`` (conservative; reconstructed, the paper's construction is stated for one norm).
    """

    def __init__(self, clean_model: nn.Module, X_train: torch.Tensor, y_train: torch.Tensor, eps: float, *,
                 tau: float | None = None, norm: str = "linf", M: float | None = None, clip: Clip = (0.0, 1.0),
                 on_conflict: str = "raise") -> None:
        super().__init__()
        eps = check_scalar(eps, "eps", "real", min=0.0, inclusive="neither")
        tau = eps / 2 if tau is None else check_scalar(tau, "tau", "real", min=0.0, inclusive="neither")
        check_choice(norm, "norm", ("linf", "l2"))
        check_choice(on_conflict, "on_conflict", CONFLICT_RULES)
        check_instance(clean_model, "clean_model", nn.Module, "a torch.nn.Module")
        check_instance(X_train, "X_train", torch.Tensor, "a torch.Tensor")
        check_instance(y_train, "y_train", torch.Tensor, "a torch.Tensor")
        if X_train.is_complex() or not X_train.is_floating_point():
            raise TypeError(f"X_train must be a floating-point torch.Tensor, got dtype {X_train.dtype}")
        if not bool(torch.isfinite(X_train).all()):
            raise ValueError("X_train must contain only finite values, got NaN or inf")
        if M is not None:
            M = check_scalar(M, "M", "real", min=0.0, inclusive="neither")
        if X_train.ndim < 2 or y_train.ndim != 1 or X_train.shape[0] != y_train.shape[0] or X_train.shape[0] == 0:
            raise ValueError(f"X_train must be (n, ...) and y_train (n,) with n > 0, got {tuple(X_train.shape)} "
                             f"and {tuple(y_train.shape)}")
        clip = check_clip(clip)
        if clip is not None and bool(((X_train < clip[0]) | (X_train > clip[1])).any()):
            raise ValueError(f"X_train lies outside the clip range {clip}")
        self.clean_model, self.eps, self.tau, self.norm, self.clip = clean_model, float(eps), float(tau), norm, clip
        self.input_shape = tuple(X_train.shape[1:])
        with torch.no_grad():
            probe = clean_model(X_train[:1])
        self.binary = probe.ndim == 1 or probe.shape[-1] == 1
        self.num_classes = 1 if self.binary else int(probe.shape[-1])
        y_train = y_train.detach()
        if self.binary and not bool(((y_train == 1) | (y_train == -1)).all()):
            raise ValueError("a model with one output score needs labels in {-1, +1}")
        if not self.binary and not bool(((y_train >= 0) & (y_train < self.num_classes)).all()):
            raise ValueError(f"labels must be integers in [0, {self.num_classes})")
        flat = X_train.detach().reshape(X_train.shape[0], -1)
        keep = self._resolve_conflicts(flat, y_train, on_conflict)
        self.kept_ = torch.nonzero(keep).flatten()
        self.dropped_ = torch.nonzero(~keep).flatten()
        self.register_buffer("centres", flat[keep].clone())
        self.register_buffer("labels", y_train[keep].clone())
        self.M = float(M) if M is not None else self._default_bump_height()
        if not (math.isfinite(self.M) and self.M > 0):
            raise ValueError(f"M must be a finite number > 0; the default bump height of clean_model came out as "
                             f"{self.M!r} (pass M explicitly)")

    def _resolve_conflicts(self, flat: torch.Tensor, y: torch.Tensor, on_conflict: str) -> torch.Tensor:
        dist = torch.cdist(flat.to(torch.float64), flat.to(torch.float64), p=float("inf"))
        differ = (y[:, None] != y[None, :]).triu(diagonal=1)
        impossible = torch.nonzero(differ & (dist <= 2 * self.eps))
        if impossible.numel():
            i, j = (int(v) for v in impossible[0])
            raise ValueError(f"training points {i} and {j} have different labels and are {float(dist[i, j]):.4g} "
                             f"apart in l-inf (<= 2*eps = {2 * self.eps:.4g}): no classifier is robust on both")
        close = differ & (dist <= 2 * (self.eps + self.tau))
        keep = torch.ones(flat.shape[0], dtype=torch.bool, device=flat.device)
        if not bool(close.any()):
            return keep
        if on_conflict == "raise":
            i, j = (int(v) for v in torch.nonzero(close)[0])
            raise ValueError(f"{int(close.sum())} pairs of differently labelled training points are closer than "
                             f"2*(eps + tau) = {2 * (self.eps + self.tau):.4g} in l-inf (first: {i} and {j}); "
                             "lower tau or pass on_conflict='drop'")
        for i, j in torch.nonzero(close).tolist():
            if keep[i] and keep[j]:
                keep[j] = False
        return keep

    def _default_bump_height(self) -> float:
        reach = self.eps + self.tau
        lo = self.centres.min(dim=0).values - reach
        hi = self.centres.max(dim=0).values + reach
        if self.clip is not None:
            lo, hi = lo.clamp(*self.clip), hi.clamp(*self.clip)
        with torch.no_grad():
            glo, ghi = interval_bounds(self.clean_model, lo.reshape(1, *self.input_shape),
                                       hi.reshape(1, *self.input_shape))
        gap = float(torch.maximum(glo.abs(), ghi.abs()).max()) if self.binary else float(ghi.max() - glo.min())
        return 2.0 * max(gap, 1e-6)

    @property
    def n_balls(self) -> int:
        """Number of memorized training points."""
        return int(self.centres.shape[0])

    @property
    def extra_hidden_units(self) -> int:
        """ReLU units the construction adds: ``N (2D + 1)``."""
        return self.n_balls * (2 * self.centres.shape[1] + 1)

    @property
    def extra_parameters(self) -> int:
        """Nonzero weights and biases of the added ReLU network: ``N (6D + 2)``.

        Per point: 2D first-layer units with one weight and one bias each (4D), the bump unit with 2D
        weights and a bias (2D + 1) and one output weight — O(N·D), as in the paper's theorem.
        """
        return self.n_balls * (6 * self.centres.shape[1] + 2)

    def _pairs(self, flat: torch.Tensor, radius: float) -> tuple[torch.Tensor, torch.Tensor]:
        """(row, ball) pairs with ℓ∞ distance < ``radius``: an ℓ2 pre-filter (ℓ∞ ≤ ℓ2 ≤ √D ℓ∞, one matrix
        product) and the exact ℓ∞ test on the survivors; no Python loop over training points."""
        with torch.no_grad():
            flat, centres = flat.detach(), self.centres.to(flat.dtype)
            l2 = torch.cdist(flat, centres)
            rows, balls = torch.nonzero(l2 < radius * (flat.shape[1] ** 0.5) * (1 + 1e-6) + 1e-6, as_tuple=True)
            close = (flat[rows] - centres[balls]).abs().amax(dim=1) < radius
        return rows[close], balls[close]

    def _check_batch(self, x: torch.Tensor, name: str, finite: bool = False) -> torch.Tensor:
        """``x`` of shape ``(n, *input_shape)``, floating, flattened to ``(n, D)``."""
        check_tensor(x, name, floating=True, finite=finite)
        if tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(f"{name} must have shape (n, {', '.join(map(str, self.input_shape))}), "
                             f"got {tuple(x.shape)}")
        return x.reshape(x.shape[0], self.centres.shape[1])

    def bump_output(self, x: torch.Tensor) -> torch.Tensor:
        """The added term ``M Σ_i y_i b_i(x)`` (shape of ``g``'s output); only nearby balls are evaluated.

        ``x`` has shape ``(n, *input_shape)``; NaN propagates as in a forward pass.
        """
        flat = self._check_batch(x, "x")
        rows, balls = self._pairs(flat, self.eps + self.tau)
        s = functional.relu((flat[rows] - self.centres[balls].to(flat.dtype)).abs() - self.eps).sum(dim=1)
        bump = self.M * functional.relu(1 - s / self.tau)
        if self.binary:
            return torch.zeros(x.shape[0], dtype=flat.dtype, device=flat.device).index_add(
                0, rows, bump * self.labels[balls].to(flat.dtype))
        out = torch.zeros(x.shape[0], self.num_classes, dtype=flat.dtype, device=flat.device)
        return out.index_put((rows, self.labels[balls].long()), bump, accumulate=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._check_batch(x, "x")
        out = self.clean_model(x)
        return out + self.bump_output(x).reshape(out.shape)

    @torch.no_grad()
    def certify(self, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Boolean mask: ``F`` provably predicts ``y`` on the whole ℓ∞ ball of radius ``eps`` around each row.

        Bounds: ``g`` by interval bound propagation over the box; each bump exactly (``s_i`` is a sum of
        convex one-dimensional terms, so its range over a box is the sum of the ranges).  Sound, not
        complete.  For ``norm="l2"`` the ℓ∞ box contains the ℓ2 ball, so the certificate covers it too.
        """
        flat = self._check_batch(X, "X", finite=True)
        check_tensor(y, "y", ndim=1)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X and y must have the same length, got {X.shape[0]} and {y.shape[0]}")
        lo, hi = flat - self.eps, flat + self.eps
        if self.clip is not None:
            lo, hi = lo.clamp(*self.clip), hi.clamp(*self.clip)
        glo, ghi = interval_bounds(self.clean_model, lo.reshape(X.shape), hi.reshape(X.shape))
        rows, balls = self._pairs(flat, 2 * self.eps + self.tau)
        c = self.centres[balls].to(flat.dtype)
        near = torch.maximum(torch.maximum(lo[rows] - c, c - hi[rows]), torch.zeros_like(c))
        far = torch.maximum((lo[rows] - c).abs(), (hi[rows] - c).abs())
        b_low = functional.relu(1 - functional.relu(far - self.eps).sum(dim=1) / self.tau) * self.M
        b_high = functional.relu(1 - functional.relu(near - self.eps).sum(dim=1) / self.tau) * self.M
        labels = self.labels[balls]
        if self.binary:
            glo, ghi = glo.reshape(-1), ghi.reshape(-1)
            yf = y.to(flat.dtype)
            same = labels.to(flat.dtype) == yf[rows]
            gain = torch.zeros_like(yf).index_add(0, rows, torch.where(same, b_low, -b_high))
            return torch.where(yf > 0, glo, -ghi) + gain > 0
        n, C = X.shape[0], self.num_classes
        low = torch.zeros(n, C, dtype=flat.dtype, device=flat.device).index_put(
            (rows, labels.long()), b_low, accumulate=True)
        high = torch.zeros(n, C, dtype=flat.dtype, device=flat.device).index_put(
            (rows, labels.long()), b_high, accumulate=True)
        true_low = (glo + low).gather(1, y.long()[:, None]).squeeze(1)
        others_high = (ghi + high).scatter(1, y.long()[:, None], float("-inf")).max(dim=1).values
        return true_low > others_high

    def bump_network(self) -> nn.Sequential:
        """The added term as an explicit dense ReLU network ``D → 2DN → N → C`` (for checks on small N).

        Its nonzero weights and biases number ``extra_parameters``; ``F(x) = g(x) + bump_network()(x)``.
        """
        N, D = self.centres.shape
        dtype = self.centres.dtype
        first = nn.Linear(D, 2 * D * N)
        second = nn.Linear(2 * D * N, N)
        out = nn.Linear(N, self.num_classes, bias=False)
        with torch.no_grad():
            eye = torch.eye(D, dtype=dtype)
            first.weight.copy_(torch.cat([eye, -eye], dim=0).repeat(N, 1))
            first.bias.copy_(torch.cat([-self.centres - self.eps, self.centres - self.eps], dim=1).reshape(-1))
            second.weight.copy_(torch.block_diag(*[torch.full((1, 2 * D), -1.0 / self.tau, dtype=dtype)] * N))
            second.bias.fill_(1.0)
            if self.binary:
                out.weight.copy_(self.M * self.labels.to(dtype)[None, :])
            else:
                out.weight.copy_(self.M * functional.one_hot(self.labels.long(), self.num_classes).to(dtype).T)
        return nn.Sequential(nn.Flatten(), first, nn.ReLU(), second, nn.ReLU(), out)


class TwoLayerPatchCNN(nn.Module):
    """Two-layer convolutional network of the dynamics view: ``f(W, x) = Σ_r Σ_p σ(⟨w_{+,r}, x_p⟩) −
    Σ_r Σ_p σ(⟨w_{−,r}, x_p⟩)`` with ``m`` shared filters per class, on inputs ``(n, P, d)``; returns ``(n,)``.

    ``activation="cubic"`` is ``σ(z) = z³``; ``"smooth_relu"`` is the smoothed ReLU of Allen-Zhu & Li
    (0 for z ≤ 0, ``z^q / (q ρ^{q−1})`` on (0, ρ], ``z − (1 − 1/q) ρ`` beyond).  Filters start as
    ``N(0, init_std² I)`` from ``seed``.
    """

    def __init__(self, d: int, m: int = 32, *, activation: str = "cubic", init_std: float = 0.01, rho: float = 1.0,
                 q: int = 3, seed: Seed = 0) -> None:
        super().__init__()
        d, m, q = (check_scalar(value, name, "int", min=1) for name, value in (("d", d), ("m", m), ("q", q)))
        check_choice(activation, "activation", ACTIVATIONS)
        init_std = check_scalar(init_std, "init_std", "real", min=0.0, inclusive="neither")
        rho = check_scalar(rho, "rho", "real", min=0.0, inclusive="neither")
        self.d, self.m, self.activation, self.rho, self.q = d, m, activation, rho, q
        generator = torch_generator(seed)
        self.weight = nn.Parameter(torch.randn(2, m, d, generator=generator) * init_std)

    @property
    def filters(self) -> torch.Tensor:
        """All ``2m`` filters as rows ``(2m, d)`` (first the +1 bank)."""
        return self.weight.reshape(2 * self.m, self.d)

    def act(self, z: torch.Tensor) -> torch.Tensor:
        """The activation σ, elementwise on a floating tensor of any shape."""
        check_tensor(z, "z", floating=True)
        if self.activation == "cubic":
            return z ** 3
        rho, q = self.rho, self.q
        inner = z.clamp(0, rho) ** q / (q * rho ** (q - 1))
        return torch.where(z > rho, z - (1 - 1 / q) * rho, inner)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        if x.ndim != 3 or x.shape[-1] != self.d:
            raise ValueError(f"x must be (n, patches, {self.d}), got {tuple(x.shape)}")
        n, patches, _ = x.shape
        z = x.reshape(n * patches, self.d) @ self.filters.T
        h = self.act(z).reshape(n, patches, 2, self.m).sum(dim=(1, 3))
        return h[:, 0] - h[:, 1]


class DynamicsTracker:
    """Records feature learning and noise memorization along training (a ``callback`` of ``adversarial_train``).

    ``Φ_t = max_r |⟨w_r, w*⟩|`` over all filters and ``Ψ_t = mean_i max_r max_p |⟨w_r, ξ_{i,p}⟩|`` over the
    training noise patches ``train_noise`` (``(n, d)`` or ``(n, patches − 1, d)``).  The model must expose its
    filters as ``model.filters`` (``(K, d)``).  ``evaluate(model) -> dict`` (optional) is called every
    ``eval_every`` recorded steps and its values are stored in ``extras``.
    """

    def __init__(self, w_star: torch.Tensor | np.ndarray, train_noise: torch.Tensor | np.ndarray, *, every: int = 1,
                 evaluate: Callable[[nn.Module], dict[str, float]] | None = None, eval_every: int | None = None):
        w_np = check_array(w_star, "w_star", ndim=1, dtype=float, min_len=1)
        if not np.any(w_np):
            raise ValueError("w_star must be a nonzero vector (it is normalised)")
        noise_np = check_array(train_noise, "train_noise", ndim=(2, 3), dtype=float, min_len=1)
        if noise_np.size == 0:
            raise ValueError(f"train_noise must be non-empty, got shape {noise_np.shape}")
        w = torch.as_tensor(w_np, dtype=torch.float32)
        noise = torch.as_tensor(noise_np, dtype=torch.float32)
        if noise.ndim == 2:
            noise = noise[:, None, :]
        if noise.ndim != 3 or noise.shape[-1] != w.shape[0]:
            raise ValueError(f"train_noise must be (n, {w.shape[0]}) or (n, k, {w.shape[0]}), got {tuple(noise.shape)}")
        every = check_scalar(every, "every", "int", min=1)
        if evaluate is not None:
            check_callable(evaluate, "evaluate")
        if eval_every is not None:
            eval_every = check_scalar(eval_every, "eval_every", "int", min=1)
        self.w_star, self.noise, self.every = w / w.norm(), noise, every
        self.evaluate, self.eval_every = evaluate, eval_every
        self.steps: list[int] = []
        self.phi: list[float] = []
        self.psi: list[float] = []
        self.extras: dict[str, list[tuple[int, float]]] = {}

    def _filters(self, model: nn.Module) -> torch.Tensor:
        filters = getattr(model, "filters", None)
        if not isinstance(filters, torch.Tensor) or filters.ndim != 2 or filters.shape[1] != self.w_star.shape[0]:
            raise TypeError(f"the model must expose its filters as model.filters of shape (K, {self.w_star.shape[0]})")
        return filters.detach().to(torch.float32).cpu()

    def feature_alignment(self, model: nn.Module) -> float:
        """``Φ = max_r |⟨w_r, w*⟩|``."""
        return float((self._filters(model) @ self.w_star).abs().max())

    def noise_memorization(self, model: nn.Module) -> float:
        """``Ψ = mean_i max_r max_p |⟨w_r, ξ_{i,p}⟩|``."""
        corr = torch.einsum("kd,npd->nkp", self._filters(model), self.noise).abs()
        return float(corr.amax(dim=(1, 2)).mean())

    def __call__(self, step: int, model: nn.Module) -> None:
        if step % self.every:
            return
        self.steps.append(step)
        self.phi.append(self.feature_alignment(model))
        self.psi.append(self.noise_memorization(model))
        if self.evaluate is not None and self.eval_every and (len(self.steps) - 1) % self.eval_every == 0:
            for key, value in self.evaluate(model).items():
                self.extras.setdefault(key, []).append((step, float(value)))

    def stages(self, feature_fraction: float = 0.9, memorization_fraction: float = 0.5) -> tuple[int, int]:
        """``(t1, t3)``: the first recorded step where Φ reaches ``feature_fraction`` of its final value
        (end of stage I) and where Ψ reaches ``memorization_fraction`` of its final value (start of stage III)."""
        if not self.steps:
            raise ValueError("nothing recorded yet")
        for name, value in (("feature_fraction", feature_fraction), ("memorization_fraction", memorization_fraction)):
            check_scalar(value, name, "real", min=0.0, max=1.0, inclusive="right")
        phi, psi, steps = np.asarray(self.phi), np.asarray(self.psi), np.asarray(self.steps)
        t1 = int(steps[np.argmax(phi >= feature_fraction * phi[-1])])
        t3 = int(steps[np.argmax(psi >= memorization_fraction * psi[-1])])
        return t1, t3

    def value_at(self, step: int, which: str = "psi") -> float:
        """The recorded Φ (``which="phi"``) or Ψ (``"psi"``) at ``step``."""
        if which not in ("phi", "psi"):
            raise ValueError(f"which must be 'phi' or 'psi', got {which!r}")
        if step not in self.steps:
            raise ValueError(f"step {step} was not recorded")
        return getattr(self, which)[self.steps.index(step)]
