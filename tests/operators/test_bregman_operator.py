"""Unit tests of icml25.operators.bregman_operator (Bregman FNO)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from icml25.operators import (  # noqa: E402
    ACTIVATIONS,
    FNO,
    BregmanFNO,
    FNOBlock,
    SpectralConv,
    fit_operator,
    get_activation_pair,
    relative_l2,
)

INVERTIBLE = [name for name in ACTIVATIONS if name != "gelu"]


def _interior(lo: float, hi: float, n: int = 2001) -> torch.Tensor:
    lo = -5.0 if math.isinf(lo) else lo + 0.01 * (min(hi, 5.0) - lo)
    hi = 5.0 if math.isinf(hi) else hi - 0.01 * (hi - lo)
    return torch.linspace(lo, hi, n, dtype=torch.float64)


@pytest.mark.parametrize("name", INVERTIBLE)
def test_sigma_of_inverse_is_identity_on_the_range(name):
    sigma, inv, (lo, hi) = get_activation_pair(name, version="bregman")
    v = _interior(lo, hi)
    assert torch.allclose(sigma(inv(v)), v, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", INVERTIBLE)
def test_inverse_is_clamped_outside_the_range(name):
    _, inv, (lo, hi) = get_activation_pair(name, version="bregman")
    outside = torch.tensor([lo - 1.0 if math.isfinite(lo) else -10.0, hi + 1.0 if math.isfinite(hi) else 10.0],
                           dtype=torch.float64)
    assert torch.isfinite(inv(outside)).all()


def test_softplus_pair_values():
    sigma, inv, _ = get_activation_pair("softplus", beta=10.0)
    z = torch.tensor([-0.5, 0.0, 0.5, 3.0], dtype=torch.float64)
    assert torch.allclose(sigma(z), torch.log1p(torch.exp(10 * z)) / 10)
    assert torch.allclose(inv(sigma(z)), z, atol=1e-8)


def test_relu_pairs():
    sigma, inv, _ = get_activation_pair("relu", version="bregman")
    z = torch.tensor([-2.0, 0.0, 2.0], dtype=torch.float64)
    assert torch.allclose(sigma(z), (z + torch.sqrt(z * z + 1)) / 2)
    assert torch.allclose(inv(sigma(z)), z)
    sigma, inv, _ = get_activation_pair("relu", version="standard")
    assert inv is None and torch.equal(sigma(z), torch.relu(z))
    assert get_activation_pair("gelu").sigma_inv is None


def test_bad_activation_names():
    with pytest.raises(ValueError, match="unknown activation 'swish'.*softplus"):
        get_activation_pair("swish")
    with pytest.raises(ValueError, match="version must be one of 'bregman', 'standard', got 'other'"):
        get_activation_pair("tanh", version="other")
    with pytest.raises(ValueError, match=r"beta must be a real number in \(0, inf\), got 0"):
        get_activation_pair("softplus", beta=0)


@pytest.mark.parametrize("n_modes,grid", [((8,), (37,)), ((8,), (64,)), ((5, 4), (16, 13)), ((6, 6), (24, 24))])
def test_spectral_conv_matches_dense_fourier_multiplier(n_modes, grid):
    torch.manual_seed(0)
    conv = SpectralConv(3, 2, n_modes).double()
    x = torch.randn(2, 3, *grid, dtype=torch.float64)
    y = conv(x)
    assert y.shape == (2, 2, *grid)
    # the output contains no frequency above the kept modes
    y_ft = torch.fft.rfftn(y, dim=tuple(range(2, 2 + len(grid))))
    assert y_ft[..., n_modes[-1]:].abs().max() < 1e-10
    # linearity and translation equivariance (it is a convolution on the periodic grid)
    shifted = torch.roll(x, shifts=3, dims=-1)
    assert torch.allclose(conv(shifted), torch.roll(y, shifts=3, dims=-1), atol=1e-10)
    assert torch.allclose(conv(2 * x), 2 * y, atol=1e-10)


def test_spectral_conv_of_a_single_mode():
    conv = SpectralConv(1, 1, (4,), init_std=0.0).double()
    with torch.no_grad():
        conv.weight[0, 0, 2] = torch.tensor([0.0, 1.0])  # multiply mode 2 by i: cos -> -sin
    x = torch.linspace(0, 1, 32 + 1, dtype=torch.float64)[:-1]
    out = conv(torch.cos(4 * math.pi * x)[None, None])
    assert torch.allclose(out[0, 0], -torch.sin(4 * math.pi * x), atol=1e-12)


def test_spectral_conv_finer_output_grid_interpolates_band_limited_functions():
    torch.manual_seed(1)
    conv = SpectralConv(2, 2, (6,)).double()
    coarse = torch.linspace(0, 1, 33, dtype=torch.float64)[:-1]
    fine = torch.linspace(0, 1, 129, dtype=torch.float64)[:-1]
    f = lambda t: torch.stack([torch.sin(2 * math.pi * t), torch.cos(6 * math.pi * t)])[None]  # noqa: E731
    assert torch.allclose(conv(f(coarse), output_shape=(128,)), conv(f(fine)), atol=1e-10)


def test_spectral_conv_bad_shapes():
    conv = SpectralConv(3, 3, (8, 8))
    with pytest.raises(ValueError, match="2 spatial dims.*got 1"):
        conv(torch.randn(2, 3, 32))
    with pytest.raises(ValueError, match="n_modes\\[1\\] = 8 is too large for grid size 10"):
        conv(torch.randn(2, 3, 32, 10))
    with pytest.raises(ValueError, match="expected 3 input channels, got 4"):
        conv(torch.randn(2, 4, 32, 32))
    with pytest.raises(ValueError, match=r"n_modes\[0\] must be an integer >= 1, got 0"):
        SpectralConv(3, 3, (0,))
    with pytest.raises(ValueError, match="n_modes must list 1 to 3 mode counts"):
        SpectralConv(3, 3, (4, 4, 4, 4))
    with pytest.raises(ValueError, match="init_std must be one of 'auto'"):
        SpectralConv(3, 3, (4,), init_std="big")
    with pytest.raises(ValueError, match=r"init_std must be a real number in \[0, inf\)"):
        SpectralConv(3, 3, (4,), init_std=-1.0)
    with pytest.raises(TypeError, match="in_channels must be an integer"):
        SpectralConv(3.0, 3, (4,))


def test_bregman_block_is_identity_at_initialisation():
    torch.manual_seed(0)
    for n_modes, grid in (((8,), (40,)), ((6, 6), (20, 20))):
        block = FNOBlock(16, n_modes, zero_init=True)
        v = torch.randn(3, 16, *grid)
        assert block(v).abs().max() == 0
        model = BregmanFNO(2, 1, hidden_channels=16, n_modes=n_modes, n_layers=6, lifting_channels=None)
        x = torch.randn(3, 2, *grid)
        assert (model.hidden(x) - model.lift(x)).abs().max() < 1e-6


def test_preactivation_carrying_equals_explicit_inverse():
    torch.manual_seed(0)
    for activation in ("softplus", "tanh", "asinh", "relu"):
        # softplus with beta = 1: values below the inverse's clamp (1e-4) would need z < -9
        kw = dict(hidden_channels=8, n_modes=(6,), n_layers=5, architecture="bregman", activation=activation,
                  zero_init=False, activation_kwargs={"beta": 1.0} if activation == "softplus" else None)
        carry = FNO(1, 1, **kw).double()
        explicit = FNO(1, 1, carry_preactivation=False, **kw).double()
        explicit.load_state_dict(carry.state_dict())
        with torch.no_grad():
            for p in carry.blocks.parameters():  # keep the activations inside their range
                p.mul_(0.1)
            explicit.load_state_dict(carry.state_dict())
        x = torch.randn(4, 1, 32, dtype=torch.float64)
        a, b = carry(x), explicit(x)
        assert ((a - b).norm() / a.norm()) < 1e-4, activation


def test_block_rules_by_hand():
    torch.manual_seed(0)
    x = torch.randn(2, 1, 16, dtype=torch.float64)
    for arch in ("standard", "euclidean", "bregman"):
        model = FNO(1, 1, hidden_channels=4, n_modes=(4,), n_layers=2, architecture=arch, activation="tanh",
                    zero_init=False).double()
        h, (b0, b1) = model.lift(x), model.blocks
        if arch == "standard":
            expected = b1(torch.tanh(b0(h)))
        elif arch == "euclidean":
            v1 = torch.tanh(h + b0(h))
            expected = v1 + b1(v1)
        else:
            v0 = torch.tanh(h)
            z1 = torch.atanh(v0) + b0(v0)
            expected = z1 + b1(torch.tanh(z1))
        assert torch.allclose(model.hidden(x), expected, atol=1e-10), arch


def test_default_inits():
    assert all(p.abs().max() == 0 for p in BregmanFNO(1, 1, n_modes=(4,)).blocks.parameters())
    assert all(p.abs().max() > 0 for p in FNO(1, 1, n_modes=(4,)).blocks.parameters())


def test_fno_shapes_dimensions_and_resolutions():
    torch.manual_seed(0)
    m1 = FNO(2, 3, hidden_channels=8, n_modes=(5,), n_layers=2)
    assert m1(torch.randn(4, 2, 31)).shape == (4, 3, 31)
    assert m1(torch.randn(4, 2, 64)).shape == (4, 3, 64)
    m2 = BregmanFNO(1, 1, hidden_channels=8, n_modes=(4, 4), n_layers=2, lifting_channels=16)
    assert m2(torch.randn(2, 1, 12, 15)).shape == (2, 1, 12, 15)


def test_fno_bad_input():
    model = FNO(1, 1, hidden_channels=8, n_modes=(4,), n_layers=2)
    with pytest.raises(ValueError, match="1 spatial dims.*got shape \\(2, 1, 16, 16\\)"):
        model(torch.randn(2, 1, 16, 16))
    with pytest.raises(ValueError, match="expected 1 input channels, got 2"):
        model(torch.randn(2, 2, 16))
    with pytest.raises(ValueError, match="input must contain only finite values"):
        model(torch.full((2, 1, 16), float("nan")))
    with pytest.raises(TypeError, match="floating-point"):
        model(torch.ones(2, 1, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="n_modes\\[0\\] = 4 is too large for grid size 5"):
        model(torch.randn(2, 1, 5))
    with pytest.raises(ValueError, match="architecture must be one of 'standard', 'euclidean', 'bregman', got 'res"):
        FNO(1, 1, architecture="resnet")
    with pytest.raises(ValueError, match="unknown activation"):
        FNO(1, 1, activation="swish")
    with pytest.raises(ValueError, match="n_layers must be an integer >= 1"):
        FNO(1, 1, n_layers=0)
    with pytest.raises(ValueError, match="hidden_channels must be an integer >= 1"):
        FNO(1, 1, hidden_channels=0)
    with pytest.raises(ValueError, match="inverse_activation"):
        FNO(1, 1, architecture="bregman", activation=torch.sin)
    with pytest.raises(ValueError, match="no inverse"):
        FNO(1, 1, architecture="bregman", activation="gelu", carry_preactivation=False)


def test_callable_activation_with_inverse_and_gelu_carry():
    x = torch.randn(2, 1, 16)
    FNO(1, 1, n_modes=(4,), architecture="bregman", activation=torch.tanh, inverse_activation=torch.atanh)(x)
    assert torch.isfinite(BregmanFNO(1, 1, n_modes=(4,), activation="gelu")(x)).all()


def test_relative_l2():
    y = torch.ones(2, 1, 4)
    assert relative_l2(2 * y, y).item() == pytest.approx(1.0)
    assert relative_l2(y, y).item() == 0
    with pytest.raises(ValueError, match="shapes differ"):
        relative_l2(y, torch.ones(2, 1, 5))


def test_fit_learns_a_fourier_multiplier_and_is_deterministic():
    torch.manual_seed(0)
    x = torch.randn(64, 1, 32)
    y = torch.roll(x, 2, dims=-1) + 0.5 * x  # a convolution: representable by one spectral layer
    results = []
    for _ in range(2):
        torch.manual_seed(1)
        model = BregmanFNO(1, 1, hidden_channels=8, n_modes=(17,), n_layers=2, lifting_channels=None)
        before = relative_l2(model(x), y).item()
        results.append(fit_operator(model, x[:48], y[:48], x[48:], y[48:], epochs=12, lr=1e-2, batch_size=16, seed=0))
    assert results[0] == results[1]
    assert results[0]["test_rel_l2"] < 0.5 * before
    assert results[0]["train_loss"][-1] < results[0]["train_loss"][0]


def test_fit_early_stopping_restores_the_best_validation_epoch():
    torch.manual_seed(0)
    x = torch.randn(72, 1, 32)
    y = torch.roll(x, 2, dims=-1) + 0.5 * x
    torch.manual_seed(1)
    model = BregmanFNO(1, 1, hidden_channels=8, n_modes=(17,), n_layers=2, lifting_channels=None)
    out = fit_operator(model, x[:48], y[:48], x[48:60], y[48:60], epochs=10, lr=3e-1, batch_size=16, seed=0,
                       normalize=False, validation=(x[60:], y[60:]))
    assert len(out["val_rel_l2"]) == 10 and out["best_epoch"] == 1 + min(range(10), key=out["val_rel_l2"].__getitem__)
    with torch.no_grad():
        restored = relative_l2(model(x[60:]), y[60:]).item()
    assert restored == pytest.approx(min(out["val_rel_l2"]), rel=1e-5)
    assert out["best_epoch"] < 10 and restored < out["val_rel_l2"][-1]  # the best epoch is not the last one here
    torch.manual_seed(1)
    model = BregmanFNO(1, 1, hidden_channels=8, n_modes=(17,), n_layers=2, lifting_channels=None)
    early = fit_operator(model, x[:48], y[:48], epochs=50, lr=3e-1, batch_size=16, seed=0,
                         validation=(x[60:], y[60:]), patience=2)
    assert len(early["train_loss"]) <= early["best_epoch"] + 2 < 50


def test_fit_early_stopping_bad_input():
    model = FNO(1, 1, hidden_channels=4, n_modes=(4,), n_layers=1)
    x = torch.randn(8, 1, 16)
    with pytest.raises(ValueError, match="patience needs a validation set"):
        fit_operator(model, x, x, epochs=1, patience=3)
    with pytest.raises(TypeError, match="validation must be a tuple"):
        fit_operator(model, x, x, epochs=1, validation=x)
    with pytest.raises(ValueError, match="x_val and y_val must have the same length, got 8, 3"):
        fit_operator(model, x, x, epochs=1, validation=(x, x[:3]))
    with pytest.raises(ValueError, match="x_val must have at least 1 entries, got 0"):
        fit_operator(model, x, x, epochs=1, validation=(x[:0], x[:0]))
    with pytest.raises(ValueError, match="x_val must contain only finite values"):
        fit_operator(model, x, x, epochs=1, validation=(torch.full_like(x, float("nan")), x))
    with pytest.raises(ValueError, match="patience must be an integer >= 1, got 0"):
        fit_operator(model, x, x, epochs=1, validation=(x, x), patience=0)


def test_fit_bad_input():
    model = FNO(1, 1, hidden_channels=4, n_modes=(4,), n_layers=1)
    x = torch.randn(8, 1, 16)
    with pytest.raises(ValueError, match="x_train and y_train must have the same length, got 8, 4"):
        fit_operator(model, x, x[:4], epochs=1)
    with pytest.raises(ValueError, match="x_train must be a 3 or 4 or 5-d array"):
        fit_operator(model, x[:, 0], x, epochs=1)
    with pytest.raises(TypeError, match="x_train must be a torch.Tensor"):
        fit_operator(model, x.numpy(), x, epochs=1)
    with pytest.raises(ValueError, match="y_train must contain only finite values"):
        fit_operator(model, x, torch.full_like(x, float("inf")), epochs=1)
    with pytest.raises(ValueError, match="epochs must be an integer >= 0, got -1"):
        fit_operator(model, x, x, epochs=-1)


def test_double_precision_follows_the_model():
    model = BregmanFNO(1, 1, hidden_channels=4, n_modes=(4, 4), n_layers=2).double()
    assert model(torch.randn(1, 1, 8, 8, dtype=torch.float64)).dtype == torch.float64


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_runs_on_cuda():
    for n_modes, grid in (((4,), (32,)), ((4, 4), (16, 16))):
        model = BregmanFNO(1, 1, hidden_channels=8, n_modes=n_modes, n_layers=3).cuda()
        x = torch.randn(2, 1, *grid, device="cuda")
        out = model(x)
        assert out.device.type == "cuda" and out.shape == (2, 1, *grid)
        result = fit_operator(model, x, x, x, x, epochs=1)
        assert math.isfinite(result["test_rel_l2"])


def test_seed_and_clear_errors():
    """Issue 19: seed= leaves the global RNG alone; bad inputs raise errors naming the argument."""
    state = torch.random.get_rng_state()
    a = FNO(1, 1, hidden_channels=4, n_modes=(2,), n_layers=1, seed=1)
    b = FNO(1, 1, hidden_channels=4, n_modes=(2,), n_layers=1, seed=1)
    assert torch.equal(state, torch.random.get_rng_state())
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        a("abc")
    with pytest.raises(ValueError, match="x must hold at least one sample"):
        a(torch.randn(0, 1, 8))
    with pytest.raises(ValueError, match="v: expected 4 input channels"):
        FNOBlock(4, (2,))(torch.randn(2, 3, 8))
    with pytest.raises(TypeError, match="channels must be an integer"):
        FNOBlock("abc", (2,))
    with pytest.raises(TypeError, match="zero_init must be True or False"):
        FNOBlock(4, (2,), zero_init="abc")
    with pytest.raises(ValueError, match="pred must contain only finite values"):
        relative_l2(torch.full((2, 3), float("nan")), torch.ones(2, 3))
    with pytest.raises(TypeError, match="output_shape must be a tuple"):
        SpectralConv(1, 1, (2,))(torch.randn(2, 1, 8), output_shape=3)
    with pytest.raises(TypeError, match="y_test must be a torch.Tensor"):
        fit_operator(a, torch.randn(4, 1, 8), torch.randn(4, 1, 8), torch.randn(2, 1, 8), None, epochs=0)
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        fit_operator("abc", torch.randn(4, 1, 8), torch.randn(4, 1, 8))
