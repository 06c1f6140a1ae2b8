"""Unit tests of the shared attacks (icml25.learning_theory.attacks), the CGRO constructions
(icml25.learning_theory.cgro) and the signal/noise patch data (icml25.data.patch_data)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from icml25.data.patch_data import make_patch_data, random_feature  # noqa: E402
from icml25.learning_theory.attacks import (  # noqa: E402
    adversarial_train,
    classification_loss,
    clean_accuracy,
    fgsm,
    pgd,
    robust_accuracy,
)
from icml25.learning_theory.cgro import (  # noqa: E402
    DynamicsTracker,
    RobustMemorizer,
    TwoLayerPatchCNN,
    interval_bounds,
    separation,
)


def linear_scorer(w: torch.Tensor, b: float = 0.0) -> nn.Linear:
    layer = nn.Linear(w.numel(), 1)
    with torch.no_grad():
        layer.weight.copy_(w[None, :])
        layer.bias.fill_(b)
    return layer


class Score(nn.Module):
    """A linear scorer with output shape (n,) (binary, logistic loss)."""

    def __init__(self, w: torch.Tensor):
        super().__init__()
        self.lin = linear_scorer(w)

    def forward(self, x):
        return self.lin(x).squeeze(-1)


# ---------------------------------------------------------------- attacks


def test_pgd_on_a_linear_scorer_reaches_the_closed_form_worst_case():
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(6, generator=gen)
    model = Score(w)
    x = torch.randn(5, 6, generator=gen)
    y = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0])
    eps = 0.3
    adv = pgd(model, x, y, eps, steps=20, norm="linf", clip=None)
    expected = x - eps * y[:, None] * torch.sign(w)[None, :]
    assert torch.allclose(adv, expected, atol=1e-5)
    adv2 = pgd(model, x, y, eps, steps=20, norm="l2", clip=None, random_start=False)
    expected2 = x - eps * y[:, None] * (w / w.norm())[None, :]
    assert torch.allclose(adv2, expected2, atol=1e-4)
    # FGSM without random start is the same one step for a linear model
    adv3 = fgsm(model, x, y, eps, random_start=False, clip=None)
    assert torch.allclose(adv3, expected, atol=1e-6)


@pytest.mark.parametrize("norm", ["linf", "l2"])
def test_pgd_stays_in_the_ball_and_the_clip_range(norm):
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 3))
    gen = torch.Generator().manual_seed(1)
    x = torch.rand(32, 10, generator=gen)
    y = torch.randint(0, 3, (32,), generator=gen)
    adv = pgd(model, x, y, 0.2, steps=7, norm=norm, restarts=2)
    delta = adv - x
    size = delta.abs().amax(dim=1) if norm == "linf" else delta.norm(dim=1)
    assert bool((size <= 0.2 + 1e-5).all())
    assert bool((adv >= 0).all()) and bool((adv <= 1).all())
    assert size.max() > 0.1  # it moved


def test_pgd_is_deterministic_under_a_seed_and_seeds_matter():
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    x = torch.rand(10, 8, generator=torch.Generator().manual_seed(2))
    y = torch.zeros(10, dtype=torch.long)
    a = pgd(model, x, y, 0.1, steps=3, seed=5)
    b = pgd(model, x, y, 0.1, steps=3, seed=5)
    c = pgd(model, x, y, 0.1, steps=3, seed=6)
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


def test_attacks_use_eval_mode_restore_it_and_leave_gradients_alone():
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 3))
    model.train()
    x = torch.rand(16, 8, generator=torch.Generator().manual_seed(3))
    y = torch.randint(0, 3, (16,), generator=torch.Generator().manual_seed(4))
    a = pgd(model, x, y, 0.1, steps=5, random_start=False)
    b = pgd(model, x, y, 0.1, steps=5, random_start=False)
    assert torch.equal(a, b)  # dropout off during the attack
    assert model.training
    assert all(p.grad is None for p in model.parameters())


def test_robust_accuracy_bounds_and_baselines():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2))
    x = torch.rand(64, 4, generator=torch.Generator().manual_seed(5))
    y = (x[:, 0] > 0.5).long()
    clean = clean_accuracy(model, x, y)
    assert robust_accuracy(model, x, y, eps=0.05, attack="none") == pytest.approx(clean)
    assert robust_accuracy(model, x, y, eps=0.05, batch_size=10) <= clean + 1e-12


def test_masking_check_warns_when_pgd_is_weaker_than_fgsm():
    w = torch.ones(5)
    model = Score(w)
    x = torch.full((40, 5), 0.5)
    y = torch.ones(40)
    with torch.no_grad():
        model.lin.bias.fill_(-2.3)  # margin 0.2: an l-inf step of 0.05 flips every point
    with pytest.warns(RuntimeWarning, match="gradient masking"):
        robust_accuracy(model, x, y, eps=0.05, steps=1, alpha=1e-4, check_masking=True)


def test_logistic_and_cross_entropy_losses():
    out = torch.tensor([0.0, 2.0])
    y = torch.tensor([1.0, -1.0])
    assert classification_loss(out, y, reduction="none").tolist() == pytest.approx(
        [np.log(2.0), np.log1p(np.exp(2.0))])
    logits = torch.tensor([[2.0, 0.0]])
    assert float(classification_loss(logits, torch.tensor([0]))) == pytest.approx(np.log1p(np.exp(-2.0)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"eps": 0.0}, "eps"), ({"eps": -1.0}, "eps"), ({"eps": 0.1, "steps": 0}, "steps"),
     ({"eps": 0.1, "norm": "l1"}, "norm"), ({"eps": 0.1, "loss": "hinge"}, "loss"),
     ({"eps": 0.1, "restarts": 0}, "restarts")],
)
def test_pgd_rejects_bad_arguments(kwargs, match):
    model = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=match):
        pgd(model, torch.rand(4, 3), torch.zeros(4, dtype=torch.long), **kwargs)


def test_inputs_outside_the_clip_range_raise_or_are_clipped_with_a_warning():
    model = nn.Linear(3, 2)
    x = torch.tensor([[0.5, 1.5, 0.2]])
    y = torch.zeros(1, dtype=torch.long)
    with pytest.raises(ValueError, match="outside the clip range"):
        pgd(model, x, y, 0.1)
    with pytest.warns(RuntimeWarning, match="clipping"):
        adv = pgd(model, x, y, 0.1, clip_inputs=True)
    assert float(adv.max()) <= 1.0
    with pytest.raises(ValueError, match="attack"):
        robust_accuracy(model, torch.rand(2, 3), torch.zeros(2, dtype=torch.long), eps=0.1, attack="cw")


def test_adversarial_training_is_deterministic_and_buys_robustness():
    gen = torch.Generator().manual_seed(7)
    x = torch.rand(200, 2, generator=gen)
    y = (x[:, 0] + 0.3 * x[:, 1] > 0.65).long()

    def fit(attack):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))
        hist = adversarial_train(model, x, y, eps=0.05, epochs=30, attack=attack, batch_size=50, lr=1e-2,
                                 eval_data=(x, y), eval_every=10, seed=0)
        return model, hist

    model, hist = fit("pgd")
    _, again = fit("pgd")
    _, clean = fit("none")
    assert hist.robust_train == again.robust_train and hist.train_loss == again.train_loss
    assert hist.epochs == [0, 10, 20, 30] and len(hist.train_loss) == len(hist.epoch_seconds) == 30
    assert hist.final()["robust_train"] >= clean.final()["robust_train"]
    assert hist.final()["robust_train"] > 0.6


def test_adversarial_training_rejects_bad_input():
    model = nn.Linear(3, 2)
    x, y = torch.rand(8, 3), torch.zeros(8, dtype=torch.long)
    with pytest.raises(ValueError, match="epochs"):
        adversarial_train(model, x, y, eps=0.1, epochs=0)
    with pytest.raises(ValueError, match="attack"):
        adversarial_train(model, x, y, eps=0.1, epochs=1, attack="trades")
    with pytest.raises(ValueError, match=r"X must be \(n"):
        adversarial_train(model, x, y[:4], eps=0.1, epochs=1)


# ---------------------------------------------------------------- robust memorization


def separated_points(n: int, dim: int, gap: float, seed: int) -> torch.Tensor:
    """Points on a grid of spacing ``gap`` in [0, 1]^dim (pairwise l-inf distance >= gap)."""
    rng = np.random.default_rng(seed)
    levels = np.arange(0.0, 1.0 + 1e-9, gap)
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < n:
        chosen.add(tuple(rng.integers(0, len(levels), size=dim)))
    return torch.tensor(levels[np.array(sorted(chosen))], dtype=torch.float32)


@pytest.fixture
def memorizer_setup():
    torch.manual_seed(0)
    X = separated_points(30, 4, 0.25, seed=0)
    y = torch.randint(0, 3, (30,), generator=torch.Generator().manual_seed(1))
    g = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    return g, X, y


def test_memorizer_certifies_every_training_ball_and_pgd_finds_no_counterexample(memorizer_setup):
    g, X, y = memorizer_setup
    F = RobustMemorizer(g, X, y, eps=0.05, tau=0.05)
    assert bool(F.certify(X, y).all())
    assert clean_accuracy(F, X, y) == 1.0
    assert robust_accuracy(F, X, y, eps=0.05, steps=20, restarts=2) == 1.0
    # g alone is not robust (nor even accurate) on these random labels
    assert robust_accuracy(g, X, y, eps=0.05) < 1.0


def test_memorizer_equals_clean_model_away_from_training_points(memorizer_setup):
    g, X, y = memorizer_setup
    F = RobustMemorizer(g, X, y, eps=0.05, tau=0.05)
    far = X + 0.11  # l-inf distance 0.11 > eps + tau from its own point, >= 0.14 from the others
    assert torch.allclose(F(far), g(far))
    assert torch.allclose(F.bump_output(far), torch.zeros(len(far), 3))


def test_memorizer_matches_its_explicit_relu_network_and_parameter_count(memorizer_setup):
    g, X, y = memorizer_setup
    F = RobustMemorizer(g, X, y, eps=0.05, tau=0.05)
    net = F.bump_network()
    gen = torch.Generator().manual_seed(3)
    probe = torch.cat([X + 0.08 * (torch.rand(X.shape, generator=gen) - 0.5), torch.rand(50, 4, generator=gen)])
    with torch.no_grad():
        assert torch.allclose(F(probe), g(probe) + net(probe), atol=1e-4)
    nonzero = sum(int((p != 0).sum()) for p in net.parameters())
    N, D = X.shape
    assert F.extra_parameters == nonzero == N * (6 * D + 2)
    assert F.extra_hidden_units == N * (2 * D + 1)


def test_memorizer_with_a_single_score_and_pm1_labels():
    X = separated_points(20, 3, 0.3, seed=2)
    y = torch.where(torch.arange(20) % 2 == 0, 1.0, -1.0)
    g = nn.Sequential(linear_scorer(torch.tensor([1.0, -1.0, 0.5])), nn.Flatten(0))
    F = RobustMemorizer(g, X, y, eps=0.05)
    assert bool(F.certify(X, y).all())
    assert robust_accuracy(F, X, y, eps=0.05, steps=20) == 1.0
    assert not bool(F.certify(X, -y).any())
    with pytest.raises(ValueError, match="-1, \\+1"):
        RobustMemorizer(g, X, (y > 0).float(), eps=0.05)


def test_certificate_is_not_vacuous():
    X = torch.tensor([[0.2, 0.2], [0.8, 0.8]])
    y = torch.tensor([0, 1])
    g = nn.Sequential(nn.Linear(2, 2))
    with torch.no_grad():
        g[0].weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        g[0].bias.zero_()
    F = RobustMemorizer(g, X, y, eps=0.05)
    # far from both balls: F = g, which says class 0 for x_1 > 0 - so class 1 is not certified there
    assert not bool(F.certify(torch.tensor([[0.5, 0.3]]), torch.tensor([1])).any())
    assert bool(F.certify(X, y).all())


def test_conflicting_training_points():
    g = nn.Sequential(nn.Linear(2, 2))
    X = torch.tensor([[0.1, 0.1], [0.18, 0.1], [0.6, 0.6], [0.62, 0.6]])
    y = torch.tensor([0, 1, 0, 0])
    with pytest.raises(ValueError, match="no classifier is robust"):
        RobustMemorizer(g, X, y, eps=0.05)
    X2 = torch.tensor([[0.1, 0.1], [0.25, 0.1], [0.6, 0.6], [0.62, 0.6]])  # 0.15 in (2 eps, 2 (eps + tau)]
    with pytest.raises(ValueError, match="on_conflict='drop'"):
        RobustMemorizer(g, X2, y, eps=0.05, tau=0.05)
    F = RobustMemorizer(g, X2, y, eps=0.05, tau=0.05, on_conflict="drop")
    assert F.dropped_.tolist() == [1] and F.n_balls == 3  # same-label neighbours 2 and 3 both stay
    with pytest.raises(ValueError, match="on_conflict"):
        RobustMemorizer(g, X2, y, eps=0.05, on_conflict="merge")
    with pytest.raises(ValueError, match="eps"):
        RobustMemorizer(g, X2, y, eps=0.0)
    with pytest.raises(ValueError, match="clip range"):
        RobustMemorizer(g, X2 + 1.0, y, eps=0.05)


@pytest.mark.parametrize("clip", [(0.0, 1.0), None])
def test_memorizer_rejects_missing_labels_and_nan_inputs_naming_the_argument(memorizer_setup, clip):
    """issue 19: y_train=None gave AttributeError, NaN in X_train surfaced as 'M must be > 0, got None'."""
    g, X, y = memorizer_setup
    with pytest.raises(TypeError, match="y_train must be a torch.Tensor"):
        RobustMemorizer(g, X, None, eps=0.05, clip=clip)
    with pytest.raises(TypeError, match="X_train must be a torch.Tensor"):
        RobustMemorizer(g, None, y, eps=0.05, clip=clip)
    with pytest.raises(TypeError, match="clean_model must be a torch.nn.Module"):
        RobustMemorizer("g", X, y, eps=0.05, clip=clip)
    bad = X.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="X_train must contain only finite values"):
        RobustMemorizer(g, bad, y, eps=0.05, clip=clip)
    with pytest.raises(ValueError, match="M must be"):
        RobustMemorizer(g, X, y, eps=0.05, clip=clip, M=float("nan"))


def test_interval_bounds_are_sound_and_reject_unknown_layers():
    torch.manual_seed(1)
    net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
    lo, hi = torch.zeros(1, 3), torch.full((1, 3), 0.5)
    blo, bhi = interval_bounds(net, lo, hi)
    samples = net(lo + (hi - lo) * torch.rand(2000, 3))
    assert bool((samples >= blo - 1e-6).all()) and bool((samples <= bhi + 1e-6).all())
    point = torch.full((1, 3), 0.25)
    plo, phi = interval_bounds(net, point, point)
    assert torch.allclose(plo, net(point), atol=1e-6) and torch.allclose(phi, net(point), atol=1e-6)
    with pytest.raises(TypeError, match="pass M"):
        interval_bounds(nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)), lo, hi)
    with pytest.raises(TypeError, match="pass M"):
        RobustMemorizer(nn.Sequential(nn.Linear(2, 2), nn.Softmax(dim=-1)), torch.tensor([[0.1, 0.1]]),
                        torch.tensor([0]), eps=0.05)


def test_separation():
    X = torch.tensor([[0.0, 0.0], [0.3, 0.1], [1.0, 1.0]])
    assert separation(X) == pytest.approx(0.3)
    assert separation(X, norm="l2") == pytest.approx(float(np.hypot(0.3, 0.1)))
    assert separation(X, torch.tensor([0, 0, 1])) == pytest.approx(0.9)
    assert separation(X, torch.tensor([0, 0, 0])) == float("inf")
    with pytest.raises(ValueError, match="norm"):
        separation(X, norm="l1")


# ---------------------------------------------------------------- patch data, CNN, tracker


def test_patch_data_structure():
    data = make_patch_data(50, d=30, patches=3, alpha=2.0, sigma=1.5, seed=0)
    assert data.X.shape == (50, 3, 30) and data.noise.shape == (50, 2, 30) and data.X.dtype == np.float32
    rows = np.arange(50)
    assert np.allclose(data.X[rows, data.signal_position], 2.0 * data.y[:, None] * data.w_star, atol=1e-6)
    assert np.allclose(data.noise @ data.w_star, 0.0, atol=1e-5)
    big = make_patch_data(400, d=400, sigma=2.0, seed=1)
    assert np.linalg.norm(big.noise, axis=-1).mean() == pytest.approx(2.0, rel=0.03)
    assert set(np.unique(big.y)) == {-1.0, 1.0}
    same = make_patch_data(50, d=30, patches=3, alpha=2.0, sigma=1.5, seed=0)
    assert np.array_equal(same.X, data.X)
    w = random_feature(30, seed=3)
    assert np.array_equal(make_patch_data(5, d=30, w_star=w, seed=4).w_star, w.astype(np.float32))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"n": 0}, "n must"), ({"n": 5, "patches": 1}, "patches"), ({"n": 5, "sigma": 0.0}, "sigma"),
     ({"n": 5, "w_star": np.ones(30)}, "unit vector")],
)
def test_patch_data_rejects_bad_input(kwargs, match):
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=match):
        make_patch_data(n, d=30, **kwargs)


def test_patch_cnn_forward_known_values():
    net = TwoLayerPatchCNN(d=2, m=1)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]]))
    x = torch.tensor([[[2.0, 1.0], [0.0, -1.0]]])
    # + bank: 2^3 + 0^3; - bank: 1^3 + (-1)^3
    assert net(x).tolist() == pytest.approx([8.0])
    smooth = TwoLayerPatchCNN(d=2, m=1, activation="smooth_relu", rho=1.0, q=3)
    z = torch.tensor([-1.0, 0.5, 1.0, 3.0])
    assert smooth.act(z).tolist() == pytest.approx([0.0, 0.125 / 3, 1 / 3, 3 - 2 / 3])
    with pytest.raises(ValueError, match="activation"):
        TwoLayerPatchCNN(d=2, activation="relu")
    with pytest.raises(ValueError, match="patches"):
        net(torch.zeros(3, 2))


def test_tracker_measures_alignment_memorization_and_stages():
    w = np.array([1.0, 0.0, 0.0])
    noise = np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 1.0]])
    tracker = DynamicsTracker(w, noise, every=2)
    net = TwoLayerPatchCNN(d=3, m=1)
    schedule = {0: (0.1, 0.0), 2: (1.0, 0.1), 4: (1.0, 1.0), 6: (1.05, 2.0)}
    for step in range(7):
        if step in schedule:
            a, b = schedule[step]
            with torch.no_grad():
                net.weight.copy_(torch.tensor([[[a, 0.0, 0.0]], [[0.0, b, b]]]))
        tracker(step, net)
    assert tracker.steps == [0, 2, 4, 6]
    assert tracker.phi == pytest.approx([0.1, 1.0, 1.0, 1.05])
    # psi = mean(|<w, xi_1>|, |<w, xi_2>|) = mean(2b, b)
    assert tracker.psi == pytest.approx([0.0, 0.15, 1.5, 3.0])
    assert tracker.stages() == (2, 4)
    assert tracker.value_at(2, "psi") == pytest.approx(0.15)
    with pytest.raises(ValueError, match="not recorded"):
        tracker.value_at(3)
    with pytest.raises(TypeError, match="filters"):
        tracker(0, nn.Linear(3, 1))
    with pytest.raises(ValueError, match="train_noise"):
        DynamicsTracker(w, np.zeros((2, 4)))


def test_seeds_accept_numpy_generators_and_leave_the_global_torch_rng_alone():
    model = linear_scorer(torch.tensor([1.0, -1.0]))  # nn.Linear's own init draws from the global RNG
    before = torch.random.get_rng_state()
    a = TwoLayerPatchCNN(6, 3, seed=np.random.default_rng(5)).weight.detach()
    b = TwoLayerPatchCNN(6, 3, seed=np.random.default_rng(5)).weight.detach()
    assert torch.equal(a, b)
    assert torch.equal(TwoLayerPatchCNN(6, 3, seed=2).weight, TwoLayerPatchCNN(6, 3, seed=2).weight)
    x, y = torch.full((4, 2), 0.5), torch.tensor([1.0, -1.0, 1.0, -1.0])
    x1 = pgd(model, x, y, eps=0.1, steps=3, seed=np.random.default_rng(1))
    x2 = pgd(model, x, y, eps=0.1, steps=3, seed=np.random.default_rng(1))
    assert torch.equal(x1, x2)
    assert torch.equal(torch.random.get_rng_state(), before)
    with pytest.raises(TypeError, match="seed"):
        TwoLayerPatchCNN(6, 3, seed="zero")


# ---------------------------------------------------------------- argument checks (issue 19)


def _three_class_model() -> nn.Sequential:
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def _four_points() -> tuple[torch.Tensor, torch.Tensor]:
    X = torch.tensor([[0.1] * 4, [0.9] * 4, [0.1, 0.9, 0.1, 0.9], [0.9, 0.1, 0.9, 0.1]])
    return X, torch.tensor([0, 1, 2, 0])


def test_clean_accuracy_rejects_nan_features():
    # One NaN feature used to give a finite accuracy (0.54 on digits): a statistic from invalid input.
    X, y = _four_points()
    X[0, 0] = float("nan")
    with pytest.raises(ValueError, match="X must contain only finite values"):
        clean_accuracy(_three_class_model(), X, y)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda X, y, m: clean_accuracy(m, X, y[:-1]), ValueError, "X must be"),
        (lambda X, y, m: clean_accuracy("model", X, y), TypeError, "model must be a torch.nn.Module"),
        (lambda X, y, m: pgd(m, X, None, eps=0.1), TypeError, "y must be a torch.Tensor"),
        (lambda X, y, m: pgd(m, X, y, eps=0.1, clip=()), ValueError, "clip"),
        (lambda X, y, m: pgd(m, X, y, eps=0.1, random_start="yes"), TypeError, "random_start"),
        (lambda X, y, m: robust_accuracy(m, X.numpy(), y, eps=0.1), TypeError, "X must be a torch.Tensor"),
        (lambda X, y, m: adversarial_train(None, X, y, eps=0.1, epochs=1), TypeError, "model"),
        (lambda X, y, m: adversarial_train(m, X, y, eps=0.1, epochs=1, weight_decay=-1.0), ValueError,
         "weight_decay"),
        (lambda X, y, m: RobustMemorizer(m, X, y, eps=0.05, clip=(0.0,)), ValueError, "clip"),
        (lambda X, y, m: RobustMemorizer(m, X, y, eps=0.05).forward(X[:, :2]), ValueError, "x must have shape"),
        (lambda X, y, m: RobustMemorizer(m, X, y, eps=0.05).certify(X, None), TypeError, "y must be"),
        (lambda X, y, m: RobustMemorizer(m, X, None, eps=0.05), TypeError, "y_train"),
        (lambda X, y, m: interval_bounds(m, X.clone().fill_(float("nan")), X), ValueError, "lower"),
        (lambda X, y, m: separation("X"), TypeError, "X must be a torch.Tensor"),
        (lambda X, y, m: separation(X, y[:2]), ValueError, "X and y must have the same length"),
        (lambda X, y, m: DynamicsTracker(None, np.ones((2, 3))), TypeError, "w_star"),
        (lambda X, y, m: DynamicsTracker(np.ones(3), np.full((2, 3), np.nan)), ValueError, "train_noise"),
        (lambda X, y, m: TwoLayerPatchCNN(3).forward("x"), TypeError, "x must be a torch.Tensor"),
    ],
)
def test_cgro_and_attack_names_reject_bad_arguments_clearly(call, error, match):
    X, y = _four_points()
    with pytest.raises(error, match=match):
        call(X, y, _three_class_model())


def test_stages_reject_a_fraction_that_is_not_a_number():
    tracker = DynamicsTracker(np.array([1.0, 0.0, 0.0]), np.eye(3)[1:])
    tracker(0, TwoLayerPatchCNN(3, m=2))
    with pytest.raises(TypeError, match="feature_fraction"):
        tracker.stages(feature_fraction="0.9")
