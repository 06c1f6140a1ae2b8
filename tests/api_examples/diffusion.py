"""Valid calls of ``icml25.diffusion`` (schedules, SL map, mixtures, the tiny denoiser)."""

from functools import cache

import torch

from api_examples._core import Example, Exempt
from icml25 import diffusion as d


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


@cache
def _abar():
    return d.make_alphas_cumprod(20)


def _x():
    return torch.randn(3, 2, generator=_g(), dtype=torch.float64)


@cache
def _gm():
    return d.GaussianMixture([0.5, 0.5], [[-1.0, 0.0], [1.0, 0.0]], [0.2, 0.2])


def _model():
    return d.MixtureEps(_gm(), _abar())


@cache
def _tiny():
    return d.TinyDenoiser(shape=(2,), hidden=8, n_layers=1, time_dim=4, seed=0)


_ABAR = {"abar": "a level in (0, 1] or one per sample; checked"}

EXAMPLES = {
    "icml25.diffusion.PosteriorMean": Exempt("alias"),
    "icml25.diffusion.make_alphas_cumprod": Example(d.make_alphas_cumprod, {"n_train": 10}, positive=("beta_start",)),
    "icml25.diffusion.check_alphas_cumprod": Example(d.check_alphas_cumprod, lambda: {"alphas_cumprod": _abar()},
                                                     skip={"name": "a label used in messages"}),
    "icml25.diffusion.ddim_timesteps": Example(d.ddim_timesteps, {"n_steps": 5, "n_train": 20}, positive=("n_steps",)),
    "icml25.diffusion.to_x0": Example(d.to_x0, lambda: {"model_output": _x(), "x": _x(), "abar": 0.5},
                                      allow={"x": "nan", "model_output": "nan"}, positive=("abar",)),
    "icml25.diffusion.to_eps": Example(d.to_eps, lambda: {"model_output": _x(), "x": _x(), "abar": 0.5},
                                       allow={"x": "nan", "model_output": "nan"}, positive=("abar",)),
    "icml25.diffusion.to_v": Example(d.to_v, lambda: {"eps": _x(), "x0": _x(), "abar": 0.5},
                                     allow={"x0": "nan", "eps": "nan"}, positive=("abar",)),
    "icml25.diffusion.add_noise": Example(d.add_noise, lambda: {"x0": _x(), "eps": _x(), "t": torch.tensor([0, 5, 19]),
                                                                 "alphas_cumprod": _abar()},
                                          allow={"x0": "nan", "eps": "nan"}, paired=[("x0", "t")]),
    "icml25.diffusion.ddim_update": Example(d.ddim_update, lambda: {"model_output": _x(), "x": _x(), "abar_from": 0.5,
                                                                     "abar_to": 0.7},
                                            allow={"x": "nan", "model_output": "nan"},
                                            positive=("abar_from", "abar_to")),
    "icml25.diffusion.ddim_step": Example(d.ddim_step, lambda: {"model_output": _x(), "t": 10, "x": _x(),
                                                                 "alphas_cumprod": _abar(), "n_steps": 5},
                                          allow={"x": "nan", "model_output": "nan"}, positive=("n_steps",)),
    "icml25.diffusion.ddpm_step": Example(d.ddpm_step, lambda: {"model_output": _x(), "t": 10, "x": _x(),
                                                                 "alphas_cumprod": _abar(), "seed": 0},
                                          allow={"x": "nan", "model_output": "nan"}),
    "icml25.diffusion.ddim_sample": Example(d.ddim_sample, lambda: {"model": _model(), "x_T": _x(),
                                                                     "alphas_cumprod": _abar(), "n_steps": 4},
                                            positive=("n_steps",), allow={"x_T": "empty"}),
    "icml25.diffusion.DenoiserPosterior": Example(d.DenoiserPosterior, lambda: {"model": _model(),
                                                                                 "alphas_cumprod": _abar(),
                                                                                 "mean_at_zero": _gm().mean()},
                                                  allow={"mean_at_zero": "ndim"}),
    "icml25.diffusion.DenoiserPosterior.timesteps": Example(
        lambda **kw: d.DenoiserPosterior(_model(), _abar()).timesteps(**kw),
        lambda: {"t": d.ddpm_to_sl(_abar()[:3])}, allow={"t": "empty"}),
    "icml25.diffusion.ddpm_to_sl": Example(d.ddpm_to_sl, lambda: {"alphas_cumprod": _abar()},
                                           allow={"alphas_cumprod": ("empty", "ndim")}),
    "icml25.diffusion.sl_to_ddpm": Example(d.sl_to_ddpm, lambda: {"t": torch.tensor([0.5, 2.0])},
                                           allow={"t": ("empty", "ndim")}),
    "icml25.diffusion.x_to_y": Example(d.x_to_y, lambda: {"x": _x(), "abar": 0.5},
                                       allow={"x": ("nan", "empty", "ndim")},
                                       positive=("abar",)),
    "icml25.diffusion.y_to_x": Example(d.y_to_x, lambda: {"y": _x(), "abar": 0.5},
                                       allow={"y": ("nan", "empty", "ndim")},
                                       positive=("abar",)),
    "icml25.diffusion.GaussianMixture": Example(d.GaussianMixture, {"weights": [0.5, 0.5],
                                                                    "means": [[0.0, 1.0], [1.0, 0.0]],
                                                                    "stds": [0.1, 0.2]},
                                                paired=[("weights", "means"), ("weights", "stds")]),
    "icml25.diffusion.GaussianMixture.ring": Example(d.GaussianMixture.ring, {"n_modes": 4}, positive=("n_modes",),
                                                     nonneg=("radius", "std")),
    "icml25.diffusion.GaussianMixture.random": Example(d.GaussianMixture.random, {"n_modes": 3, "dim": 2},
                                                       positive=("n_modes", "dim"), nonneg=("std",)),
    "icml25.diffusion.GaussianMixture.sample": Example(lambda **kw: _gm().sample(**kw), {"n": 5, "seed": 0},
                                                       allow={"n": "zero"}),
    "icml25.diffusion.GaussianMixture.posterior_mean": Example(lambda **kw: _gm().posterior_mean(**kw),
                                                               lambda: {"y": _x(), "t": torch.tensor([0.0, 1.0, 2.0])},
                                                               ),
    "icml25.diffusion.GaussianMixture.denoise": Example(lambda **kw: _gm().denoise(**kw),
                                                        lambda: {"x": _x(), "abar": torch.tensor([0.1, 0.5, 0.9])},
                                                        ),
    "icml25.diffusion.GaussianMixture.eps": Example(lambda **kw: _gm().eps(**kw),
                                                    lambda: {"x": _x(), "abar": torch.tensor([0.1, 0.5, 0.9])},
                                                    ),
    "icml25.diffusion.MixtureEps": Example(d.MixtureEps, lambda: {"mixture": _gm(), "alphas_cumprod": _abar()}),
    "icml25.diffusion.TinyDenoiser": Example(d.TinyDenoiser, {"shape": (2,), "hidden": 8, "n_layers": 1, "time_dim": 4},
                                             positive=("hidden", "n_layers", "time_dim")),
    "icml25.diffusion.TinyDenoiser.forward": Example(lambda **kw: _tiny()(**kw),
                                                     lambda: {"x": torch.randn(3, 2, generator=_g()),
                                                              "t": torch.tensor([0, 1, 2])},
                                                     allow={"x": "nan"}),
    "icml25.diffusion.timestep_embedding": Example(d.timestep_embedding, lambda: {"t": torch.tensor([0, 3]), "dim": 4},
                                                   positive=("dim", "max_period"), allow={"t": "empty"}),
    "icml25.diffusion.train_denoiser": Example(
        d.train_denoiser, lambda: {"model": d.TinyDenoiser(shape=(2,), hidden=8, n_layers=1, time_dim=4),
                                   "data": torch.randn(8, 2, generator=_g()), "alphas_cumprod": _abar(),
                                   "steps": 2, "batch_size": 4},
        positive=("steps", "batch_size", "lr")),
    "icml25.diffusion.ASDStats": Exempt("record"),
    "icml25.diffusion.asd_sample": Example(d.asd_sample, lambda: {"mean_fn": _gm().posterior_mean,
                                                                   "t_grid": d.uniform_sl_grid(6, 10.0),
                                                                   "shape": (3, 2), "window": 3, "seed": 0},
                                           positive=("window", "max_batch")),
    "icml25.diffusion.sl_sample_sequential": Example(d.sl_sample_sequential,
                                                     lambda: {"mean_fn": _gm().posterior_mean,
                                                              "t_grid": d.uniform_sl_grid(6, 10.0),
                                                              "shape": (3, 2), "seed": 0},
                                                     positive=("max_batch",)),
    "icml25.diffusion.reflection_coupling": Example(
        d.reflection_coupling, lambda: {"delta_hat": _x(), "mu_prop": torch.zeros(3, 2, dtype=torch.float64),
                                        "mu_tgt": torch.ones(3, 2, dtype=torch.float64), "step": 0.5,
                                        "u": torch.rand(3, generator=_g(), dtype=torch.float64)},
        positive=("step",)),
    "icml25.diffusion.uniform_sl_grid": Example(d.uniform_sl_grid, {"n_steps": 4, "horizon": 10.0},
                                                positive=("n_steps", "horizon")),
    "icml25.diffusion.ddpm_sl_grid": Example(d.ddpm_sl_grid, lambda: {"alphas_cumprod": _abar(),
                                                                       "timesteps": torch.tensor([19, 10, 0])}),
    "icml25.diffusion.EasyInvHook": Example(d.EasyInvHook, {"eta": 0.5, "start": 0.05, "length": 0.2},
                                            positive=("eta", "every"), nonneg=("start", "length")),
    "icml25.diffusion.EasyInvHook.active": Example(lambda **kw: d.EasyInvHook().active(**kw), {"i": 3, "n_steps": 20},
                                                   skip={"i": "any step index", "n_steps": "any step count"}),
    "icml25.diffusion.EasyInvHook.steps": Example(lambda **kw: d.EasyInvHook().steps(**kw), {"n_steps": 20},
                                                  skip={"n_steps": "any step count; none is an empty list"}),
    "icml25.diffusion.InversionStats": Exempt("record"),
    "icml25.diffusion.NoisyEps": Example(d.NoisyEps, lambda: {"model": _model(), "sigma_err": 0.1, "seed": 0},
                                         nonneg=("sigma_err",)),
    "icml25.diffusion.ddim_invert": Example(d.ddim_invert, lambda: {"model": _model(), "x0": _x(),
                                                                     "alphas_cumprod": _abar(), "n_steps": 4,
                                                                     "hook": d.EasyInvHook()},
                                            allow={"x0": "empty"}, positive=("n_steps",)),
    "icml25.diffusion.fixed_point_invert": Example(d.fixed_point_invert, lambda: {"model": _model(), "x0": _x(),
                                                                                   "alphas_cumprod": _abar(),
                                                                                   "n_steps": 4},
                                                   allow={"x0": "empty"}, positive=("n_steps", "n_iters")),
    "icml25.diffusion.renoise_invert": Example(d.renoise_invert, lambda: {"model": _model(), "x0": _x(),
                                                                           "alphas_cumprod": _abar(), "n_steps": 4},
                                               allow={"x0": "empty"}, positive=("n_steps", "n_iters", "avg_last")),
    "icml25.diffusion.ddim_reconstruct": Example(d.ddim_reconstruct, lambda: {"model": _model(), "zT": _x(),
                                                                               "alphas_cumprod": _abar(),
                                                                               "n_steps": 4},
                                                 allow={"zT": "empty"}, positive=("n_steps",)),
    "icml25.diffusion.mmd_test": Example(d.mmd_test, lambda: {"x": _x().numpy(), "y": _x().numpy() + 1,
                                                               "n_permutations": 5},
                                         positive=("n_permutations", "max_samples")),
    "icml25.diffusion.image_scores": Example(d.image_scores, lambda: {"reference": _x().numpy().reshape(3, 1, 2, 1)
                                                                      .repeat(7, 2).repeat(7, 3).reshape(3, 1, 14, 7),
                                                                      "estimate": _x().numpy().reshape(3, 1, 2, 1)
                                                                      .repeat(7, 2).repeat(7, 3).reshape(3, 1, 14, 7)},
                                             positive=("data_range",)),
    "icml25.diffusion.as_model": Example(d.as_model, {"model": lambda x, t: x}),
    "icml25.diffusion.scheduler_alphas": Example(d.scheduler_alphas, lambda: {"scheduler": _scheduler()}),
    "icml25.diffusion.scheduler_prediction_type": Example(d.scheduler_prediction_type,
                                                          lambda: {"scheduler": _scheduler()}),
}


@cache
def _scheduler():
    import diffusers

    return diffusers.DDIMScheduler(num_train_timesteps=20)
