"""The diffusion core: schedules and steps agree with diffusers, the SL map is exact, mixtures are exact."""

import numpy as np
import pytest
import torch

from icml25.diffusion import (
    DenoiserPosterior,
    GaussianMixture,
    MixtureEps,
    TinyDenoiser,
    add_noise,
    ddim_sample,
    ddim_step,
    ddim_timesteps,
    ddpm_step,
    ddpm_to_sl,
    make_alphas_cumprod,
    to_eps,
    to_v,
    to_x0,
    train_denoiser,
    x_to_y,
    y_to_x,
)

diffusers = pytest.importorskip("diffusers")


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed):
    return torch.randn(*shape, generator=_g(seed), dtype=torch.float64)


@pytest.mark.parametrize("schedule", ["linear", "scaled_linear", "squaredcos_cap_v2"])
def test_alphas_cumprod_equal_diffusers(schedule):
    sched = diffusers.DDPMScheduler(num_train_timesteps=1000, beta_schedule=schedule)
    ours = make_alphas_cumprod(1000, schedule, beta_start=sched.config.beta_start, beta_end=sched.config.beta_end)
    assert torch.allclose(ours.float(), sched.alphas_cumprod, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("spacing", ["leading", "trailing", "linspace"])
@pytest.mark.parametrize("n_steps", [1, 7, 50, 1000])
def test_ddim_timesteps_equal_set_timesteps(spacing, n_steps):
    sched = diffusers.DDIMScheduler(num_train_timesteps=1000, timestep_spacing=spacing)
    sched.set_timesteps(n_steps)
    assert ddim_timesteps(n_steps, 1000, spacing).tolist() == sched.timesteps.tolist()


@pytest.mark.parametrize("prediction_type", ["epsilon", "sample", "v_prediction"])
def test_ddim_step_equals_diffusers_step(prediction_type):
    sched = diffusers.DDIMScheduler(num_train_timesteps=1000, clip_sample=False, prediction_type=prediction_type)
    sched.set_timesteps(20)
    x, out = torch.randn(3, 1, 4, 4, generator=_g(1)), torch.randn(3, 1, 4, 4, generator=_g(2))
    for t in sched.timesteps.tolist()[::5]:
        theirs = sched.step(out, t, x).prev_sample
        ours = ddim_step(out, t, x, sched.alphas_cumprod.double(), 20, prediction_type)
        assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-5)


def test_ddpm_step_equals_diffusers_step_with_the_same_generator():
    sched = diffusers.DDPMScheduler(num_train_timesteps=1000, clip_sample=False)
    sched.set_timesteps(1000)
    x, out = torch.randn(2, 3, generator=_g(1)), torch.randn(2, 3, generator=_g(2))
    for t in (999, 500, 1, 0):
        theirs = sched.step(out, t, x, generator=_g(7)).prev_sample
        ours = ddpm_step(out, t, x, sched.alphas_cumprod.double(), seed=_g(7))
        assert torch.allclose(ours, theirs, atol=1e-5, rtol=1e-4)


def test_tiny_unet2dmodel_samples_identically_through_our_loop_and_diffusers(tiny_unet):
    unet = tiny_unet
    sched = diffusers.DDIMScheduler(num_train_timesteps=1000, clip_sample=False)
    sched.set_timesteps(10)
    x_T = torch.randn(2, 1, 8, 8, generator=_g(3))
    with torch.no_grad():
        x = x_T
        for t in sched.timesteps:
            x = sched.step(unet(x, t).sample, t, x).prev_sample
        ours = ddim_sample(unet, x_T, sched.alphas_cumprod.double(), n_steps=10)
    assert torch.allclose(ours, x, atol=1e-4, rtol=1e-4)


def test_prediction_conversions_round_trip():
    abar = make_alphas_cumprod(1000)
    x0, eps = _randn(5, 3, seed=1), _randn(5, 3, seed=2)
    t = torch.tensor([0, 10, 300, 700, 999])
    x = add_noise(x0, eps, t, abar)
    a = abar[t]
    v = to_v(eps, x0, a)
    for kind, out in (("epsilon", eps), ("sample", x0), ("v_prediction", v)):
        assert torch.allclose(to_x0(out, x, a, kind), x0, atol=1e-8)
        assert torch.allclose(to_eps(out, x, a, kind), eps, atol=1e-6)


def test_sl_map_turns_the_forward_process_into_t_x0_plus_sqrt_t_eps():
    abar = make_alphas_cumprod(1000)[torch.tensor([5, 400, 990])]
    x0, eps = _randn(3, 2, seed=4), _randn(3, 2, seed=5)
    x = abar.sqrt()[:, None] * x0 + (1 - abar).sqrt()[:, None] * eps
    t = ddpm_to_sl(abar)[:, None]
    assert torch.allclose(x_to_y(x, abar), t * x0 + t.sqrt() * eps)
    assert torch.allclose(y_to_x(x_to_y(x, abar), abar), x)


def test_mixture_posterior_mean_matches_importance_sampling():
    gm = GaussianMixture([0.3, 0.7], [[-1.0, 0.0], [1.0, 0.5]], [0.3, 0.5])
    prior = gm.sample(400_000, seed=1)
    y, t = torch.tensor([[0.4, -0.2]], dtype=torch.float64), 1.7
    logw = -((y - t * prior) ** 2).sum(1) / (2 * t)
    w = torch.softmax(logw, 0)
    mc = (w[:, None] * prior).sum(0)
    assert torch.allclose(gm.posterior_mean(y, torch.tensor([t]))[0], mc, atol=5e-3)


def test_mixture_posterior_at_time_zero_is_the_mean_and_sl_agrees_with_ddpm():
    gm = GaussianMixture.random(4, 3, 0.4, seed=2)
    y = torch.zeros(2, 3, dtype=torch.float64)
    assert torch.allclose(gm.posterior_mean(y, torch.zeros(2)), gm.mean().expand(2, -1))
    abar = torch.tensor([0.2, 0.9], dtype=torch.float64)
    x = torch.randn(2, 3, generator=_g(6), dtype=torch.float64)
    assert torch.allclose(gm.denoise(x, abar), gm.posterior_mean(x_to_y(x, abar), ddpm_to_sl(abar)), atol=1e-10)


def test_denoiser_posterior_of_the_exact_eps_model_is_the_exact_posterior_mean():
    abar = make_alphas_cumprod(1000)
    gm = GaussianMixture.ring(8)
    m = DenoiserPosterior(MixtureEps(gm, abar), abar, mean_at_zero=gm.mean())
    t = ddpm_to_sl(abar[torch.tensor([0, 100, 500, 999])])
    t = torch.cat([torch.zeros(1, dtype=torch.float64), t])
    y = torch.randn(5, 2, generator=_g(7), dtype=torch.float64)
    assert torch.allclose(m(y, t), gm.posterior_mean(y, t), atol=1e-8)
    with pytest.raises(ValueError, match="t must be SL times"):
        m(y[:1], torch.tensor([0.123456]))


def test_ddim_with_the_exact_model_lands_on_the_data_and_is_deterministic():
    abar = make_alphas_cumprod(1000)
    gm = GaussianMixture.ring(8, radius=1.0, std=0.05)
    x_T = torch.randn(256, 2, generator=_g(8), dtype=torch.float64)
    x = ddim_sample(MixtureEps(gm, abar), x_T, abar, n_steps=100)
    assert torch.equal(x, ddim_sample(MixtureEps(gm, abar), x_T, abar, n_steps=100))
    radius = x.norm(dim=1)
    assert abs(float(radius.mean()) - 1.0) < 0.05 and float(radius.std()) < 0.1


def test_tiny_denoiser_learns_and_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    model = TinyDenoiser(shape=(4,), hidden=32, n_layers=1, time_dim=8, seed=0)
    assert torch.equal(state, torch.random.get_rng_state())
    data = torch.tensor(np.random.default_rng(0).normal(size=(64, 4)) * 0.1 + 0.5, dtype=torch.float32)
    losses = train_denoiser(model, data, make_alphas_cumprod(100), steps=300, batch_size=32, lr=3e-3, seed=0)
    assert np.mean(losses[-50:]) < 0.6 * np.mean(losses[:50])
    twin = TinyDenoiser(shape=(4,), hidden=32, n_layers=1, time_dim=8, seed=0)
    assert train_denoiser(twin, data, make_alphas_cumprod(100), steps=300, batch_size=32, lr=3e-3, seed=0) == losses


@pytest.mark.parametrize("call, match", [
    (lambda: make_alphas_cumprod(1), "n_train"),
    (lambda: ddim_timesteps(0, 1000), "n_steps"),
    (lambda: ddim_timesteps(2000, 1000), "n_steps"),
    (lambda: to_x0(torch.zeros(2, 3), torch.zeros(2, 3), 0.5, "x0"), "prediction_type"),
    (lambda: to_x0(torch.zeros(2, 4), torch.zeros(2, 3), 0.5), "model_output"),
    (lambda: GaussianMixture([0.5, 0.6], [[0.0], [1.0]], [1.0, 1.0]), "weights"),
    (lambda: GaussianMixture([1.0], [[0.0]], [-1.0]), "stds"),
    (lambda: ddim_sample(lambda x, t: x * float("nan"), torch.zeros(1, 2), make_alphas_cumprod(10), 2), "NaN"),
])
def test_bad_input_is_rejected(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_posterior_samples_average_to_the_posterior_mean():
    gm = GaussianMixture([0.4, 0.6], [[-1.0, 0.0], [1.0, 1.0]], [0.3, 0.6])
    y = torch.tensor([[0.2, 0.3]], dtype=torch.float64).expand(200_000, 2)
    draws = gm.sample_posterior(y, 0.8, seed=0)
    assert torch.allclose(draws.mean(0), gm.posterior_mean(y[:1], 0.8)[0], atol=0.01)
    prior = gm.sample_posterior(torch.zeros(50_000, 2, dtype=torch.float64), 0.0, seed=1)  # y_0 = 0: the prior
    assert torch.allclose(prior.mean(0), gm.mean(), atol=0.02)


def test_mmd_test_tells_equal_from_shifted_samples():
    from icml25.diffusion.metrics import mmd_test

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(300, 2)), rng.normal(size=(300, 2))
    assert mmd_test(a, b, n_permutations=100, seed=0)[1] > 0.05
    assert mmd_test(a, b + 0.5, n_permutations=100, seed=0)[1] < 0.02
