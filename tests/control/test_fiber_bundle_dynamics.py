"""Unit tests of icml25.control.fiber_bundle_dynamics (mCBF safety QP, sensing, observer, Neural ODE)."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from torch import nn

from icml25.control.fiber_bundle_dynamics import (
    BundleObserver,
    EpisodeConfig,
    Layout,
    LocalSensorModel,
    MeasurementAwareCBF,
    NeuralODEDynamics,
    PlantParams,
    PointRobotEnv,
    exploration_data,
    fit_neural_ode,
    point_robot_dynamics,
    random_layout,
    rk4_step,
    rollout,
    run_episodes,
    shoot,
    shooting_error_quantile,
    solve_qp_2d,
    solve_qp_slsqp,
    true_affine,
    vector_field_error,
)


class TrueTorchPlant(nn.Module):
    """The true plant in torch (float64), to pin the integrator and the error metrics."""

    def __init__(self, params: PlantParams | None = None) -> None:
        super().__init__()
        self.params = params or PlantParams()
        self.dummy = nn.Parameter(torch.zeros((), dtype=torch.float64))

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        v = x[..., 2:]
        acc = (u - self.params.c_quad * v * v.abs() - self.params.c_lin * v) / self.params.mass
        return torch.cat([v, acc], dim=-1)


# ---------------------------------------------------------------------------------------------
# QP
# ---------------------------------------------------------------------------------------------
def test_qp_known_answers():
    u_nom = np.array([[2.0, 0.0], [0.0, 0.0]])
    A = np.array([[[-1.0, 0.0]], [[1.0, 1.0]]])  # -u1 >= -0.5  |  u1 + u2 >= 1
    c = np.array([[-0.5], [1.0]])
    u, ok = solve_qp_2d(u_nom, A, c)
    assert ok.all()
    np.testing.assert_allclose(u, [[0.5, 0.0], [0.5, 0.5]], atol=1e-12)


def test_qp_detects_infeasibility():
    A = np.array([[[1.0, 0.0], [-1.0, 0.0]]])  # u1 >= 3 and u1 <= 2
    u, ok = solve_qp_2d(np.zeros((1, 2)), A, np.array([[3.0, -2.0]]))
    assert not ok[0]
    np.testing.assert_array_equal(u, np.zeros((1, 2)))


def test_qp_matches_slsqp_on_random_feasible_problems():
    rng = np.random.default_rng(0)
    B, m = 40, 5
    A = rng.normal(size=(B, m, 2))
    u_feas = rng.uniform(-1, 1, (B, 2))
    c = np.einsum("bmi,bi->bm", A, u_feas) - rng.uniform(0, 0.5, (B, m))  # u_feas is feasible
    u_nom = rng.normal(0, 3, (B, 2))
    u, ok = solve_qp_2d(u_nom, A, c)
    assert ok.all()
    assert np.all(np.einsum("bmi,bi->bm", A, u) >= c - 1e-9)
    for i in range(B):
        ref, feasible = solve_qp_slsqp(u_nom[i], A[i], c[i])
        assert feasible
        np.testing.assert_allclose(u[i], ref, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Sensing: the fibre radius
# ---------------------------------------------------------------------------------------------
def test_fibre_radius_values():
    s = LocalSensorModel(delta0=0.01, kappa=0.05)
    np.testing.assert_allclose(s.radius(np.array([0.0, 0.0])), 0.01)
    np.testing.assert_allclose(s.radius(np.array([1.0, 1.0])), 0.01 + 0.05 * np.sqrt(2))
    np.testing.assert_allclose(s.max_radius(), 0.01 + 0.05 * np.sqrt(2), rtol=1e-9)
    s2 = LocalSensorModel(scale=2.0)
    np.testing.assert_allclose(s2.radius(np.array([[1.0, 1.0]])), 2 * s.radius(np.array([[1.0, 1.0]])))


@pytest.mark.parametrize("noise", ["ball", "gauss"])
def test_measurements_stay_on_the_fibre(noise):
    s = LocalSensorModel(noise=noise)
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-1, 3, (2000, 2)), rng.normal(size=(2000, 2))], axis=1)
    y = s.measure_state(x, rng)
    d = s.radius(x[:, :2])
    assert np.all(np.linalg.norm(y[:, :2] - x[:, :2], axis=1) <= d + 1e-12)
    assert np.all(np.linalg.norm(y[:, 2:] - x[:, 2:], axis=1) <= 2 * d + 1e-12)
    assert np.mean(np.linalg.norm(y[:, :2] - x[:, :2], axis=1) / d) > 0.3  # not degenerate
    obs = np.array([[1.0, 1.0], [0.0, 2.0]])
    rel = s.measure_obstacles(x[0], obs, rng)
    assert np.all(np.linalg.norm(rel - (x[0, :2] - obs), axis=1) <= s.radius(x[0, :2]) + 1e-12)


def test_correlated_noise_stays_on_the_fibre_and_drifts_slowly():
    rng = np.random.default_rng(5)
    slow, white = LocalSensorModel(correlation_time=1.0), LocalSensorModel()
    z_slow, z_white = [slow.unit_noise(rng, (500,))], [white.unit_noise(rng, (500,))]
    for _ in range(50):
        z_slow.append(slow.next_unit_noise(z_slow[-1], rng, 0.02))
        z_white.append(white.next_unit_noise(z_white[-1], rng, 0.02))
    z_slow, z_white = np.stack(z_slow), np.stack(z_white)
    assert np.all(np.linalg.norm(z_slow.reshape(51, 500, 2, 2), axis=-1) <= 1 + 1e-12)
    lag1 = lambda z: np.mean(z[1:] * z[:-1]) / np.mean(z * z)  # noqa: E731
    assert lag1(z_slow) > 0.9 and abs(lag1(z_white)) < 0.05
    with pytest.raises(ValueError, match="correlation_time"):
        LocalSensorModel(correlation_time=-1.0)


def test_state_sigma_is_floored_and_matches_numpy_and_torch():
    s = LocalSensorModel()
    y = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.5, 0.5]])
    sig = s.state_sigma(y)
    np.testing.assert_allclose(sig[0], [0.01, 0.01, 0.02, 0.02])
    np.testing.assert_allclose(sig[1, 2:], 2 * sig[1, :2])
    np.testing.assert_allclose(s.state_sigma(torch.tensor(y)).numpy(), sig)


@pytest.mark.parametrize("kwargs, match", [
    ({"delta0": 0.0}, "delta0"), ({"delta0": -1.0}, "delta0"), ({"kappa": -0.1}, "kappa"),
    ({"noise": "laplace"}, "noise"), ({"scale": 0.0}, "scale"), ({"sensor_positions": [1.0, 2.0]}, "sensor_positions"),
])
def test_sensor_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LocalSensorModel(**kwargs)


# ---------------------------------------------------------------------------------------------
# Measurement-aware CBF
# ---------------------------------------------------------------------------------------------
def _cbf(**kw):
    return MeasurementAwareCBF(obstacles=[[1.0, 1.0], [0.3, 1.7]], radii=[0.2, 0.1], **kw)


def test_barrier_modes_are_ordered():
    x = np.array([[0.4, 0.9, 0.5, 0.2], [1.6, 1.3, -0.3, 0.1]])
    delta = np.array([0.03, 0.05])
    blind = _cbf(mode="blind").barrier(x, delta)
    adaptive = _cbf().barrier(x, delta)
    worst = _cbf(mode="worst_case", worst_case_delta=0.08).barrier(x, delta)
    np.testing.assert_allclose(blind, _cbf().phi0(x))
    np.testing.assert_allclose(blind - adaptive, _cbf().lipschitz(x) * delta[:, None])
    assert np.all(worst < adaptive) and np.all(adaptive < blind)
    assert np.all(_cbf(model_err=0.01).barrier(x, delta) < adaptive)


def test_lipschitz_margin_covers_the_fibre():
    """Condition 1/3: b(x_hat) >= 0 with x on the fibre over x_hat implies Phi0(x) >= 0 up to O(delta^2)."""
    cbf = _cbf()
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.uniform(0, 2, (3000, 2)), rng.normal(0, 1, (3000, 2))], axis=1)
    delta = rng.uniform(0.005, 0.05, 3000)
    e = LocalSensorModel().unit_noise(rng, (3000,))
    x_hat = x + np.concatenate([delta[:, None] * e[:, :2], 2 * delta[:, None] * e[:, 2:]], axis=1)
    gap = cbf.phi0(x) - cbf.barrier(x_hat, delta)
    assert np.all(gap >= -4 * delta[:, None] ** 2 - 1e-12)  # exact: Phi0 is quadratic, cross term 2 e_p.e_v


def test_filter_passes_safe_nominal_and_brakes_towards_obstacle():
    cbf, f = _cbf(), true_affine()
    u, info = cbf.filter(np.array([1.8, 0.2, 0.0, 0.0]), np.array([0.3, -0.2]), f, 0.02, 2.0)
    np.testing.assert_allclose(u, [0.3, -0.2])
    assert not info["active"] and not info["infeasible"]
    x = np.array([0.2, 1.0, 0.5, 0.0])  # moving at 0.5 m/s straight at obstacle 0
    u, info = cbf.filter(x, np.array([2.0, 0.0]), f, 0.04, 2.0)
    assert info["active"] and not info["infeasible"] and u[0] < 0
    slsqp, _ = _cbf(solver="slsqp").filter(x, np.array([2.0, 0.0]), f, 0.04, 2.0)
    np.testing.assert_allclose(u, slsqp, atol=1e-5)
    blind, _ = _cbf(mode="blind").filter(x, np.array([2.0, 0.0]), f, 0.04, 2.0)
    assert blind[0] > u[0]  # the measurement-aware filter brakes harder than the blind one


def test_filter_falls_back_to_braking_when_infeasible():
    x = np.array([0.9, 1.0, 0.01, -0.01])  # deep inside the inflated obstacle: no admissible control
    u, info = _cbf().filter(x, np.zeros(2), true_affine(), 0.05, 2.0)
    assert info["infeasible"]
    np.testing.assert_allclose(u, [-2.0, 2.0])  # full braking against the velocity


def test_filter_rejects_bad_input_and_relative_degree_mismatch():
    cbf = _cbf()
    x = np.array([0.5, 1.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="u_max"):
        cbf.filter(x, np.zeros(2), true_affine(), 0.01, 0.0)
    with pytest.raises(ValueError, match="u_nom"):
        cbf.filter(x, np.zeros(3), true_affine(), 0.01, 2.0)

    def no_input(xs):
        f0, G = true_affine()(xs)
        return f0, 0.0 * G

    with pytest.raises(ValueError, match="relative-degree"):
        cbf.filter(x, np.zeros(2), no_input, 0.01, 2.0)
    with pytest.raises(ValueError, match="delta_v"):
        cbf.barrier(x, -0.1)


def test_filter_and_barrier_reject_non_finite_states_radii_and_model_output():
    """issue 19: a NaN state, NaN/negative radii or a NaN model output must raise, not give a control."""
    cbf = _cbf()
    x = np.array([0.5, 1.0, 1.0, 0.0])
    bad_x = x.copy()
    bad_x[0] = np.nan
    with pytest.raises(ValueError, match="x_hat must contain only finite values"):
        cbf.filter(bad_x, np.zeros(2), true_affine(), 0.01, 2.0)
    for method in (cbf.barrier, cbf.lipschitz):
        with pytest.raises(ValueError, match="x_hat must contain only finite values"):
            method(bad_x, 0.01) if method == cbf.barrier else method(bad_x)
    for method in (cbf.h, cbf.phi0, cbf.grad_phi0):
        with pytest.raises(ValueError, match="x must contain only finite values"):
            method(bad_x)
    with pytest.raises(ValueError, match="x must have shape"):
        cbf.h(np.zeros(3))
    for radii in ([np.nan, 0.1], [0.2, -0.1]):
        with pytest.raises(ValueError, match="radii must"):
            MeasurementAwareCBF(obstacles=[[1.0, 1.0], [0.3, 1.7]], radii=radii)

    def nan_model(xs):
        f0, G = true_affine()(xs)
        return np.full_like(f0, np.nan), G

    with pytest.raises(ValueError, match="f_hat's f0 must contain only finite values"):
        cbf.filter(x, np.zeros(2), nan_model, 0.01, 2.0)
    with pytest.raises(ValueError, match="f_hat's G must have shape"):
        cbf.filter(x, np.zeros(2), lambda xs: (true_affine()(xs)[0], np.zeros((1, 4))), 0.01, 2.0)
    with pytest.raises(TypeError, match="f_hat must return a pair"):
        cbf.filter(x, np.zeros(2), lambda xs: None, 0.01, 2.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"mode": "robust"}, "mode"), ({"mode": "worst_case"}, "worst_case_delta"), ({"k_nearest": 0}, "k_nearest"),
    ({"alpha": 0.0}, "alpha"), ({"r_safe": -0.1}, "r_safe"), ({"solver": "osqp"}, "solver"),
])
def test_cbf_rejects_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _cbf(**kwargs)


def test_cbf_shapes_and_k_nearest_clip():
    with pytest.raises(ValueError, match="radii"):
        MeasurementAwareCBF([[1.0, 1.0]], [0.1, 0.2])
    cbf = MeasurementAwareCBF([[1.0, 1.0]], [0.1], k_nearest=3)
    assert cbf.k_nearest == 1


# ---------------------------------------------------------------------------------------------
# Environment, layouts
# ---------------------------------------------------------------------------------------------
def test_random_layout_is_feasible_and_deterministic():
    a, b = random_layout(5), random_layout(5)
    np.testing.assert_array_equal(a.obstacles, b.obstacles)
    assert 3 <= len(a.radii) <= 6 and np.all((a.radii >= 0.1) & (a.radii <= 0.2))
    for p in (a.start[:2], a.goal):
        assert np.min(np.linalg.norm(p - a.obstacles, axis=1) - a.radii) >= 0.3
    assert np.linalg.norm(a.goal - a.start[:2]) >= 1.2


def test_layout_rejects_start_or_goal_inside_obstacle():
    with pytest.raises(ValueError, match="start"):
        Layout([[1.0, 1.0]], [0.2], [1.1, 1.0, 0.0, 0.0], [0.0, 0.0])
    with pytest.raises(ValueError, match="goal"):
        Layout([[1.0, 1.0]], [0.2], [0.0, 0.0, 0.0, 0.0], [1.0, 1.1])
    with pytest.raises(ValueError, match="n_obstacles"):
        random_layout(0, n_obstacles=(0, 2))


def test_env_step_matches_rk4_and_validates():
    env = PointRobotEnv(seed=0, params=PlantParams(delta_w=0.0))
    x0, info = env.reset()
    assert info == {}
    x1, reward, terminated, truncated, info = env.step(np.array([5.0, -1.0]))  # clipped to u_max = 2
    ref = rk4_step(lambda z: point_robot_dynamics(z, np.array([2.0, -1.0])), x0, 0.02)
    np.testing.assert_allclose(x1, ref)
    assert reward == pytest.approx(-np.linalg.norm(x1[:2] - env.layout.goal))
    assert not terminated and truncated is False and info["safe"] and not info["collision"]
    assert env.in_safe_set(env.layout.start[:2])
    with pytest.raises(ValueError, match="dt"):
        PointRobotEnv(dt=0.0)
    with pytest.raises(gymnasium.error.ResetNeeded, match="reset"):
        PointRobotEnv().step(np.zeros(2))
    with pytest.raises(ValueError, match="mass"):
        PlantParams(mass=0.0)


def test_env_is_a_gymnasium_env_that_passes_check_env():
    from gymnasium.utils.env_checker import check_env

    env = PointRobotEnv(seed=0)
    assert isinstance(env, gymnasium.Env)
    assert env.action_space.shape == (2,) and env.observation_space.shape == (4,)
    check_env(env, skip_render_check=True)
    first, _ = env.reset(seed=3)
    again, _ = env.reset(seed=3)
    np.testing.assert_array_equal(first, again)
    layout = random_layout(1)
    x, _ = env.reset(options={"layout": layout})
    np.testing.assert_array_equal(x, layout.start)
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"nope": 1})
    with pytest.raises(ValueError, match="action"):
        env.step(np.zeros(3))


def test_env_constructor_seed_reproduces_the_old_layout_stream():
    """Without a reset seed the layouts and disturbances come from the constructor's seed, as before."""
    env = PointRobotEnv(seed=4)
    x, _ = env.reset()
    np.testing.assert_array_equal(x, random_layout(np.random.default_rng(4)).start)


# ---------------------------------------------------------------------------------------------
# Observer (connection)
# ---------------------------------------------------------------------------------------------
def test_observer_gain_and_exact_tracking():
    sensor = LocalSensorModel()
    obs = BundleObserver(true_affine(), sensor, k0=5.0)
    g = obs.gain(np.array([[0.0, 0.0, 0, 0], [1.0, 1.0, 0, 0]]))
    np.testing.assert_allclose(g[0], 5.0)
    assert g[1] < g[0]
    x = np.array([[0.5, 0.5, 0.3, -0.2]])
    x_hat, u = x.copy(), np.array([[0.4, 0.1]])
    for _ in range(50):  # perfect model, exact measurements: the estimate follows the Euler flow of the plant
        x_next = x + 0.02 * point_robot_dynamics(x, u)
        x_hat = obs.update(x_hat, x, u, 0.02)
        x = x_next
    np.testing.assert_allclose(x_hat, x, atol=1e-12)
    y = x + 0.01
    np.testing.assert_array_equal(BundleObserver(true_affine(), sensor, mode="raw").update(x_hat, y, u, 0.02), y)
    with pytest.raises(ValueError, match="k0"):
        BundleObserver(true_affine(), sensor, k0=0.0)


# ---------------------------------------------------------------------------------------------
# Neural ODE
# ---------------------------------------------------------------------------------------------
def test_shoot_holds_controls_over_each_step():
    """torchdiffeq RK4 in step units reproduces the zero-order-hold RK4 of the plant."""
    rng = np.random.default_rng(3)
    x0 = np.concatenate([rng.uniform(0, 2, (5, 2)), rng.normal(size=(5, 2))], axis=1)
    U = rng.uniform(-2, 2, (8, 5, 2))
    got = shoot(TrueTorchPlant(), torch.tensor(x0), torch.tensor(U), 0.02).numpy()
    x = x0
    for k in range(8):
        x = rk4_step(lambda z, k=k: point_robot_dynamics(z, U[k]), x, 0.02)
        np.testing.assert_allclose(got[k + 1], x, atol=1e-12)


def test_model_affine_parts_and_error_metrics():
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(0, 2, (7, 2)), rng.normal(size=(7, 2))], axis=1)
    u = rng.uniform(-2, 2, (7, 2))
    for structured in (True, False):
        m = NeuralODEDynamics(structured=structured, seed=1).double()
        f0, G = m.affine(x)
        with torch.no_grad():
            full = m(torch.tensor(x), torch.tensor(u)).numpy()
        if structured:
            np.testing.assert_allclose(f0 + np.einsum("bij,bj->bi", G, u), full, atol=1e-10)
            np.testing.assert_allclose(f0[:, :2], x[:, 2:])
        assert G.shape == (7, 4, 2)
    assert vector_field_error(TrueTorchPlant(), x, u) == pytest.approx(0.0, abs=1e-12)
    xs, _, us = exploration_data(3, duration=0.4, seed=0)
    assert shooting_error_quantile(TrueTorchPlant(PlantParams()), xs, us, 0.02, horizon=5) < 0.01


def test_fit_neural_ode_learns_and_is_deterministic():
    sensor = LocalSensorModel()
    x, y, u = exploration_data(8, duration=0.4, sensor=sensor, seed=0)
    assert x.shape == (8, 21, 4) and y.shape == (8, 21, 4) and u.shape == (8, 20, 2)
    rng = np.random.default_rng(1)
    xt, ut = x[:, :-1].reshape(-1, 4), rng.uniform(-2, 2, (160, 2))
    runs, errors = [], [vector_field_error(NeuralODEDynamics(seed=0), xt, ut)]
    threads = torch.get_num_threads()
    for _ in range(2):
        m = NeuralODEDynamics(seed=0)
        runs.append(fit_neural_ode(m, y, u, 0.02, sensor.state_sigma, steps=40, lr=3e-3, seed=0))
        errors.append(vector_field_error(m, xt, ut))
    assert runs[0] == runs[1] and errors[1] == errors[2]
    assert torch.get_num_threads() == threads  # the library leaves the thread count to the caller
    assert errors[1] < 0.8 * errors[0]
    unweighted = fit_neural_ode(NeuralODEDynamics(seed=0), y, u, 0.02, sensor.state_sigma, weighting=False, steps=3)
    assert len(unweighted) == 3 and np.all(np.isfinite(unweighted))
    learned = NeuralODEDynamics(seed=0)
    fit_neural_ode(learned, y, u, 0.02, sensor.state_sigma, initial="learned", steps=40, lr=3e-3, seed=0)
    assert vector_field_error(learned, xt, ut) < 0.8 * errors[0]


def test_neural_ode_rejects_bad_input():
    with pytest.raises(ValueError, match="drag_inputs"):
        NeuralODEDynamics(drag_inputs="time")
    with pytest.raises(ValueError, match="structured"):
        NeuralODEDynamics(state_dim=3, ctrl_dim=2)
    m = NeuralODEDynamics()
    with pytest.raises(ValueError, match=r"x must be a non-empty tensor of shape \(\.\.\., 4\)"):
        m(torch.zeros(3, 5), torch.zeros(3, 2))
    y, u = np.zeros((2, 11, 4)), np.zeros((2, 10, 2))
    with pytest.raises(ValueError, match="horizon"):
        fit_neural_ode(m, y, u, 0.02, LocalSensorModel().state_sigma, horizon=11)
    with pytest.raises(ValueError, match="initial"):
        fit_neural_ode(m, y, u, 0.02, LocalSensorModel().state_sigma, initial="smoothed")
    with pytest.raises(ValueError, match="mass_init"):
        NeuralODEDynamics(mass_init=0.0)
    with pytest.raises(ValueError, match="one more time step"):
        fit_neural_ode(m, y[:, :10], u, 0.02, LocalSensorModel().state_sigma)
    y[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        fit_neural_ode(m, y, u, 0.02, LocalSensorModel().state_sigma)


# ---------------------------------------------------------------------------------------------
# Closed loop
# ---------------------------------------------------------------------------------------------
def test_closed_loop_mcbf_is_safe_where_no_filter_collides():
    layouts = [random_layout(s) for s in range(4)]
    cfg = EpisodeConfig(horizon_s=8.0)
    mcbf, none = rollout(layouts, true_affine(), [("mcbf", 1.0), ("none", 1.0)], config=cfg, seed=0)
    assert mcbf["violation_rate"] == 0.0 and mcbf["CSR"] == 1.0 and mcbf["min_clearance"] >= 0.05
    assert none["collision_rate"] > 0.0  # every layout has an obstacle next to the straight line
    again = rollout(layouts, true_affine(), [("mcbf", 1.0)], config=cfg, seed=0)[0]
    np.testing.assert_array_equal(again["episodes"]["path"], mcbf["episodes"]["path"])


def test_rollout_aborts_on_non_finite_model_output():
    layouts = [random_layout(s) for s in range(2)]

    def broken(x):
        f0, G = true_affine()(x)
        f0[x[:, 0] > -1.0] = np.nan
        return f0, G

    with pytest.warns(UserWarning, match="non-finite"):
        res = rollout(layouts, broken, [("mcbf", 1.0)], config=EpisodeConfig(horizon_s=0.2))[0]
    assert res["aborted"] == 2 and res["SR"] == 0.0


def test_rollout_rejects_bad_methods():
    layouts = [random_layout(0)]
    with pytest.raises(ValueError, match="method"):
        rollout(layouts, true_affine(), [("ekf", 1.0)])
    with pytest.raises(ValueError, match="noise_scale"):
        rollout(layouts, true_affine(), [("mcbf", 0.0)])
    with pytest.raises(ValueError, match="n_episodes"):
        run_episodes(true_affine(), n_episodes=0)


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError, match="k_nearest must be an integer >= 1"):
        MeasurementAwareCBF([[1.0, 1.0]], [0.2], k_nearest=2.5)
    with pytest.raises(TypeError, match="delta0 must be a real number"):
        LocalSensorModel(delta0="0.01")
    with pytest.raises(TypeError, match="steps must be an integer >= 1"):
        x, y, u = exploration_data(2, duration=0.2, seed=0)
        fit_neural_ode(NeuralODEDynamics(seed=0), y, u, 0.02, LocalSensorModel().state_sigma, steps=2.0)


def test_neural_ode_construction_leaves_the_global_rng_alone():
    state = torch.random.get_rng_state()
    a = NeuralODEDynamics(hidden=(8, 8), seed=3)
    assert torch.equal(state, torch.random.get_rng_state())
    b = NeuralODEDynamics(hidden=(8, 8), seed=3)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_model_affine_is_a_forward_pass_that_lets_non_finite_states_through():
    """rollout calls f_hat on the state estimate before it checks it: a diverged (infinite) estimate must give
    non-finite parts, so that the episode is aborted, not a ValueError that stops the whole rollout."""
    model = NeuralODEDynamics(hidden=(4,), seed=0, drag_inputs="state")
    with torch.no_grad():
        model.net[-1].bias.fill_(1.0)
    f0, G = model.affine(np.array([[np.nan, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]))
    assert not np.all(np.isfinite(f0[0])) and np.all(np.isfinite(f0[1])) and G.shape == (2, 4, 2)
    with pytest.raises(ValueError, match="x must be"):
        model.affine(np.zeros((2, 3)))
