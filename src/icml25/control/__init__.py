"""Control: differentiable LQR / iLQR (DiLQR) and measurement-aware barrier functions (fiber bundles).

Everything here needs the ``torch`` extra (``pip install -e '.[torch]'``); the names are imported
lazily, so ``import icml25.control`` itself works without PyTorch.
"""

from importlib import import_module

_EXPORTS = {
    "QuadCost": "icml25.control.lqr",
    "LinDx": "icml25.control.lqr",
    "lqr_solve": "icml25.control.lqr",
    "box_qp": "icml25.control.lqr",
    "ilqr_solve": "icml25.control.lqr",
    "ILQRResult": "icml25.control.lqr",
    "DiLQR": "icml25.control.dilqr",
    "DiLQRInfo": "icml25.control.dilqr",
    "Dynamics": "icml25.control.dilqr",
    "PendulumDynamics": "icml25.control.dilqr",
    "CartpoleDynamics": "icml25.control.dilqr",
    "implicit_cotangent": "icml25.control.dilqr",
    "dynamics_lagrangian_hessian": "icml25.control.dilqr",
    "linearize": "icml25.control.dilqr",
    "pendulum_cost": "icml25.control.dilqr",
    "sample_pendulum_states": "icml25.control.dilqr",
    "pendulum_problem": "icml25.control.dilqr",
    "LocalSensorModel": "icml25.control.fiber_bundle_dynamics",
    "MeasurementAwareCBF": "icml25.control.fiber_bundle_dynamics",
    "BundleObserver": "icml25.control.fiber_bundle_dynamics",
    "NeuralODEDynamics": "icml25.control.fiber_bundle_dynamics",
    "fit_neural_ode": "icml25.control.fiber_bundle_dynamics",
    "shoot": "icml25.control.fiber_bundle_dynamics",
    "PointRobotEnv": "icml25.control.fiber_bundle_dynamics",
    "Layout": "icml25.control.fiber_bundle_dynamics",
    "random_layout": "icml25.control.fiber_bundle_dynamics",
    "PlantParams": "icml25.control.fiber_bundle_dynamics",
    "true_affine": "icml25.control.fiber_bundle_dynamics",
    "rollout": "icml25.control.fiber_bundle_dynamics",
    "run_episodes": "icml25.control.fiber_bundle_dynamics",
    "EpisodeConfig": "icml25.control.fiber_bundle_dynamics",
    "solve_qp_2d": "icml25.control.fiber_bundle_dynamics",
    "exploration_data": "icml25.control.fiber_bundle_dynamics",
    "vector_field_error": "icml25.control.fiber_bundle_dynamics",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.control' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
