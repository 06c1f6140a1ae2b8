"""Autospeculative decoding: the coupling has the target law, ASD equals the sequential sampler in law."""

import numpy as np
import pytest
import torch
from scipy import stats

from icml25.diffusion import GaussianMixture, make_alphas_cumprod
from icml25.diffusion.autospeculative_ddpm import (
    asd_sample,
    ddpm_sl_grid,
    reflection_coupling,
    sl_sample_sequential,
    uniform_sl_grid,
)


def _g(seed):
    return torch.Generator().manual_seed(seed)


def test_reflection_coupling_emits_the_target_law():
    n, step = 200_000, 0.3
    mp, mt = torch.tensor([0.0, 0.0]), torch.tensor([1.5, -0.5])
    dh = step * mp + step**0.5 * torch.randn(n, 2, generator=_g(0), dtype=torch.float64)
    u = torch.rand(n, generator=_g(1), dtype=torch.float64)
    out, accepted = reflection_coupling(dh, mp.expand(n, 2), mt.expand(n, 2), step, u)
    z = (out - step * mt) / step**0.5
    assert np.allclose(z.mean(0), 0, atol=0.01) and np.allclose(torch.cov(z.T), np.eye(2), atol=0.02)
    assert stats.kstest(z[:, 0].numpy(), "norm").pvalue > 1e-3
    tv = stats.norm.cdf(0.5 * step**0.5 * float((mt - mp).norm())) * 2 - 1  # TV of the two Gaussians
    assert abs(1 - float(accepted.double().mean()) - tv) < 0.01  # a maximal coupling rejects with prob. TV


def test_equal_means_always_accept():
    dh = torch.randn(50, 3, generator=_g(2), dtype=torch.float64)
    m = torch.ones(50, 3, dtype=torch.float64)
    out, accepted = reflection_coupling(dh, m, m, 0.5, torch.rand(50, generator=_g(3), dtype=torch.float64))
    assert bool(accepted.all()) and torch.equal(out, dh)


@pytest.mark.parametrize("window", [None, 4])
def test_asd_equals_the_sequential_sampler_in_law(window):
    gm = GaussianMixture([0.3, 0.7], [[-1.0], [1.0]], [0.3, 0.5])
    grid = uniform_sl_grid(60, 50.0)
    xa, sa = asd_sample(gm.posterior_mean, grid, (3000, 1), window=window, seed=0)
    xs, _ = sl_sample_sequential(gm.posterior_mean, grid, (3000, 1), seed=1)
    assert stats.ks_2samp(xa[:, 0].numpy(), xs[:, 0].numpy()).pvalue > 1e-3
    assert float(sa.depth.double().mean()) < 0.5 * sa.sequential_depth


def test_window_one_has_exactly_the_sequential_depth():
    gm = GaussianMixture.ring(4, std=0.2)
    grid = uniform_sl_grid(20, 100.0)
    _, stats_ = asd_sample(gm.posterior_mean, grid, (8, 2), window=1, seed=0)
    assert stats_.depth.tolist() == [21] * 8 and stats_.sequential_depth == 21 and int(stats_.proposed.sum()) == 0


def test_same_seed_same_samples_whatever_max_batch():
    gm = GaussianMixture.ring(8, std=0.1)
    grid = uniform_sl_grid(100, 1000.0)
    a, sa = asd_sample(gm.posterior_mean, grid, (40, 2), seed=7, max_batch=5)
    b, sb = asd_sample(gm.posterior_mean, grid, (40, 2), seed=7)
    assert torch.equal(a, b) and torch.equal(sa.depth, sb.depth) and torch.equal(sa.nfe, sb.nfe)
    c, _ = asd_sample(gm.posterior_mean, grid, (40, 2), seed=8)
    assert not torch.equal(a, c)


def test_one_step_chain():
    gm = GaussianMixture.ring(8)
    grid = uniform_sl_grid(1, 10.0)
    x, st = asd_sample(gm.posterior_mean, grid, (5, 2), seed=0)
    assert x.shape == (5, 2) and st.depth.tolist() == [2] * 5 and st.sequential_depth == 2


def test_speedup_grows_with_the_number_of_steps():
    gm = GaussianMixture.ring(8, std=0.1)
    speed = [float(asd_sample(gm.posterior_mean, uniform_sl_grid(k, 1000.0), (16, 2), seed=0)[1].speedup.mean())
             for k in (32, 256)]
    assert speed[1] > speed[0] > 1


def test_ddpm_grid_starts_at_zero_and_increases():
    abar = make_alphas_cumprod(1000)
    grid = ddpm_sl_grid(abar, torch.arange(999, -1, -10))
    assert float(grid[0]) == 0 and bool((grid.diff() > 0).all()) and grid.numel() == 101


@pytest.mark.parametrize("call, match", [
    (lambda: asd_sample(lambda y, t: y, torch.tensor([0.0, 2.0, 1.0]), (2, 1)), "t_grid"),
    (lambda: asd_sample(lambda y, t: y, torch.tensor([0.0]), (2, 1)), "t_grid"),
    (lambda: asd_sample(lambda y, t: y, uniform_sl_grid(3, 1.0), (2, 1), window=0), "window"),
    (lambda: asd_sample(lambda y, t: y * float("nan"), uniform_sl_grid(3, 1.0), (2, 1)), "grid step 0"),
    (lambda: asd_sample(lambda y, t: y, uniform_sl_grid(3, 1.0) + 1.0, (2, 1)), "y0"),
    (lambda: sl_sample_sequential(lambda y, t: y[:1], uniform_sl_grid(3, 1.0), (2, 1)), "mean_fn"),
])
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
