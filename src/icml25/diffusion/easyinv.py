"""DDIM inversion with EasyInv's latent aggregation, and the iterative inversions it is compared with.

Zhang, Lin, Yan & Ji, "EasyInv: Toward Fast and Better DDIM Inversion", ICML 2025, arXiv 2408.05159;
official code github.com/potato-kitty/EasyInv (``example.py``: the aggregation is a few lines inside
the inversion loop).

Plain DDIM inversion (Song et al., 2021; diffusers' ``DDIMInverseScheduler``) walks the ascending
timesteps ``τ_1 < ... < τ_N`` and at step ``i`` moves ``z_{i-1}`` from level ``ᾱ_{τ_{i-1}}`` to
``ᾱ_{τ_i}`` with ``ε_θ(z_{i-1}, τ_i)`` standing in for the unknown ``ε_θ(z_i, τ_i)``. EasyInv keeps the
loop and, inside a window of steps, replaces the new latent by ``η·z_i + (1-η)·z_prev`` where ``z_prev``
is the previous (already aggregated) latent (:class:`EasyInvHook`); it costs no network call. The
iterative fixes spend extra calls per step: fixed-point iteration (Pan et al., 2023) re-solves
``z_i = F(z_{i-1}, ε_θ(z_i, τ_i))`` from the DDIM guess; ReNoise (Garibi et al., 2024) re-evaluates ε at
the current estimate and averages the last estimates. Each inversion takes the same ``hook``.

>>> import torch
>>> from icml25.diffusion import GaussianMixture, MixtureEps, make_alphas_cumprod
>>> abar = make_alphas_cumprod(1000)
>>> model = MixtureEps(GaussianMixture.random(4, 3, 0.2, seed=0), abar)
>>> x0 = torch.zeros(2, 3, dtype=torch.float64)
>>> zT, stats = ddim_invert(model, x0, abar, n_steps=20, hook=EasyInvHook())
>>> stats.nfe, ddim_reconstruct(model, zT, abar, n_steps=20)[0].shape
(20, torch.Size([2, 3]))
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from icml25.diffusion.schedules import (
    PREDICTION_TYPES,
    EpsModel,
    batched,
    check_alphas_cumprod,
    ddim_timesteps,
    ddim_update,
)
from icml25.utils import check_callable, check_choice, check_scalar
from icml25.utils.random import Seed, torch_generator

__all__ = ["EasyInvHook", "InversionStats", "NoisyEps", "ddim_invert", "ddim_reconstruct", "fixed_point_invert",
           "renoise_invert"]

Hook = Callable[[int, int, torch.Tensor], torch.Tensor]
DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


class EasyInvHook:
    """EasyInv's aggregation ``z_i <- η·z_i + (1-η)·z_prev`` inside the window ``start·N < i < (start+length)·N``.

    Called as ``hook(i, n_steps, z)`` right after inversion step ``i`` (0-based) and returns the latent
    to continue with; ``z_prev`` is the latent returned at the previous step (so the average is an
    exponential moving average inside the window), kept per batch element. ``every = k`` aggregates
    only at every k-th step of the window (the paper's periodic reading). The official defaults are
    η = 0.5 with ``start, length = 0.05, 0.2`` for Stable Diffusion 1.4 and ``0.85, 0.1`` for SDXL.
    ``η = 1`` is plain DDIM inversion. Call :meth:`reset` (or let the inversions do it) between images.
    """

    def __init__(self, eta: float = 0.5, start: float = 0.05, length: float = 0.2, every: int = 1) -> None:
        self.eta = check_scalar(eta, "eta", "real", min=0.0, max=1.0, inclusive="right")
        self.start = check_scalar(start, "start", "real", min=0.0, max=1.0)
        self.length = check_scalar(length, "length", "real", min=0.0, max=1.0)
        self.every = check_scalar(every, "every", "int", min=1)
        self.previous: torch.Tensor | None = None

    def reset(self) -> None:
        """Forget the previous latent (a new inversion starts)."""
        self.previous = None

    def active(self, i: int, n_steps: int) -> bool:
        """Whether step ``i`` of ``n_steps`` aggregates."""
        lo, hi = self.start * n_steps, (self.start + self.length) * n_steps
        return i > 0 and lo < i < hi and (i - int(lo)) % self.every == 0

    def steps(self, n_steps: int) -> list[int]:
        """The steps of an ``n_steps`` inversion that aggregate."""
        return [i for i in range(n_steps) if self.active(i, n_steps)]

    def __call__(self, i: int, n_steps: int, z: torch.Tensor) -> torch.Tensor:
        i = check_scalar(i, "i", "int", min=0)
        n_steps = check_scalar(n_steps, "n_steps", "int", min=1)
        if not isinstance(z, torch.Tensor):
            raise TypeError(f"z must be a torch.Tensor, got {type(z).__name__}")
        if self.previous is not None and self.previous.shape != z.shape:
            raise ValueError(f"z must keep its shape {tuple(self.previous.shape)} between steps, got {tuple(z.shape)}")
        if self.eta < 1 and self.previous is not None and self.active(i, n_steps):
            z = self.eta * z + (1 - self.eta) * self.previous
        self.previous = z
        return z


@dataclass(frozen=True)
class InversionStats:
    """Network calls and wall-clock seconds of one inversion or reconstruction."""

    nfe: int
    seconds: float


class NoisyEps:
    """``model(x, t) + N(0, sigma_err² I)``: a denoiser of limited precision (a fresh error at every call)."""

    def __init__(self, model: EpsModel, sigma_err: float, seed: Seed = None) -> None:
        self.model = check_callable(model, "model")
        self.sigma_err = check_scalar(sigma_err, "sigma_err", "real", min=0.0)
        self.generator = torch_generator(seed)

    def __call__(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        out = self.model(x, t)
        out = getattr(out, "sample", out)
        noise = torch.randn(out.shape, generator=self.generator, dtype=torch.float64).to(out.dtype)
        return out + self.sigma_err * noise


class _Counted:
    """The model in ``dtype`` (a module is copied and cast; a plain callable gets its input and output
    rounded), returning a tensor in the latent's dtype; counts its calls."""

    def __init__(self, model: EpsModel, dtype: torch.dtype | None, name: str) -> None:
        check_callable(model, "model")
        self.name = name
        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(map(str, DTYPES))} or None, got {dtype!r}")
        self.model = copy.deepcopy(model).to(dtype) if dtype is not None and isinstance(model, nn.Module) else model
        self.dtype = dtype
        self.calls = 0

    def __call__(self, z: torch.Tensor, t: int, step: int) -> torch.Tensor:
        self.calls += 1
        x = z if self.dtype is None else z.to(self.dtype)
        try:
            out = self.model(x, torch.full((z.shape[0],), t, dtype=torch.int64, device=z.device))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"model cannot take {self.name} of shape {tuple(z.shape)}: {exc}") from exc
        out = getattr(out, "sample", out)
        if not isinstance(out, torch.Tensor) or out.shape != z.shape:
            raise ValueError(f"model must return a tensor shaped like its input {tuple(z.shape)}, got "
                             f"{getattr(out, 'shape', type(out).__name__)}")
        if self.dtype is not None:
            out = out.to(self.dtype)
        out = out.to(z.dtype)
        if not bool(torch.isfinite(out).all()):
            raise ValueError(f"model returned NaN or inf at step {step} (timestep {t})")
        return out


def _levels(abar: torch.Tensor, n_steps: int, spacing: str) -> list[tuple[int, float, float]]:
    """``(τ_i, ᾱ_{τ_{i-1}}, ᾱ_{τ_i})`` of the ascending inversion steps (``DDIMInverseScheduler``)."""
    ratio = abar.numel() // n_steps
    out = []
    for t in ddim_timesteps(n_steps, abar.numel(), spacing).flip(0).tolist():
        prev = t - ratio
        out.append((t, float(abar[prev]) if prev >= 0 else 1.0, float(abar[t])))
    return out


def _check(model, x, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype, name="x0"):
    batched(x, name)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"{name} must contain only finite values, got NaN or inf")
    abar = check_alphas_cumprod(alphas_cumprod)
    n_steps = check_scalar(n_steps, "n_steps", "int", min=2, max=abar.numel())
    if hook is not None:
        check_callable(hook, "hook")
    check_choice(prediction_type, "prediction_type", PREDICTION_TYPES)
    check_choice(spacing, "spacing", ("leading", "trailing", "linspace"))
    return _Counted(model, dtype, name), abar, n_steps


def _finite(z: torch.Tensor, step: int) -> torch.Tensor:
    if not bool(torch.isfinite(z).all()):
        raise ValueError(f"the latent became non-finite at step {step}")
    return z


def _invert(model, x0, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype, refine):
    counted, abar, n_steps = _check(model, x0, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype)
    reset = getattr(hook, "reset", None)
    if callable(reset):
        reset()
    if isinstance(hook, EasyInvHook) and not hook.steps(n_steps) and hook.eta < 1:
        warnings.warn(f"the EasyInv window (start={hook.start}, length={hook.length}) holds no step of an "
                      f"{n_steps}-step inversion: this is plain DDIM inversion", stacklevel=3)
    start = time.perf_counter()
    z = x0
    with torch.no_grad():
        for i, (t, a_from, a_to) in enumerate(_levels(abar, n_steps, spacing)):
            eps = counted(z, t, i)
            z_new = ddim_update(eps, z, a_from, a_to, prediction_type)
            z_new = refine(counted, z, z_new, eps, t, a_from, a_to, i)
            z = _finite(hook(i, n_steps, z_new) if hook is not None else z_new, i)
    return z, InversionStats(counted.calls, time.perf_counter() - start)


def ddim_invert(model: EpsModel, x0: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int = 50,
                hook: Hook | None = None, prediction_type: str = "epsilon", spacing: str = "leading",
                dtype: torch.dtype | None = None) -> tuple[torch.Tensor, InversionStats]:
    """DDIM inversion of ``x0`` (B, ...) in ``n_steps`` network calls; ``hook`` (e.g. :class:`EasyInvHook`)
    sees each new latent. ``dtype`` runs the model in that precision (``torch.bfloat16``, ...) while
    the latent and the hook stay in ``x0``'s dtype. Returns ``(z_N, stats)``."""
    return _invert(model, x0, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype,
                   lambda counted, z, z_new, eps, t, a_from, a_to, i: z_new)


def fixed_point_invert(model: EpsModel, x0: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int = 50,
                       n_iters: int = 3, hook: Hook | None = None, prediction_type: str = "epsilon",
                       spacing: str = "leading",
                       dtype: torch.dtype | None = None) -> tuple[torch.Tensor, InversionStats]:
    """Fixed-point inversion: from the DDIM guess, ``n_iters`` times ``z_i <- F(z_{i-1}, ε_θ(z_i, τ_i))``
    (Pan et al., 2023); ``n_steps·(1 + n_iters)`` network calls."""
    n_iters = check_scalar(n_iters, "n_iters", "int", min=1)

    def refine(counted, z, z_new, eps, t, a_from, a_to, i):
        for _ in range(n_iters):
            z_new = ddim_update(counted(z_new, t, i), z, a_from, a_to, prediction_type)
        return z_new

    return _invert(model, x0, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype, refine)


def renoise_invert(model: EpsModel, x0: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int = 50,
                   n_iters: int = 3, avg_last: int = 2, hook: Hook | None = None, prediction_type: str = "epsilon",
                   spacing: str = "leading", dtype: torch.dtype | None = None) -> tuple[torch.Tensor, InversionStats]:
    """ReNoise inversion (Garibi et al., 2024, without its noise regularisers): after the DDIM guess,
    ``n_iters`` times re-evaluate ε at the current estimate and redo the step; the final step uses the
    mean of the last ``avg_last`` noise estimates. ``n_steps·(1 + n_iters)`` network calls."""
    n_iters = check_scalar(n_iters, "n_iters", "int", min=1)
    avg_last = check_scalar(avg_last, "avg_last", "int", min=1, max=n_iters + 1)

    def refine(counted, z, z_new, eps, t, a_from, a_to, i):
        estimates = [eps]
        for _ in range(n_iters):
            estimates.append(counted(z_new, t, i))
            z_new = ddim_update(estimates[-1], z, a_from, a_to, prediction_type)
        return ddim_update(torch.stack(estimates[-avg_last:]).mean(0), z, a_from, a_to, prediction_type)

    return _invert(model, x0, alphas_cumprod, n_steps, hook, prediction_type, spacing, dtype, refine)


def ddim_reconstruct(model: EpsModel, zT: torch.Tensor, alphas_cumprod: torch.Tensor, n_steps: int = 50,
                     prediction_type: str = "epsilon", spacing: str = "leading",
                     dtype: torch.dtype | None = None) -> tuple[torch.Tensor, InversionStats]:
    """Deterministic DDIM sampling from an inverted latent back to ``x0`` on the same ``n_steps`` timesteps."""
    counted, abar, n_steps = _check(model, zT, alphas_cumprod, n_steps, None, prediction_type, spacing, dtype, "zT")
    start = time.perf_counter()
    z = zT
    with torch.no_grad():
        for i, (t, a_prev, a_t) in enumerate(reversed(_levels(abar, n_steps, spacing))):
            z = _finite(ddim_update(counted(z, t, i), z, a_t, a_prev, prediction_type), i)
    return z, InversionStats(counted.calls, time.perf_counter() - start)

