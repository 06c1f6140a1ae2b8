"""Diffusion models: schedules and DDIM/DDPM steps in diffusers' conventions, the DDPM <-> stochastic
localization map, exact Gaussian-mixture denoisers, a small learned denoiser, and autospeculative
decoding (:mod:`icml25.diffusion.autospeculative_ddpm`) and EasyInv's DDIM inversion
(:mod:`icml25.diffusion.easyinv`).

Everything here needs the ``torch`` extra (diffusers interop: the ``diffusion`` extra); the names are
imported lazily, so ``import icml25.diffusion`` itself works without PyTorch.

>>> import torch
>>> from icml25.diffusion import GaussianMixture, MixtureEps, ddim_sample, make_alphas_cumprod
>>> abar = make_alphas_cumprod(1000)
>>> model = MixtureEps(GaussianMixture.ring(8), abar)
>>> x = ddim_sample(model, torch.randn(4, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64), abar)
>>> x.shape
torch.Size([4, 2])
"""

from importlib import import_module

_EXPORTS = {
    "PREDICTION_TYPES": "icml25.diffusion.schedules",
    "make_alphas_cumprod": "icml25.diffusion.schedules",
    "check_alphas_cumprod": "icml25.diffusion.schedules",
    "ddim_timesteps": "icml25.diffusion.schedules",
    "to_x0": "icml25.diffusion.schedules",
    "to_eps": "icml25.diffusion.schedules",
    "to_v": "icml25.diffusion.schedules",
    "add_noise": "icml25.diffusion.schedules",
    "ddim_update": "icml25.diffusion.schedules",
    "ddim_step": "icml25.diffusion.schedules",
    "ddpm_step": "icml25.diffusion.schedules",
    "ddim_sample": "icml25.diffusion.schedules",
    "PosteriorMean": "icml25.diffusion.sl",
    "DenoiserPosterior": "icml25.diffusion.sl",
    "ddpm_to_sl": "icml25.diffusion.sl",
    "sl_to_ddpm": "icml25.diffusion.sl",
    "x_to_y": "icml25.diffusion.sl",
    "y_to_x": "icml25.diffusion.sl",
    "GaussianMixture": "icml25.diffusion.mixture",
    "MixtureEps": "icml25.diffusion.mixture",
    "TinyDenoiser": "icml25.diffusion.denoiser",
    "timestep_embedding": "icml25.diffusion.denoiser",
    "train_denoiser": "icml25.diffusion.denoiser",
    "ASDStats": "icml25.diffusion.autospeculative_ddpm",
    "asd_sample": "icml25.diffusion.autospeculative_ddpm",
    "sl_sample_sequential": "icml25.diffusion.autospeculative_ddpm",
    "reflection_coupling": "icml25.diffusion.autospeculative_ddpm",
    "uniform_sl_grid": "icml25.diffusion.autospeculative_ddpm",
    "ddpm_sl_grid": "icml25.diffusion.autospeculative_ddpm",
    "EasyInvHook": "icml25.diffusion.easyinv",
    "InversionStats": "icml25.diffusion.easyinv",
    "NoisyEps": "icml25.diffusion.easyinv",
    "ddim_invert": "icml25.diffusion.easyinv",
    "fixed_point_invert": "icml25.diffusion.easyinv",
    "renoise_invert": "icml25.diffusion.easyinv",
    "ddim_reconstruct": "icml25.diffusion.easyinv",
    "mmd_test": "icml25.diffusion.metrics",
    "image_scores": "icml25.diffusion.metrics",
    "as_model": "icml25.diffusion.interop",
    "scheduler_alphas": "icml25.diffusion.interop",
    "scheduler_prediction_type": "icml25.diffusion.interop",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.diffusion' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
