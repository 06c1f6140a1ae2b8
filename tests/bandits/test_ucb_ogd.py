"""Unit tests of icml25.bandits.ucb_ogd and icml25.data.multi_source."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from icml25.bandits.ucb_ogd import (
    UCBOGD,
    AdaptiveCollector,
    ArraySource,
    EXP3Selector,
    GreedySelector,
    LogisticModel,
    OnlineModel,
    RoundRobinSelector,
    SoftmaxModel,
    SourceSelector,
    TorchModel,
    UCBSelector,
    UncertaintySelector,
    UniformSelector,
    minimax_reference,
    regret_curve,
    regret_exponent,
    solve_minimax,
    source_accuracies,
    source_losses,
    worst_loss_path,
    worst_source_accuracy,
    worst_source_loss,
)
from icml25.data.multi_source import (
    DIGIT_CORRUPTIONS,
    MultiSourceLogistic,
    corrupt_digits,
    make_multisource_logistic,
)


def _constant_source(x, y):
    """A sampler that always returns the same labelled point (batch of n copies)."""
    x, y = np.asarray(x, float), np.asarray(y)

    def sample(rng, n):
        return np.tile(x, (n, 1)), np.full(n, y)

    return sample


def _numeric_grad(model, X, y, eps=1e-6):
    theta = model.params
    g = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = eps
        model.params = theta + e
        up = model.loss(X, y)
        model.params = theta - e
        g[i] = (up - model.loss(X, y)) / (2 * eps)
    model.params = theta
    return g


# ---------------------------------------------------------------------------- models
def test_logistic_loss_and_grad_known_values():
    m = LogisticModel(2)
    assert m.loss([1.0, 2.0], 1) == pytest.approx(math.log(2))  # theta = 0: p = 1/2
    np.testing.assert_allclose(m.grad([1.0, 2.0], 1), [-0.5, -1.0])  # (sigmoid(0) - 1) x
    m.params = np.array([1.0, 0.0])
    assert m.loss([[2.0, 5.0]], [0]) == pytest.approx(math.log1p(math.exp(2.0)))
    np.testing.assert_allclose(m.predict_proba([[0.0, 3.0]]), [[0.5, 0.5]])


@pytest.mark.parametrize("intercept", [False, True])
def test_numpy_model_gradients_match_finite_differences(intercept):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((7, 4))
    for model, y in (
        (LogisticModel(4, fit_intercept=intercept), rng.integers(0, 2, 7)),
        (SoftmaxModel(4, 3, fit_intercept=intercept), rng.integers(0, 3, 7)),
    ):
        model.params = rng.standard_normal(model.params.size)
        loss, grad = model.loss_grad(X, y)
        assert loss == pytest.approx(model.loss(X, y))
        np.testing.assert_allclose(grad, _numeric_grad(model, X, y), atol=1e-6)
        np.testing.assert_allclose(model.grad(X, y), grad)


def test_softmax_known_values_and_probabilities():
    m = SoftmaxModel(3, 4)
    assert m.loss(np.ones(3), 2) == pytest.approx(math.log(4))
    P = m.predict_proba(np.random.default_rng(1).standard_normal((5, 3)))
    np.testing.assert_allclose(P, 0.25)
    m.params = np.random.default_rng(2).standard_normal(m.params.size) * 50  # large logits: stable
    P = m.predict_proba(np.ones((2, 3)))
    assert np.isfinite(P).all() and np.allclose(P.sum(axis=1), 1.0)


def test_projection_and_step():
    m = LogisticModel(2)
    m.step(np.array([3.0, 4.0]), 2.0)
    np.testing.assert_allclose(m.params, [-6.0, -8.0])
    m.project(5.0)
    np.testing.assert_allclose(m.params, [-3.0, -4.0])
    m.project(10.0)  # inside the ball: unchanged
    np.testing.assert_allclose(m.params, [-3.0, -4.0])


def test_loss_path_matches_pointwise_losses():
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((50, 3)), rng.integers(0, 2, 50)
    m = LogisticModel(3, fit_intercept=True)
    P = rng.standard_normal((6, 4))
    expected = []
    for p in P:
        m.params = p
        expected.append(m.loss(X, y))
    np.testing.assert_allclose(m.loss_path(P, X, y), expected)


def test_model_bad_input():
    with pytest.raises(ValueError, match="n_features must be an integer >= 1"):
        LogisticModel(0)
    with pytest.raises(ValueError, match="n_classes must be an integer >= 2"):
        SoftmaxModel(3, 1)
    m = LogisticModel(2)
    with pytest.raises(ValueError, match=r"X must have shape \(\*, 2\)"):
        m.loss(np.ones(3), 1)
    with pytest.raises(ValueError, match="labels must be in"):
        m.loss(np.ones(2), 2)
    with pytest.raises(ValueError, match="labels must be integers"):
        m.loss(np.ones(2), 0.5)
    with pytest.raises(ValueError, match="one label per row"):
        m.loss(np.ones((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="X must contain only finite values"):
        m.loss([np.nan, 1.0], 0)
    with pytest.raises(TypeError, match="fit_intercept must be True or False"):
        LogisticModel(2, fit_intercept=1)
    with pytest.raises(ValueError, match=r"params must have shape \(2\)"):
        m.params = np.ones(5)


# ------------------------------------------------------------------------- selectors
def test_ucb_selector_warm_start_then_known_indices():
    sel = UCBSelector(3, loss_bound=1.0, bonus_scale=1.0)
    for k, loss in enumerate([0.2, 0.9, 0.5]):
        assert sel.select(None) == k  # unvisited sources first, in index order
        sel.update(k, loss)
    bonus = math.sqrt(2 * math.log(4) / 1)
    np.testing.assert_allclose(sel.indices(), np.array([0.2, 0.9, 0.5]) + bonus)
    assert sel.select(None) == 1
    sel.update(1, 0.9)
    # n = (1, 2, 1), t = 5: source 1's bonus shrinks by sqrt(2), so source 2 (0.5 + 1.79) now leads
    expected = np.array([0.2, 0.9, 0.5]) + np.sqrt(2 * math.log(5) / np.array([1, 2, 1]))
    np.testing.assert_allclose(sel.indices(), expected)
    assert sel.select(None) == 2
    np.testing.assert_array_equal(sel.counts_, [1, 2, 1])


def test_ucb_selector_without_bonus_is_greedy_and_window_forgets():
    sel = UCBSelector(2, bonus_scale=0.0, window=2)
    for k, loss in [(0, 1.0), (1, 0.5), (0, 0.0), (0, 0.0)]:
        sel.update(k, loss)
    # source 0's window now holds (0, 0): mean 0 < 0.5, although its full-history mean is 1/3
    np.testing.assert_allclose(sel.means(), [0.0, 0.5])
    assert sel.select(None) == 1
    np.testing.assert_array_equal(sel.effective_counts(), [2, 1])


def test_round_robin_uniform_greedy_exp3():
    rng = np.random.default_rng(0)
    rr = RoundRobinSelector(3)
    picks = []
    for _ in range(7):
        picks.append(rr.select(rng))
        rr.update(picks[-1], 0.1)
    assert picks == [0, 1, 2, 0, 1, 2, 0]

    uni = UniformSelector(4)
    counts = np.bincount([uni.select(rng) for _ in range(4000)], minlength=4)
    assert np.all(np.abs(counts / 4000 - 0.25) < 0.03)

    greedy = GreedySelector(3, epsilon=0.0)
    for k, loss in [(0, 0.1), (1, 0.7), (2, 0.3)]:
        assert greedy.select(rng) == k
        greedy.update(k, loss)
    assert greedy.select(rng) == 1

    exp3 = EXP3Selector(2, horizon=3000, loss_bound=1.0)
    for _ in range(3000):  # source 1 always has the higher loss: EXP3 learns to prefer it
        k = exp3.select(rng)
        exp3.update(k, 0.9 if k == 1 else 0.1)
    assert exp3.counts_[1] > 0.7 * 3000


def test_uncertainty_selector_picks_least_certain_source():
    m = LogisticModel(1)
    m.params = np.array([5.0])
    candidates = [np.array([[2.0]]), np.array([[0.01]]), np.array([[-3.0]])]
    assert UncertaintySelector(3).select(None, model=m, candidates=candidates) == 1
    assert UncertaintySelector(3, measure="margin").select(None, model=m, candidates=candidates) == 1
    sel = UncertaintySelector(2)
    assert sel.uncertainty(np.array([[0.5, 0.5]])) == pytest.approx(math.log(2))
    assert UncertaintySelector(2, measure="margin").uncertainty(np.array([[0.9, 0.1]])) == pytest.approx(0.2)


def test_selector_bad_input():
    with pytest.raises(ValueError, match="n_sources must be an integer >= 1"):
        UCBSelector(0)
    with pytest.raises(ValueError, match=r"loss_bound must be a real number in \(0, inf\)"):
        UCBSelector(2, loss_bound=0.0)
    with pytest.raises(ValueError, match=r"bonus_scale must be a real number in \[0, inf\)"):
        UCBSelector(2, bonus_scale=-1.0)
    with pytest.raises(ValueError, match="window must be an integer >= 1"):
        UCBSelector(2, window=0)
    with pytest.raises(ValueError, match=r"epsilon must be a real number in \[0, 1\]"):
        GreedySelector(2, epsilon=1.5)
    with pytest.raises(ValueError, match="measure must be one of"):
        UncertaintySelector(2, measure="variance")
    with pytest.raises(ValueError, match="needs the model and one candidate batch per source"):
        UncertaintySelector(2).select(np.random.default_rng(0))
    sel = UCBSelector(2)
    with pytest.raises(ValueError, match=r"source must be an integer in \[0, 1\]"):
        sel.update(2, 0.1)
    with pytest.raises(TypeError, match=r"source must be an integer in \[0, 1\]"):
        sel.update(1.0, 0.1)
    with pytest.raises(ValueError, match="loss must be a finite real number"):
        sel.update(0, float("nan"))


# --------------------------------------------------------------------------- the loop
def test_single_source_reduces_to_projected_ogd():
    """K = 1: UCB-OGD is plain OGD with step eta0 / sqrt(t) and projection (hand-computed)."""
    x, y = np.array([1.0, 0.0]), 1
    learner = UCBOGD(1, LogisticModel(2), loss_bound=5.0, eta0=2.0, radius=0.6, seed=0)
    hist = learner.run([_constant_source(x, y)], 3, record_params=True)
    theta = np.zeros(2)
    expected_params, expected_losses = [], []
    for t in range(1, 4):
        z = theta @ x
        expected_params.append(theta.copy())
        expected_losses.append(math.log1p(math.exp(-z)))
        theta = theta - 2.0 / math.sqrt(t) * (1 / (1 + math.exp(-z)) - y) * x
        theta *= min(1.0, 0.6 / np.linalg.norm(theta))
    np.testing.assert_allclose(hist.params, expected_params)
    np.testing.assert_allclose(hist.losses, expected_losses)
    np.testing.assert_allclose(hist.final_params, theta)
    np.testing.assert_allclose(hist.averaged_params, np.mean(expected_params, axis=0))
    np.testing.assert_array_equal(hist.counts, [3])


def test_ucb_ogd_samples_the_source_with_higher_loss():
    """Two point sources with conflicting labels: the one the model currently fits worse is sampled."""
    sources = [_constant_source([1.0], 1), _constant_source([1.0], 0)]
    learner = UCBOGD(2, LogisticModel(1), loss_bound=3.0, eta0=0.5, radius=3.0, bonus_scale=0.2, seed=0)
    hist = learner.run(sources, 400)
    # the minimax model is theta = 0 (both losses ln 2); sampling is close to balanced
    assert abs(hist.counts[0] - hist.counts[1]) < 0.1 * 400
    assert abs(learner.averaged_params_[0]) < 0.15
    sets = [(np.ones((1, 1)), [1]), (np.ones((1, 1)), [0])]
    assert worst_source_loss(learner.averaged_model(), sets) < 0.75


def test_collector_clips_losses_and_counts_clips():
    learner = UCBOGD(1, LogisticModel(1), loss_bound=0.5, eta0=0.01, seed=0)
    hist = learner.run([_constant_source([1.0], 1)], 2)
    np.testing.assert_allclose(hist.losses, 0.5)  # ln 2 > 0.5 is clipped for the bandit feedback
    assert hist.clips == 2 and learner.clips_ == 2


def test_run_is_deterministic_under_seed_and_minibatch_counts():
    task = make_multisource_logistic(3, 4, seed=1)

    def go(seed):
        learner = UCBOGD(3, LogisticModel(4), loss_bound=2.0, eta0=0.5, radius=3.0, batch_size=4, seed=seed)
        return learner.run(task.samplers(), 60, record_params=True)

    a, b, c = go(7), go(7), go(8)
    np.testing.assert_array_equal(a.sources, b.sources)
    np.testing.assert_array_equal(a.params, b.params)
    assert not np.array_equal(a.params, c.params)
    assert a.counts.sum() == 60 and a.params.shape == (60, 4)


def test_uncertainty_selector_in_the_loop_and_array_source():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 2)), rng.integers(0, 3, 30)
    sources = [ArraySource(X, y), ArraySource(X, y, transform=lambda Z, r: Z + r.standard_normal(Z.shape))]
    collector = AdaptiveCollector(SoftmaxModel(2, 3), UncertaintySelector(2), eta0=0.5, seed=0)
    hist = collector.run(sources, 20)
    assert hist.counts.sum() == 20 and collector.n_steps_ == 20


def test_collector_bad_input():
    task = make_multisource_logistic(2, 3, seed=0)
    with pytest.raises(ValueError, match=r"eta0 must be a real number in \(0, inf\)"):
        UCBOGD(2, LogisticModel(3), eta0=0.0)
    with pytest.raises(ValueError, match="n_sources must be an integer >= 1"):
        UCBOGD(0, LogisticModel(3))
    with pytest.raises(TypeError, match="model must implement OnlineModel"):
        AdaptiveCollector(object(), UniformSelector(2))
    with pytest.raises(TypeError, match="selector must be a SourceSelector"):
        AdaptiveCollector(LogisticModel(3), object())
    learner = UCBOGD(2, LogisticModel(3), seed=0)
    with pytest.raises(ValueError, match=r"budget \(1\) must be >= n_sources \(2\)"):
        learner.run(task.samplers(), 1)
    with pytest.raises(ValueError, match="sources must be 2 callables"):
        learner.run(task.samplers()[:1], 5)

    def broken(rng, n):
        raise OSError("camera offline")

    with pytest.raises(RuntimeError, match="sampler of source 0 failed: camera offline"):
        learner.run([broken, task.samplers()[1]], 5)
    with pytest.raises(ValueError, match="must return X"):
        learner.run([lambda rng, n: (np.ones(3), np.ones(1)), task.samplers()[1]], 5)


def test_nan_gradient_raises():
    class NaNModel(LogisticModel):
        def loss_grad(self, X, y):
            return 0.5, np.full(self.theta.shape, np.nan)

    learner = AdaptiveCollector(NaNModel(1), UniformSelector(1), seed=0)
    with pytest.raises(ValueError, match="gradient on source 0 contains NaN"):
        learner.run([_constant_source([1.0], 1)], 1)


# ---------------------------------------------------------------------------- metrics
def test_minimax_reference_known_answer_flipped_labels():
    """Source 2 is source 1 with flipped labels: by symmetry theta* = 0 and L* = ln 2."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3)) + 1.0
    y = (rng.random(200) < 0.8).astype(int)
    L_star, theta = minimax_reference(LogisticModel(3), [(X, y), (X, 1 - y)])
    assert L_star == pytest.approx(math.log(2), abs=1e-6)
    np.testing.assert_allclose(theta, 0.0, atol=1e-4)


def test_solve_minimax_quadratics_with_and_without_ball():
    """L_k = ||theta - c_k||^2 with c = (+-1, 0): theta* = 0, L* = 1; inside a ball of radius 0.5
    around nothing changes; for c = (2, 0), (3, 0) alone the ball binds: theta* = (0.5, 0)."""
    def quadratics(centres):
        C = np.asarray(centres, float)
        return lambda th: (((th - C) ** 2).sum(axis=1), 2 * (th - C))

    L, th = solve_minimax(quadratics([[1, 0], [-1, 0]]), np.array([0.3, 0.7]))
    assert abs(L - 1.0) < 1e-6
    np.testing.assert_allclose(th, 0.0, atol=1e-4)
    L, th = solve_minimax(quadratics([[2, 0], [3, 0]]), np.zeros(2), radius=0.5)
    np.testing.assert_allclose(th, [0.5, 0.0], atol=1e-5)
    assert abs(L - 2.5**2) < 1e-5


def test_source_metrics_and_regret_helpers():
    m = LogisticModel(1)
    sets = [(np.ones((2, 1)), np.array([1, 1])), (np.ones((2, 1)), np.array([0, 1]))]
    np.testing.assert_allclose(source_losses(m, sets), math.log(2))
    m.params = np.array([1.0])
    assert worst_source_loss(m, sets) == pytest.approx(0.5 * (math.log1p(math.exp(-1)) + math.log1p(math.e)))
    np.testing.assert_allclose(source_accuracies(m, sets), [1.0, 0.5])
    assert worst_source_accuracy(m, sets) == 0.5
    path = np.array([[0.0], [1.0]])
    np.testing.assert_allclose(worst_loss_path(m, path, sets), [math.log(2), worst_source_loss(m, sets)])
    np.testing.assert_allclose(regret_curve(np.array([1.0, 0.5, 0.75]), 0.5), [0.5, 0.5, 0.75])
    T = np.array([100, 400, 1600])
    assert regret_exponent(T, 3 * np.sqrt(T)) == pytest.approx(0.5)
    assert regret_exponent(T, 0.2 * T) == pytest.approx(1.0)


def test_worst_loss_path_generic_fallback_matches_vectorised():
    rng = np.random.default_rng(0)
    sets = [(rng.standard_normal((20, 2)), rng.integers(0, 3, 20)) for _ in range(2)]
    m = SoftmaxModel(2, 3)
    P = rng.standard_normal((4, m.params.size))
    expected = []
    for p in P:
        m.params = p
        expected.append(worst_source_loss(m, sets))
    np.testing.assert_allclose(worst_loss_path(SoftmaxModel(2, 3), P, sets), expected)


def test_metric_bad_input():
    with pytest.raises(ValueError, match="eval_sets must be a non-empty sequence"):
        source_losses(LogisticModel(1), [])
    with pytest.raises(ValueError, match="worst_losses must have at least 1 entries"):
        regret_curve(np.array([]), 0.1)
    with pytest.raises(ValueError, match="L_star must be a finite real number"):
        regret_curve(np.ones(3), float("inf"))
    with pytest.raises(ValueError, match="must be > 0"):
        regret_exponent([1, 2], [0.0, 1.0])
    with pytest.raises(ValueError, match="params must be a 2-d array"):
        worst_loss_path(LogisticModel(1), np.ones(3), [(np.ones((1, 1)), [1])])


# ------------------------------------------------------------------------------- torch
def test_torch_adapter_matches_softmax_model():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 4).double()
    adapter = TorchModel(layer)
    numpy_model = SoftmaxModel(3, 4)
    W = np.column_stack([layer.weight.detach().numpy(), layer.bias.detach().numpy()])
    numpy_model.params = W.ravel()
    assert isinstance(adapter, OnlineModel)
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((6, 3)), rng.integers(0, 4, 6)
    assert adapter.loss(X, y) == pytest.approx(numpy_model.loss(X, y))
    g_torch = adapter.grad(X, y)  # parameter order: weight (4, 3) then bias (4,)
    G = numpy_model.grad(X, y).reshape(4, 4)
    np.testing.assert_allclose(g_torch, np.concatenate([G[:, :3].ravel(), G[:, 3]]), atol=1e-10)
    np.testing.assert_allclose(adapter.predict_proba(X), numpy_model.predict_proba(X), atol=1e-12)
    before = adapter.params
    adapter.step(g_torch, 0.1)  # plain SGD
    np.testing.assert_allclose(adapter.params, before - 0.1 * g_torch, atol=1e-12)
    adapter.project(0.5)
    assert np.linalg.norm(adapter.params) == pytest.approx(0.5)


def test_torch_minibatch_ucb_ogd_runs_and_is_deterministic():
    torch = pytest.importorskip("torch")
    task = make_multisource_logistic(2, 3, seed=0)

    def int_labels(sampler):
        def sample(rng, n):
            X, y = sampler(rng, n)
            return X, y.astype(int)

        return sample

    def go():
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        model = TorchModel(net, torch.optim.Adam(net.parameters()))
        learner = UCBOGD(2, model, loss_bound=3.0, eta0=0.05, batch_size=8, seed=1)
        hist = learner.run([int_labels(s) for s in task.samplers()], 30)
        return hist, learner

    (h1, l1), (h2, _) = go(), go()
    np.testing.assert_array_equal(h1.sources, h2.sources)
    np.testing.assert_allclose(h1.final_params, h2.final_params)
    sets = [(X, y.astype(int)) for X, y in task.eval_sets(50)]
    assert np.isfinite(source_losses(l1.averaged_model(), sets)).all()


def test_torch_adapter_bad_input():
    pytest.importorskip("torch")
    with pytest.raises(TypeError, match="module must be a torch.nn.Module"):
        TorchModel(object())


# ------------------------------------------------------------------------------- data
def test_population_losses_match_monte_carlo_and_gradients():
    task = make_multisource_logistic(3, 4, seed=2)
    theta = np.array([0.5, -1.0, 0.3, 0.8])
    m = LogisticModel(4)
    m.params = theta
    mc = source_losses(m, task.eval_sets(200_000, seed=5))
    np.testing.assert_allclose(task.population_losses(theta), mc, atol=0.01)
    np.testing.assert_allclose(task.population_losses(np.zeros(4)), math.log(2))
    eps = 1e-6
    fd = np.array(
        [(task.population_losses(theta + eps * e) - task.population_losses(theta - eps * e)) / (2 * eps)
         for e in np.eye(4)]
    ).T
    np.testing.assert_allclose(task.population_grads(theta), fd, atol=1e-6)
    assert task.population_losses(np.stack([theta, theta])).shape == (2, 3)


def test_synthetic_task_structure_and_conflict():
    task = make_multisource_logistic(5, 20, n_hard=1, signal=3.0, spread=0.5, conflict=3.0, seed=0)
    assert isinstance(task, MultiSourceLogistic) and task.n_sources == 5 and task.n_features == 20
    w0 = task.weights[:4].mean(axis=0)
    dist = np.linalg.norm(task.weights - w0, axis=1)
    assert dist[4] > 2 * dist[:4].max()  # the hard source is far from the others
    np.testing.assert_allclose(np.linalg.norm(task.means, axis=1), 1.0)
    L_star, theta = solve_minimax(
        lambda th: (task.population_losses(th), task.population_grads(th)), np.zeros(20)
    )
    average = optimize.minimize(
        lambda th: (task.population_losses(th).mean(), task.population_grads(th).mean(axis=0)),
        np.zeros(20), jac=True,
    ).x
    # the sources conflict: the average-loss minimiser is much worse on its worst source than L*
    assert task.population_losses(average).max() > L_star + 0.1
    assert L_star == pytest.approx(task.population_losses(theta).max())
    X, y = task.sample(4, 10, np.random.default_rng(0))
    assert X.shape == (10, 20) and set(np.unique(y)) <= {0.0, 1.0}


def test_corrupt_digits():
    rng = np.random.default_rng(0)
    X = np.random.default_rng(1).random((5, 64))
    np.testing.assert_array_equal(corrupt_digits(X, "clean", rng), X)
    occluded = corrupt_digits(X, "occlusion", rng)
    assert np.all((occluded == 0).sum(axis=1) == round(0.3 * 64))
    noisy = corrupt_digits(X, "noise", rng, noise_sd=0.25)
    assert 0.2 < np.std(noisy - X) < 0.3
    img = np.zeros((1, 64))
    img[0, 3] = 1.0  # a pixel in the top row moves under rotation
    assert not np.allclose(corrupt_digits(img, "rotation", rng), img)
    np.testing.assert_allclose(corrupt_digits(X, "rotation", rng, angle=0.0), X, atol=1e-12)
    assert DIGIT_CORRUPTIONS == ("clean", "noise", "occlusion", "rotation")


def test_data_bad_input():
    with pytest.raises(ValueError, match="kind must be one of"):
        corrupt_digits(np.zeros((1, 64)), "blur", np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"X must have shape \(\*, 64\)"):
        corrupt_digits(np.zeros((1, 10)), "clean", np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"n_hard must be an integer in \[0, 3\]"):
        make_multisource_logistic(3, 4, n_hard=4)
    with pytest.raises(ValueError, match=r"weights must have shape \(2, 3\)"):
        MultiSourceLogistic(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError, match="params must be finite with shape"):
        make_multisource_logistic(2, 3).population_losses(np.zeros(4))
    with pytest.raises(ValueError, match="X must be a 2-d array"):
        ArraySource(np.zeros(3), np.zeros(3))
    with pytest.raises(TypeError, match="transform must be callable"):
        ArraySource(np.zeros((3, 2)), np.zeros(3), transform=3)


def test_selectors_share_the_interface():
    for sel in (UCBSelector(2), UniformSelector(2), RoundRobinSelector(2), GreedySelector(2),
                EXP3Selector(2, 10), UncertaintySelector(2)):
        assert isinstance(sel, SourceSelector)
        sel.update(1, 0.3)
        assert sel.counts_.tolist() == [0, 1] and sel.t_ == 1


def test_multi_source_sample_takes_a_seed():
    task = make_multisource_logistic(3, 4, seed=0)
    X1, y1 = task.sample(1, 5, seed=3)
    X2, y2 = task.sample(1, 5, np.random.default_rng(3))
    np.testing.assert_array_equal(X1, X2)
    np.testing.assert_array_equal(y1, y2)
    with pytest.raises(ValueError, match=r"source must be an integer in \[0, 2\]"):
        task.sample(3, 5, seed=0)
    with pytest.raises(TypeError, match="n must be an integer >= 1"):
        task.sample(0, 2.0, seed=0)
    noisy = corrupt_digits(np.zeros((2, 64)), "noise", seed=1)
    np.testing.assert_array_equal(noisy, corrupt_digits(np.zeros((2, 64)), "noise", np.random.default_rng(1)))


# ------------------------------------------------------------------- issue 19 regressions
def test_model_steps_and_metrics_validate_their_input():
    model = LogisticModel(3)
    with pytest.raises(ValueError, match="grad must contain only finite values"):
        model.step(np.array([np.nan, 0.0, 0.0]), 0.1)
    with pytest.raises(ValueError, match="lr must be a real number"):
        model.step(np.zeros(3), -0.1)
    with pytest.raises(ValueError, match="radius must be a real number"):
        model.project(0.0)
    with pytest.raises(ValueError, match="params must have shape"):
        model.loss_path(np.ones((2, 4)), np.ones((2, 3)), np.array([0, 1]))
    with pytest.raises(TypeError, match="model must implement OnlineModel"):
        source_losses("model", [(np.ones((2, 3)), np.array([0, 1]))])
    with pytest.raises(TypeError, match="losses_and_grads must be callable"):
        solve_minimax(3, np.zeros(2))
    with pytest.raises(ValueError, match="proba must sum to 1"):
        UncertaintySelector(2).uncertainty(np.array([[0.2, 0.2]]))
    collector = AdaptiveCollector(LogisticModel(3), UCBSelector(2), seed=0)
    sources = [ArraySource(np.ones((4, 3)), np.array([0, 1, 0, 1]))] * 2
    with pytest.raises(TypeError, match="record_params must be True or False"):
        collector.run(sources, 4, record_params="yes")


def test_torch_model_checks_targets_and_logits():
    torch = pytest.importorskip("torch")
    model = TorchModel(torch.nn.Linear(3, 2))
    with pytest.raises(TypeError, match="y must be"):
        model.loss(np.ones((2, 3)), None)
    with pytest.raises(ValueError, match="logits"):
        model.predict_proba(np.ones((1, 2, 3)))
    with pytest.raises(ValueError, match="grad must have shape"):
        model.step(np.zeros(5), 0.1)
