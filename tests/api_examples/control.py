"""Valid calls of ``icml25.control`` (differentiable LQR/iLQR, DiLQR, measurement-aware barrier functions)."""

from functools import cache

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import control as ct
from icml25.control import fiber_bundle_dynamics as fb


def _torch():
    import torch

    return torch


_T, _B, _n, _m = 3, 2, 2, 1


def _lin():
    """A tiny double-integrator LQR problem: x_init, C, c, F (float64)."""
    torch = _torch()
    d = torch.float64
    C = torch.eye(_n + _m, dtype=d).repeat(_T, _B, 1, 1)
    c = torch.zeros(_T, _B, _n + _m, dtype=d)
    F = torch.tensor([[1.0, 0.1, 0.0], [0.0, 1.0, 0.1]], dtype=d).repeat(_T - 1, _B, 1, 1)
    return torch.ones(_B, _n, dtype=d), C, c, F


def _ilqr_kwargs():
    torch = _torch()
    x_init, C, c, F = _lin()

    def step(t, x, u):
        return (F[t] @ torch.cat((x, u), -1).unsqueeze(-1)).squeeze(-1)

    def total_cost(tau):
        return (0.5 * (tau.unsqueeze(-2) @ C @ tau.unsqueeze(-1)).squeeze(-1).squeeze(-1)).sum(0)

    return {"x_init": x_init, "u_init": torch.zeros(_T, _B, _m, dtype=torch.float64), "step": step,
            "linearize": lambda tau: F, "quadratize": lambda tau: (C, c), "total_cost": total_cost,
            "u_lower": -torch.ones(_T, _B, _m, dtype=torch.float64),
            "u_upper": torch.ones(_T, _B, _m, dtype=torch.float64), "max_iter": 3}


def _pendulum():
    return ct.PendulumDynamics(dtype=_torch().float64)


def _tau(T=_T, B=_B):
    torch = _torch()
    x = ct.sample_pendulum_states(B, seed=0)
    u = 0.1 * torch.ones(B, 1, dtype=torch.float64)
    return torch.cat((x, u), -1).expand(T, B, 4).clone()


def _dilqr_kwargs():
    cost = ct.pendulum_cost(_T, _B)  # passed as the plain pair (C, c), which DiLQR takes like a QuadCost
    return {"x_init": ct.sample_pendulum_states(_B, seed=0), "cost": (cost.C, cost.c), "dynamics": _pendulum()}


def _cotangent_kwargs():
    torch = _torch()
    tau = _tau()
    cost = ct.pendulum_cost(_T, _B)
    F, _ = ct.linearize(_pendulum(), tau, 3)
    return {"g": torch.ones(_T, _B, 4, dtype=torch.float64), "dynamics": _pendulum(), "tau": tau,
            "C": cost.C, "c": cost.c, "F": F, "n": 3}


# ---------------------------------------------------------------- fiber bundles
_OBS = [[1.0, 1.0]]


@cache
def _sensor() -> fb.LocalSensorModel:
    return fb.LocalSensorModel()


@cache
def _cbf() -> fb.MeasurementAwareCBF:
    return fb.MeasurementAwareCBF(obstacles=_OBS, radii=[0.2])


def _x_hat():
    return np.array([0.2, 1.0, 0.5, 0.0])


@cache
def _ode() -> fb.NeuralODEDynamics:
    return fb.NeuralODEDynamics(hidden=(4,), seed=0).double()


def _env():
    env = fb.PointRobotEnv(seed=0)
    env.reset(seed=0)
    return env


@cache
def _layout() -> fb.Layout:
    return fb.random_layout(0)


def _traj():
    rng = np.random.default_rng(0)
    return {"trajs_y": rng.normal(size=(2, 4, 4)), "controls": rng.normal(size=(2, 3, 2))}


def _sigma(y):
    return _torch().ones_like(y) * 0.1


_EPISODE = fb.EpisodeConfig(horizon_s=0.06)
_FLOAT_DTYPE = {"dtype": "a torch dtype (checked by torch)"}

EXAMPLES = {
    # lqr
    "icml25.control.QuadCost": Exempt("record"),
    "icml25.control.LinDx": Exempt("record"),
    "icml25.control.ILQRResult": Exempt("record"),
    "icml25.control.DiLQRInfo": Exempt("record"),
    "icml25.control.lqr_solve": Example(ct.lqr_solve, lambda: dict(
        zip(("x_init", "C", "c", "F"), _lin(), strict=True)) | {"u_lower": -1.0, "u_upper": 1.0, "max_iter": 5},
        positive=("max_iter",)),
    "icml25.control.box_qp": Example(ct.box_qp, lambda: {
        "H": 2.0 * _torch().eye(2, dtype=_torch().float64).repeat(2, 1, 1),
        "q": _torch().tensor([[1.0, -3.0], [0.5, 0.5]], dtype=_torch().float64),
        "lower": -_torch().ones(2, 2, dtype=_torch().float64), "upper": _torch().ones(2, 2, dtype=_torch().float64)},
        positive=("max_iter",), nonneg=("tol",), paired=[("q", "lower")]),
    "icml25.control.ilqr_solve": Example(ct.ilqr_solve, _ilqr_kwargs, positive=("max_iter", "max_linesearch_iter",
                                                                                "linesearch_decay"),
                                         nonneg=("eps",)),
    # dilqr
    "icml25.control.Dynamics": Example(ct.Dynamics, {}),
    "icml25.control.PendulumDynamics": Example(ct.PendulumDynamics, {"g": 10.0}, positive=("g", "m", "l", "dt"),
                                               skip=_FLOAT_DTYPE),
    "icml25.control.PendulumDynamics.forward": Example(lambda **kw: _pendulum()(**kw), lambda: {
        "x": ct.sample_pendulum_states(2, seed=0), "u": _torch().zeros(2, 1, dtype=_torch().float64)},
        allow={"x": "nan", "u": "nan"}, paired=[("x", "u")]),
    "icml25.control.PendulumDynamics.jacobian": Example(lambda **kw: _pendulum().jacobian(**kw), lambda: {
        "x": ct.sample_pendulum_states(2, seed=0), "u": _torch().zeros(2, 1, dtype=_torch().float64)},
        allow={"x": "nan", "u": "nan"}, paired=[("x", "u")]),
    "icml25.control.CartpoleDynamics": Example(ct.CartpoleDynamics, {"g": 9.8},
                                               positive=("g", "m_cart", "m_pole", "l", "dt"), skip=_FLOAT_DTYPE),
    "icml25.control.CartpoleDynamics.forward": Example(
        lambda **kw: ct.CartpoleDynamics(dtype=_torch().float64)(**kw), lambda: {
            "x": _torch().tensor([[0.0, 0.0, 1.0, 0.0, 0.1]], dtype=_torch().float64),
            "u": _torch().zeros(1, 1, dtype=_torch().float64)}, allow={"x": "nan", "u": "nan"}),
    "icml25.control.DiLQR": Example(ct.DiLQR, {"n_state": 3, "n_ctrl": 1, "T": _T, "max_iter": 5},
                                    positive=("n_state", "n_ctrl", "T", "max_iter", "linesearch_decay",
                                              "max_linesearch_iter", "fp_max_iter", "cond_max"),
                                    nonneg=("eps", "u_reg", "fp_tol"), allow={"verbose": "neg"}),
    "icml25.control.DiLQR.forward": Example(lambda **kw: ct.DiLQR(3, 1, _T, max_iter=5)(**kw), _dilqr_kwargs),
    "icml25.control.implicit_cotangent": Example(ct.implicit_cotangent, _cotangent_kwargs,
                                                 positive=("n", "fp_max_iter", "cond_max"), nonneg=("fp_tol",)),
    "icml25.control.dynamics_lagrangian_hessian": Example(ct.dynamics_lagrangian_hessian, lambda: {
        "dynamics": _pendulum(), "tau": _tau(2), "lam": _torch().ones(2, _B, 3, dtype=_torch().float64), "n": 3},
        positive=("n",), paired=[("tau", "lam")]),
    "icml25.control.linearize": Example(ct.linearize, lambda: {"dynamics": _pendulum(), "tau": _tau(), "n": 3},
                                        positive=("n",)),
    "icml25.control.pendulum_cost": Example(ct.pendulum_cost, {"T": _T, "batch": 2}, positive=("T", "batch",
                                                                                               "ctrl_penalty"),
                                            skip={**_FLOAT_DTYPE, "device": "a torch device spec"}),
    "icml25.control.sample_pendulum_states": Example(ct.sample_pendulum_states, {"n": 3, "seed": 0},
                                                     positive=("n", "max_angle"), skip=_FLOAT_DTYPE),
    "icml25.control.pendulum_problem": Example(ct.pendulum_problem, {"T": _T, "batch": 2, "seed": 0},
                                               positive=("T", "batch"), skip=_FLOAT_DTYPE),
    # fiber bundles
    "icml25.control.PlantParams": Example(fb.PlantParams, {}, positive=("mass", "u_max"),
                                          nonneg=("c_lin", "c_quad", "delta_w")),
    "icml25.control.Layout": Example(fb.Layout, lambda: {"obstacles": np.array([[1.0, 1.0]]),
                                                         "radii": np.array([0.2]),
                                                         "start": np.array([0.1, 0.1, 0.0, 0.0]),
                                                         "goal": np.array([1.9, 1.9])},
                                    paired=[("obstacles", "radii")]),
    "icml25.control.random_layout": Example(fb.random_layout, {"seed": 0}, positive=("workspace", "max_tries"),
                                            nonneg=("clearance", "path_gap", "min_distance")),
    "icml25.control.true_affine": Example(fb.true_affine, {"params": fb.PlantParams()}),
    "icml25.control.PointRobotEnv": Example(fb.PointRobotEnv, {"seed": 0}, positive=("workspace", "dt", "goal_tol"),
                                            nonneg=("r_safe",)),
    "icml25.control.PointRobotEnv.reset": Example(lambda **kw: fb.PointRobotEnv(seed=0).reset(**kw),
                                                  lambda: {"seed": 1, "options": {"layout": _layout()}}),
    "icml25.control.PointRobotEnv.step": Example(lambda **kw: _env().step(**kw),
                                                 lambda: {"action": np.array([0.5, -0.5])}),
    "icml25.control.PointRobotEnv.true_dynamics": Example(lambda **kw: _env().true_dynamics(**kw), lambda: {
        "x": np.array([[0.5, 0.5, 0.1, 0.0]]), "u": np.array([[1.0, 0.0]])}, paired=[("x", "u")]),
    "icml25.control.PointRobotEnv.clearance": Example(lambda **kw: _env().clearance(**kw),
                                                      lambda: {"p": np.array([0.5, 0.5])}),
    "icml25.control.PointRobotEnv.in_safe_set": Example(lambda **kw: _env().in_safe_set(**kw),
                                                        lambda: {"p": np.array([0.5, 0.5])}),
    "icml25.control.LocalSensorModel": Example(fb.LocalSensorModel, lambda: {
        "sensor_positions": np.array([[0.0, 0.0], [2.0, 2.0]])}, positive=("delta0", "scale"),
        nonneg=("kappa", "correlation_time")),
    "icml25.control.LocalSensorModel.rescaled": Example(lambda **kw: _sensor().rescaled(**kw), {"factor": 2.0},
                                                        positive=("factor",)),
    "icml25.control.LocalSensorModel.radius": Example(lambda **kw: _sensor().radius(**kw),
                                                      lambda: {"p": np.array([[0.5, 0.5], [1.0, 1.5]])},
                                                      allow={"p": "ndim"}),  # (..., 2): any batch shape
    "icml25.control.LocalSensorModel.max_radius": Example(lambda **kw: _sensor().max_radius(**kw), {"n": 11},
                                                          positive=("workspace", "n")),
    "icml25.control.LocalSensorModel.state_sigma": Example(lambda **kw: _sensor().state_sigma(**kw),
                                                           lambda: {"y": np.array([[0.5, 0.5, 0.0, 0.0]])},
                                                           allow={"y": "ndim"}),  # (..., 4): any batch shape
    "icml25.control.LocalSensorModel.unit_noise": Example(lambda **kw: _sensor().unit_noise(**kw),
                                                          {"seed": 0, "shape": (3,)}, allow={"shape": "empty"}),
    "icml25.control.LocalSensorModel.next_unit_noise": Example(
        lambda **kw: fb.LocalSensorModel(correlation_time=0.1).next_unit_noise(**kw),
        lambda: {"z": np.zeros((3, 4)), "seed": 0, "dt": 0.02}, positive=("dt",), allow={"z": "ndim"}),
    "icml25.control.LocalSensorModel.apply": Example(lambda **kw: _sensor().apply(**kw), lambda: {
        "x": np.array([[0.5, 0.5, 0.0, 0.0]]), "z": np.zeros((1, 4))}, paired=[("x", "z")]),
    "icml25.control.LocalSensorModel.measure_state": Example(lambda **kw: _sensor().measure_state(**kw), lambda: {
        "x": np.array([[0.5, 0.5, 0.0, 0.0]]), "seed": 0}, allow={"x": "ndim"}),
    "icml25.control.LocalSensorModel.measure_obstacles": Example(
        lambda **kw: _sensor().measure_obstacles(**kw),
        lambda: {"x": np.array([0.5, 0.5, 0.0, 0.0]), "obstacles": np.array([[1.0, 1.0]]), "seed": 0}),
    "icml25.control.solve_qp_2d": Example(fb.solve_qp_2d, lambda: {
        "u_nom": np.array([[1.0, 0.0]]), "A": np.array([[[-1.0, 0.0]]]), "c": np.array([[-0.5]])},
        paired=[("u_nom", "A"), ("A", "c")], nonneg=("tol",)),
    "icml25.control.MeasurementAwareCBF": Example(fb.MeasurementAwareCBF, lambda: {
        "obstacles": np.array(_OBS), "radii": np.array([0.2])}, positive=("k1", "alpha", "k_nearest"),
        nonneg=("r_safe", "delta_w", "model_err")),
    # states are (4,) or a batch (B, 4): the "ndim" mutation (1, 4) is a batch of one
    "icml25.control.MeasurementAwareCBF.h": Example(lambda **kw: _cbf().h(**kw), lambda: {"x": _x_hat()},
                                                    allow={"x": "ndim"}),
    "icml25.control.MeasurementAwareCBF.phi0": Example(lambda **kw: _cbf().phi0(**kw), lambda: {"x": _x_hat()},
                                                       allow={"x": "ndim"}),
    "icml25.control.MeasurementAwareCBF.grad_phi0": Example(lambda **kw: _cbf().grad_phi0(**kw),
                                                            lambda: {"x": _x_hat()}, allow={"x": "ndim"}),
    "icml25.control.MeasurementAwareCBF.lipschitz": Example(lambda **kw: _cbf().lipschitz(**kw),
                                                            lambda: {"x_hat": _x_hat()}, allow={"x_hat": "ndim"}),
    "icml25.control.MeasurementAwareCBF.effective_delta": Example(lambda **kw: _cbf().effective_delta(**kw),
                                                                  {"delta_v": 0.05, "n": 2}, positive=("n",),
                                                                  nonneg=("delta_v",)),
    "icml25.control.MeasurementAwareCBF.barrier": Example(lambda **kw: _cbf().barrier(**kw),
                                                          lambda: {"x_hat": _x_hat(), "delta_v": 0.05},
                                                          nonneg=("delta_v",), allow={"x_hat": "ndim"}),
    "icml25.control.MeasurementAwareCBF.filter": Example(lambda **kw: _cbf().filter(**kw), lambda: {
        "x_hat": _x_hat(), "u_nom": np.array([2.0, 0.0]), "f_hat": fb.true_affine(), "delta_v": 0.05, "u_max": 2.0},
        positive=("u_max",), nonneg=("delta_v",)),
    "icml25.control.BundleObserver": Example(fb.BundleObserver, lambda: {"f_hat": fb.true_affine(),
                                                                         "sensor_model": _sensor()},
                                             positive=("k0",)),
    "icml25.control.BundleObserver.gain": Example(
        lambda **kw: fb.BundleObserver(fb.true_affine(), _sensor()).gain(**kw),
        lambda: {"x_hat": np.array([[0.5, 0.5, 0.0, 0.0]])}, allow={"x_hat": "ndim"}),
    "icml25.control.BundleObserver.update": Example(
        lambda **kw: fb.BundleObserver(fb.true_affine(), _sensor()).update(**kw),
        lambda: {"x_hat": np.array([[0.5, 0.5, 0.0, 0.0]]), "y": np.array([[0.51, 0.5, 0.0, 0.0]]),
                 "u": np.array([[1.0, 0.0]]), "dt": 0.02}, positive=("dt",),
        paired=[("x_hat", "y"), ("x_hat", "u")]),
    "icml25.control.NeuralODEDynamics": Example(fb.NeuralODEDynamics, {"hidden": (4,), "seed": 0},
                                                positive=("state_dim", "ctrl_dim", "mass_init"),
                                                allow={"hidden": "empty"}),  # no hidden layer: a linear field
    "icml25.control.NeuralODEDynamics.forward": Example(lambda **kw: _ode()(**kw), lambda: {
        "x": _torch().zeros(3, 4, dtype=_torch().float64), "u": _torch().ones(3, 2, dtype=_torch().float64)},
        allow={"x": "nan", "u": "nan"}, paired=[("x", "u")]),
    "icml25.control.NeuralODEDynamics.affine": Example(lambda **kw: _ode().affine(**kw),
                                                       lambda: {"x": np.zeros((3, 4))}, allow={"x": "nan"}),
    "icml25.control.shoot": Example(fb.shoot, lambda: {"model": _ode(),
                                                       "x0": _torch().zeros(2, 4, dtype=_torch().float64),
                                                       "controls": _torch().ones(3, 2, 2, dtype=_torch().float64),
                                                       "dt": 0.02}, positive=("dt",),
                                    allow={"x0": "nan", "controls": "nan"}),
    "icml25.control.fit_neural_ode": Example(fb.fit_neural_ode, lambda: {
        "model": fb.NeuralODEDynamics(hidden=(4,), seed=0), **_traj(), "dt": 0.02, "sigma_fn": _sigma,
        "horizon": 2, "steps": 2, "batch_size": 2}, positive=("dt", "horizon", "steps", "lr", "batch_size", "stride",
                                                             "sigma_floor"),
        paired=[("trajs_y", "controls")], allow={"batch_size": "none"}),  # None: every segment in each step
    "icml25.control.vector_field_error": Example(fb.vector_field_error, lambda: {
        "model": _ode(), "x": np.random.default_rng(0).normal(size=(3, 4)),
        "u": np.random.default_rng(1).normal(size=(3, 2))}, paired=[("x", "u")]),
    "icml25.control.exploration_data": Example(fb.exploration_data, {"n_traj": 2, "duration": 0.06, "seed": 0},
                                               positive=("n_traj", "duration", "dt", "workspace"), nonneg=("v0",)),
    "icml25.control.EpisodeConfig": Example(fb.EpisodeConfig, {},
                                            positive=("dt", "horizon_s", "goal_tol", "k1", "alpha", "k_nearest",
                                                      "k0", "workspace"),
                                            nonneg=("kp", "kd", "r_safe", "model_err")),
    "icml25.control.rollout": Example(fb.rollout, lambda: {
        "layouts": [_layout()], "f_hat": fb.true_affine(), "groups": [("mcbf", 1.0)], "config": _EPISODE},
        skip={"groups": "a list of (method, scale) pairs, each checked"}),
    "icml25.control.run_episodes": Example(fb.run_episodes, lambda: {
        "f_hat": fb.true_affine(), "n_episodes": 1, "config": _EPISODE}, positive=("n_episodes", "noise_scale")),
}
