import numpy as np
import pytest
import torch
from scipy import stats

from icml25.reasoning.modular_arithmetic import (
    AngularMSE,
    LWESampler,
    ModularSumSampler,
    ModularTransformer,
    NormRegularizedAngularLoss,
    WrappedAngleLoss,
    circular_distance,
    evaluate,
    from_circle,
    make_loss,
    nonzero_count_probs,
    recover_binary_secret,
    sample_inputs,
    targets,
    to_circle,
    train,
)


# ----------------------------------------------------------------------------------- data
def test_nonzero_count_probs_known_values():
    p = nonzero_count_probs(3, "inv_sqrt")
    w = np.array([0.0, 1 / np.sqrt(3), 1 / np.sqrt(2), 1.0])
    np.testing.assert_allclose(p, w / w.sum())
    np.testing.assert_allclose(nonzero_count_probs(4, "uniform_n"), [0, 0.25, 0.25, 0.25, 0.25])
    np.testing.assert_allclose(nonzero_count_probs(2, "uniform", q=2), [0.25, 0.5, 0.25])


def test_sampler_matches_distribution_and_values_uniform():
    N, q = 8, 13
    x = sample_inputs(200_000, N, q, "inv_sqrt", seed=0)
    assert x.dtype == np.int64 and x.shape == (200_000, N) and x.min() >= 0 and x.max() < q
    counts = np.bincount((x != 0).sum(1), minlength=N + 1) / len(x)
    assert 0.5 * np.abs(counts - nonzero_count_probs(N, "inv_sqrt")).sum() < 0.01
    nz = np.bincount(x[x != 0], minlength=q)[1:]
    assert stats.chisquare(nz).pvalue > 0.001
    per_position = (x != 0).mean(0)  # exchangeable positions: the same non-zero rate everywhere
    assert np.ptp(per_position) < 0.01


def test_sampler_uniform_and_curriculum_cap():
    x = sample_inputs(50_000, 4, 5, "uniform", seed=1)
    assert stats.chisquare(np.bincount(x.ravel(), minlength=5)).pvalue > 0.001
    capped = sample_inputs(10_000, 8, 7, "uniform_n", seed=1, max_nonzero=4)
    assert (capped != 0).sum(1).max() == 4 and (capped != 0).sum(1).min() == 1


def test_sampler_is_deterministic():
    a = ModularSumSampler(6, 11, seed=3).sample(100)
    b = ModularSumSampler(6, 11, seed=3).sample(100)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_targets_functions():
    x = np.array([[3, 4, 5]])
    assert targets(x, 7)[0] == 12 % 7
    assert targets(x, 7, "sum_x10")[0] == 120 % 7
    assert targets(x, 7, "sum_sq")[0] == (9 + 16 + 25) % 7
    assert targets(x, 7, "sq_sum")[0] == 144 % 7
    assert targets(x, 7, secret=np.array([1, 0, 1]))[0] == 8 % 7


def test_lwe_sampler():
    lwe = LWESampler(16, 97, 3, sigma=0.0, seed=0)
    assert lwe.secret.sum() == 3 and set(np.unique(lwe.secret)) <= {0, 1}
    A, b = lwe.sample(50)
    np.testing.assert_array_equal(b, A @ lwe.secret % 97)


@pytest.mark.parametrize("call, match", [
    (lambda: sample_inputs(10, 0, 7), "N must be"),
    (lambda: sample_inputs(10, 4, 1), "q must be"),
    (lambda: sample_inputs(10, 4, 2**31 + 1), "q must be"),
    (lambda: sample_inputs(10, 4, 7, "zipf"), "strategy must be"),
    (lambda: sample_inputs(10, 4, 7, "uniform", max_nonzero=2), "max_nonzero"),
    (lambda: nonzero_count_probs(4, "uniform"), "needs q"),
    (lambda: targets(np.array([[1, 7]]), 7), r"values in \[0, 7\)"),
    (lambda: targets(np.array([[-1, 2]]), 7), r"values in \[0, 7\)"),
    (lambda: targets(np.array([[1, 2]]), 7, "cube"), "function must be"),
    (lambda: targets(np.array([1, 2]), 7), "shape"),
    (lambda: LWESampler(4, 97, 5), "hamming_weight"),
    (lambda: LWESampler(4, 97, 0), "hamming_weight"),
    (lambda: LWESampler(4, 97, 2, sigma=-1.0), "sigma"),
])
def test_data_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: sample_inputs(10, 4, 7.0), "q must be an integer"),
    (lambda: targets(np.array([[1.0, 2.0]]), 7), "x must be an integer array"),
    (lambda: LWESampler(4, 97, 2, sigma="1"), "sigma must be a real number"),
    (lambda: sample_inputs(10, 4, 7, seed=-1), "seed must be"),
])
def test_data_wrong_types(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


# ----------------------------------------------------------------------------------- angular maps
def test_circle_round_trip_and_distance():
    for q in (2, 7, 97, 1000):
        y = torch.arange(q)
        assert torch.equal(from_circle(to_circle(y, q), q), y)
        np.testing.assert_allclose(to_circle(y, q).norm(dim=-1).numpy(), 1.0, atol=1e-6)
    assert from_circle(torch.zeros(1, 2), 11).item() == 0
    assert circular_distance(np.array([0, 1, 6]), np.array([10, 10, 0]), 11).tolist() == [1, 2, 5]
    assert circular_distance(torch.tensor([0]), torch.tensor([10]), 11).item() == 1
    with pytest.raises(ValueError, match="shape"):
        from_circle(torch.zeros(3, 3), 11)


# ----------------------------------------------------------------------------------- losses
def test_regulariser_minimum_alpha_zero_and_outward_gradient():
    t = to_circle(torch.tensor([0]), 7)
    loss = NormRegularizedAngularLoss(alpha=1.0)
    radii = torch.linspace(0.3, 3.0, 271)
    regs = torch.stack([loss(torch.tensor([[r, 0.0]]), t)[2] for r in radii])
    assert abs(radii[regs.argmin()].item() - 1.0) < 0.011
    z = torch.randn(16, 2)
    tt = to_circle(torch.randint(0, 7, (16,)), 7)
    total, mse, _ = NormRegularizedAngularLoss(alpha=0.0)(z, tt)
    assert torch.equal(total, AngularMSE()(z, tt)) and torch.equal(mse, total)
    z0 = torch.tensor([[1e-2, 1e-2]], requires_grad=True)
    NormRegularizedAngularLoss(alpha=0.1)(z0, t)[0].backward()
    assert (-(z0.grad) * z0.detach()).sum() > 0  # gradient descent moves z away from the origin


def test_wrapped_angle_loss_wraps():
    z = to_circle(torch.tensor([0]), 100)
    t = to_circle(torch.tensor([99]), 100)
    assert WrappedAngleLoss()(z, t).item() == pytest.approx((2 * np.pi / 100) ** 2, rel=1e-4)


def test_loss_bad_input():
    with pytest.raises(ValueError, match="alpha"):
        NormRegularizedAngularLoss(alpha=-0.1)
    with pytest.raises(ValueError, match="loss must be"):
        make_loss("hinge")
    with pytest.raises(ValueError, match=r"\(batch, 2\)"):
        AngularMSE()(torch.zeros(4, 3), torch.zeros(4, 3))


# ----------------------------------------------------------------------------------- model
@pytest.mark.parametrize("emb_input, head, out", [("angular", "angular", 2), ("token", "angular", 2),
                                                    ("token", "ce", 11)])
def test_model_shapes(emb_input, head, out):
    model = ModularTransformer(5, 11, hidden=16, n_layers=1, n_heads=2, emb_input=emb_input, head=head)
    assert model(torch.randint(0, 11, (3, 5))).shape == (3, out)
    normed = ModularTransformer(5, 11, hidden=16, n_layers=2, n_heads=2, emb_input=emb_input, head=head,
                                final_norm=True, positional=False)
    assert normed(torch.randint(0, 11, (3, 5))).shape == (3, out)


def test_model_seed_fixes_weights():
    a, b = (ModularTransformer(3, 5, hidden=8, n_layers=1, n_heads=1, seed=4) for _ in range(2))
    x = torch.randint(0, 5, (2, 3))
    assert torch.equal(a(x), b(x))


def test_seeded_model_and_training_leave_the_global_torch_rng_alone():
    state = torch.random.get_rng_state()
    model = ModularTransformer(3, 5, hidden=8, n_layers=1, n_heads=1, seed=4)
    train(model, ModularSumSampler(3, 5, seed=0), steps=2, batch_size=8, warmup=1, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)


def test_model_bad_input():
    model = ModularTransformer(5, 11, hidden=16, n_layers=1, n_heads=2)
    with pytest.raises(ValueError, match=r"shape \(batch, 5\)"):
        model(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(TypeError, match="integer tensor"):
        model(torch.zeros(3, 5))
    with pytest.raises(ValueError, match=r"values in \[0, 11\)"):
        model(torch.full((3, 5), 11))
    with pytest.raises(TypeError, match="torch.Tensor"):
        model(np.zeros((3, 5), dtype=np.int64))
    with pytest.raises(TypeError, match="z must be a torch.Tensor"):
        AngularMSE()(np.zeros((4, 2)), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="emb_input"):
        ModularTransformer(5, 11, emb_input="onehot")


def test_training_learns_small_sum_and_is_deterministic():
    def fit():
        model = ModularTransformer(2, 7, hidden=32, n_layers=1, n_heads=2, emb_input="token", seed=0)
        history = train(model, ModularSumSampler(2, 7, "inv_sqrt", seed=0), steps=300, batch_size=128,
                        lr=3e-3, warmup=20, clip_grad_norm=1.0, seed=0)
        return history, evaluate(model, n_test=500, seed=1)

    h1, m1 = fit()
    h2, m2 = fit()
    assert h1 == h2 and m1 == m2
    assert m1["exact_accuracy"] > 0.8 and m1["collapsed_fraction"] == 0.0


def test_train_bad_input():
    model = ModularTransformer(4, 7, hidden=16, n_layers=1, n_heads=2)
    with pytest.raises(ValueError, match="does not match"):
        train(model, ModularSumSampler(5, 7), steps=1)
    with pytest.raises(ValueError, match="curriculum"):
        train(model, ModularSumSampler(4, 7, "uniform"), steps=1, curriculum="easy_all")
    with pytest.raises(ValueError, match="head='ce'"):
        train(model, ModularSumSampler(4, 7), steps=1, loss="CE")
    with pytest.raises(ValueError, match="clip_grad_norm"):
        train(model, ModularSumSampler(4, 7), steps=1, clip_grad_norm=-1.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_model_runs_on_cuda():
    model = ModularTransformer(4, 7, hidden=16, n_layers=1, n_heads=2).cuda()
    z = model(torch.randint(0, 7, (3, 4), device="cuda"))
    assert z.device.type == "cuda" and z.shape == (3, 2)
    train(model, ModularSumSampler(4, 7, seed=0), steps=2, batch_size=8, warmup=1)
    assert evaluate(model, n_test=10)["exact_accuracy"] >= 0.0


# ----------------------------------------------------------------------------------- LWE recovery
def test_recovery_with_perfect_and_random_oracles():
    recovered, rejected = 0, 0
    rng = np.random.default_rng(0)
    for seed in range(20):
        lwe = LWESampler(16, 97, 3, sigma=1.0, seed=seed)
        A, b = lwe.sample(200)
        guess, ok = recover_binary_secret(lambda a, s=lwe.secret: a @ s % 97, A, b, 97, 3, 1.0)
        recovered += ok and np.array_equal(guess, lwe.secret)
        _, ok_random = recover_binary_secret(lambda a: rng.integers(0, 97, len(a)), A, b, 97, 3, 1.0)
        rejected += not ok_random
    assert recovered == 20 and rejected == 20


def test_recovery_bad_input():
    A = np.zeros((10, 16), dtype=np.int64)
    b = np.zeros(10, dtype=np.int64)
    with pytest.raises(ValueError, match="at least n = 16"):
        recover_binary_secret(lambda a: a[:, 0], A, b, 97, 3, 1.0)
    with pytest.raises(ValueError, match="hamming_weight"):
        recover_binary_secret(lambda a: a[:, 0], np.zeros((20, 4), dtype=np.int64), np.zeros(20, dtype=np.int64),
                              97, 5, 1.0)
    with pytest.raises(ValueError, match="predict_fn must return"):
        recover_binary_secret(lambda a: a, np.zeros((20, 4), dtype=np.int64), np.zeros(20, dtype=np.int64),
                              97, 2, 1.0)


def test_modules_follow_float64_keep_the_global_rng_and_name_bad_inputs():
    state = torch.random.get_rng_state()
    model = ModularTransformer(3, 7, hidden=8, n_layers=1, n_heads=2, seed=0)
    assert torch.equal(torch.random.get_rng_state(), state)
    x = torch.tensor([[0, 1, 2], [3, 4, 6]])
    assert model.to(torch.float64)(x).dtype == torch.float64
    loss = NormRegularizedAngularLoss()
    z, t = torch.randn(3, 2, dtype=torch.float64), torch.randn(3, 2, dtype=torch.float64)
    assert all(v.dtype == torch.float64 for v in loss(z, t))
    with pytest.raises(ValueError, match="x must be a 2-d tensor"):
        model(x[None])
    with pytest.raises(ValueError, match="batch >= 1"):
        model(x[:0])
    with pytest.raises(ValueError, match="z must be a 2-d tensor"):
        loss(z[None], t)
    with pytest.raises(ValueError, match="z and t"):
        loss(z[:0], t[:0])  # the mean over an empty batch would be NaN
    with pytest.raises(TypeError, match="positional"):
        ModularTransformer(3, 7, hidden=8, n_layers=1, n_heads=2, positional="yes")
    with pytest.raises(ValueError, match="secret must have shape"):
        ModularSumSampler(3, 7, secret=np.array([1, 0]))
    with pytest.raises(ValueError, match="n must be"):
        LWESampler(0, 11, 1)


def test_angular_helpers_reject_nan_and_mismatched_shapes():
    with pytest.raises(ValueError, match="z"):
        from_circle(torch.tensor([[float("nan"), 1.0]]), 7)  # decoded to a garbage residue before
    with pytest.raises(ValueError, match="x"):
        to_circle(torch.tensor([float("nan")]), 7)
    with pytest.raises(ValueError, match="a and b"):
        circular_distance(np.array([0, 1]), np.array([0, 1, 2]), 7)  # broadcast silently before
    with pytest.raises(ValueError, match="a"):
        circular_distance(np.array([np.nan]), np.array([1.0]), 7)
    with pytest.raises(TypeError, match="a and b"):
        circular_distance(torch.tensor([0]), np.array([1]), 7)
