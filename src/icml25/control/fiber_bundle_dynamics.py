"""Learning Dynamics under Environmental Constraints via Measurement-Induced Bundle Structures (Zheng & Mei, ICML 2025).

OUR 2-D INSTANTIATION of the paper's framework (the paper stays abstract and its code was not
available): a planar point robot with unknown drag, beacons whose noise grows with distance
(the fibre radius ``delta_v(p)`` of the measurement bundle ``E = M x Y``), a measurement-aware
control barrier function (mCBF) whose margin is the fibre radius times the barrier's Lipschitz
constant, a 2-variable safety QP, a connection-style observer, and a Neural ODE whose
multiple-shooting loss weights each sample by its inverse measurement covariance (eq. 14).

Example
-------
>>> import numpy as np
>>> from icml25.control.fiber_bundle_dynamics import (
...     LocalSensorModel, MeasurementAwareCBF, PlantParams, true_affine)
>>> sensor = LocalSensorModel()                          # beacons at the corners of [0, 2]^2
>>> cbf = MeasurementAwareCBF(obstacles=[[1.0, 1.0]], radii=[0.2])
>>> x_hat = np.array([0.2, 1.0, 0.5, 0.0])               # heading straight at the obstacle
>>> u, info = cbf.filter(x_hat, np.array([2.0, 0.0]), true_affine(PlantParams()), sensor.radius(x_hat[:2]), 2.0)
>>> bool(u[0] < 0.0), bool(info["active"])               # the filter brakes
(True, True)
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import gymnasium
import numpy as np
import torch
from scipy.optimize import minimize
from torch import nn
from torchdiffeq import odeint

from icml25.utils.random import Seed, as_generator, torch_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_scalar,
    check_sequence,
    check_tensor,
)

Affine = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
METHODS = ("mcbf", "blind", "worst_case", "none")
_PAD = 1.0e3  # position of the padding obstacles (radius 0) that make layouts rectangular
_G_IDLE = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])


def _points(x: np.ndarray, name: str, last: int, ndim: int | tuple[int, ...] | None = None,
            finite: bool = True) -> np.ndarray:
    """``x`` as a non-empty float array of shape ``(..., last)`` (``ndim`` axes if given; finite if ``finite``)."""
    x = check_array(x, name, ndim=ndim, dtype=float, finite=finite)
    if x.ndim == 0 or x.shape[-1] != last or x.size == 0:
        raise ValueError(f"{name} must be a non-empty array of shape (..., {last}), got shape {x.shape}")
    return x


def _pair(x: Sequence[float], name: str, low: float, strict: bool) -> tuple[float, float]:
    """``x`` as ``(lo, hi)`` reals with ``low < lo <= hi`` (``low <= lo`` unless ``strict``)."""
    values = check_sequence(x, name, item=lambda v, n: check_scalar(v, n, "real"))
    if len(values) != 2 or not (values[0] > low if strict else values[0] >= low) or values[0] > values[1]:
        rule = f"{low:g} {'<' if strict else '<='} lo <= hi"
        raise ValueError(f"{name} must be a pair (lo, hi) with {rule}, got {x}")
    return values[0], values[1]


# ----------------------------------------------------------------------------------------------
# Plant: planar double integrator with unknown mass and drag
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlantParams:
    """True plant ``p' = v``, ``v' = (u - c_quad v|v| - c_lin v) / mass + w`` with ``|u|_inf <= u_max``."""

    mass: float = 1.0
    c_lin: float = 0.4
    c_quad: float = 0.2
    u_max: float = 2.0
    delta_w: float = 0.02

    def __post_init__(self) -> None:
        for name in ("mass", "u_max"):
            check_scalar(getattr(self, name), name, "real", min=0.0, inclusive="neither")
        for name in ("c_lin", "c_quad", "delta_w"):
            check_scalar(getattr(self, name), name, "real", min=0.0)


def point_robot_dynamics(x: np.ndarray, u: np.ndarray, params: PlantParams = PlantParams(),
                         w: np.ndarray | None = None) -> np.ndarray:
    """True vector field ``f(x, u) + w`` for states ``(..., 4)`` and controls ``(..., 2)``."""
    v = x[..., 2:]
    acc = (u - params.c_quad * v * np.abs(v) - params.c_lin * v) / params.mass
    if w is not None:
        acc = acc + w
    return np.concatenate([v, acc], axis=-1)


def true_affine(params: PlantParams = PlantParams()) -> Affine:
    """The true plant in control-affine form ``x -> (f0(x), G(x))`` with ``f(x, u) = f0 + G u``."""
    check_instance(params, "params", PlantParams)

    def affine(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        f0 = point_robot_dynamics(x, np.zeros(x.shape[:-1] + (2,)), params)
        G = np.zeros(x.shape[:-1] + (4, 2))
        G[..., 2, 0] = G[..., 3, 1] = 1.0 / params.mass
        return f0, G

    return affine


def rk4_step(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, dt: float) -> np.ndarray:
    """One classical Runge-Kutta step of ``x' = f(x)`` (controls held over the step)."""
    k1 = f(x)
    k2 = f(x + 0.5 * dt * k1)
    k3 = f(x + 0.5 * dt * k2)
    k4 = f(x + dt * k3)
    return x + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def _unit_ball(rng: np.random.Generator, shape: tuple[int, ...], noise: str) -> np.ndarray:
    """Samples in the closed unit ball of R^2: uniform ("ball") or N(0, I/4) clipped to norm 1 ("gauss")."""
    if noise == "ball":
        angle = rng.uniform(0.0, 2 * np.pi, shape)
        r = np.sqrt(rng.uniform(0.0, 1.0, shape))
        return np.stack([r * np.cos(angle), r * np.sin(angle)], axis=-1)
    z = rng.normal(0.0, 0.5, shape + (2,))
    return z / np.maximum(1.0, np.linalg.norm(z, axis=-1, keepdims=True))


# ----------------------------------------------------------------------------------------------
# Environment: random obstacle layouts
# ----------------------------------------------------------------------------------------------
@dataclass
class Layout:
    """One navigation task: obstacle centres ``(n, 2)`` and radii ``(n,)``, start state ``(4,)``, goal ``(2,)``."""

    obstacles: np.ndarray
    radii: np.ndarray
    start: np.ndarray
    goal: np.ndarray

    def __post_init__(self) -> None:
        self.obstacles = check_array(self.obstacles, "obstacles", dtype=float, shape=(None, 2))
        self.radii = check_array(self.radii, "radii", ndim=1, dtype=float)
        self.start = check_array(self.start, "start", dtype=float, shape=(4,))
        self.goal = check_array(self.goal, "goal", dtype=float, shape=(2,))
        if self.obstacles.shape[0] != self.radii.shape[0]:
            raise ValueError(f"obstacles and radii must have one row per obstacle, got {self.obstacles.shape[0]} "
                             f"obstacle centres but {self.radii.shape[0]} radii")
        if np.any(self.radii < 0):
            raise ValueError(f"radii must be >= 0, got min {self.radii.min():g}")
        for name, p in (("start", self.start[:2]), ("goal", self.goal)):
            inside = np.linalg.norm(p - self.obstacles, axis=-1) <= self.radii
            if np.any(inside):
                raise ValueError(f"the {name} {p.tolist()} lies inside obstacle {int(np.argmax(inside))}")


def _path_exists(layout: Layout, gap: float, workspace: float, cell: float = 0.05) -> bool:
    """Breadth-first search on a grid of the workspace for a path keeping ``gap`` from every obstacle."""
    n = int(round(workspace / cell)) + 1
    grid = np.linspace(0.0, workspace, n)
    P = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1)
    dist = np.linalg.norm(P[:, :, None, :] - layout.obstacles, axis=-1) - layout.radii
    free = np.all(dist >= gap, axis=-1)
    s = tuple(np.clip(np.rint(layout.start[:2] / cell).astype(int), 0, n - 1))
    g = tuple(np.clip(np.rint(layout.goal / cell).astype(int), 0, n - 1))
    if not (free[s] and free[g]):
        return False
    seen = np.zeros_like(free)
    seen[s] = True
    frontier = [s]
    steps = [(i, j) for i in (-1, 0, 1) for j in (-1, 0, 1) if i or j]
    while frontier:
        nxt = []
        for a, b in frontier:
            for i, j in steps:
                c = (a + i, b + j)
                if 0 <= c[0] < n and 0 <= c[1] < n and free[c] and not seen[c]:
                    if c == g:
                        return True
                    seen[c] = True
                    nxt.append(c)
        frontier = nxt
    return False


def random_layout(seed: Seed = None, n_obstacles: tuple[int, int] = (3, 6),
                  workspace: float = 2.0, radius: tuple[float, float] = (0.1, 0.2), clearance: float = 0.3,
                  path_gap: float = 0.3, min_distance: float = 1.2, block_line: bool = True,
                  max_tries: int = 1000) -> Layout:
    """A random task in ``[0, workspace]^2``, resampled until it is feasible.

    ``clearance``: start and goal keep this distance from every obstacle surface; ``path_gap``:
    obstacles keep this gap between them and a grid path from start to goal keeps this distance
    from them (our feasibility test); ``block_line`` (our choice): one obstacle sits near the middle
    of the start-goal segment, slightly off the line, so that every episode meets a constraint.
    ``workspace`` > 0.4 (starts, goals and centres keep a margin from its edges); ``n_obstacles`` and
    ``radius`` are ranges ``(lo, hi)``; ``clearance``, ``path_gap`` and ``min_distance`` are >= 0.  A
    combination with no feasible layout in ``max_tries`` draws raises ``ValueError``.
    """
    rng = as_generator(seed)
    lo, hi = _obstacle_counts(n_obstacles)
    radius = _pair(radius, "radius", 0.0, strict=True)
    workspace = check_scalar(workspace, "workspace", "real", min=0.4, inclusive="neither")
    clearance, path_gap, min_distance = (check_scalar(v, name, "real", min=0.0) for name, v in (
        ("clearance", clearance), ("path_gap", path_gap), ("min_distance", min_distance)))
    block_line = check_bool(block_line, "block_line")
    max_tries = check_scalar(max_tries, "max_tries", "int", min=1)
    for _ in range(max_tries):
        start = rng.uniform(0.1, workspace - 0.1, 2)
        goal = rng.uniform(0.1, workspace - 0.1, 2)
        if np.linalg.norm(goal - start) < min_distance:
            continue
        n = int(rng.integers(lo, hi + 1))
        radii = rng.uniform(radius[0], radius[1], n)
        centres = rng.uniform(0.2, workspace - 0.2, (n, 2))
        if block_line:
            along = goal - start
            normal = np.array([-along[1], along[0]]) / np.linalg.norm(along)
            offset = rng.uniform(0.03, 0.12) * rng.choice([-1.0, 1.0])
            centres[0] = start + rng.uniform(0.4, 0.6) * along + offset * normal
        gaps = np.linalg.norm(centres[:, None] - centres[None], axis=-1) - radii[:, None] - radii[None]
        if np.any(gaps[np.triu_indices(n, 1)] < path_gap):
            continue
        surface = np.linalg.norm(np.stack([start, goal])[:, None] - centres, axis=-1) - radii
        if surface.min() < clearance:
            continue
        layout = Layout(centres, radii, np.concatenate([start, np.zeros(2)]), goal)
        if _path_exists(layout, path_gap, workspace):
            return layout
    raise ValueError(f"no feasible layout in max_tries={max_tries} tries; loosen clearance={clearance}, "
                     f"path_gap={path_gap} or min_distance={min_distance}")


def _obstacle_counts(n_obstacles: tuple[int, int]) -> tuple[int, int]:
    """``n_obstacles`` as ``(lo, hi)`` integers with ``1 <= lo <= hi``."""
    values = check_sequence(n_obstacles, "n_obstacles", item=lambda v, n: check_scalar(v, n, "int"))
    if len(values) != 2 or not 1 <= values[0] <= values[1]:
        raise ValueError(f"n_obstacles must be (lo, hi) with 1 <= lo <= hi, got {n_obstacles}")
    return values[0], values[1]


class PointRobotEnv(gymnasium.Env):
    """The true plant on a random obstacle layout, integrated with RK4 at ``dt``, as a ``gymnasium.Env``.

    Observations are the true state ``(px, py, vx, vy)``; actions are forces ``(2,)`` in the box
    ``|u|_inf <= params.u_max`` (larger actions are clipped).  ``reset(seed=..., options=...)``
    samples a layout with :func:`random_layout` (``options={"layout": layout}`` takes one) and
    returns ``(state, info)``; ``step(action)`` draws the disturbance ``|w| <= delta_w`` and
    returns ``(state, reward, terminated, truncated, info)`` with reward ``-|p - goal|`` (per
    step), ``terminated`` once the robot is within ``goal_tol`` of the goal or hits an obstacle,
    ``truncated`` always False (wrap in ``gymnasium.wrappers.TimeLimit`` for a horizon), and
    ``info`` holding ``clearance``, ``safe``, ``collision`` and ``goal_reached``.
    ``seed`` seeds the layouts and disturbances until ``reset`` is given a seed of its own.
    """

    metadata = {"render_modes": []}

    def __init__(self, n_obstacles: tuple[int, int] = (3, 6), workspace: float = 2.0, dt: float = 0.02,
                 params: PlantParams = PlantParams(), r_safe: float = 0.05, goal_tol: float = 0.05,
                 seed: Seed = None) -> None:
        self.dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
        self.workspace = check_scalar(workspace, "workspace", "real", min=0.4, inclusive="neither")  # as random_layout
        self.n_obstacles = _obstacle_counts(n_obstacles)
        self.params = check_instance(params, "params", PlantParams)
        self.r_safe = check_scalar(r_safe, "r_safe", "real", min=0.0)
        self.goal_tol = check_scalar(goal_tol, "goal_tol", "real", min=0.0, inclusive="neither")
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, shape=(4,), dtype=np.float64)
        u_max = self.params.u_max
        self.action_space = gymnasium.spaces.Box(-u_max, u_max, shape=(2,), dtype=np.float64)
        self.render_mode = None
        self.np_random = as_generator(seed)
        self.layout: Layout | None = None
        self.x = np.zeros(4)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        """A new task, ``(state, info)``; ``seed`` (int >= 0) reseeds, ``options={"layout": Layout}`` fixes it."""
        if seed is not None:
            super().reset(seed=check_scalar(seed, "seed", "int", min=0))
        options = {} if options is None else check_instance(options, "options", dict)
        unknown = set(options) - {"layout"}
        if unknown:
            raise ValueError(f"options must only hold 'layout', got {sorted(unknown)}")
        layout = options.get("layout")
        if layout is None:
            layout = random_layout(self.np_random, self.n_obstacles, self.workspace)
        self.layout = check_instance(layout, "options['layout']", Layout)
        self.x = self.layout.start.copy()
        return self.x.copy(), {}

    def true_dynamics(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The true vector field ``f(x, u)`` (no disturbance) at states ``(..., 4)`` and controls ``(..., 2)``."""
        x = check_array(x, "x", dtype=float)
        u = check_array(u, "u", dtype=float)
        if x.ndim == 0 or x.shape[-1] != 4 or u.shape != x.shape[:-1] + (2,):
            raise ValueError(f"x must have shape (..., 4) and u the matching (..., 2), got {x.shape} and {u.shape}")
        return point_robot_dynamics(x, u, self.params)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Apply ``action`` (clipped to the box) for ``dt``: ``(state, reward, terminated, truncated, info)``."""
        self._check_reset()
        u = check_array(action, "action", ndim=1, dtype=float, shape=(2,))
        u = np.clip(u, -self.params.u_max, self.params.u_max)
        w = self.params.delta_w * _unit_ball(self.np_random, (), "ball")
        self.x = rk4_step(lambda z: point_robot_dynamics(z, u, self.params, w), self.x, self.dt)
        distance = float(np.linalg.norm(self.x[:2] - self.layout.goal))
        clearance = self.clearance()
        info = {"clearance": clearance, "safe": clearance >= self.r_safe, "collision": clearance < 0.0,
                "goal_reached": distance <= self.goal_tol}
        return self.x.copy(), -distance, bool(info["collision"] or info["goal_reached"]), False, info

    def _check_reset(self) -> None:
        if self.layout is None:
            raise gymnasium.error.ResetNeeded("call reset() before using the environment")

    def _position(self, p: np.ndarray | None) -> np.ndarray:
        self._check_reset()
        return self.x[:2] if p is None else check_array(p, "p", ndim=1, dtype=float, shape=(2,))

    def clearance(self, p: np.ndarray | None = None) -> float:
        """Distance from ``p`` (default: the robot) to the nearest obstacle surface."""
        p = self._position(p)
        return float(np.min(np.linalg.norm(p - self.layout.obstacles, axis=-1) - self.layout.radii))

    def in_safe_set(self, p: np.ndarray | None = None) -> bool:
        """Whether ``p`` lies in S0, i.e. ``|p - o_i| >= r_i + r_safe`` for every obstacle."""
        return self.clearance(p) >= self.r_safe


# ----------------------------------------------------------------------------------------------
# Local sensing: the fibre radius delta_v(p)
# ----------------------------------------------------------------------------------------------
class LocalSensorModel:
    """Beacon sensing whose noise bound grows with distance: ``delta_v(p) = scale (delta0 + kappa min_j |p - s_j|)``.

    The fibre of the measurement bundle over ``x`` is ``{y : |y - x| <= delta_v}`` (position part;
    the velocity part has radius ``2 delta_v``).  ``noise="ball"`` draws uniformly in the ball,
    ``"gauss"`` draws ``N(0, (delta_v / 2)^2)`` clipped to the ball.  ``correlation_time`` (our addition,
    seconds; 0 = white noise, the default) makes the unit noise an AR(1) process projected on
    the ball, a slowly varying sensor error that stays on the fibre.
    """

    def __init__(self, sensor_positions: np.ndarray | Sequence | None = None, delta0: float = 0.01,
                 kappa: float = 0.05, noise: str = "ball", scale: float = 1.0, correlation_time: float = 0.0
                 ) -> None:
        self.correlation_time = check_scalar(correlation_time, "correlation_time", "real", min=0.0)
        self.delta0 = check_scalar(delta0, "delta0", "real", min=0.0, inclusive="neither")  # the radius at a sensor
        self.kappa = check_scalar(kappa, "kappa", "real", min=0.0)
        self.scale = check_scalar(scale, "scale", "real", min=0.0, inclusive="neither")
        self.noise = check_choice(noise, "noise", ("ball", "gauss"))
        if sensor_positions is None:
            sensor_positions = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]]
        self.sensors = check_array(sensor_positions, "sensor_positions", shape=(None, 2), dtype=float, min_len=1)

    def rescaled(self, factor: float) -> LocalSensorModel:
        """The same sensors with every noise bound multiplied by ``factor`` (> 0)."""
        factor = check_scalar(factor, "factor", "real", min=0.0, inclusive="neither")
        return LocalSensorModel(self.sensors, self.delta0, self.kappa, self.noise, self.scale * factor,
                                self.correlation_time)

    def radius(self, p: np.ndarray) -> np.ndarray:
        """Fibre radius ``delta_v(p)`` for positions ``(..., 2)``."""
        d = np.linalg.norm(_points(p, "p", 2)[..., None, :] - self.sensors, axis=-1).min(axis=-1)
        return self.scale * (self.delta0 + self.kappa * d)

    def max_radius(self, workspace: float = 2.0, n: int = 201) -> float:
        """Largest fibre radius over the square ``[0, workspace]^2`` on an ``n x n`` grid (the worst-case margin)."""
        workspace = check_scalar(workspace, "workspace", "real", min=0.0, inclusive="neither")
        n = check_scalar(n, "n", "int", min=1)
        g = np.linspace(0.0, workspace, n)
        return float(self.radius(np.stack(np.meshgrid(g, g), axis=-1)).max())

    def state_sigma(self, y: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """Per-component noise bound ``(delta, delta, 2 delta, 2 delta)`` at states ``(..., 4)``, floored at delta0."""
        if isinstance(y, torch.Tensor):
            _points(y.detach().cpu().numpy(), "y", 4)
            d = torch.as_tensor(self.radius(y[..., :2].detach().cpu().numpy()), dtype=y.dtype, device=y.device)
            d = d.clamp_min(self.scale * self.delta0)
            return torch.stack([d, d, 2 * d, 2 * d], dim=-1)
        d = np.maximum(self.radius(_points(y, "y", 4)[..., :2]), self.scale * self.delta0)
        return np.stack([d, d, 2 * d, 2 * d], axis=-1)

    def unit_noise(self, seed: Seed, shape: tuple[int, ...]) -> np.ndarray:
        """Unscaled noise ``(*shape, 4)`` in the unit balls (``shape`` a tuple of sizes >= 0, ``()`` for one draw)."""
        shape = tuple(check_sequence(shape, "shape", item=lambda v, n: check_scalar(v, n, "int", min=0)))
        rng = as_generator(seed)
        return np.concatenate([_unit_ball(rng, shape, self.noise), _unit_ball(rng, shape, self.noise)], axis=-1)

    def next_unit_noise(self, z: np.ndarray, seed: Seed, dt: float) -> np.ndarray:
        """The unit noise ``dt`` later: fresh draws if white, else ``rho z + sqrt(1 - rho^2) fresh`` on the ball."""
        z = _points(z, "z", 4)
        dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
        fresh = self.unit_noise(seed, z.shape[:-1])
        if self.correlation_time == 0.0:
            return fresh
        rho = math.exp(-dt / self.correlation_time)
        mixed = (rho * z + math.sqrt(1 - rho**2) * fresh).reshape(z.shape[:-1] + (2, 2))
        mixed /= np.maximum(1.0, np.linalg.norm(mixed, axis=-1, keepdims=True))
        return mixed.reshape(z.shape)

    def apply(self, x: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The measurement ``y = x + (delta_v z_p, 2 delta_v z_v)`` for unit noise ``z`` (shape of ``x``)."""
        x, z = _points(x, "x", 4), _points(z, "z", 4)
        if z.shape != x.shape:
            raise ValueError(f"x and z must have the same shape, got {x.shape} and {z.shape}")
        d = self.radius(x[..., :2])[..., None]
        return x + np.concatenate([d * z[..., :2], 2 * d * z[..., 2:]], axis=-1)

    def measure_state(self, x: np.ndarray, seed: Seed = None) -> np.ndarray:
        """A noisy state ``y_x`` on the fibre over ``x`` (shape of ``x``, last axis 4)."""
        x = _points(x, "x", 4)
        return self.apply(x, self.unit_noise(seed, x.shape[:-1]))

    def measure_obstacles(self, x: np.ndarray, obstacles: np.ndarray, seed: Seed = None) -> np.ndarray:
        """Relative obstacle measurements ``y_i = (p - o_i) + v_i`` with ``|v_i| <= delta_v(p)``, shape ``(n, 2)``."""
        p = check_array(x, "x", dtype=float, shape=(4,))[:2]
        rel = p - check_array(obstacles, "obstacles", dtype=float, shape=(None, 2), min_len=1)
        return rel + self.radius(p) * _unit_ball(as_generator(seed), (rel.shape[0],), self.noise)


# ----------------------------------------------------------------------------------------------
# The safety QP: exact 2-variable solver by active-set enumeration, or SciPy's SLSQP
# ----------------------------------------------------------------------------------------------
def solve_qp_2d(u_nom: np.ndarray, A: np.ndarray, c: np.ndarray, tol: float = 1e-9
                ) -> tuple[np.ndarray, np.ndarray]:
    """``argmin |u - u_nom|^2`` s.t. ``A u >= c`` for a batch of 2-variable QPs, exactly.

    ``u_nom (B, 2)``, ``A (B, m, 2)``, ``c (B, m)``.  The optimum is ``u_nom``, its projection
    on one constraint line, or a vertex of two; we evaluate all of them and keep the cheapest
    feasible one.  Returns ``u (B, 2)`` and ``feasible (B,)`` (``u = u_nom`` where infeasible).
    """
    u_nom = check_array(u_nom, "u_nom", dtype=float, shape=(None, 2), min_len=1)
    A = check_array(A, "A", dtype=float, shape=(None, None, 2))
    c = check_array(c, "c", dtype=float, ndim=2)
    tol = check_scalar(tol, "tol", "real", min=0.0)
    if A.shape[0] != u_nom.shape[0] or c.shape != A.shape[:2]:
        raise ValueError(f"u_nom (B, 2), A (B, m, 2) and c (B, m) must agree, got shapes {u_nom.shape}, {A.shape} "
                         f"and {c.shape}")
    B, m, _ = A.shape
    norm2 = np.einsum("bmi,bmi->bm", A, A)
    ok = norm2 > 1e-12
    cands = [u_nom[:, None, :]]
    step = np.where(ok, (c - np.einsum("bmi,bi->bm", A, u_nom)) / np.where(ok, norm2, 1.0), np.nan)
    cands.append(u_nom[:, None, :] + step[..., None] * A)
    pairs = np.array(list(itertools.combinations(range(m), 2)))
    if len(pairs):
        a1, a2 = A[:, pairs[:, 0]], A[:, pairs[:, 1]]
        c1, c2 = c[:, pairs[:, 0]], c[:, pairs[:, 1]]
        det = a1[..., 0] * a2[..., 1] - a1[..., 1] * a2[..., 0]
        good = np.abs(det) > 1e-12
        det = np.where(good, det, np.nan)
        vert = np.stack([(c1 * a2[..., 1] - c2 * a1[..., 1]) / det, (a1[..., 0] * c2 - a2[..., 0] * c1) / det], -1)
        cands.append(vert)
    U = np.concatenate(cands, axis=1)
    slack = np.einsum("bmi,bki->bkm", A, U) - c[:, None, :]
    scale = 1.0 + np.abs(c)[:, None, :]
    feasible = np.all(slack >= -tol * scale, axis=-1) & np.all(np.isfinite(U), axis=-1)
    cost = np.where(feasible, np.sum((U - u_nom[:, None, :]) ** 2, axis=-1), np.inf)
    best = np.argmin(cost, axis=1)
    u = U[np.arange(B), best]
    found = np.isfinite(cost[np.arange(B), best])
    return np.where(found[:, None], u, u_nom), found


def solve_qp_slsqp(u_nom: np.ndarray, A: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, bool]:
    """The same QP for one problem with ``scipy.optimize.minimize(method="SLSQP")``."""
    res = minimize(lambda u: 0.5 * np.sum((u - u_nom) ** 2), u_nom, jac=lambda u: u - u_nom, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda u: A @ u - c, "jac": lambda u: A}],
                   options={"ftol": 1e-12, "maxiter": 200})
    feasible = bool(res.success) and bool(np.all(A @ res.x - c >= -1e-7))
    return (res.x if feasible else u_nom.copy()), feasible


# ----------------------------------------------------------------------------------------------
# The measurement-aware CBF
# ----------------------------------------------------------------------------------------------
class MeasurementAwareCBF:
    """mCBF ``b_i(x_hat, y) = Phi0_i(x_hat) - L_i(x_hat) delta_v - |grad Phi0_i| eps_f`` and its safety QP.

    ``Phi0_i = h_i' + k1 h_i`` (high-order barrier of ``h_i = |p - o_i|^2 - (r_i + r_safe)^2``);
    ``L_i = |dPhi0/dp| + 2 |dPhi0/dv|`` bounds the change of ``Phi0_i`` over the fibre (condition 3).
    ``mode="adaptive"`` uses the local fibre radius (the paper's mCBF), ``"blind"`` sets it to 0
    (Neural-CBF style, measurements taken as exact), ``"worst_case"`` uses the fixed
    ``worst_case_delta`` everywhere (a RobustSafe-like global margin).  Obstacles are ``(n, 2)``
    or a batch ``(B, n, 2)`` matching the states.  ``solver`` is ``"active_set"`` (exact, batched)
    or ``"slsqp"`` (SciPy, one problem at a time).
    """

    def __init__(self, obstacles: np.ndarray | Sequence, radii: np.ndarray | Sequence, r_safe: float = 0.05,
                 k1: float = 2.0, alpha: float = 5.0, delta_w: float = 0.02, model_err: float = 0.0,
                 mode: str = "adaptive", k_nearest: int = 3, worst_case_delta: float | None = None,
                 solver: str = "active_set") -> None:
        self.obstacles = check_array(obstacles, "obstacles", ndim=(2, 3), dtype=float)
        self.radii = check_array(radii, "radii", dtype=float)
        if np.any(self.radii < 0):
            raise ValueError(f"radii must be >= 0, got min {self.radii.min():g}")
        if self.obstacles.shape[-1] != 2:
            raise ValueError(f"obstacles must have shape (n, 2) or (B, n, 2), got {self.obstacles.shape}")
        if self.obstacles.shape[-2] == 0:
            raise ValueError(f"obstacles must hold at least one obstacle, got shape {self.obstacles.shape}")
        if self.radii.shape != self.obstacles.shape[:-1]:
            raise ValueError(f"radii must have one entry per obstacle in obstacles, shape {self.obstacles.shape[:-1]}, "
                             f"got {self.radii.shape}")
        self.mode = check_choice(mode, "mode", ("adaptive", "blind", "worst_case"))
        if mode == "worst_case" and worst_case_delta is None:
            raise ValueError("mode='worst_case' needs worst_case_delta >= 0 (e.g. LocalSensorModel.max_radius())")
        self.worst_case_delta = (None if worst_case_delta is None
                                 else check_scalar(worst_case_delta, "worst_case_delta", "real", min=0.0))
        self.solver = check_choice(solver, "solver", ("active_set", "slsqp"))
        self.r_safe, self.delta_w, self.model_err = (
            check_scalar(v, name, "real", min=0.0)
            for name, v in (("r_safe", r_safe), ("delta_w", delta_w), ("model_err", model_err)))
        self.k1, self.alpha = (check_scalar(v, name, "real", min=0.0, inclusive="neither")
                               for name, v in (("k1", k1), ("alpha", alpha)))
        k_nearest = check_scalar(k_nearest, "k_nearest", "int", min=1)
        self.k_nearest = min(k_nearest, self.obstacles.shape[-2])  # clipped to the number of obstacles

    # -- barrier pieces, all for states (B, 4); results (B, n) or (B, n, 2) ---------------------
    @staticmethod
    def _states(x: np.ndarray, name: str = "x") -> np.ndarray:
        """Finite states as ``(B, 4)`` (one state ``(4,)`` becomes a batch of one)."""
        x2 = np.atleast_2d(check_array(x, name, ndim=(1, 2), dtype=float))
        if x2.shape[1] != 4:
            raise ValueError(f"{name} must have shape (4,) or (B, 4), got {np.shape(x)}")
        return x2

    def _batch(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        obs, rad = self.obstacles, self.radii
        if obs.ndim == 2:
            obs, rad = np.broadcast_to(obs, (len(x),) + obs.shape), np.broadcast_to(rad, (len(x),) + rad.shape)
        if obs.shape[0] != len(x):
            raise ValueError(f"{len(x)} states but obstacles for a batch of {obs.shape[0]}")
        return x, obs, rad

    def h(self, x: np.ndarray) -> np.ndarray:
        """``h_i(p) = |p - o_i|^2 - (r_i + r_safe)^2``; S0 is ``{h_i >= 0 for all i}``."""
        x, obs, rad = self._batch(self._states(x))
        d = x[:, None, :2] - obs
        return np.sum(d * d, -1) - (rad + self.r_safe) ** 2

    def phi0(self, x: np.ndarray) -> np.ndarray:
        """Nominal high-order barrier ``Phi0_i = 2 (p - o_i)^T v + k1 h_i``."""
        x2 = self._states(x)
        d = x2[:, None, :2] - self._batch(x2)[1]
        return 2 * np.einsum("bni,bi->bn", d, x2[:, 2:]) + self.k1 * self.h(x2)

    def grad_phi0(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(dPhi0/dp, dPhi0/dv)``, each ``(B, n, 2)``."""
        x2 = self._states(x)
        d = x2[:, None, :2] - self._batch(x2)[1]
        return 2 * x2[:, None, 2:] + 2 * self.k1 * d, 2 * d

    def lipschitz(self, x_hat: np.ndarray) -> np.ndarray:
        """``L_i(x_hat) = |dPhi0_i/dp| + 2 |dPhi0_i/dv|`` (condition 3; velocity noise has radius 2 delta_v)."""
        gp, gv = self.grad_phi0(self._states(x_hat, "x_hat"))
        return np.linalg.norm(gp, axis=-1) + 2 * np.linalg.norm(gv, axis=-1)

    def effective_delta(self, delta_v: np.ndarray | float, n: int) -> np.ndarray:
        """The fibre radius for ``n`` (>= 1) states: local (adaptive), 0 (blind) or the global worst case."""
        n = check_scalar(n, "n", "int", min=1)
        if self.mode == "blind":
            return np.zeros(n)
        if self.mode == "worst_case":
            return np.full(n, self.worst_case_delta)
        delta = np.broadcast_to(check_array(delta_v, "delta_v", dtype=float), (n,))
        if np.any(delta < 0):
            raise ValueError(f"delta_v must be >= 0, got min {delta.min():g}")
        return delta

    def barrier(self, x_hat: np.ndarray, delta_v: np.ndarray | float) -> np.ndarray:
        """mCBF values ``b_i`` for all obstacles, ``(B, n)`` (``(n,)`` for one state)."""
        x2 = self._states(x_hat, "x_hat")
        gp, gv = self.grad_phi0(x2)
        grad_norm = np.sqrt(np.sum(gp * gp, -1) + np.sum(gv * gv, -1))
        delta = self.effective_delta(delta_v, len(x2))
        b = self.phi0(x2) - self.lipschitz(x2) * delta[:, None] - grad_norm * self.model_err
        return b[0] if np.ndim(x_hat) == 1 else b

    def filter(self, x_hat: np.ndarray, u_nom: np.ndarray, f_hat: Affine, delta_v: np.ndarray | float,
               u_max: float) -> tuple[np.ndarray, dict]:
        """Safety QP: closest ``|u|_inf <= u_max`` to ``u_nom`` with, for the k nearest obstacles,
        ``grad Phi0_i . f_hat(x_hat, u) - |dPhi0_i/dv| delta_w + alpha b_i >= 0``.

        ``f_hat`` maps states ``(B, 4)`` to the control-affine parts ``(f0 (B, 4), G (B, 4, 2))``.
        Where the QP is infeasible the robot brakes at full force, ``u = -u_max sign(v_hat)``.
        Returns ``u`` and ``info`` with ``infeasible (B,)``, ``active (B,)`` and ``barrier (B, k)``.
        """
        u_max = check_scalar(u_max, "u_max", "real", min=0.0, inclusive="neither")
        check_callable(f_hat, "f_hat")
        single = np.ndim(x_hat) == 1
        x2 = np.atleast_2d(check_array(x_hat, "x_hat", ndim=(1, 2), dtype=float))
        if np.ndim(u_nom) != np.ndim(x_hat):
            raise ValueError(f"x_hat and u_nom must both be one state (4,), (2,) or a batch (B, 4), (B, 2), "
                             f"got shapes {np.shape(x_hat)} and {np.shape(u_nom)}")
        un = np.atleast_2d(check_array(u_nom, "u_nom", dtype=float))
        if x2.shape[1] != 4 or un.shape != (len(x2), 2):
            raise ValueError(f"x_hat must be (B, 4) and u_nom (B, 2), got {x2.shape} and {un.shape}")
        _, obs, rad = self._batch(x2)
        clear = np.linalg.norm(x2[:, None, :2] - obs, axis=-1) - rad
        near = np.argsort(clear, axis=1)[:, : self.k_nearest]
        rows = np.arange(len(x2))[:, None]
        b = self.barrier(x2, delta_v)[rows, near]
        gp, gv = (g[rows, near] for g in self.grad_phi0(x2))
        parts = f_hat(x2)
        if not isinstance(parts, tuple) or len(parts) != 2:
            raise TypeError(f"f_hat must return a pair (f0, G), got {type(parts).__name__}")
        f0 = check_array(parts[0], "f_hat's f0", dtype=float, shape=(len(x2), 4))
        G = check_array(parts[1], "f_hat's G", dtype=float, shape=(len(x2), 4, 2))
        grad = np.concatenate([gp, gv], axis=-1)  # (B, k, 4)
        A = np.einsum("bki,bij->bkj", grad, G)
        if np.any(np.linalg.norm(A, axis=-1) < 1e-9 * (1.0 + np.linalg.norm(grad, axis=-1))):
            raise ValueError("relative-degree mismatch: grad Phi0 . dx'/du vanishes (the model's G(x) is ~0?)")
        c = -np.einsum("bki,bi->bk", grad, f0) + np.linalg.norm(gv, axis=-1) * self.delta_w - self.alpha * b
        eye = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
        A_all = np.concatenate([A, np.broadcast_to(eye, (len(x2), 4, 2))], axis=1)
        c_all = np.concatenate([c, np.full((len(x2), 4), -float(u_max))], axis=1)
        u0 = np.clip(un, -u_max, u_max)
        if self.solver == "active_set":
            u, feasible = solve_qp_2d(u0, A_all, c_all)
        else:
            sol = [solve_qp_slsqp(u0[i], A_all[i], c_all[i]) for i in range(len(x2))]
            u, feasible = np.array([s[0] for s in sol]), np.array([s[1] for s in sol])
        u = np.where(feasible[:, None], u, -u_max * np.sign(x2[:, 2:]))
        info = {"infeasible": ~feasible, "active": np.any(np.abs(u - u0) > 1e-9, axis=1), "barrier": b}
        if single:
            return u[0], {k: v[0] for k, v in info.items()}
        return u, info


# ----------------------------------------------------------------------------------------------
# The connection as an observer
# ----------------------------------------------------------------------------------------------
class BundleObserver:
    """``x_hat' = f_hat(x_hat, u) + K(x_hat)(y - x_hat)`` with ``K(x) = k0 delta_min / delta_v(x)`` (explicit Euler).

    The gain falls where sensing is poor, the measurement-feedback term of the bundle connection.
    ``mode="raw"`` returns the measurement itself (no filtering).
    """

    def __init__(self, f_hat: Affine, sensor_model: LocalSensorModel, k0: float = 5.0, mode: str = "connection"
                 ) -> None:
        self.k0 = check_scalar(k0, "k0", "real", min=0.0, inclusive="neither")
        self.mode = check_choice(mode, "mode", ("connection", "raw"))
        self.f_hat = check_callable(f_hat, "f_hat")
        self.sensor = check_instance(sensor_model, "sensor_model", LocalSensorModel)

    def gain(self, x_hat: np.ndarray) -> np.ndarray:
        """Scalar gain ``K(x_hat)`` per state ``(..., 4)``, shape ``(...)``."""
        x_hat = _points(x_hat, "x_hat", 4)
        return self.k0 * self.sensor.scale * self.sensor.delta0 / self.sensor.radius(x_hat[..., :2])

    def update(self, x_hat: np.ndarray, y: np.ndarray, u: np.ndarray, dt: float,
               parts: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """The estimate one step later from ``x_hat`` (4,) or (B, 4), the measurement ``y`` (its shape) and
        the control ``u`` ((2,) or (B, 2)); ``parts = f_hat(x_hat)`` may be passed to save a model call."""
        x_hat = _points(x_hat, "x_hat", 4, ndim=(1, 2))
        y = _points(y, "y", 4)
        u = _points(u, "u", 2)
        if y.shape != x_hat.shape or u.shape != x_hat.shape[:-1] + (2,):
            raise ValueError(f"y must have the shape of x_hat {x_hat.shape} and u the shape "
                             f"{x_hat.shape[:-1] + (2,)}, got {y.shape} and {u.shape}")
        dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
        if self.mode == "raw":
            return np.array(y, float)
        if parts is not None and not (isinstance(parts, tuple) and len(parts) == 2):
            raise TypeError(f"parts must be None or the pair (f0, G) returned by f_hat, got {type(parts).__name__}")
        f0, G = self.f_hat(x_hat) if parts is None else parts
        xdot = f0 + np.einsum("...ij,...j->...i", G, u)
        return x_hat + dt * (xdot + self.gain(x_hat)[..., None] * (y - x_hat))


# ----------------------------------------------------------------------------------------------
# Neural ODE dynamics learning
# ----------------------------------------------------------------------------------------------
def _mlp(sizes: Sequence[int], generator: torch.Generator) -> nn.Sequential:
    """ReLU MLP with PyTorch's default initialisation, except a zero output layer (the field starts simple)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        lin = nn.utils.skip_init(nn.Linear, a, b)  # initialised below with ``generator``, not the global RNG
        if i == len(sizes) - 2:
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)
        else:
            nn.init.kaiming_uniform_(lin.weight, a=math.sqrt(5), generator=generator)
            bound = 1.0 / math.sqrt(a)
            nn.init.uniform_(lin.bias, -bound, bound, generator=generator)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class NeuralODEDynamics(nn.Module):
    """Learned vector field ``f_theta(x, u)``.

    ``structured=True``: ``[v; (u - r_theta(.)) / m_theta]`` with the drag MLP ``r_theta`` of the
    state (``drag_inputs="state"``, the default) or of the velocity only (``"velocity"``, our variant) and a
    learned mass starting at the nominal ``mass_init`` (physics prior: control-affine, known
    kinematics).  ``structured=False``: a black-box MLP on ``(x, u)``.  Hidden sizes 128-64-32 with
    ReLU as in the paper; the output layer starts at zero.
    """

    def __init__(self, state_dim: int = 4, ctrl_dim: int = 2, hidden: Sequence[int] = (128, 64, 32),
                 structured: bool = True, drag_inputs: str = "state", mass_init: float = 1.0,
                 seed: Seed | torch.Generator = 0) -> None:
        super().__init__()
        state_dim = check_scalar(state_dim, "state_dim", "int", min=1)
        ctrl_dim = check_scalar(ctrl_dim, "ctrl_dim", "int", min=1)
        hidden = check_sequence(hidden, "hidden", item=lambda v, n: check_scalar(v, n, "int", min=1))
        structured = check_bool(structured, "structured")
        mass_init = check_scalar(mass_init, "mass_init", "real", min=0.0, inclusive="neither")
        check_choice(drag_inputs, "drag_inputs", ("state", "velocity"))
        if structured and state_dim != 2 * ctrl_dim:
            raise ValueError(f"structured=True needs state_dim == 2 * ctrl_dim (positions, velocities), "
                             f"got {state_dim} and {ctrl_dim}")
        g = torch_generator(seed)
        self.state_dim, self.ctrl_dim, self.structured = state_dim, ctrl_dim, structured
        self.drag_inputs = drag_inputs
        if structured:
            self.net = _mlp([state_dim if drag_inputs == "state" else ctrl_dim, *hidden, ctrl_dim], g)
            self.mass_init = float(mass_init)
            self.log_mass_scale = nn.Parameter(torch.zeros(()))
        else:
            self.net = _mlp([state_dim + ctrl_dim, *hidden, state_dim], g)

    @property
    def mass(self) -> torch.Tensor:
        """Learned mass ``mass_init * exp(s)`` (structured model only)."""
        return self.mass_init * torch.exp(self.log_mass_scale)

    def forward(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        """``f_theta(x, u)`` for states ``x`` (..., state_dim) and controls ``u`` (..., ctrl_dim)."""
        x, u = check_tensor(x, "x", floating=True), check_tensor(u, "u", floating=True)
        if x.ndim == 0 or x.shape[-1] != self.state_dim or x.numel() == 0:
            raise ValueError(f"x must be a non-empty tensor of shape (..., {self.state_dim}), got {tuple(x.shape)}")
        if u.shape[:-1] != x.shape[:-1] or u.shape[-1:] != (self.ctrl_dim,):
            raise ValueError(f"u must have shape {tuple(x.shape[:-1]) + (self.ctrl_dim,)} to match x, "
                             f"got {tuple(u.shape)}")
        if not self.structured:
            return self.net(torch.cat([x, u], dim=-1))
        v = x[..., self.ctrl_dim:]
        drag = self.net(x if self.drag_inputs == "state" else v)
        return torch.cat([v, (u - drag) / self.mass], dim=-1)

    def affine(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Control-affine parts ``(f0(x), G(x))`` at NumPy states ``(B, 4)`` (exact if structured, else secants).

        A forward pass: non-finite states give non-finite parts (the closed loop aborts such episodes).
        """
        x = _points(x, "x", self.state_dim, ndim=(1, 2), finite=False)
        p = next(self.parameters())
        with torch.no_grad():
            xt = torch.as_tensor(x, dtype=p.dtype, device=p.device)
            zero = xt.new_zeros(xt.shape[:-1] + (self.ctrl_dim,))
            f0 = self(xt, zero)
            if self.structured:
                G = xt.new_zeros(xt.shape[:-1] + (self.state_dim, self.ctrl_dim))
                G[..., self.ctrl_dim:, :] = torch.eye(self.ctrl_dim, dtype=xt.dtype) / self.mass
            else:
                cols = [self(xt, zero + e) - f0 for e in torch.eye(self.ctrl_dim, dtype=xt.dtype, device=xt.device)]
                G = torch.stack(cols, dim=-1)
        return f0.cpu().numpy().astype(float), G.cpu().numpy().astype(float)


class _StepUnitODE(nn.Module):
    """``dx/dtau = dt f(x, u_floor(tau))`` on the integer grid ``tau = 0..H`` (zero-order-hold controls)."""

    def __init__(self, model: NeuralODEDynamics, controls: torch.Tensor, dt: float) -> None:
        super().__init__()
        self.model, self.controls, self.dt = model, controls, dt

    def forward(self, tau: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        k = min(int(torch.floor(tau)), self.controls.shape[0] - 1)
        return self.dt * self.model(x, self.controls[k])


def shoot(model: NeuralODEDynamics, x0: torch.Tensor, controls: torch.Tensor, dt: float) -> torch.Tensor:
    """Integrate the model from ``x0 (B, 4)`` under held controls ``(H, B, 2)`` with torchdiffeq's RK4; ``(H+1, B, 4)``.

    ``model`` is any callable ``f(x, u)`` (a :class:`NeuralODEDynamics`, a torch module of the true plant).

    Time is measured in control steps so that ``perturb=True`` evaluates step ``k`` with ``u_k`` only.
    """
    check_callable(model, "model")
    x0 = check_tensor(x0, "x0", floating=True, ndim=2)
    controls = check_tensor(controls, "controls", floating=True, ndim=3)
    if x0.numel() == 0 or controls.numel() == 0 or controls.shape[1] != x0.shape[0]:
        raise ValueError(f"x0 (B, d) and controls (H, B, m) must be non-empty with the same B, got shapes "
                         f"{tuple(x0.shape)} and {tuple(controls.shape)}")
    dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
    H = controls.shape[0]
    tau = torch.arange(H + 1, dtype=x0.dtype, device=x0.device)
    return odeint(_StepUnitODE(model, controls, dt), x0, tau, method="rk4",
                  options={"step_size": 1.0, "perturb": True})


def _segments(y: np.ndarray, u: np.ndarray, horizon: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    starts = range(0, u.shape[1] - horizon + 1, stride)
    ys = np.concatenate([y[:, s: s + horizon + 1] for s in starts], axis=0)  # (S, H+1, 4)
    us = np.concatenate([u[:, s: s + horizon] for s in starts], axis=0)      # (S, H, 2)
    return ys, us


def _check_trajectories(trajs_y: np.ndarray, controls: np.ndarray, dt: float, horizon: int,
                        names: tuple[str, str] = ("trajs_y", "controls")) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Measured trajectories ``(N, T+1, d)``, controls ``(N, T, m)``, the step and a segment horizon, checked."""
    trajs_y = check_array(trajs_y, names[0], ndim=3, dtype=float)
    controls = check_array(controls, names[1], ndim=3, dtype=float)
    check_consistent_length(trajs_y, controls, names=names)
    if trajs_y.shape[1] != controls.shape[1] + 1:
        raise ValueError(f"{names[0]} must have one more time step than {names[1]}, got {trajs_y.shape[1]} "
                         f"and {controls.shape[1]}")
    horizon = check_scalar(horizon, "horizon", "int", min=1, max=controls.shape[1])
    dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
    return trajs_y, controls, dt, horizon


def fit_neural_ode(model: NeuralODEDynamics, trajs_y: np.ndarray, controls: np.ndarray, dt: float,
                   sigma_fn: Callable[[torch.Tensor], torch.Tensor], weighting: bool = True, horizon: int = 10,
                   steps: int = 1500, lr: float = 1e-3, batch_size: int | None = 256, stride: int | None = None,
                   sigma_floor: float = 1e-3, cosine: bool = True, initial: str = "measured",
                   seed: Seed | torch.Generator = 0) -> list[float]:
    """Uncertainty-weighted multiple shooting (the paper's eq. 14 with trajectory matching).

    Trajectories ``trajs_y (N, T+1, 4)`` of measured states under ``controls (N, T, 2)`` are cut
    into segments of ``horizon`` steps; the model is integrated from each segment's first
    measurement and fitted to the following ones with loss ``sum_i |x_theta(t_i) - y_i|^2_{Sigma_i^-1}``,
    ``Sigma_i = diag(sigma_fn(y_i))^2`` floored at ``sigma_floor``.  ``weighting=False`` is the
    unweighted ablation.  Adam on random batches of ``batch_size`` segments (segments start every
    ``stride`` steps, default ``horizon``), cosine-annealed learning rate if ``cosine``; returns the
    loss per step.  ``initial="learned"`` (our option, classic multiple shooting) makes each segment's
    initial state a free parameter, started at and fitted to its measurement like the other points.
    ``seed`` drives the batch order.
    """
    check_instance(model, "model", nn.Module, "a torch module f(x, u) such as NeuralODEDynamics")
    trajs_y, controls, dt, horizon = _check_trajectories(trajs_y, controls, dt, horizon)
    check_callable(sigma_fn, "sigma_fn")
    weighting, cosine = check_bool(weighting, "weighting"), check_bool(cosine, "cosine")
    steps = check_scalar(steps, "steps", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    if batch_size is not None:
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    if stride is not None:
        stride = check_scalar(stride, "stride", "int", min=1)
    sigma_floor = check_scalar(sigma_floor, "sigma_floor", "real", min=0.0, inclusive="neither")
    check_choice(initial, "initial", ("measured", "learned"))
    p = next(model.parameters())
    ys, us = _segments(trajs_y, controls, horizon, stride or horizon)
    Y = torch.as_tensor(ys, dtype=p.dtype, device=p.device)
    U = torch.as_tensor(us, dtype=p.dtype, device=p.device).transpose(0, 1).contiguous()  # (H, S, 2)
    first = 1 if initial == "measured" else 0  # the first point is a fitted target only if it is learned
    if weighting:
        w = sigma_fn(Y[:, first:]).clamp_min(sigma_floor) ** -2
        w = w / w.mean()
    else:
        w = torch.ones_like(Y[:, first:])
    X0 = nn.Parameter(Y[:, 0].clone()) if initial == "learned" else Y[:, 0]
    g = torch_generator(seed)
    opt = torch.optim.Adam([*model.parameters(), X0] if initial == "learned" else model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=int(steps)) if cosine else None
    n_seg = Y.shape[0]
    history = []
    for _ in range(steps):
        idx = torch.randperm(n_seg, generator=g)[:batch_size] if batch_size and batch_size < n_seg else slice(None)
        pred = shoot(model, X0[idx], U[:, idx], dt)[first:].transpose(0, 1)  # (b, H + 1 - first, 4)
        loss = torch.mean(w[idx] * (pred - Y[idx, first:]) ** 2)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched is not None:
            sched.step()
        history.append(float(loss.detach()))
        if not math.isfinite(history[-1]):
            raise FloatingPointError("the Neural ODE loss became non-finite; lower lr or check the data")
    return history


def shooting_error_quantile(model: NeuralODEDynamics, trajs_x: np.ndarray, controls: np.ndarray, dt: float,
                            horizon: int = 10, q: float = 0.95) -> float:
    """``q``-quantile of ``|x_theta(t0 + H dt) - x(t0 + H dt)|`` over segments of held-out trajectories.

    Our estimate of the model-error bound ``eps_f`` of the mCBF (state units, one segment ahead).
    """
    trajs_x, controls, dt, horizon = _check_trajectories(trajs_x, controls, dt, horizon, ("trajs_x", "controls"))
    q = check_scalar(q, "q", "real", min=0.0, max=1.0, inclusive="right")
    p = next(model.parameters())
    xs, us = _segments(trajs_x, controls, horizon, horizon)
    with torch.no_grad():
        X = torch.as_tensor(xs, dtype=p.dtype, device=p.device)
        U = torch.as_tensor(us, dtype=p.dtype, device=p.device).transpose(0, 1)
        pred = shoot(model, X[:, 0], U, dt)[-1]
    return float(np.quantile(torch.linalg.norm(pred - X[:, -1], dim=-1).cpu().numpy(), q))


def vector_field_error(model: NeuralODEDynamics, x: np.ndarray, u: np.ndarray,
                       params: PlantParams = PlantParams()) -> float:
    """Relative error ``sqrt(sum |f_hat - f|^2 / sum |f|^2)`` of the learned field on clean points ``(x, u)``."""
    check_instance(model, "model", nn.Module, "a torch module f(x, u) such as NeuralODEDynamics")
    check_instance(params, "params", PlantParams)
    x, u = _points(x, "x", 4, ndim=2), _points(u, "u", 2, ndim=2)
    check_consistent_length(x, u, names=("x", "u"))
    p = next(model.parameters())
    with torch.no_grad():
        f_hat = model(torch.as_tensor(x, dtype=p.dtype), torch.as_tensor(u, dtype=p.dtype)).numpy()
    f = point_robot_dynamics(x, u, params)
    return float(np.sqrt(np.sum((f_hat - f) ** 2) / np.sum(f ** 2)))


def exploration_data(n_traj: int = 40, duration: float = 2.0, dt: float = 0.02, sensor: LocalSensorModel | None = None,
                     params: PlantParams = PlantParams(), workspace: float = 2.0, v0: float = 1.0,
                     freq: tuple[float, float] = (1.0, 15.0), seed: Seed = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exploration trajectories under random smooth controls (sums of three sinusoids per axis, ``freq`` rad/s).

    Frequencies up to 15 rad/s make the control vary within a 10-step segment, so the mass and
    the drag are separable (with slow controls the drag MLP absorbs part of ``u / m``).

    Starts are uniform in the workspace with velocities uniform in ``[-v0, v0]^2``.  Returns the
    true states ``(N, T+1, 4)``, the measured states ``(N, T+1, 4)`` and the controls ``(N, T, 2)``.
    """
    rng = as_generator(seed)
    sensor = LocalSensorModel() if sensor is None else check_instance(sensor, "sensor", LocalSensorModel)
    check_instance(params, "params", PlantParams)
    workspace = check_scalar(workspace, "workspace", "real", min=0.0, inclusive="neither")
    v0 = check_scalar(v0, "v0", "real", min=0.0)
    freq = _pair(freq, "freq", 0.0, strict=False)
    n_traj = check_scalar(n_traj, "n_traj", "int", min=1)
    dt = check_scalar(dt, "dt", "real", min=0.0, inclusive="neither")
    duration = check_scalar(duration, "duration", "real", min=dt)
    T = int(round(duration / dt))
    t = np.arange(T) * dt
    amp = rng.uniform(0.3, 1.0, (n_traj, 3, 2)) * params.u_max
    freq = rng.uniform(freq[0], freq[1], (n_traj, 3, 2))
    phase = rng.uniform(0.0, 2 * np.pi, (n_traj, 3, 2))
    u = np.sum(amp[:, None] * np.sin(freq[:, None] * t[None, :, None, None] + phase[:, None]), axis=2) / 2
    u = np.clip(u, -params.u_max, params.u_max)
    x = np.zeros((n_traj, T + 1, 4))
    x[:, 0, :2] = rng.uniform(0.0, workspace, (n_traj, 2))
    x[:, 0, 2:] = rng.uniform(-v0, v0, (n_traj, 2))
    for k in range(T):
        w = params.delta_w * _unit_ball(rng, (n_traj,), "ball")
        x[:, k + 1] = rk4_step(lambda z, k=k, w=w: point_robot_dynamics(z, u[:, k], params, w), x[:, k], dt)
    z = [sensor.unit_noise(rng, (n_traj,))]
    for _ in range(T):
        z.append(sensor.next_unit_noise(z[-1], rng, dt))
    y = sensor.apply(x, np.stack(z, axis=1))
    return x, y, u


# ----------------------------------------------------------------------------------------------
# Closed-loop episodes
# ----------------------------------------------------------------------------------------------
@dataclass
class EpisodeConfig:
    """Controller settings shared by all methods of a rollout."""

    dt: float = 0.02
    horizon_s: float = 15.0
    kp: float = 2.0
    kd: float = 2.0
    goal_tol: float = 0.05
    r_safe: float = 0.05
    k1: float = 2.0
    alpha: float = 5.0
    k_nearest: int = 3
    k0: float = 5.0
    model_err: float = 0.0
    workspace: float = 2.0
    observer: dict[str, str] = field(default_factory=lambda: {"mcbf": "connection", "blind": "raw",
                                                                "worst_case": "connection", "none": "connection"})

    def __post_init__(self) -> None:
        for name in ("dt", "horizon_s", "goal_tol", "k1", "alpha", "k0", "workspace"):
            check_scalar(getattr(self, name), name, "real", min=0.0, inclusive="neither")
        for name in ("kp", "kd", "r_safe", "model_err"):
            check_scalar(getattr(self, name), name, "real", min=0.0)
        check_scalar(self.k_nearest, "k_nearest", "int", min=1)
        check_instance(self.observer, "observer", dict, "a dict method -> 'connection' or 'raw'")
        missing = set(METHODS) - set(self.observer)
        if missing:
            raise ValueError(f"observer must give a mode for every method {METHODS}, missing {sorted(missing)}")
        for method, mode in self.observer.items():
            check_choice(mode, f"observer[{method!r}]", ("connection", "raw"))


def _stack_layouts(layouts: Sequence[Layout]) -> tuple[np.ndarray, np.ndarray]:
    n = max(len(lay.radii) for lay in layouts)
    obs = np.full((len(layouts), n, 2), _PAD)
    rad = np.zeros((len(layouts), n))
    for i, lay in enumerate(layouts):
        obs[i, : len(lay.radii)], rad[i, : len(lay.radii)] = lay.obstacles, lay.radii
    return obs, rad


def rollout(layouts: Sequence[Layout], f_hat: Affine, groups: Sequence[tuple[str, float]],
            sensor: LocalSensorModel | None = None, params: PlantParams = PlantParams(),
            config: EpisodeConfig | None = None, seed: Seed = 0, record: bool = False) -> list[dict]:
    """Run every layout under every ``(method, noise_scale)`` group, all in lockstep, with common random numbers.

    ``method`` is ``"mcbf"`` (adaptive margin, connection observer), ``"blind"`` (no margin, raw
    measurements), ``"worst_case"`` (global margin ``L max delta_v``) or ``"none"`` (PD only).
    Each step: measure, estimate, nominal PD ``u = Kp (goal - p_hat) - Kd v_hat``, safety QP,
    RK4 step of the true plant with disturbance.  Returns one metrics dict per group
    (see ``summarize``) with per-episode arrays; ``record=True`` adds the true positions
    ``"trajectory" (steps + 1, E, 2)``.
    """
    check_sequence(layouts, "layouts", min_len=1, item=lambda v, n: check_instance(v, n, Layout))
    check_callable(f_hat, "f_hat")
    for i, group in enumerate(check_sequence(groups, "groups", min_len=1)):
        if not isinstance(group, (tuple, list)) or len(group) != 2:
            raise TypeError(f"groups[{i}] must be a pair (method, noise_scale), got {group!r}")
        check_choice(group[0], f"groups[{i}] method", METHODS)
        check_scalar(group[1], f"groups[{i}] noise_scale", "real", min=0.0, inclusive="neither")
    check_instance(params, "params", PlantParams)
    record = check_bool(record, "record")
    cfg = EpisodeConfig() if config is None else check_instance(config, "config", EpisodeConfig)
    base = LocalSensorModel() if sensor is None else check_instance(sensor, "sensor", LocalSensorModel)
    E, Gn = len(layouts), len(groups)
    obs, rad = _stack_layouts(layouts)
    sensors = [base.rescaled(s) for _, s in groups]
    cbfs, observers = [], []
    modes = {"mcbf": "adaptive", "blind": "blind", "worst_case": "worst_case"}
    for (method, _), sen in zip(groups, sensors, strict=True):
        cbfs.append(None if method == "none" else MeasurementAwareCBF(
            obs, rad, r_safe=cfg.r_safe, k1=cfg.k1, alpha=cfg.alpha, delta_w=params.delta_w,
            model_err=cfg.model_err, mode=modes[method], k_nearest=cfg.k_nearest,
            worst_case_delta=sen.max_radius(cfg.workspace)))
        observers.append(BundleObserver(f_hat, sen, cfg.k0, cfg.observer[method]))
    goal = np.stack([lay.goal for lay in layouts])
    x = np.tile(np.stack([lay.start for lay in layouts]), (Gn, 1))  # (G*E, 4), group-major
    rng = as_generator(seed)
    n_steps = int(round(cfg.horizon_s / cfg.dt))
    sl = [slice(g * E, (g + 1) * E) for g in range(Gn)]

    z = base.unit_noise(rng, (E,))  # common random numbers: one noise path per layout, shared by all groups

    def measure() -> np.ndarray:
        return np.concatenate([sensors[g].apply(x[sl[g]], z) for g in range(Gn)])

    x_hat = measure()
    trace = [x[:, :2].copy()]
    active = np.ones(Gn * E, bool)
    out = {k: np.zeros(Gn * E) for k in ("path", "u_sum", "steps", "unsafe_steps", "infeasible")}
    out["min_clear"] = np.full(Gn * E, np.inf)
    out["reached"], out["collided"], out["aborted"] = (np.zeros(Gn * E, bool) for _ in range(3))
    out["infeasible_start"] = np.zeros(Gn * E, bool)
    out["time"] = np.full(Gn * E, np.nan)
    for g in range(Gn):
        if cbfs[g] is not None:
            d0 = sensors[g].radius(x_hat[sl[g], :2])
            out["infeasible_start"][sl[g]] = np.any(cbfs[g].barrier(x_hat[sl[g]], d0) < 0, axis=1)
    for step in range(n_steps):
        z = base.next_unit_noise(z, rng, cfg.dt)
        y = measure()
        w = params.delta_w * _unit_ball(rng, (E,), "ball")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            f0, G = (np.array(a, float) for a in f_hat(x_hat))
        bad = ~(np.all(np.isfinite(f0), 1) & np.all(np.isfinite(G), (1, 2)) & np.all(np.isfinite(x_hat), 1))
        if np.any(bad & active):
            warnings.warn(f"non-finite model output in {int(np.sum(bad & active))} episode(s); aborted", stacklevel=2)
            out["aborted"] |= bad & active
            active &= ~bad
        idle = ~active  # finished or aborted episodes: harmless placeholders keep the batch finite
        x_hat[idle], f0[idle], G[idle] = x[idle], 0.0, _G_IDLE
        parts = (f0, G)
        u = np.zeros((Gn * E, 2))
        for g in range(Gn):
            xh = x_hat[sl[g]]
            u_nom = np.clip(cfg.kp * (goal - xh[:, :2]) - cfg.kd * xh[:, 2:], -params.u_max, params.u_max)
            if cbfs[g] is None:
                u[sl[g]] = u_nom
                continue
            part_g = (parts[0][sl[g]], parts[1][sl[g]])
            ug, info = cbfs[g].filter(xh, u_nom, lambda _, pg=part_g: pg, sensors[g].radius(xh[:, :2]), params.u_max)
            u[sl[g]] = ug
            out["infeasible"][sl[g]] += info["infeasible"] & active[sl[g]]
        u[~active] = 0.0
        wa = np.tile(w, (Gn, 1))
        x_new = rk4_step(lambda z, u=u, wa=wa: point_robot_dynamics(z, u, params, wa), x, cfg.dt)
        x_new[~active] = x[~active]
        x_hat = np.concatenate([observers[g].update(x_hat[sl[g]], y[sl[g]], u[sl[g]], cfg.dt,
                                                    (parts[0][sl[g]], parts[1][sl[g]])) for g in range(Gn)])
        clear = np.min(np.linalg.norm(x_new[:, None, :2] - np.tile(obs, (Gn, 1, 1)), axis=-1) - np.tile(rad, (Gn, 1)),
                       axis=1)
        out["path"] += np.where(active, np.linalg.norm(x_new[:, :2] - x[:, :2], axis=1), 0.0)
        out["u_sum"] += np.where(active, np.linalg.norm(u, axis=1), 0.0)
        out["steps"] += active
        out["unsafe_steps"] += active & (clear < cfg.r_safe)
        out["collided"] |= active & (clear < 0)
        out["min_clear"] = np.where(active, np.minimum(out["min_clear"], clear), out["min_clear"])
        x = x_new
        if record:
            trace.append(x[:, :2].copy())
        reached = active & (np.linalg.norm(x[:, :2] - np.tile(goal, (Gn, 1)), axis=1) < cfg.goal_tol)
        out["reached"] |= reached
        out["time"][reached] = (step + 1) * cfg.dt
        active &= ~reached
        if not active.any():
            break
    results = [summarize({k: v[sl[g]] for k, v in out.items()}) | {"method": m, "noise_scale": s}
               for g, (m, s) in enumerate(groups)]
    if record:
        trace = np.stack(trace)
        for g, res in enumerate(results):
            res["trajectory"] = trace[:, sl[g]]
    return results


def summarize(ep: dict[str, np.ndarray]) -> dict:
    """Metrics of one group: SR, CSR, violation / collision episode rates, PL, ACM, clearance, QP fallbacks."""
    success = ep["reached"] & ~ep["collided"] & ~ep["aborted"]
    return {
        "SR": float(np.mean(success)),
        "CSR": float(1.0 - ep["unsafe_steps"].sum() / max(ep["steps"].sum(), 1.0)),
        "violation_rate": float(np.mean(ep["unsafe_steps"] > 0)),
        "collision_rate": float(np.mean(ep["collided"])),
        "PL": float(np.mean(ep["path"][success])) if success.any() else float("nan"),
        "ACM": float(ep["u_sum"].sum() / max(ep["steps"].sum(), 1.0)),
        "min_clearance": float(np.min(ep["min_clear"])),
        "infeasible_qp_steps": int(ep["infeasible"].sum()),
        "infeasible_starts": int(ep["infeasible_start"].sum()),
        "aborted": int(ep["aborted"].sum()),
        "episodes": {"success": success.tolist(), "path": ep["path"].tolist(),
                     "violated": (ep["unsafe_steps"] > 0).tolist(), "min_clearance": ep["min_clear"].tolist(),
                     "time": ep["time"].tolist()},
    }


def run_episodes(f_hat: Affine, method: str = "mcbf", n_episodes: int = 30, noise_scale: float = 1.0, seed: Seed = 0,
                 sensor: LocalSensorModel | None = None, params: PlantParams = PlantParams(),
                 config: EpisodeConfig | None = None) -> dict:
    """Closed-loop metrics of one method on ``n_episodes`` random layouts (``SR, CSR, PL, ACM, min_clearance``)."""
    n_episodes = check_scalar(n_episodes, "n_episodes", "int", min=1)
    check_choice(method, "method", METHODS)
    check_scalar(noise_scale, "noise_scale", "real", min=0.0, inclusive="neither")
    check_callable(f_hat, "f_hat")
    rng = as_generator(seed)
    layouts = [random_layout(rng) for _ in range(n_episodes)]
    return rollout(layouts, f_hat, [(method, noise_scale)], sensor, params, config, seed)[0]
