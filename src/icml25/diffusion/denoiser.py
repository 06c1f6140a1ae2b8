"""A small ε-prediction denoiser and its trainer (the learned test bed of the diffusion papers).

``TinyDenoiser`` is an MLP over flattened inputs with a sinusoidal timestep embedding (Ho et al.,
2020, Appendix B, at toy scale); it takes ``(x, t)`` as a diffusers ``UNet2DModel`` does, so the
samplers and inversions of :mod:`icml25.diffusion` treat both alike. :func:`train_denoiser`
minimises the simple loss ``E ||ε - ε_θ(x_t, t)||²`` (Ho et al., 2020, Eq. 14), or its x0 / v
variants.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from icml25.diffusion.schedules import PREDICTION_TYPES, add_noise, check_alphas_cumprod, timesteps_per_sample, to_v
from icml25.utils import check_choice, check_scalar, check_tensor
from icml25.utils.random import Seed, seeded, torch_generator

__all__ = ["TinyDenoiser", "timestep_embedding", "train_denoiser"]


def timestep_embedding(t: torch.Tensor, dim: int, max_period: float = 10_000.0) -> torch.Tensor:
    """Sinusoidal embedding of integer timesteps ``t`` (B,) -> (B, dim) (Vaswani et al., 2017)."""
    dim = check_scalar(dim, "dim", "int", min=2)
    max_period = check_scalar(max_period, "max_period", "real", min=0.0, inclusive="neither")
    t = timesteps_per_sample(t, "t", torch.as_tensor(t).numel() if not isinstance(t, (str, type(None))) else 1,
                             torch.iinfo(torch.int64).max)
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    args = t.to(torch.float64).reshape(-1, 1) * freqs[None]
    emb = torch.cat([args.cos(), args.sin()], dim=1)
    return nn.functional.pad(emb, (0, dim - 2 * half))


class TinyDenoiser(nn.Module):
    """``model(x, t)``: a prediction shaped like ``x`` (B, *shape) at int64 timesteps ``t`` (B,)."""

    def __init__(self, shape: tuple[int, ...] = (1, 8, 8), hidden: int = 256, n_layers: int = 3,
                 time_dim: int = 64, seed: Seed = 0) -> None:
        super().__init__()
        if not isinstance(shape, (tuple, list)) or not shape:
            raise TypeError(f"shape must be a non-empty tuple of ints, got {shape!r}")
        self.shape = tuple(check_scalar(s, f"shape[{i}]", "int", min=1) for i, s in enumerate(shape))
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        n_layers = check_scalar(n_layers, "n_layers", "int", min=1)
        self.time_dim = check_scalar(time_dim, "time_dim", "int", min=2)
        dim = math.prod(self.shape)
        with seeded(seed):
            self.time = nn.Sequential(nn.Linear(self.time_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden))
            self.inp = nn.Linear(dim, hidden)
            self.blocks = nn.ModuleList(nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden)) for _ in range(n_layers))
            self.out = nn.Sequential(nn.SiLU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        check_tensor(x, "x", floating=True)
        if tuple(x.shape[1:]) != self.shape:
            raise ValueError(f"x must have shape (B, {', '.join(map(str, self.shape))}), got {tuple(x.shape)}")
        t = timesteps_per_sample(t, "t", x.shape[0], torch.iinfo(torch.int64).max).to(x.device)
        emb = self.time(timestep_embedding(t, self.time_dim).to(x.dtype))
        h = self.inp(x.flatten(1)) + emb
        for block in self.blocks:
            h = h + block(h) + emb
        return self.out(h).reshape(x.shape)


def train_denoiser(model: nn.Module, data: torch.Tensor, alphas_cumprod: torch.Tensor, *, steps: int = 2000,
                   batch_size: int = 128, lr: float = 2e-3, prediction_type: str = "epsilon",
                   seed: Seed = 0) -> list[float]:
    """Train ``model(x_t, t)`` on ``data`` (N, *shape) with the simple DDPM loss; returns the loss per step.

    Timesteps are uniform on the schedule, Adam with a cosine learning-rate decay; every random
    draw comes from ``seed``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    check_tensor(data, "data", floating=True, finite=True)
    if data.ndim < 2 or data.shape[0] < 1:
        raise ValueError(f"data must be a batch (N, ...) with N >= 1, got shape {tuple(data.shape)}")
    abar = check_alphas_cumprod(alphas_cumprod)
    steps = check_scalar(steps, "steps", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    check_choice(prediction_type, "prediction_type", PREDICTION_TYPES)
    g = torch_generator(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, data.shape[0], (batch_size,), generator=g)
        x0 = data[idx]
        t = torch.randint(0, abar.numel(), (batch_size,), generator=g)
        eps = torch.randn(x0.shape, generator=g, dtype=x0.dtype)
        xt = add_noise(x0, eps, t, abar)
        target = {"epsilon": eps, "sample": x0}.get(prediction_type)
        if target is None:
            target = to_v(eps, x0, abar[t].to(x0.dtype))
        try:
            pred = model(xt, t)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"model cannot take data of shape {tuple(data.shape)}: {exc}") from exc
        loss = nn.functional.mse_loss(pred, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
