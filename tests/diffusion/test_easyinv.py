"""EasyInv and the inversions it is compared with: diffusers parity, call counts, the hook's algebra."""

import warnings

import pytest
import torch

from icml25.diffusion import (
    EasyInvHook,
    GaussianMixture,
    MixtureEps,
    NoisyEps,
    ddim_invert,
    ddim_reconstruct,
    fixed_point_invert,
    make_alphas_cumprod,
    renoise_invert,
)

diffusers = pytest.importorskip("diffusers")
ABAR = make_alphas_cumprod(1000)


def _bed(seed=0, n=64):
    gm = GaussianMixture.random(10, 16, 0.22, seed=seed)
    return gm, MixtureEps(gm, ABAR), gm.sample(n, seed=seed + 1)


def test_ddim_invert_equals_diffusers_inverse_scheduler_on_a_tiny_unet(tiny_unet):
    unet = tiny_unet
    inverse = diffusers.DDIMInverseScheduler(num_train_timesteps=1000, clip_sample=False)
    inverse.set_timesteps(10)
    x0 = torch.randn(2, 1, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        z = x0
        for t in inverse.timesteps:
            z = inverse.step(unet(z, t).sample, t, z).prev_sample
    ours, stats = ddim_invert(unet, x0, inverse.alphas_cumprod.double(), n_steps=10)
    assert stats.nfe == 10
    assert torch.allclose(ours, z, atol=1e-4, rtol=1e-4)


def test_exact_model_reconstructs_and_eta_one_is_plain_ddim_bit_for_bit():
    _, model, x0 = _bed()
    zT, _ = ddim_invert(model, x0, ABAR, n_steps=50)
    same, _ = ddim_invert(model, x0, ABAR, n_steps=50, hook=EasyInvHook(eta=1.0))
    assert torch.equal(zT, same)
    x_hat, stats = ddim_reconstruct(model, zT, ABAR, n_steps=50)
    assert stats.nfe == 50 and float(((x_hat - x0) ** 2).mean()) < 0.02


def test_hook_is_an_ema_inside_its_window_and_keeps_per_sample_state():
    hook = EasyInvHook(eta=0.5, start=0.1, length=0.3)
    assert hook.steps(10) == [2, 3]
    outs = [hook(i, 10, torch.tensor([[float(i)], [10.0 * i]])) for i in range(5)]
    assert outs[2].tolist() == [[1.5], [15.0]]          # 0.5·2 + 0.5·1
    assert outs[3].tolist() == [[2.25], [22.5]]         # 0.5·3 + 0.5·1.5
    assert outs[4].tolist() == [[4.0], [40.0]]          # outside the window: unchanged


def test_call_counts_of_the_iterative_methods():
    _, model, x0 = _bed(n=8)
    assert ddim_invert(model, x0, ABAR, 20)[1].nfe == 20
    assert fixed_point_invert(model, x0, ABAR, 20, n_iters=3)[1].nfe == 80
    assert renoise_invert(model, x0, ABAR, 20, n_iters=3)[1].nfe == 80
    assert fixed_point_invert(model, x0, ABAR, 20, n_iters=3, hook=EasyInvHook())[1].nfe == 80


def test_easyinv_helps_when_the_model_is_imprecise():
    _, model, x0 = _bed(n=200)
    errors = {}
    for name, hook in (("ddim", None), ("easyinv", EasyInvHook())):
        noisy = NoisyEps(model, 0.15, seed=3)
        zT, _ = ddim_invert(noisy, x0, ABAR, 50, hook=hook)
        x_hat, _ = ddim_reconstruct(model, zT, ABAR, 50)
        errors[name] = float(((x_hat - x0) ** 2).mean())
    assert errors["easyinv"] < errors["ddim"]


def test_low_precision_runs_the_model_in_that_dtype():
    seen = []

    def model(x, t):
        seen.append(x.dtype)
        return torch.zeros_like(x)

    x0 = torch.zeros(2, 3)
    z, _ = ddim_invert(model, x0, ABAR, 4, dtype=torch.bfloat16)
    assert set(seen) == {torch.bfloat16} and z.dtype == torch.float32


def test_an_empty_window_warns_and_is_plain_ddim():
    _, model, x0 = _bed(n=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        z, _ = ddim_invert(model, x0, ABAR, 4, hook=EasyInvHook(start=0.9, length=0.05))
    assert any("holds no step" in str(w.message) for w in caught)
    assert torch.equal(z, ddim_invert(model, x0, ABAR, 4)[0])


@pytest.mark.parametrize("call, match", [
    (lambda: EasyInvHook(eta=0.0), "eta"),
    (lambda: EasyInvHook(eta=1.5), "eta"),
    (lambda: EasyInvHook(start=-0.1), "start"),
    (lambda: ddim_invert(lambda x, t: x, torch.zeros(2, 3), ABAR, n_steps=1), "n_steps"),
    (lambda: ddim_invert(lambda x, t: x, torch.zeros(2, 3), ABAR, n_steps=2000), "n_steps"),
    (lambda: ddim_invert(lambda x, t: x * float("inf"), torch.ones(2, 3), ABAR, n_steps=4), "step 0"),
    (lambda: renoise_invert(lambda x, t: x, torch.zeros(2, 3), ABAR, 4, n_iters=2, avg_last=4), "avg_last"),
])
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
