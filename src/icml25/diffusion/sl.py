"""DDPM <-> stochastic localization (SL): time and state maps, and posterior means from a denoiser.

Stochastic localization observes ``y_t = t·x0 + B_t`` (B a standard Brownian motion) and samples
with the SDE ``dy = m(y, t) dt + dB``, ``m(y, t) = E[x0 | y_t = y]`` (Montanari, 2023). A DDPM
level ``ᾱ`` matches SL time ``t = ᾱ/(1-ᾱ)`` (the signal-to-noise ratio) with
``y = sqrt(ᾱ)·x/(1-ᾱ)``, because ``sqrt(ᾱ)·x_s/(1-ᾱ) = t·x0 + sqrt(t)·ε`` for
``x_s = sqrt(ᾱ)·x0 + sqrt(1-ᾱ)·ε`` (Hu et al., "Diffusion Models are Secretly Exchangeable",
ICML 2025, arXiv 2505.03983, Sec. 3). So any ε-, x0- or v-prediction model gives ``m``.

>>> import torch
>>> abar = torch.tensor([0.5])
>>> ddpm_to_sl(abar).tolist()
[1.0]
>>> x = torch.tensor([[2.0]])
>>> y_to_x(x_to_y(x, 0.5), 0.5).tolist()
[[2.0]]
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

from icml25.diffusion.schedules import EpsModel, batched, check_alphas_cumprod, per_sample, to_x0
from icml25.utils import check_callable, check_choice, check_tensor

__all__ = ["DenoiserPosterior", "PosteriorMean", "ddpm_to_sl", "sl_to_ddpm", "x_to_y", "y_to_x"]


class PosteriorMean(Protocol):
    """``m(y, t) = E[x0 | y_t = y]`` for a batch ``y`` (B, ...) at SL times ``t`` (B,)."""

    def __call__(self, y: torch.Tensor, t: torch.Tensor) -> torch.Tensor: ...


def _abar(abar: Any, name: str = "abar") -> torch.Tensor:
    if abar is None or isinstance(abar, (str, bytes, bool)):
        raise TypeError(f"{name} must be a number or a tensor of numbers, got {abar!r}")
    try:
        a = torch.as_tensor(abar, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a number or a tensor of numbers, got {type(abar).__name__}") from None
    if bool(((a <= 0) | (a >= 1) | torch.isnan(a)).any()):
        raise ValueError(f"{name} must lie in (0, 1), got {a.tolist()}")
    return a


def ddpm_to_sl(alphas_cumprod: Any) -> torch.Tensor:
    """SL times ``t = ᾱ/(1-ᾱ)`` of DDPM levels ``ᾱ`` (any shape, float64)."""
    a = _abar(alphas_cumprod, "alphas_cumprod")
    return a / (1 - a)


def sl_to_ddpm(t: Any) -> torch.Tensor:
    """DDPM levels ``ᾱ = t/(1+t)`` of SL times ``t > 0`` (float64)."""
    if t is None or isinstance(t, (str, bytes, bool)):
        raise TypeError(f"t must be a number or a tensor of numbers, got {t!r}")
    try:
        t = torch.as_tensor(t, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"t must be a number or a tensor of numbers, got {type(t).__name__}") from None
    if bool(((t <= 0) | ~torch.isfinite(t)).any()):
        raise ValueError(f"t must be finite and > 0, got {t.tolist()}")
    return t / (1 + t)


def _per_sample(a: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return a.to(like.dtype).reshape(-1, *([1] * (like.ndim - 1)))


def x_to_y(x: torch.Tensor, abar: Any) -> torch.Tensor:
    """SL state ``y = sqrt(ᾱ)·x/(1-ᾱ)`` of a DDPM sample ``x`` at level ``ᾱ``."""
    batched(x, "x")
    a = _per_sample(per_sample(abar, "abar", x.shape[0], high_open=True), x)
    return a.sqrt() * x / (1 - a)


def y_to_x(y: torch.Tensor, abar: Any) -> torch.Tensor:
    """DDPM sample ``x = y·(1-ᾱ)/sqrt(ᾱ)`` of an SL state ``y`` at level ``ᾱ``."""
    batched(y, "y")
    a = _per_sample(per_sample(abar, "abar", y.shape[0], high_open=True), y)
    return y * (1 - a) / a.sqrt()


class DenoiserPosterior:
    """``m(y, t)`` from a DDPM model on discrete timesteps: ``x̂0`` at ``x_s = y_to_x(y, ᾱ)``.

    ``t`` must be SL times of the schedule's timesteps (``ddpm_to_sl(alphas_cumprod)[s]``, matched to
    a relative 1e-6); ``mean_at_zero`` is ``m(0, 0) = E[x0]``, used where ``t == 0`` (the SL start,
    which no DDPM timestep reaches). ``dtype`` is the dtype the model is called in (default: that of
    ``y``); the mean comes back in ``y``'s dtype.
    """

    def __init__(self, model: EpsModel, alphas_cumprod: torch.Tensor, prediction_type: str = "epsilon",
                 mean_at_zero: torch.Tensor | None = None, dtype: torch.dtype | None = None) -> None:
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be a floating torch.dtype or None, got {dtype!r}")
        self.dtype = dtype
        self.model = check_callable(model, "model")
        self.alphas_cumprod = check_alphas_cumprod(alphas_cumprod)
        self.prediction_type = check_choice(prediction_type, "prediction_type", ("epsilon", "sample", "v_prediction"))
        if mean_at_zero is not None:
            check_tensor(mean_at_zero, "mean_at_zero", finite=True)
            if mean_at_zero.numel() == 0:
                raise ValueError("mean_at_zero must be E[x0] for one sample, got an empty tensor")
        self.mean_at_zero = mean_at_zero
        self.sl_times = ddpm_to_sl(self.alphas_cumprod)

    def timesteps(self, t: torch.Tensor) -> torch.Tensor:
        """The DDPM timestep of each SL time in ``t`` (a ValueError if one is not on the schedule)."""
        if t is None or isinstance(t, (str, bytes)):
            raise TypeError(f"t must be a 1-d tensor of SL times, got {t!r}")
        t = per_sample(t, "t", torch.as_tensor(t).numel(), low=0.0, high=float("inf"), high_open=True, of="t")
        gap = (self.sl_times[None, :] - t[:, None]).abs() / self.sl_times[None, :]
        best = gap.argmin(dim=1)
        off = gap.gather(1, best[:, None]).squeeze(1) > 1e-6
        if bool(off.any()):
            raise ValueError(f"t must be SL times of the schedule's timesteps, got {t[off][:3].tolist()}")
        return best

    @torch.no_grad()
    def __call__(self, y: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        batched(y, "y")
        t = per_sample(t, "t", y.shape[0], low=0.0, low_open=False, high=float("inf"), high_open=True, of="y")
        out = torch.empty_like(y)
        zero = t == 0
        if bool(zero.any()):
            if self.mean_at_zero is None:
                raise ValueError("t == 0 needs mean_at_zero (E[x0]): no DDPM timestep reaches SL time 0")
            try:
                out[zero] = self.mean_at_zero.to(y.dtype).expand_as(y[zero])
            except RuntimeError:
                raise ValueError(f"mean_at_zero of shape {tuple(self.mean_at_zero.shape)} does not fit y of shape "
                                 f"{tuple(y.shape)}") from None
        rest = ~zero
        if bool(rest.any()):
            steps = self.timesteps(t[rest])
            a = self.alphas_cumprod[steps]
            x = y_to_x(y[rest], a)
            pred = self.model(x if self.dtype is None else x.to(self.dtype), steps)
            pred = getattr(pred, "sample", pred)
            out[rest] = to_x0(pred.to(y.dtype), x, a, self.prediction_type)
        return out
