"""Unit tests of icml25.dynamics.issm and its data generator icml25.data.stimulated_dynamics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from icml25.data.stimulated_dynamics import (
    rotation_transition,
    simulate_dynamic_attractor,
    simulate_linear_latent,
    stimulation_protocol,
    stimulation_trials,
)
from icml25.dynamics import (
    ISSM,
    InterventionalLDS,
    LinearEmission,
    LSTMRecognition,
    MLPEmission,
    align_latents,
    aligned_r2,
    eigen_error,
)


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _runs(column: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of the nonzero runs of a 1-D array."""
    on = np.r_[0, (column != 0).astype(int), 0]
    d = np.diff(on)
    return list(zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1), strict=True))


# ---------------------------------------------------------------- data: stimulation protocol


def test_protocol_takes_turns_with_one_pulse_per_slot():
    u = stimulation_protocol(100, 3, stimulated=[0, 2], repetition=4, sigma=0.0, amplitude=[1.0, 0.0, 2.0], seed=1)
    assert u.shape == (100, 3)
    assert not u[:, 1].any()
    assert ((u != 0).sum(1) <= 1).all()  # one latent at a time
    assert len(_runs(u[:, 0])) == 4 and len(_runs(u[:, 2])) == 4
    assert set(np.unique(np.abs(u[:, 0][u[:, 0] != 0]))) == {1.0}
    assert set(np.unique(np.abs(u[:, 2][u[:, 2] != 0]))) == {2.0}
    # 8 slots of 12.5 steps: rest then pulse, so the first pulse starts in the middle of the first slot
    assert _runs(u[:, 0])[0] == (6, 12)
    assert _runs(u[:, 2])[0][0] == round(12.5 + 6.25)


def test_protocol_rest_ratio_and_jitter():
    u = stimulation_protocol(90, 1, repetition=3, rest_d=2.0, stim_d=1.0, sigma=0.0, seed=0)
    assert [stop - start for start, stop in _runs(u[:, 0])] == [10, 10, 10]
    jittered = stimulation_protocol(90, 1, repetition=3, rest_d=2.0, stim_d=1.0, sigma=0.5, seed=0)
    np.testing.assert_array_equal(jittered != 0, u != 0)
    assert np.abs(jittered[u != 0] - u[u != 0]).std() > 0.1


def test_protocol_amplitude_zero_is_observational_and_seeded():
    assert not stimulation_protocol(50, 2, amplitude=0.0, seed=0).any()
    np.testing.assert_array_equal(stimulation_trials(3, 40, 2, seed=5), stimulation_trials(3, 40, 2, seed=5))
    trials = stimulation_trials(3, 40, 2, seed=5)
    assert trials.shape == (3, 40, 2) and not np.array_equal(trials[0], trials[1])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stimulated": [0, 0]}, "distinct"),
        ({"stimulated": [2]}, "distinct"),
        ({"amplitude": [1.0, 1.0, 1.0]}, "amplitude"),
        ({"amplitude": -1.0}, "amplitude"),
        ({"stim_d": 0.0}, "stim_d"),
        ({"sigma": -0.1}, "sigma"),
    ],
)
def test_protocol_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        stimulation_protocol(50, 2, **kwargs)


def test_protocol_rejects_wrong_types():
    with pytest.raises(TypeError, match="repetition must be an integer >= 0"):
        stimulation_protocol(50, 2, repetition=1.5)
    with pytest.raises(TypeError, match="n_steps"):
        stimulation_protocol("50", 2)


# ---------------------------------------------------------------- data: simulators


def test_linear_latent_clamps_and_follows_the_transition():
    u = stimulation_trials(4, 50, 2, seed=0)
    x, y, truth = simulate_linear_latent(4, 50, u=u, seed=0)
    stim = u != 0
    np.testing.assert_array_equal(x[stim], u[stim])  # a stimulated latent is set exactly
    free = x[:, :-1] @ truth["M"].T  # the others follow M (no process noise by default)
    np.testing.assert_allclose(x[:, 1:][~stim[:, 1:]], free[~stim[:, 1:]], atol=1e-12)
    np.testing.assert_allclose(truth["M"], (1 - 0.05) * np.eye(2) + 0.05 * truth["A"])
    np.testing.assert_allclose(truth["y_mean"], np.tanh(x @ truth["W1"].T + truth["b1"]) @ truth["W2"].T + truth["b2"])
    assert y.shape == (4, 50, 10) and 0.03 < (y - truth["y_mean"]).std() < 0.07
    _, y_other, truth_other = simulate_linear_latent(2, 20, seed=0)
    np.testing.assert_array_equal(truth["W1"], truth_other["W1"])  # the emission depends on the seed only


def test_rotation_transition_eigenvalues():
    eig = np.linalg.eigvals(rotation_transition(2, 0.1, 0.98))
    np.testing.assert_allclose(np.sort(np.abs(eig)), [0.98, 0.98])
    np.testing.assert_allclose(np.sort(np.abs(np.angle(eig))), [0.1, 0.1])


def test_dynamic_attractor_euler_step_and_observation():
    u = stimulation_trials(2, 200, 2, seed=1)
    x, y = simulate_dynamic_attractor(2, 10.0, 0.05, u=u, seed=0)
    assert x.shape == y.shape == (2, 200, 2)
    np.testing.assert_array_equal(x[u != 0], u[u != 0])
    t = next(t for t in range(1, 200) if not (u[0, t] != 0).any())
    prev = x[0, t - 1]
    np.testing.assert_allclose(x[0, t], prev + 0.05 * np.array([-20 * prev[0], 1.2 * (1 - prev[0])]))
    np.testing.assert_allclose(np.hypot(y[..., 0], y[..., 1]), np.abs(1 - x[..., 0]))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: simulate_linear_latent(2, 10, u=np.zeros((3, 10, 2))), "u must have shape"),
        (lambda: simulate_linear_latent(2, 10, u=np.full((10, 2), np.nan)), "finite"),
        (lambda: simulate_linear_latent(2, 10, dt=1.0), "dt"),
        (lambda: simulate_linear_latent(2, 10, transition=np.eye(3)), "transition"),
        (lambda: simulate_dynamic_attractor(2, 0.01), "T must be"),
    ],
)
def test_simulators_reject_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---------------------------------------------------------------- model blocks


def test_interventional_mean_clamps_stimulated_latents_only():
    lds = InterventionalLDS(2, 2, dt=0.1)
    x = torch.tensor([[1.0, -2.0]])
    u = torch.tensor([[0.0, 0.7]])
    free = x @ lds.transition_matrix().T
    mu = lds.mean(x, u)
    assert mu[0, 1].item() == pytest.approx(0.7)
    assert mu[0, 0].item() == pytest.approx(free[0, 0].item())
    ssm = InterventionalLDS(2, 2, dt=0.1, interventional=False)
    ssm.load_state_dict(lds.state_dict())
    torch.testing.assert_close(ssm.mean(x, u), free + u)
    eye = torch.eye(2)
    torch.testing.assert_close(lds.transition_matrix(), 0.9 * eye + 0.1 * lds.A)
    torch.testing.assert_close(lds.flow(x), x @ (lds.A - eye).T)


def test_log_prob_matches_torch_distributions():
    torch.manual_seed(0)
    lds = InterventionalLDS(2, 2, dt=0.05, learn_noise=True)
    with torch.no_grad():
        lds.noise_raw.copy_(torch.tensor([[-2.0, 0.0], [0.3, -1.5]]))
    x, u = torch.randn(3, 6, 2), torch.zeros(3, 6, 2)
    u[:, 2, 0] = 0.5
    L = lds.scale_tril
    assert torch.allclose(L, torch.tensor([[math.exp(-2.0), 0.0], [0.3, math.exp(-1.5)]]))
    mvn = torch.distributions.MultivariateNormal
    ref = mvn(torch.zeros(2), scale_tril=0.05 * torch.eye(2)).log_prob(x[:, 0])
    for t in range(1, 6):
        ref = ref + mvn(lds.mean(x[:, t - 1], u[:, t]), scale_tril=L).log_prob(x[:, t])
    torch.testing.assert_close(lds.log_prob(x, u), ref)


def test_learned_b_uses_the_support_with_a_tolerance():
    B = torch.tensor([[1.0, 1e-4], [0.0, 0.8]])
    lds = InterventionalLDS(2, 2, B=B, learn_B=True, B_tol=1e-2)
    u = torch.tensor([[0.0, 1.0]])
    assert lds.stimulated(u).tolist() == [[False, True]]  # the tiny B entry does not count
    assert lds.log_prior().item() == pytest.approx(-(1.0 + 1e-4 + 0.8) / 0.1)
    fixed = InterventionalLDS(2, 2, B=B)
    assert fixed.stimulated(u).tolist() == [[True, True]]  # a fixed B: its exact support
    assert fixed.log_prior().item() == 0.0


def test_sample_clamps_to_the_stimulus_plus_noise():
    lds = InterventionalLDS(2, 2, dt=0.05, noise_scale=1e-6)
    u = torch.zeros(2, 20, 2)
    u[:, 5:8, 1] = -1.3
    x = lds.sample(20, u, seed=torch.Generator().manual_seed(0))
    assert x.shape == (2, 20, 2)
    torch.testing.assert_close(x[:, 5:8, 1], torch.full((2, 3), -1.3), atol=1e-4, rtol=0)
    x2 = lds.sample(20, u, seed=torch.Generator().manual_seed(0))
    torch.testing.assert_close(x, x2)


def test_sample_noise_matches_the_model():
    lds = InterventionalLDS(2, 2, dt=0.05, noise_scale=0.1)
    u = np.zeros((4000, 3, 2))
    u[:, 0, 0] = 2.0
    x = lds.sample(3, u, seed=torch.Generator().manual_seed(1))
    assert x.dtype == torch.float32
    first = x[:, 0]  # x_1 ~ N(intervene(0, u_1), (dt I)^2): the clamp moves the mean, the noise stays
    torch.testing.assert_close(first.mean(0), torch.tensor([2.0, 0.0]), atol=5e-3, rtol=0)
    torch.testing.assert_close(first.std(0), torch.tensor([0.05, 0.05]), atol=5e-3, rtol=0)
    resid = x[:, 1:] - lds.mean(x[:, :-1], torch.zeros(4000, 2, 2))
    torch.testing.assert_close(resid.std((0, 1)), torch.tensor([0.1, 0.1]), atol=5e-3, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"dt": 0.0}, "dt"),
        ({"dt": 1.0}, "dt"),
        ({"M": 3}, "B must be given"),
        ({"B": np.ones((2, 3))}, "B must have shape"),
        ({"B": np.array([[1.0, 0.0], [0.0, 0.0]])}, "stimulate no latent"),
        ({"B_sparsity": 0.0}, "B_sparsity"),
        ({"noise_scale": -1.0}, "noise_scale"),
    ],
)
def test_dynamics_rejects_bad_configuration(kwargs, match):
    args = {"D": 2, "M": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        InterventionalLDS(**args)


def test_emissions_and_recognition_shapes():
    x = torch.randn(3, 7, 2)
    mlp = MLPEmission(2, 5, hidden=8, layers=2, positive=True)
    assert mlp(x).shape == (3, 7, 5) and (mlp(x) > 0).all()
    assert len([m for m in mlp.net if isinstance(m, torch.nn.Linear)]) == 3
    assert LinearEmission(2, 5)(x).shape == (3, 7, 5)
    mean, scale = LSTMRecognition(2, 5, 2, hidden=4)(torch.randn(3, 7, 5), torch.zeros(3, 7, 2))
    assert mean.shape == scale.shape == (3, 7, 2) and (scale > 0).all()


# ---------------------------------------------------------------- the model


def _small(K: int = 4, T: int = 20, seed: int = 0):
    u = stimulation_trials(K, T, 2, seed=seed)
    x, y, truth = simulate_linear_latent(K, T, u=u, seed=seed, x0_scale=1.0)
    return x, y, u, truth


def test_without_stimulation_issm_equals_ssm_and_warns():
    _, y, _, _ = _small()
    u = np.zeros((4, 20, 2))
    yt, ut = torch.tensor(y, dtype=torch.float32), torch.tensor(u, dtype=torch.float32)
    issm, ssm = ISSM(2, 10, 2, seed=3), ISSM(2, 10, 2, interventional=False, seed=3)
    a = issm.loss(yt, ut, seed=torch.Generator().manual_seed(1))
    b = ssm.loss(yt, ut, seed=torch.Generator().manual_seed(1))
    assert a.item() == b.item()
    with pytest.warns(UserWarning, match="identifiable"):
        ISSM(2, 10, 2, seed=0).fit(y, u, n_iter=2)


def test_posterior_mean_is_clamped_for_issm_and_shifted_for_ssm():
    _, y, u, _ = _small()
    issm, ssm = ISSM(2, 10, 2, seed=0), ISSM(2, 10, 2, interventional=False, seed=0)
    x_i, x_s = issm.infer_latents(y, u).numpy(), ssm.infer_latents(y, u).numpy()
    stim = u != 0
    np.testing.assert_allclose(x_i[stim], u[stim], rtol=1e-6)
    raw = issm.recognition(torch.tensor(y, dtype=torch.float32), torch.tensor(u, dtype=torch.float32))[0]
    np.testing.assert_allclose(x_s, raw.detach().numpy() + u, rtol=1e-5, atol=1e-6)


def test_fit_is_deterministic_and_decreases_the_loss():
    _, y, u, _ = _small()
    h1 = ISSM(2, 10, 2, rnn_hidden=8, seed=1).fit(y, u, n_iter=30, seed=2)
    h2 = ISSM(2, 10, 2, rnn_hidden=8, seed=1).fit(y, u, n_iter=30, seed=2)
    assert h1 == h2
    assert np.mean(h1[-5:]) < np.mean(h1[:5])


def test_issm_recovers_latents_and_beats_the_ssm():
    u = stimulation_trials(16, 60, 2, seed=0)
    x, y, truth = simulate_linear_latent(16, 60, u=u, seed=0, x0_scale=1.0)
    r2, eig = {}, {}
    for inter in (True, False):
        model = ISSM(2, 10, 2, interventional=inter, rnn_hidden=16, seed=0)
        model.fit(y[:8], u[:8], n_iter=150)
        r2[inter] = aligned_r2(x[8:], model.infer_latents(y[8:], u[8:]), mask=(u[8:] == 0).all(-1))
        eig[inter] = eigen_error(model.transition_matrix().detach(), truth["M"])
    assert r2[True] > 0.95 and r2[True] > r2[False] + 0.05
    assert eig[True] < 0.15


def test_predict_rolls_out_the_mean_dynamics():
    _, y, u, _ = _small()
    model = ISSM(2, 10, 2, emission="linear", seed=0)
    x0 = torch.randn(4, 2)
    y_pred, x = model.predict(u, x0=x0, return_latents=True)
    ut = torch.tensor(u, dtype=torch.float32)
    torch.testing.assert_close(x[:, 0], x0)
    for t in (1, 7, 19):
        torch.testing.assert_close(x[:, t], model.dynamics.mean(x[:, t - 1], ut[:, t]))
    torch.testing.assert_close(y_pred, model.emission(x))
    y_prefix_pred = model.predict(u, y_prefix=y[:, :5])
    torch.testing.assert_close(y_prefix_pred[:, :5], model.reconstruct(y, u)[:, :5])  # a forward-only LSTM


def test_float64_model_follows_its_dtype():
    _, y, u, _ = _small()
    model = ISSM(2, 10, 2, rnn_hidden=4, seed=0).double()
    model.fit(y, u, n_iter=2)
    assert model.infer_latents(y, u).dtype == torch.float64


def test_poisson_likelihood_needs_positive_rates_and_counts():
    with pytest.raises(ValueError, match="positive rates"):
        ISSM(2, 10, 2, likelihood="poisson", positive=False)
    model = ISSM(2, 10, 2, likelihood="poisson", rnn_hidden=4)
    assert model.emission.positive
    _, _, u, _ = _small()
    counts = np.random.default_rng(0).poisson(2.0, size=(4, 20, 10)).astype(float)
    assert np.isfinite(model.fit(counts, u, n_iter=2)).all()
    with pytest.raises(ValueError, match="counts"):
        model.fit(-counts - 1, u, n_iter=1)


def test_more_latents_than_observations_warns():
    with pytest.warns(UserWarning, match="injective"):
        ISSM(3, 2, 3)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda y, u: (y[..., :9], u), "N=10"),
        (lambda y, u: (y, u[..., :1]), "M=2"),
        (lambda y, u: (y[:3], u), "same K"),
        (lambda y, u: (y, u[:, :15]), "at least its T"),
        (lambda y, u: (y[:, :15], u), "same T"),
        (lambda y, u: (y[0], u[0]), r"\(K, T, N\)"),
        (lambda y, u: (np.where(np.arange(10) == 3, np.nan, y), u), "NaN"),
        (lambda y, u: (y, np.where(u != 0, np.inf, u)), "u must contain only finite values"),
    ],
)
def test_fit_rejects_bad_data(change, match):
    _, y, u, _ = _small()
    with pytest.raises(ValueError, match=match):
        ISSM(2, 10, 2).fit(*change(y, u), n_iter=1)


def test_model_rejects_bad_options():
    with pytest.raises(ValueError, match="emission"):
        ISSM(2, 10, 2, emission="rnn")
    with pytest.raises(ValueError, match="likelihood"):
        ISSM(2, 10, 2, likelihood="bernoulli")
    _, y, u, _ = _small()
    model = ISSM(2, 10, 2)
    with pytest.raises(ValueError, match="exactly one"):
        model.predict(u)
    with pytest.raises(ValueError, match="x0 must have shape"):
        model.predict(u, x0=np.zeros((4, 3)))
    with pytest.raises(ValueError, match="entropy_weight"):
        model.fit(y, u, n_iter=1, entropy_weight=-1.0)


# ---------------------------------------------------------------- metrics


def test_aligned_r2_modes_on_known_transformations():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 40, 3))
    scaled_perm = np.stack([-2.0 * x[..., 2] + 1.0, 0.5 * x[..., 0], 3.0 * x[..., 1] - 4.0], -1)
    assert aligned_r2(x, scaled_perm, mode="perm") == pytest.approx(1.0)
    assert aligned_r2(x, scaled_perm, mode="diag") < 0.1  # wrong pairing
    Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    rotated = x @ Q
    assert aligned_r2(x, rotated, mode="linear") == pytest.approx(1.0)
    assert aligned_r2(x, rotated, mode="perm") < 0.95
    aligned, W, c = align_latents(x, scaled_perm, mode="perm", return_map=True)
    np.testing.assert_allclose(aligned, x, atol=1e-10)
    np.testing.assert_allclose(scaled_perm @ W + c, aligned)
    assert np.count_nonzero(np.abs(W) > 1e-12) == 3
    per_dim = aligned_r2(x, x + 0.5 * rng.standard_normal(x.shape), mode="diag", per_dim=True)
    assert per_dim.shape == (3,) and np.all((per_dim > 0.6) & (per_dim < 0.95))


def test_aligned_r2_uses_only_the_masked_points():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 30, 2))
    x_hat = x.copy()
    mask = np.ones((2, 30), bool)
    mask[:, :10] = False
    x_hat[:, :10] = 100.0  # garbage outside the mask
    assert aligned_r2(x, x_hat, mask=mask, mode="diag") == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((4, 2)), np.zeros((5, 2))), {}, "must agree"),
        ((np.ones((4, 2)), np.ones((4, 3))), {"mode": "diag"}, "same number"),
        ((np.ones((4, 3)), np.ones((4, 2))), {"mode": "perm"}, "at least as many"),
        ((np.ones((4, 2)), np.ones((4, 2))), {"mode": "procrustes"}, "mode"),
        ((np.ones((4, 2)), np.ones((4, 2))), {"mask": np.ones(3, bool)}, "mask must have shape"),
        ((np.ones((4, 2)), np.ones((4, 2))), {}, "constant"),
        ((np.full((4, 2), np.nan), np.ones((4, 2))), {}, "NaN"),
    ],
)
def test_aligned_r2_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        aligned_r2(*args, **kwargs)


def test_eigen_error_is_similarity_invariant():
    M = rotation_transition(2, 0.3, 0.9)
    S = np.array([[2.0, 1.0], [0.5, 3.0]])
    assert eigen_error(S @ M @ np.linalg.inv(S), M) == pytest.approx(0.0, abs=1e-12)
    assert eigen_error(np.diag([1.0, 2.0]), np.diag([2.5, 1.0])) == pytest.approx(0.25)
    assert eigen_error(torch.eye(2), np.eye(2)) == 0.0
    with pytest.raises(ValueError, match="square"):
        eigen_error(np.eye(2), np.eye(3))


def test_seed_fixes_the_model_and_leaves_the_global_torch_rng_alone():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a, b = ISSM(2, 10, 2, seed=5), ISSM(2, 10, 2, seed=5)
    assert torch.equal(torch.get_rng_state(), before)
    assert torch.equal(a.dynamics.A, b.dynamics.A)
    assert not torch.equal(a.dynamics.A, ISSM(2, 10, 2, seed=6).dynamics.A)


@pytest.mark.parametrize("build", [lambda s: InterventionalLDS(2, 2, seed=s),
                                   lambda s: MLPEmission(2, 3, 4, 1, seed=s),
                                   lambda s: LinearEmission(2, 3, seed=s),
                                   lambda s: LSTMRecognition(2, 3, 2, 4, seed=s)])
def test_blocks_with_a_seed_leave_the_global_rng_alone_and_repeat(build):
    state = torch.random.get_rng_state()
    a, b = build(3), build(3)
    assert torch.equal(state, torch.random.get_rng_state())
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_tensor_methods_name_their_bad_argument():
    lds = InterventionalLDS(2, 2, seed=0)
    with pytest.raises(ValueError, match="x_prev and u"):
        lds.mean(torch.zeros(3, 2), torch.zeros(2, 2))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        lds.flow("abc")
    with pytest.raises(ValueError, match="K=2"):
        lds.sample(4, torch.zeros(3, 4, 2), K=2)
