"""DDPM/DDIM noise schedules, prediction-type conversions and the DDIM / DDPM update steps.

The conventions are diffusers' (``DDPMScheduler``, ``DDIMScheduler``), so a diffusers model and
scheduler plug in unchanged: integer timesteps ``t = 0 .. n_train-1``, ``alphas_cumprod[t] = ᾱ_t``,
the forward process ``x_t = sqrt(ᾱ_t)·x0 + sqrt(1-ᾱ_t)·ε`` (Ho et al., 2020, Eq. 4), and a model
output of type ``"epsilon"`` (ε), ``"sample"`` (x0) or ``"v_prediction"``
(``v = sqrt(ᾱ)·ε - sqrt(1-ᾱ)·x0``, Salimans & Ho, 2022).

>>> import torch
>>> abar = make_alphas_cumprod(1000)
>>> ddim_timesteps(5, 1000).tolist()
[800, 600, 400, 200, 0]
>>> x0, eps = torch.ones(2, 3), torch.zeros(2, 3)
>>> x = add_noise(x0, eps, torch.tensor([10, 10]), abar)
>>> torch.allclose(to_x0(eps, x, abar[10], "epsilon"), x0)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from icml25.utils import check_bool, check_choice, check_scalar, check_tensor
from icml25.utils.random import Seed, torch_generator

__all__ = ["PREDICTION_TYPES", "add_noise", "check_alphas_cumprod", "ddim_sample", "ddim_step", "ddim_timesteps",
           "ddim_update", "ddpm_step", "make_alphas_cumprod", "to_eps", "to_v", "to_x0"]

PREDICTION_TYPES = ("epsilon", "sample", "v_prediction")
BETA_SCHEDULES = ("linear", "scaled_linear", "squaredcos_cap_v2")
SPACINGS = ("leading", "trailing", "linspace")

EpsModel = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def make_alphas_cumprod(n_train: int = 1000, schedule: str = "linear", beta_start: float = 1e-4,
                        beta_end: float = 0.02) -> torch.Tensor:
    """``ᾱ_t = prod_{s<=t} (1 - β_s)`` for ``t = 0 .. n_train-1`` (float64), as diffusers builds it.

    ``schedule``: ``"linear"`` (Ho et al., 2020), ``"scaled_linear"`` (linear in sqrt β, Stable
    Diffusion) or ``"squaredcos_cap_v2"`` (Nichol & Dhariwal, 2021, Eq. 17; β capped at 0.999).
    """
    n_train = check_scalar(n_train, "n_train", "int", min=2)
    check_choice(schedule, "schedule", BETA_SCHEDULES)
    beta_start = check_scalar(beta_start, "beta_start", "real", min=0.0, max=1.0, inclusive="neither")
    beta_end = check_scalar(beta_end, "beta_end", "real", min=beta_start, max=1.0, inclusive="right")
    if schedule == "linear":
        betas = torch.linspace(beta_start, beta_end, n_train, dtype=torch.float64)
    elif schedule == "scaled_linear":
        betas = torch.linspace(beta_start**0.5, beta_end**0.5, n_train, dtype=torch.float64) ** 2
    else:
        def f(u: float) -> float:
            return math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2

        betas = torch.tensor([min(1 - f((i + 1) / n_train) / f(i / n_train), 0.999) for i in range(n_train)],
                             dtype=torch.float64)
    return torch.cumprod(1.0 - betas, dim=0)


def check_alphas_cumprod(alphas_cumprod: Any, name: str = "alphas_cumprod") -> torch.Tensor:
    """``alphas_cumprod`` as a float64 tensor: 1-d, at least 2 entries, strictly decreasing, in (0, 1)."""
    if not isinstance(alphas_cumprod, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of cumulative alphas, got {type(alphas_cumprod).__name__}")
    abar = check_tensor(alphas_cumprod, name, ndim=1, floating=True, finite=True).detach().to(torch.float64)
    if abar.numel() < 2:
        raise ValueError(f"{name} must have at least 2 entries, got {abar.numel()}")
    if bool((abar <= 0).any() | (abar >= 1).any()) or bool((abar[1:] >= abar[:-1]).any()):
        raise ValueError(f"{name} must be strictly decreasing with entries in (0, 1), got {abar.numel()} entries "
                         f"in [{float(abar.min()):.3g}, {float(abar.max()):.3g}]")
    return abar


def ddim_timesteps(n_steps: int, n_train: int = 1000, spacing: str = "leading", steps_offset: int = 0) -> torch.Tensor:
    """The ``n_steps`` descending timesteps of ``DDIMScheduler.set_timesteps`` (int64).

    ``spacing`` as diffusers' ``timestep_spacing``: ``"leading"`` (``0, r, 2r, ...`` with
    ``r = n_train // n_steps``, Song et al., 2021), ``"trailing"`` (ends at ``n_train - 1``) or
    ``"linspace"``.
    """
    n_train = check_scalar(n_train, "n_train", "int", min=2)
    n_steps = check_scalar(n_steps, "n_steps", "int", min=1, max=n_train)
    check_choice(spacing, "spacing", SPACINGS)
    steps_offset = check_scalar(steps_offset, "steps_offset", "int", min=0, max=n_train - 1)
    if spacing == "leading":
        ratio = n_train // n_steps
        steps = torch.arange(n_steps, dtype=torch.float64).mul(ratio).round().flip(0) + steps_offset
    elif spacing == "trailing":
        steps = torch.arange(float(n_train), 0, -n_train / n_steps, dtype=torch.float64).round() - 1
    else:
        steps = torch.linspace(0, n_train - 1, n_steps, dtype=torch.float64).round().flip(0)
    return steps.clamp(max=n_train - 1).to(torch.int64)


def per_sample(value: Any, name: str, batch: int, *, low: float = 0.0, high: float = 1.0, low_open: bool = True,
               high_open: bool = False, of: str = "x") -> torch.Tensor:
    """``value`` (a number, or a 0-d/1-d tensor or array) as a float64 tensor of ``batch`` entries in range.

    A single value is broadcast; otherwise it needs one entry per sample of ``of``.
    """
    if value is None or isinstance(value, (str, bytes, bool)):
        raise TypeError(f"{name} must be a number or a 1-d tensor of numbers, got {value!r}")
    try:
        v = torch.as_tensor(value, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a number or a 1-d tensor of numbers, got {type(value).__name__}") from None
    if v.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-d tensor, got shape {tuple(v.shape)}")
    v = v.reshape(-1)
    if v.numel() == 1:
        v = v.expand(batch)
    if v.numel() != batch:
        raise ValueError(f"{name} must be one value or one per sample of {of} ({batch}), got {v.numel()}")
    bad = torch.isnan(v) | ((v <= low) if low_open else (v < low)) | ((v >= high) if high_open else (v > high))
    if bool(bad.any()):
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {left}{low:g}, {high:g}{right}, got {v[bad][:3].tolist()}")
    return v


def _broadcast(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.to(like.dtype if like.is_floating_point() else torch.float64).reshape(-1, *([1] * (like.ndim - 1)))


def _level(abar: Any, like: torch.Tensor, name: str) -> torch.Tensor:
    """``abar`` (one level or one per sample, in (0, 1]) shaped to broadcast against ``like``."""
    return _broadcast(per_sample(abar, name, like.shape[0] if like.ndim else 1), like)


def batched(x: Any, name: str) -> torch.Tensor:
    """``x`` if it is a floating-point tensor with a batch axis (ndim >= 1)."""
    check_tensor(x, name, floating=True)
    if x.ndim < 1:
        raise ValueError(f"{name} must have a batch axis (ndim >= 1), got a 0-d tensor")
    return x


def _same_shape(a: torch.Tensor, name: str, b: torch.Tensor, of: str) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{name} must have the shape of {of} {tuple(b.shape)}, got {tuple(a.shape)}")


def to_x0(model_output: torch.Tensor, x: torch.Tensor, abar: Any, prediction_type: str = "epsilon") -> torch.Tensor:
    """The x0-prediction implied by ``model_output`` at noisy sample ``x`` of level ``abar``."""
    check_choice(prediction_type, "prediction_type", PREDICTION_TYPES)
    batched(x, "x")
    check_tensor(model_output, "model_output")
    _same_shape(model_output, "model_output", x, "x")
    a = _level(abar, x, "abar")
    if prediction_type == "epsilon":
        return (x - (1 - a).sqrt() * model_output) / a.sqrt()
    if prediction_type == "sample":
        return model_output
    return a.sqrt() * x - (1 - a).sqrt() * model_output


def to_eps(model_output: torch.Tensor, x: torch.Tensor, abar: Any, prediction_type: str = "epsilon") -> torch.Tensor:
    """The ε-prediction implied by ``model_output`` at noisy sample ``x`` of level ``abar``."""
    check_choice(prediction_type, "prediction_type", PREDICTION_TYPES)
    batched(x, "x")
    check_tensor(model_output, "model_output")
    _same_shape(model_output, "model_output", x, "x")
    a = _level(abar, x, "abar")
    if prediction_type == "epsilon":
        return model_output
    if prediction_type == "sample":
        if bool((a >= 1).any()):
            raise ValueError("abar must be < 1 to recover ε from an x0-prediction")
        return (x - a.sqrt() * model_output) / (1 - a).sqrt()
    return (1 - a).sqrt() * x + a.sqrt() * model_output


def to_v(eps: torch.Tensor, x0: torch.Tensor, abar: Any) -> torch.Tensor:
    """The v-target ``sqrt(ᾱ)·ε - sqrt(1-ᾱ)·x0`` (Salimans & Ho, 2022, Sec. 4)."""
    batched(x0, "x0")
    check_tensor(eps, "eps")
    _same_shape(eps, "eps", x0, "x0")
    a = _level(abar, x0, "abar")
    return a.sqrt() * eps - (1 - a).sqrt() * x0


def add_noise(x0: torch.Tensor, eps: torch.Tensor, t: torch.Tensor, alphas_cumprod: torch.Tensor) -> torch.Tensor:
    """``x_t = sqrt(ᾱ_t)·x0 + sqrt(1-ᾱ_t)·ε`` per sample (``DDPMScheduler.add_noise``)."""
    batched(x0, "x0")
    check_tensor(eps, "eps")
    _same_shape(eps, "eps", x0, "x0")
    abar = check_alphas_cumprod(alphas_cumprod)
    t = timesteps_per_sample(t, "t", x0.shape[0], abar.numel(), of="x0")
    a = _broadcast(abar[t], x0)
    return a.sqrt() * x0 + (1 - a).sqrt() * eps


def timesteps_per_sample(t: Any, name: str, batch: int, n_train: int, of: str = "x") -> torch.Tensor:
    """Integer timesteps ``t`` (one, or one per sample of ``of``) as an int64 tensor of ``batch`` entries."""
    if t is None or isinstance(t, (str, bytes, float, bool)):
        raise TypeError(f"{name} must be an integer timestep or a 1-d tensor of them, got {t!r}")
    try:
        t = torch.as_tensor(t)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be an integer timestep or a 1-d tensor of them, got {type(t).__name__}") from None
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer timesteps, got dtype {t.dtype}")
    if t.ndim > 1:
        raise ValueError(f"{name} must be a timestep or a 1-d tensor of them, got shape {tuple(t.shape)}")
    t = t.reshape(-1).to(torch.int64)
    if t.numel() == 1:
        t = t.expand(batch)
    if t.numel() != batch:
        raise ValueError(f"{name} must be one timestep or one per sample of {of} ({batch}), got {t.numel()}")
    if bool(((t < 0) | (t >= n_train)).any()):
        raise ValueError(f"{name} must lie in [0, {n_train - 1}], got {t[(t < 0) | (t >= n_train)][:3].tolist()}")
    return t


def ddim_update(model_output: torch.Tensor, x: torch.Tensor, abar_from: Any, abar_to: Any,
                prediction_type: str = "epsilon") -> torch.Tensor:
    """Deterministic DDIM transfer of ``x`` from level ``abar_from`` to ``abar_to`` (Song et al., 2021, Eq. 12, η=0).

    ``x_to = sqrt(ᾱ_to)·x̂0 + sqrt(1-ᾱ_to)·ε̂``; the same map denoises (``ᾱ_to > ᾱ_from``) and, used
    backwards, inverts (DDIM inversion).
    """
    batched(x, "x")
    a = per_sample(abar_from, "abar_from", x.shape[0])
    b = _level(abar_to, x, "abar_to")
    x0 = to_x0(model_output, x, a, prediction_type)
    eps = to_eps(model_output, x, a, prediction_type)
    return b.sqrt() * x0 + (1 - b).sqrt() * eps


def ddim_step(model_output: torch.Tensor, t: int, x: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int,
              prediction_type: str = "epsilon", set_alpha_to_one: bool = True) -> torch.Tensor:
    """One ``DDIMScheduler.step`` (η = 0, no clipping): from timestep ``t`` to ``t - n_train // n_steps``."""
    abar = check_alphas_cumprod(alphas_cumprod)
    n_steps = check_scalar(n_steps, "n_steps", "int", min=1, max=abar.numel())
    t = check_scalar(t, "t", "int", min=0, max=abar.numel() - 1)
    check_bool(set_alpha_to_one, "set_alpha_to_one")
    prev = t - abar.numel() // n_steps
    final = 1.0 if set_alpha_to_one else float(abar[0])
    return ddim_update(model_output, x, abar[t], abar[prev] if prev >= 0 else final, prediction_type)


def ddpm_step(model_output: torch.Tensor, t: int, x: torch.Tensor, alphas_cumprod: torch.Tensor,
              prediction_type: str = "epsilon", seed: Seed = None) -> torch.Tensor:
    """One ancestral DDPM step ``x_t -> x_{t-1}`` with variance β̃_t (Ho et al., 2020, Eqs. 6-7).

    Equals ``DDPMScheduler.step`` (``variance_type="fixed_small"``, no clipping) given the same
    ``torch.Generator``.
    """
    abar = check_alphas_cumprod(alphas_cumprod)
    t = check_scalar(t, "t", "int", min=0, max=abar.numel() - 1)
    a_t = float(abar[t])
    a_prev = float(abar[t - 1]) if t > 0 else 1.0
    beta = 1 - a_t / a_prev
    x0 = to_x0(model_output, x, a_t, prediction_type)
    mean = (a_prev**0.5 * beta / (1 - a_t)) * x0 + ((1 - beta) ** 0.5 * (1 - a_prev) / (1 - a_t)) * x
    if t == 0:
        return mean
    generator = torch_generator(seed, x.device)
    noise = torch.randn(x.shape, generator=generator, device=x.device, dtype=x.dtype)
    variance = max((1 - a_prev) / (1 - a_t) * beta, 1e-20)
    return mean + variance**0.5 * noise


def _call(model: EpsModel, x: torch.Tensor, t: int, name: str) -> torch.Tensor:
    try:
        out = model(x, torch.full((x.shape[0],), t, dtype=torch.int64, device=x.device))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"model cannot take {name} of shape {tuple(x.shape)}: {exc}") from exc
    out = getattr(out, "sample", out)
    if not isinstance(out, torch.Tensor) or out.shape != x.shape:
        raise ValueError(f"model must return a tensor shaped like its input {tuple(x.shape)}, got "
                         f"{getattr(out, 'shape', type(out).__name__)}")
    if not bool(torch.isfinite(out).all()):
        raise ValueError(f"model returned NaN or inf at timestep {t}")
    return out


@torch.no_grad()
def ddim_sample(model: EpsModel, x_T: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int = 50,
                prediction_type: str = "epsilon", spacing: str = "leading",
                set_alpha_to_one: bool = True) -> torch.Tensor:
    """Deterministic DDIM sampling from ``x_T`` in ``n_steps`` (diffusers' DDIM loop, η = 0).

    ``model(x, t)`` returns the prediction for a batch ``x`` at int64 timesteps ``t`` (a diffusers
    ``UNet2DModel`` works as is: its ``.sample`` output is used).
    """
    if not callable(model):
        raise TypeError(f"model must be callable as model(x, t), got {type(model).__name__}")
    check_tensor(x_T, "x_T", floating=True, finite=True)
    abar = check_alphas_cumprod(alphas_cumprod)
    check_bool(set_alpha_to_one, "set_alpha_to_one")
    check_choice(prediction_type, "prediction_type", PREDICTION_TYPES)
    x = x_T
    for t in ddim_timesteps(n_steps, abar.numel(), spacing).tolist():
        x = ddim_step(_call(model, x, t, "x_T"), t, x, abar, n_steps, prediction_type, set_alpha_to_one)
    return x
