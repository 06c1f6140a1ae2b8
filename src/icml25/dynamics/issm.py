"""iSSM: Nejatbakhsh & Wang, "Identifying Neural Dynamics Using Interventional State Space Models", ICML 2025.

Example
-------
>>> from icml25.data.stimulated_dynamics import simulate_linear_latent, stimulation_trials
>>> from icml25.dynamics import ISSM, aligned_r2
>>> u = stimulation_trials(8, 60, 2, seed=0)                  # (K, T, M): pulses, one latent at a time
>>> x, y, truth = simulate_linear_latent(8, 60, u=u, seed=0)   # clamped linear latents, MLP emission
>>> model = ISSM(D=2, N=10, M=2, interventional=True, seed=0)  # interventional=False: the plain SSM
>>> losses = model.fit(y, u, n_iter=50)                        # amortised VI on the ELBO
>>> x_hat = model.infer_latents(y, u).numpy()                  # posterior means, (K, T, D)
>>> score = aligned_r2(x, x_hat, mask=(u == 0).all(-1))        # R2 on unstimulated steps

The model of the paper (official code ``models.py``/``inference.py``, JAX), re-implemented in
PyTorch with the same blocks:

- dynamics ``InterventionalLDS``: ``x_1 ~ N(mu_0, Sigma_0)`` and ``x_t ~ N(mu_t, L L^T)`` with
  ``mu_t = m_t * ((1 - dt) x_{t-1} + dt A x_{t-1}) + B u_t`` and ``m_t = 1[latent not stimulated at t]``,
  so a stimulated latent is set by the stimulus (a do-intervention) and its parents are cut.  With
  ``interventional=False`` the mask is dropped (``m_t = 1``): the observational SSM with additive input;
- emission ``MLPEmission`` (D -> 100 -> 100 -> 100 -> N, tanh, optional softplus) or ``LinearEmission``;
- Gaussian or Poisson likelihood;
- amortised mean-field posterior ``LSTMRecognition`` (one LSTM for the means, one for the scales),
  with the same intervention applied to the posterior mean;
- ``ISSM.fit``: Adam on ``mean_k[-log p(x, y | u) + gamma log q(x)] - log p(B)`` with one reparameterised
  sample (``gamma = 1``: the negative ELBO).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

from icml25.utils.random import Seed, init_rng, seeded, torch_generator
from icml25.utils.validation import check_array, check_bool, check_choice, check_scalar, check_sequence, check_tensor

__all__ = [
    "ISSM",
    "InterventionalLDS",
    "LSTMRecognition",
    "LinearEmission",
    "MLPEmission",
    "align_latents",
    "aligned_r2",
    "eigen_error",
]

_LOG_2PI = math.log(2.0 * math.pi)
ArrayLike = np.ndarray | torch.Tensor




def _batch(x: Any, name: str, last: int, *, ndim: int | None = None, finite: bool = False,
           like: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` as a non-empty floating tensor of shape ``(..., last)`` (``ndim`` axes if given).

    A tensor is taken as is; an array-like is converted to the dtype and device of ``like``.
    """
    if not isinstance(x, torch.Tensor):
        if like is None:
            x = check_tensor(x, name)
        x = torch.as_tensor(check_array(x, name, dtype=float, finite=False), dtype=like.dtype, device=like.device)
    x = check_tensor(x, name, ndim=ndim, floating=True, finite=finite)
    if x.ndim == 0 or x.shape[-1] != last or x.numel() == 0:
        lead = "..., " if ndim is None else "K, T, " if ndim == 3 else "B, "
        raise ValueError(f"{name} must be a non-empty tensor of shape ({lead}{last}), got shape {tuple(x.shape)}")
    return x


def _same_lead(a: torch.Tensor, b: torch.Tensor, names: tuple[str, str]) -> None:
    """``a`` and ``b`` must agree on every axis but the last."""
    if a.shape[:-1] != b.shape[:-1]:
        raise ValueError(f"{names[0]} and {names[1]} must agree on every axis but the last, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")


def _gaussian_tril_log_prob(r: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """log N(r; 0, L L^T) over the last axis of ``r`` (L lower triangular with positive diagonal)."""
    flat = r.reshape(-1, r.shape[-1])
    z = torch.linalg.solve_triangular(L, flat.T, upper=False).T
    quad = (z**2).sum(-1).reshape(r.shape[:-1])
    return -0.5 * quad - torch.log(torch.diagonal(L)).sum() - 0.5 * r.shape[-1] * _LOG_2PI


class InterventionalLDS(nn.Module):
    """Linear latent dynamics in which stimulation is an intervention (official ``LinearDynamics``).

    ``mean(x, u) = m * ((1 - dt) x + dt A x) + B u`` with ``m = 1[latent not stimulated]``;
    ``interventional=False`` gives the observational SSM ``(1 - dt) x + dt A x + B u``.

    A latent ``i`` counts as stimulated at a step when some channel ``j`` with ``u_j != 0`` reaches
    it, ``|B_ij| > 0`` for a fixed ``B``, ``|B_ij| > B_tol`` for a learned one (the official code
    tests ``B u == 0`` exactly, which a learned ``B`` that is tiny but nonzero would break).
    ``B`` defaults to the identity (each latent stimulated by its own channel, ``M == D``).
    A learned ``B`` gets the Laplace prior ``log p(B) = -sum |B_ij| / B_sparsity``.
    The process noise is ``L L^T`` with ``L = noise_scale I`` (default ``dt I``), learned as a
    full lower-triangular ``L`` when ``learn_noise``; the initial state is ``N(0, (init_scale I)^2)``.
    ``A`` is initialised from ``N(0, 1)``: from ``seed`` (torch's global generator left as it was), or
    from torch's global generator when ``seed`` is None (``ISSM`` seeds it that way).
    """

    def __init__(
        self,
        D: int,
        M: int,
        dt: float = 0.05,
        interventional: bool = True,
        B: np.ndarray | torch.Tensor | None = None,
        learn_B: bool = False,
        B_sparsity: float = 0.1,
        B_tol: float = 1e-2,
        learn_noise: bool = False,
        noise_scale: float | None = None,
        init_scale: float | None = None,
        seed: Seed | None = None,
    ) -> None:
        super().__init__()
        self.D, self.M = check_scalar(D, "D", "int", min=1), check_scalar(M, "M", "int", min=1)
        self.dt = check_scalar(dt, "dt", "real", min=0.0, max=1.0, inclusive="neither")
        self.interventional = check_bool(interventional, "interventional")
        self.learn_B = check_bool(learn_B, "learn_B")
        learn_noise = check_bool(learn_noise, "learn_noise")
        self.B_sparsity = check_scalar(B_sparsity, "B_sparsity", "real", min=0.0, inclusive="neither")
        self.B_tol = check_scalar(B_tol, "B_tol", "real", min=0.0)
        if B is None:
            if M != D and not learn_B:
                raise ValueError(f"B must be given when M ({M}) != D ({D}) and B is not learned")
            B = torch.eye(D, M)
        B = torch.as_tensor(B, dtype=torch.get_default_dtype()).clone()
        if B.shape != (D, M):
            raise ValueError(f"B must have shape (D, M) = ({D}, {M}), got {tuple(B.shape)}")
        if not torch.isfinite(B).all():
            raise ValueError("B must contain only finite values, got NaN or inf")
        if learn_B:
            self.B = nn.Parameter(B)
        else:
            if (B == 0).all(0).any():
                dead = torch.nonzero((B == 0).all(0)).flatten().tolist()
                raise ValueError(f"columns {dead} of B are zero: those input channels would stimulate no latent")
            self.register_buffer("B", B)
        with init_rng(seed):
            self.A = nn.Parameter(torch.randn(D, D))
        positive = {"min": 0.0, "inclusive": "neither"}
        noise = self.dt if noise_scale is None else check_scalar(noise_scale, "noise_scale", "real", **positive)
        init = self.dt if init_scale is None else check_scalar(init_scale, "init_scale", "real", **positive)
        raw = torch.diag(torch.full((D,), math.log(noise)))
        if learn_noise:
            self.noise_raw = nn.Parameter(raw)
        else:
            self.register_buffer("noise_raw", raw)
        self.register_buffer("init_mean", torch.zeros(D))
        self.register_buffer("init_tril", init * torch.eye(D))

    @property
    def scale_tril(self) -> torch.Tensor:
        """``L`` with ``Sigma_x = L L^T`` (strictly lower part as is, diagonal through ``exp``)."""
        return torch.tril(self.noise_raw, -1) + torch.diag(torch.exp(torch.diagonal(self.noise_raw)))

    def transition_matrix(self) -> torch.Tensor:
        """The discrete transition of an unstimulated step, ``(1 - dt) I + dt A``."""
        eye = torch.eye(self.D, dtype=self.A.dtype, device=self.A.device)
        return (1.0 - self.dt) * eye + self.dt * self.A

    def flow(self, x: torch.Tensor) -> torch.Tensor:
        """The learned vector field ``dx/dt = A x - x`` at the points ``x`` (..., D)."""
        x = _batch(x, "x", self.D)
        return x @ self.A.T - x

    def stimulated(self, u: torch.Tensor) -> torch.Tensor:
        """Boolean (..., D): which latents the inputs ``u`` (..., M) reach (see the class docstring)."""
        u = _batch(u, "u", self.M, finite=True)
        tol = self.B_tol if self.learn_B else 0.0
        support = (self.B.detach().abs() > tol).to(u.dtype)
        return ((u != 0).to(u.dtype) @ support.T) > 0

    def intervene(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``m * x + B u`` (iSSM) or ``x + B u`` (SSM): the stimulus applied to latents ``x`` (..., D)."""
        x, u = _batch(x, "x", self.D), _batch(u, "u", self.M)
        _same_lead(x, u, ("x", "u"))
        s = u @ self.B.T
        if not self.interventional:
            return x + s
        return torch.where(self.stimulated(u), torch.zeros_like(x), x) + s

    def mean(self, x_prev: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``mu_t`` from ``x_{t-1}`` (..., D) and ``u_t`` (..., M)."""
        x_prev, u = _batch(x_prev, "x_prev", self.D), _batch(u, "u", self.M)
        _same_lead(x_prev, u, ("x_prev", "u"))
        return self.intervene(x_prev @ self.transition_matrix().T, u)

    def log_prob(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``log p(x_{1:T} | u_{1:T})`` per trial, shape (K,), for ``x`` (K, T, D) and ``u`` (K, T, M).

        The stimulus at ``t = 1`` acts on the initial mean the same way, ``mu_1 = intervene(mu_0, u_1)``.
        """
        x, u = _batch(x, "x", self.D, ndim=3), _batch(u, "u", self.M, ndim=3)
        _same_lead(x, u, ("x", "u"))
        mu1 = self.intervene(self.init_mean.expand(x.shape[0], -1), u[:, 0])
        lp = _gaussian_tril_log_prob(x[:, 0] - mu1, self.init_tril)
        if x.shape[1] > 1:
            mu = self.mean(x[:, :-1], u[:, 1:])
            lp = lp + _gaussian_tril_log_prob(x[:, 1:] - mu, self.scale_tril).sum(1)
        return lp

    def log_prior(self) -> torch.Tensor:
        """Laplace prior of a learned ``B``, ``-sum |B_ij| / B_sparsity`` (0 for a fixed ``B``)."""
        if not self.learn_B:
            return self.A.new_zeros(())
        return -self.B.abs().sum() / self.B_sparsity

    @torch.no_grad()
    def sample(
        self, T: int, u: ArrayLike | None = None, x0: ArrayLike | None = None,
        seed: Seed | torch.Generator = None, K: int | None = None,
    ) -> torch.Tensor:
        """Draw latents (K, T, D) under inputs ``u`` (K, T, M); ``x0`` (K, D) replaces the initial draw.

        ``seed``: an int, a NumPy Generator, a ``torch.Generator`` (used as is) or ``None`` (fresh entropy).
        ``K`` (int >= 1): the number of trials; ``None`` takes it from ``u`` (1 without ``u``).
        """
        T = check_scalar(T, "T", "int", min=1)
        if K is not None:
            K = check_scalar(K, "K", "int", min=1)
        dtype, device = self.A.dtype, self.A.device
        generator = torch_generator(seed, device=device)
        if u is None:
            u = torch.zeros(1 if K is None else K, T, self.M, dtype=dtype, device=device)
        u = _batch(u, "u", self.M, ndim=3, finite=True, like=self.A)
        if u.shape[1] != T or (K is not None and u.shape[0] != K):
            raise ValueError(f"u must have shape (K, T, M) with T={T}, M={self.M}"
                             f"{'' if K is None else f', K={K}'}, got {tuple(u.shape)}")
        K = u.shape[0]

        def noise() -> torch.Tensor:
            return torch.randn(K, self.D, generator=generator, dtype=dtype, device=device)

        if x0 is None:
            x = self.intervene(self.init_mean.expand(K, -1), u[:, 0]) + noise() @ self.init_tril.T
        else:
            x = _batch(x0, "x0", self.D, ndim=2, finite=True, like=self.A)
            if tuple(x.shape) != (K, self.D):
                raise ValueError(f"x0 must have shape (K, D) = ({K}, {self.D}), got {tuple(x.shape)}")
        xs = [x]
        L = self.scale_tril
        for t in range(1, T):
            x = self.mean(x, u[:, t]) + noise() @ L.T
            xs.append(x)
        return torch.stack(xs, 1)


class MLPEmission(nn.Module):
    """``g(x)``: ``layers`` tanh layers of width ``hidden`` then a linear map to N, softplus when ``positive``.

    The official ``NeuralNetEmission`` is D -> 100 -> 100 -> 100 -> N (the defaults).  ``seed`` fixes the
    initial weights (torch's global RNG left as it was); ``None`` draws them from torch's global RNG.
    """

    def __init__(self, D: int, N: int, hidden: int = 100, layers: int = 3, positive: bool = False,
                 seed: Seed | None = None) -> None:
        super().__init__()
        D, N = check_scalar(D, "D", "int", min=1), check_scalar(N, "N", "int", min=1)
        hidden, layers = check_scalar(hidden, "hidden", "int", min=1), check_scalar(layers, "layers", "int", min=1)
        self.positive = check_bool(positive, "positive")
        blocks: list[nn.Module] = []
        width = D
        with init_rng(seed):
            for _ in range(layers):
                blocks += [nn.Linear(width, hidden), nn.Tanh()]
                width = hidden
            blocks.append(nn.Linear(width, N))
        self.net = nn.Sequential(*blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``g(x)`` for latents ``x`` (..., D)."""
        out = self.net(_batch(x, "x", self.net[0].in_features))
        return nn.functional.softplus(out) if self.positive else out


class LinearEmission(nn.Module):
    """``g(x) = C x + d`` (softplus of it when ``positive``); ``seed`` as in :class:`MLPEmission`."""

    def __init__(self, D: int, N: int, positive: bool = False, seed: Seed | None = None) -> None:
        super().__init__()
        D, N = check_scalar(D, "D", "int", min=1), check_scalar(N, "N", "int", min=1)
        self.positive = check_bool(positive, "positive")
        with init_rng(seed):
            self.linear = nn.Linear(D, N)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``g(x)`` for latents ``x`` (..., D)."""
        out = self.linear(_batch(x, "x", self.linear.in_features))
        return nn.functional.softplus(out) if self.positive else out


class LSTMRecognition(nn.Module):
    """Amortised mean-field posterior ``q(x_t | y_{1:t}, u_{1:t}) = N(mean_t, diag scale_t^2)``.

    As the official ``AmortizedLSTM``: one LSTM over ``[y_t, u_t]`` and a dense layer give the means,
    a second LSTM, dense layer and softplus give the scales.  ``forward`` returns them before the
    intervention (``ISSM.posterior`` applies it).  ``seed`` as in :class:`MLPEmission`.
    """

    def __init__(self, D: int, N: int, M: int, hidden: int = 32, seed: Seed | None = None) -> None:
        super().__init__()
        D, N, M, hidden = (check_scalar(v, n, "int", min=1)
                           for n, v in (("D", D), ("N", N), ("M", M), ("hidden", hidden)))
        self.N, self.M = N, M
        with init_rng(seed):
            self.mean_rnn = nn.LSTM(N + M, hidden, batch_first=True)
            self.mean_out = nn.Linear(hidden, D)
            self.scale_rnn = nn.LSTM(N + M, hidden, batch_first=True)
            self.scale_out = nn.Linear(hidden, D)

    def forward(self, y: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Means and scales (K, T, D) from observations ``y`` (K, T, N) and inputs ``u`` (K, T, M)."""
        y, u = _batch(y, "y", self.N, ndim=3), _batch(u, "u", self.M, ndim=3)
        _same_lead(y, u, ("y", "u"))
        data = torch.cat([y, u], -1)
        mean = self.mean_out(self.mean_rnn(data)[0])
        scale = nn.functional.softplus(self.scale_out(self.scale_rnn(data)[0])) + 1e-5
        return mean, scale


class ISSM(nn.Module):
    """Interventional state-space model (``interventional=True``) or the observational SSM baseline.

    The two differ only in the mask of ``InterventionalLDS`` (and the same mask on the posterior
    mean).  ``emission`` is ``"mlp"`` (``MLPEmission(D, N, hidden, layers)``) or ``"linear"``;
    ``likelihood`` is ``"gaussian"`` (diagonal std ``obs_scale``, default ``dt``, learned when
    ``learn_obs_noise``) or ``"poisson"`` (rates from the emission, which must then be positive:
    ``positive=None`` picks softplus for Poisson).  ``rnn_hidden`` is the LSTM width of the
    recognition model (10 in the official code).  ``seed`` fixes the initial parameters (torch's
    global generator is left as it was).  Inputs are batch-first: ``y`` (K, T, N), ``u`` (K, T, M).
    """

    def __init__(
        self,
        D: int,
        N: int,
        M: int,
        dt: float = 0.05,
        interventional: bool = True,
        emission: str = "mlp",
        likelihood: str = "gaussian",
        positive: bool | None = None,
        hidden: int = 100,
        layers: int = 3,
        rnn_hidden: int = 32,
        B: np.ndarray | torch.Tensor | None = None,
        learn_B: bool = False,
        B_sparsity: float = 0.1,
        B_tol: float = 1e-2,
        learn_noise: bool = False,
        noise_scale: float | None = None,
        obs_scale: float | None = None,
        learn_obs_noise: bool = False,
        seed: Seed = 0,
    ) -> None:
        super().__init__()
        self.D, self.N, self.M = (check_scalar(v, n, "int", min=1) for n, v in (("D", D), ("N", N), ("M", M)))
        check_scalar(rnn_hidden, "rnn_hidden", "int", min=1)
        for name, flag in (("interventional", interventional), ("learn_B", learn_B), ("learn_noise", learn_noise),
                           ("learn_obs_noise", learn_obs_noise)):
            check_bool(flag, name)
        check_choice(emission, "emission", ("mlp", "linear"))
        check_choice(likelihood, "likelihood", ("gaussian", "poisson"))
        positive = likelihood == "poisson" if positive is None else check_bool(positive, "positive")
        if likelihood == "poisson" and not positive:
            raise ValueError("a Poisson likelihood needs positive rates: use positive=True (softplus emission)")
        if D > N:
            warnings.warn(f"D={D} latents for N={N} observations: the emission cannot be injective", stacklevel=2)
        self.likelihood = likelihood
        with seeded(seed):
            self.dynamics = InterventionalLDS(
                D, M, dt=dt, interventional=interventional, B=B, learn_B=learn_B, B_sparsity=B_sparsity,
                B_tol=B_tol, learn_noise=learn_noise, noise_scale=noise_scale)
            self.emission = (MLPEmission(D, N, hidden, layers, positive) if emission == "mlp"
                             else LinearEmission(D, N, positive))
            self.recognition = LSTMRecognition(D, N, M, rnn_hidden)
        obs = (self.dynamics.dt if obs_scale is None
               else check_scalar(obs_scale, "obs_scale", "real", min=0.0, inclusive="neither"))
        log_obs = torch.full((N,), math.log(obs))
        if learn_obs_noise:
            self.log_obs_scale = nn.Parameter(log_obs)
        else:
            self.register_buffer("log_obs_scale", log_obs)

    @property
    def interventional(self) -> bool:
        return self.dynamics.interventional

    def _inputs(self, y: ArrayLike, u: ArrayLike, name: str = "y") -> tuple[torch.Tensor, torch.Tensor]:
        ref = self.dynamics.A
        y = torch.as_tensor(check_array(y, name, dtype=float, finite=False), dtype=ref.dtype, device=ref.device)
        u = torch.as_tensor(check_array(u, "u", dtype=float, finite=False), dtype=ref.dtype, device=ref.device)
        if y.ndim != 3 or y.shape[-1] != self.N:
            raise ValueError(f"{name} must have shape (K, T, N) with N={self.N}, got {tuple(y.shape)}")
        if u.ndim != 3 or u.shape[-1] != self.M:
            raise ValueError(f"u must have shape (K, T, M) with M={self.M}, got {tuple(u.shape)}")
        if y.numel() == 0 or u.numel() == 0:
            raise ValueError(f"{name} and u must be non-empty, got shapes {tuple(y.shape)} and {tuple(u.shape)}")
        if u.shape[0] != y.shape[0] or u.shape[1] < y.shape[1]:
            raise ValueError(f"u {tuple(u.shape)} must have the same K as {name} {tuple(y.shape)} and at least its T")
        if not torch.isfinite(y).all():
            raise ValueError(f"{name} must contain only finite values, got NaN or inf "
                             "(missing observations are not supported)")
        if not torch.isfinite(u).all():
            raise ValueError("u must contain only finite values, got NaN or inf")
        if self.likelihood == "poisson" and (y < 0).any():
            raise ValueError("a Poisson likelihood needs counts y >= 0")
        return y, u

    def _check_pair(self, y: ArrayLike, u: ArrayLike) -> tuple[torch.Tensor, torch.Tensor]:
        y, u = self._inputs(y, u)
        if u.shape[1] != y.shape[1]:
            raise ValueError(f"u {tuple(u.shape)} and y {tuple(y.shape)} must have the same T")
        return y, u

    def posterior(self, y: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior means (the intervention applied, as in the official code) and scales, each (K, T, D)."""
        y, u = _batch(y, "y", self.N, ndim=3), _batch(u, "u", self.M, ndim=3)
        _same_lead(y, u, ("y", "u"))
        mean, scale = self.recognition(y, u)
        return self.dynamics.intervene(mean, u), scale

    def log_likelihood(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``sum_t log p(y_t | x_t)`` per trial, (K,), for ``y`` (K, T, N) and latents ``x`` (K, T, D)."""
        y, x = _batch(y, "y", self.N, ndim=3), _batch(x, "x", self.D, ndim=3)
        _same_lead(y, x, ("y", "x"))
        rate = self.emission(x)
        if self.likelihood == "poisson":
            return (y * torch.log(rate + 1e-8) - rate - torch.lgamma(y + 1.0)).sum((1, 2))
        z = (y - rate) * torch.exp(-self.log_obs_scale)
        return (-0.5 * z**2 - self.log_obs_scale - 0.5 * _LOG_2PI).sum((1, 2))

    def loss(self, y: torch.Tensor, u: torch.Tensor, entropy_weight: float = 1.0,
             seed: Seed | torch.Generator = None) -> torch.Tensor:
        """``mean_k[-log p(x, y | u) + gamma log q(x)] - log p(B)`` at one sample ``x ~ q``.

        With ``entropy_weight`` (gamma) 1 this is the negative ELBO; the official demo uses 0.
        ``seed`` (an int, a NumPy or a ``torch.Generator``, used as is) drives the sample.
        ``y`` (K, T, N) and ``u`` (K, T, M) must be finite.
        """
        y, u = _batch(y, "y", self.N, ndim=3, finite=True), _batch(u, "u", self.M, ndim=3, finite=True)
        entropy_weight = check_scalar(entropy_weight, "entropy_weight", "real", min=0.0)
        mean, scale = self.posterior(y, u)
        generator = torch_generator(seed, device=mean.device)
        eps = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
        x = mean + scale * eps
        log_q = (-0.5 * eps**2 - torch.log(scale) - 0.5 * _LOG_2PI).sum((1, 2))
        log_joint = self.dynamics.log_prob(x, u) + self.log_likelihood(y, x)
        return (-log_joint + entropy_weight * log_q).mean() - self.dynamics.log_prior()

    def fit(
        self,
        y: ArrayLike,
        u: ArrayLike,
        n_iter: int = 500,
        lr: float = 1e-2,
        betas: tuple[float, float] = (0.8, 0.9),
        entropy_weight: float = 1.0,
        seed: Seed | torch.Generator = 0,
        callback: Callable[[int, float], None] | None = None,
    ) -> list[float]:
        """Full-batch Adam on the loss (official ``infer``: lr 1e-2, betas (0.8, 0.9)); returns the loss per step.

        All parameters are learned jointly: ``A``, the emission, the recognition networks, and ``B`` /
        noise scales when they are learnable.  ``seed`` (an int, a NumPy or a ``torch.Generator``) drives
        the reparameterisation noise.
        """
        y, u = self._check_pair(y, u)
        n_iter = check_scalar(n_iter, "n_iter", "int", min=1)
        lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
        entropy_weight = check_scalar(entropy_weight, "entropy_weight", "real", min=0.0)
        betas = tuple(check_sequence(betas, "betas", min_len=2,
                                     item=lambda b, n: check_scalar(b, n, "real", min=0.0, max=1.0, inclusive="left")))
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2) in [0, 1), got {betas}")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, got {type(callback).__name__}")
        if not (u != 0).any():
            warnings.warn("u is zero everywhere: without interventions the iSSM equals the SSM and its latents "
                          "are identifiable only up to an invertible linear map", stacklevel=2)
        generator = torch_generator(seed, device=y.device)
        optimizer = torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=lr, betas=betas)
        history = []
        self.train()
        for step in range(n_iter):
            optimizer.zero_grad(set_to_none=True)
            value = self.loss(y, u, entropy_weight, generator)
            value.backward()
            optimizer.step()
            history.append(float(value.detach()))
            if callback is not None:
                callback(step, history[-1])
        if not math.isfinite(history[-1]):
            raise FloatingPointError("the loss diverged (non-finite); lower lr")
        self.eval()
        return history

    @torch.no_grad()
    def infer_latents(self, y: ArrayLike, u: ArrayLike) -> torch.Tensor:
        """Posterior means of the latents, (K, T, D)."""
        y, u = self._check_pair(y, u)
        return self.posterior(y, u)[0]

    @torch.no_grad()
    def reconstruct(self, y: ArrayLike, u: ArrayLike) -> torch.Tensor:
        """The emission at the posterior means, (K, T, N) (denoised observations)."""
        return self.emission(self.infer_latents(y, u))

    @torch.no_grad()
    def predict(self, u: ArrayLike, y_prefix: ArrayLike | None = None, x0: ArrayLike | None = None,
                return_latents: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Responses (K, T, N) to the stimulation ``u`` (K, T, M), rolled out open-loop with the mean dynamics.

        Give either ``y_prefix`` (K, P, N), the first ``P`` observed steps (their inputs are
        ``u[:, :P]``): the latents of steps ``< P`` are the posterior means and the roll-out starts
        from the last of them; or ``x0`` (K, D), the latent at step 0.  ``return_latents`` also
        returns the latents (K, T, D).
        """
        if (y_prefix is None) == (x0 is None):
            raise ValueError("give exactly one of y_prefix and x0")
        return_latents = check_bool(return_latents, "return_latents")
        ref = self.dynamics.A
        u = torch.as_tensor(check_array(u, "u", dtype=float, finite=False), dtype=ref.dtype, device=ref.device)
        if u.ndim != 3 or u.shape[-1] != self.M or u.numel() == 0:
            raise ValueError(f"u must have shape (K, T, M) with M={self.M}, got {tuple(u.shape)}")
        if y_prefix is not None:
            y_prefix, u = self._inputs(y_prefix, u, "y_prefix")
            P = y_prefix.shape[1]
            xs = list(self.posterior(y_prefix, u[:, :P])[0].unbind(1))
        else:
            x0 = torch.as_tensor(check_array(x0, "x0", dtype=float, finite=False), dtype=ref.dtype, device=ref.device)
            if x0.shape != (u.shape[0], self.D):
                raise ValueError(f"x0 must have shape (K, D) = ({u.shape[0]}, {self.D}), got {tuple(x0.shape)}")
            if not torch.isfinite(u).all() or not torch.isfinite(x0).all():
                raise ValueError("u and x0 must contain only finite values, got NaN or inf")
            xs = [x0]
        for t in range(len(xs), u.shape[1]):
            xs.append(self.dynamics.mean(xs[-1], u[:, t]))
        x = torch.stack(xs, 1)
        y_pred = self.emission(x)
        return (y_pred, x) if return_latents else y_pred

    def transition_matrix(self) -> torch.Tensor:
        """The learned discrete transition ``(1 - dt) I + dt A``."""
        return self.dynamics.transition_matrix()

    def flow(self, x: ArrayLike) -> torch.Tensor:
        """The learned vector field ``A x - x`` at points ``x`` (..., D)."""
        with torch.no_grad():
            return self.dynamics.flow(_batch(x, "x", self.D, like=self.dynamics.A))


def _as_latents(name: str, x: np.ndarray | torch.Tensor) -> np.ndarray:
    x = check_array(x, name, dtype=float)
    if x.ndim < 2:
        raise ValueError(f"{name} must be an array of shape (..., D), got shape {x.shape}")
    return x


def align_latents(
    x_true: np.ndarray | torch.Tensor, x_hat: np.ndarray | torch.Tensor, mask: np.ndarray | None = None,
    mode: str = "perm", return_map: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x_hat`` mapped onto the coordinates of ``x_true`` (same shape as ``x_true``), fitted where ``mask``.

    The map is affine, ``x_hat @ W + c``, least squares on the masked points.  ``mode``: ``"diag"``
    one coordinate to the same coordinate (official ``diag_reg``); ``"perm"`` the best permutation of
    the coordinates (by squared correlation, Hungarian assignment), sign and scale free per
    coordinate, the identifiability class of the iSSM; ``"linear"`` any ``W`` (official ``reg``), the
    identifiability class of a plain SSM.  ``return_map`` also returns ``W`` (D_hat, D) and ``c`` (D,).
    """
    x_true, x_hat = _as_latents("x_true", x_true), _as_latents("x_hat", x_hat)
    return_map = check_bool(return_map, "return_map")
    if x_true.shape[:-1] != x_hat.shape[:-1]:
        raise ValueError(f"x_true {x_true.shape} and x_hat {x_hat.shape} must agree except in the last axis")
    D, Dh = x_true.shape[-1], x_hat.shape[-1]
    check_choice(mode, "mode", ("diag", "perm", "linear"))
    if mode == "diag" and Dh != D:
        raise ValueError(f"mode='diag' needs the same number of latents, got {D} and {Dh}")
    if mode == "perm" and Dh < D:
        raise ValueError(f"mode='perm' needs at least as many inferred latents ({Dh}) as true ones ({D})")
    sel = np.ones(x_true.shape[:-1], bool) if mask is None else np.asarray(mask, bool)
    if sel.shape != x_true.shape[:-1]:
        raise ValueError(f"mask must have shape {x_true.shape[:-1]}, got {sel.shape}")
    if sel.sum() < 2:
        raise ValueError("mask must select at least 2 points")
    t, h = x_true[sel], x_hat[sel]
    if mode == "linear":
        coef = np.linalg.lstsq(np.c_[h, np.ones(len(h))], t, rcond=None)[0]
        W, c = coef[:-1], coef[-1]
    else:
        if mode == "diag":
            rows, cols = np.arange(D), np.arange(D)
        else:
            hc, tc = h - h.mean(0), t - t.mean(0)
            denom = np.sqrt(np.outer((tc**2).sum(0), (hc**2).sum(0))) + 1e-300
            rows, cols = linear_sum_assignment(-((tc.T @ hc / denom) ** 2))
        W, c = np.zeros((Dh, D)), t.mean(0)
        for i, j in zip(rows, cols, strict=True):
            var = h[:, j].var()
            W[j, i] = np.mean((h[:, j] - h[:, j].mean()) * (t[:, i] - t[:, i].mean())) / var if var > 0 else 0.0
            c[i] = t[:, i].mean() - W[j, i] * h[:, j].mean()
    aligned = x_hat @ W + c
    return (aligned, W, c) if return_map else aligned


def aligned_r2(
    x_true: np.ndarray | torch.Tensor, x_hat: np.ndarray | torch.Tensor, mask: np.ndarray | None = None,
    mode: str = "perm", per_dim: bool = False,
) -> float | np.ndarray:
    """R^2 of ``x_true`` against ``align_latents(x_true, x_hat, mask, mode)`` on the masked points.

    The mean over coordinates (or each coordinate's R^2 with ``per_dim``).  A coordinate of
    ``x_true`` that is constant on the mask has no R^2: ``ValueError``.
    """
    x_true_np = _as_latents("x_true", x_true)
    per_dim = check_bool(per_dim, "per_dim")
    aligned = align_latents(x_true_np, x_hat, mask, mode)
    sel = np.ones(x_true_np.shape[:-1], bool) if mask is None else np.asarray(mask, bool)
    t, a = x_true_np[sel], aligned[sel]
    ss_tot = ((t - t.mean(0)) ** 2).sum(0)
    if np.any(ss_tot <= 0):
        raise ValueError("a coordinate of x_true is constant on the mask: R^2 is undefined")
    r2 = 1.0 - ((t - a) ** 2).sum(0) / ss_tot
    return r2 if per_dim else float(r2.mean())


def eigen_error(M_hat: np.ndarray | torch.Tensor, M_true: np.ndarray | torch.Tensor) -> float:
    """Mean ``|lambda_hat - lambda|`` over the eigenvalues of two square matrices, optimally matched.

    Eigenvalues are invariant to an invertible change of latent coordinates, so no alignment is needed.
    Pass discrete transitions (``ISSM.transition_matrix()``) to compare as the paper does.
    """
    M_hat = check_array(M_hat, "M_hat", ndim=2)  # a float32 model's matrix stays float32
    M_true = check_array(M_true, "M_true", ndim=2, dtype=float)
    if M_hat.shape[0] != M_hat.shape[1] or M_hat.shape != M_true.shape:
        raise ValueError(f"M_hat and M_true must be square matrices of the same shape, got shapes "
                         f"{M_hat.shape} and {M_true.shape}")
    a, b = np.linalg.eigvals(M_hat), np.linalg.eigvals(M_true)
    cost = np.abs(a[:, None] - b[None, :])
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())
