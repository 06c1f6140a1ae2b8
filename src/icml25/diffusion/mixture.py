"""Gaussian mixtures with exact posterior means: the analytic denoiser of the diffusion papers.

For ``x0 ~ Σ_k π_k N(μ_k, s_k² I)`` every quantity a diffusion sampler needs is closed form
(Hu et al., ICML 2025, arXiv 2505.03983; Zhang et al., EasyInv, ICML 2025, arXiv 2408.05159):
under SL, ``y | k ~ N(t·μ_k, (t²s_k² + t) I)`` and ``E[x0 | y, k] = μ_k + s_k²/(t·s_k² + 1)·(y - t·μ_k)``;
under DDPM, ``x_s | k ~ N(sqrt(ᾱ)μ_k, (ᾱ s_k² + 1 - ᾱ) I)``. The posterior mean mixes the
component means with softmax weights of the component evidences, computed in float64.

>>> import torch
>>> gm = GaussianMixture([1.0], [[0.0, 0.0]], [1.0])
>>> gm.posterior_mean(torch.tensor([[2.0, 0.0]]), torch.tensor([1.0])).tolist()  # s²/(t s² + 1) y
[[1.0, 0.0]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from icml25.diffusion.schedules import check_alphas_cumprod, per_sample, timesteps_per_sample
from icml25.utils import check_array, check_probability_vector, check_scalar, check_tensor
from icml25.utils.random import Seed, torch_generator

__all__ = ["GaussianMixture", "MixtureEps"]


class GaussianMixture:
    """``Σ_k weights[k]·N(means[k], stds[k]² I)`` in ``d`` dimensions, with exact posterior means."""

    def __init__(self, weights: Any, means: Any, stds: Any) -> None:
        self.weights = torch.as_tensor(check_probability_vector(weights, "weights"), dtype=torch.float64)
        means = check_array(means, "means", ndim=2, dtype=float, min_len=1)
        if means.shape[0] != self.weights.numel():
            raise ValueError(f"means must have one row per weight ({self.weights.numel()}), got {means.shape[0]}")
        stds = check_array(stds, "stds", ndim=1, dtype=float, shape=(self.weights.numel(),))
        if np.any(stds < 0):
            raise ValueError(f"stds must be >= 0, got min {stds.min():g}")
        self.means = torch.as_tensor(means, dtype=torch.float64)
        self.stds = torch.as_tensor(stds, dtype=torch.float64)

    @classmethod
    def ring(cls, n_modes: int = 8, radius: float = 1.0, std: float = 0.1) -> GaussianMixture:
        """``n_modes`` equal-weight modes on a circle of ``radius`` in 2-D."""
        n_modes = check_scalar(n_modes, "n_modes", "int", min=1)
        radius = check_scalar(radius, "radius", "real", min=0.0)
        std = check_scalar(std, "std", "real", min=0.0)
        angle = 2 * math.pi * np.arange(n_modes) / n_modes
        return cls(np.full(n_modes, 1 / n_modes), radius * np.stack([np.cos(angle), np.sin(angle)], 1),
                   np.full(n_modes, std))

    @classmethod
    def random(cls, n_modes: int = 10, dim: int = 16, std: float = 0.22, seed: Seed = 0) -> GaussianMixture:
        """``n_modes`` equal-weight modes with standard-normal means in ``dim`` dimensions."""
        n_modes = check_scalar(n_modes, "n_modes", "int", min=1)
        dim = check_scalar(dim, "dim", "int", min=1)
        std = check_scalar(std, "std", "real", min=0.0)
        g = torch_generator(seed)
        means = torch.randn(n_modes, dim, generator=g, dtype=torch.float64)
        return cls(np.full(n_modes, 1 / n_modes), means.numpy(), np.full(n_modes, std))

    @property
    def dim(self) -> int:
        return self.means.shape[1]

    def mean(self) -> torch.Tensor:
        """``E[x0]`` (= ``m(0, 0)``)."""
        return self.weights @ self.means

    def sample(self, n: int, seed: Seed = None) -> torch.Tensor:
        """``n`` draws (float64, shape (n, d))."""
        n = check_scalar(n, "n", "int", min=0)
        g = torch_generator(seed)
        k = torch.multinomial(self.weights, n, replacement=True, generator=g) if n else torch.zeros(0, dtype=torch.long)
        noise = torch.randn(n, self.dim, generator=g, dtype=torch.float64)
        return self.means[k] + self.stds[k, None] * noise

    def _check_points(self, z: torch.Tensor, name: str) -> torch.Tensor:
        check_tensor(z, name, ndim=2, floating=True, finite=True)
        if z.shape[1] != self.dim:
            raise ValueError(f"{name} must have {self.dim} columns, got {z.shape[1]}")
        return z.to(torch.float64)

    def _mix(self, z: torch.Tensor, scale: torch.Tensor, var: torch.Tensor, gain: torch.Tensor) -> torch.Tensor:
        """Σ_k w_k(z) (μ_k + gain_k (z - scale μ_k)); z | k ~ N(scale μ_k, var_k I)."""
        centre = scale[:, None, None] * self.means[None]  # (B, K, d)
        diff = z[:, None, :] - centre
        logw = (self.weights.log()[None] - 0.5 * self.dim * var.log()
                - 0.5 * (diff**2).sum(-1) / var)  # (B, K)
        w = torch.softmax(logw, dim=1)
        cond = self.means[None] + gain[..., None] * diff
        return (w[..., None] * cond).sum(1)

    def posterior_mean(self, y: torch.Tensor, t: Any) -> torch.Tensor:
        """``m(y, t) = E[x0 | y_t = y]`` under SL (``t >= 0`` per sample; ``m(·, 0) = E[x0]``)."""
        z = self._check_points(y, "y")
        t = per_sample(t, "t", z.shape[0], low=0.0, low_open=False, high=float("inf"), high_open=True, of="y")
        live = t > 0
        if bool(live.all()):
            return self._sl_mix(z, t).to(y.dtype)
        out = self.mean().expand(z.shape[0], -1).clone()
        if bool(live.any()):
            out[live] = self._sl_mix(z[live], t[live])
        return out.to(y.dtype)

    def _sl_mix(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        tl, s2 = t[:, None], self.stds[None] ** 2
        return self._mix(z, t, tl**2 * s2 + tl, s2 / (tl * s2 + 1))

    def sample_posterior(self, y: torch.Tensor, t: Any, seed: Seed = None) -> torch.Tensor:
        """One draw of ``x0 ~ p(x0 | y_t = y)`` per row (SL; the posterior is again a Gaussian mixture)."""
        z = self._check_points(y, "y")
        t = per_sample(t, "t", z.shape[0], low=0.0, low_open=False, high=float("inf"), high_open=True, of="y")
        g = torch_generator(seed)
        tl, s2 = t[:, None], self.stds[None] ** 2
        var, gain = tl**2 * s2 + tl, s2 / (tl * s2 + 1)
        diff = z[:, None, :] - t[:, None, None] * self.means[None]
        logw = self.weights.log()[None] - 0.5 * self.dim * torch.where(var > 0, var, 1.0).log() \
            - 0.5 * (diff**2).sum(-1) / torch.where(var > 0, var, 1.0)
        logw = torch.where(t[:, None] > 0, logw, self.weights.log()[None])
        k = torch.multinomial(torch.softmax(logw, 1), 1, generator=g).squeeze(1) if z.shape[0] else \
            torch.zeros(0, dtype=torch.long)
        rows = torch.arange(z.shape[0])
        mean = self.means[k] + gain[rows, k][:, None] * diff[rows, k]
        std = (s2[0, k] / (t * s2[0, k] + 1)).sqrt()
        return (mean + std[:, None] * torch.randn(z.shape, generator=g, dtype=torch.float64)).to(y.dtype)

    def denoise(self, x: torch.Tensor, abar: Any) -> torch.Tensor:
        """``E[x0 | x_s = x]`` at DDPM level ``ᾱ`` in (0, 1] per sample (Tweedie's posterior mean)."""
        z = self._check_points(x, "x")
        a = per_sample(abar, "abar", z.shape[0])
        s2, ra = self.stds[None] ** 2, a.sqrt()[:, None]
        var = a[:, None] * s2 + 1 - a[:, None]
        return self._mix(z, a.sqrt(), var, ra * s2 / var).to(x.dtype)

    def eps(self, x: torch.Tensor, abar: Any) -> torch.Tensor:
        """The exact ε-prediction ``(x - sqrt(ᾱ)·E[x0 | x]) / sqrt(1-ᾱ)`` (ᾱ < 1)."""
        z = self._check_points(x, "x")
        a = per_sample(abar, "abar", z.shape[0], high_open=True)[:, None]
        x0 = self.denoise(x, a.reshape(-1)).to(torch.float64)
        return ((x.to(torch.float64) - a.sqrt() * x0) / (1 - a).sqrt()).to(x.dtype)


class MixtureEps:
    """The exact ε-model ``model(x, t)`` of a :class:`GaussianMixture` on a DDPM schedule's timesteps."""

    def __init__(self, mixture: GaussianMixture, alphas_cumprod: torch.Tensor) -> None:
        if not isinstance(mixture, GaussianMixture):
            raise TypeError(f"mixture must be a GaussianMixture, got {type(mixture).__name__}")
        self.mixture = mixture
        self.alphas_cumprod = check_alphas_cumprod(alphas_cumprod)

    def __call__(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        self.mixture._check_points(x, "x")
        t = timesteps_per_sample(t, "t", x.shape[0], self.alphas_cumprod.numel())
        return self.mixture.eps(x, self.alphas_cumprod[t])
