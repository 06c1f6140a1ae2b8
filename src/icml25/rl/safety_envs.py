"""Safe-RL environments with privileged information, in Safety-Gymnasium's conventions.

Each step's ``info`` carries the cost (``info["cost"]``, a non-negative float, as Safety-Gymnasium's
``step`` returns it) and the privileged state the agent must not see at deployment (``info["privileged"]``,
a fixed-size float32 vector).  Used by PIGDreamer (Huang et al., ICML 2025, arXiv:2508.02159):

- :class:`PrivilegedHazardNav`: a point mass reaching goals among circular hazards it senses only at short range
  (a vector-observation stand-in for Safety-Gymnasium's Goal tasks);
- :class:`HiddenHazardCorridor`: a tabular constrained POMDP whose cost cell sits behind a hidden layout, with
  its exact model (:meth:`HiddenHazardCorridor.model`) for policy evaluation;
- :class:`SafetyGymAdapter`: wraps a Safety-Gymnasium 6-tuple env (``obs, reward, cost, terminated, truncated,
  info``) into the 5-tuple gymnasium API with ``info["cost"]``.
"""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from icml25.utils.random import check_seed
from icml25.utils.validation import check_array, check_instance, check_scalar

__all__ = ["HiddenHazardCorridor", "PrivilegedHazardNav", "SafetyGymAdapter"]


def _check_reset(seed: Any, options: Any) -> None:
    check_seed(seed)
    if options is not None:
        check_instance(options, "options", dict, "a dict or None")


class PrivilegedHazardNav(gym.Env):
    """Point-mass navigation in ``[-1, 1]^2`` with ``n_hazards`` circular hazards of radius 0.2.

    Dynamics ``v <- 0.8 v + 0.2 a``, ``pos <- clip(pos + 0.05 v)`` with ``a in [-1, 1]^2``.  Reward
    ``10 * (previous goal distance - goal distance)`` plus 1 on reaching the goal (radius 0.15, then resampled);
    cost 1 per step inside a hazard (never terminal); ``episode_len`` steps, then truncation.

    Observation (14 floats): position, velocity, goal vector and an 8-bin hazard lidar that sees a hazard only
    when its edge is within ``sensor_range`` (bin value ``1 - edge distance / sensor_range``; with
    ``sensor_range=inf`` every hazard is seen, with value ``1 - edge distance / 3``), plus Gaussian noise of
    std ``obs_noise``.  Privileged state (``info["privileged"]``, ``3 * n_hazards + 3`` floats): the hazards'
    relative positions and radii sorted by distance, the signed distance to the nearest hazard edge and the goal
    position.  Hazards and goal are redrawn at every reset.
    """

    metadata = {"render_modes": []}
    HAZARD_RADIUS = 0.2
    GOAL_RADIUS = 0.15
    N_BINS = 8

    def __init__(self, sensor_range: float = 0.1, n_hazards: int = 6, episode_len: int = 200, obs_noise: float = 0.0,
                 seed: int | None = None) -> None:
        self.sensor_range = check_scalar(sensor_range, "sensor_range", "real", min=0.0, inclusive="neither",
                                         allow_inf=True)
        self.n_hazards = check_scalar(n_hazards, "n_hazards", "int", min=1)
        self.episode_len = check_scalar(episode_len, "episode_len", "int", min=1)
        self.obs_noise = check_scalar(obs_noise, "obs_noise", "real", min=0.0)
        self._seed = check_seed(seed)
        self.observation_space = spaces.Box(-np.inf, np.inf, (14,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.priv_dim = 3 * self.n_hazards + 3
        self._seeded = False

    def _free_point(self, avoid: list[np.ndarray], gap: float) -> np.ndarray:
        for _ in range(100):
            p = self.np_random.uniform(-0.85, 0.85, 2)
            if all(np.linalg.norm(p - q) >= gap for q in avoid):
                return p
        return p

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        _check_reset(seed, options)
        if seed is None and not self._seeded:
            seed = self._seed
        super().reset(seed=seed)
        self._seeded = True
        self.pos = self.np_random.uniform(-0.9, 0.9, 2)
        self.vel = np.zeros(2)
        self.hazards = np.stack([self._free_point([self.pos], self.HAZARD_RADIUS + 0.1)
                                 for _ in range(self.n_hazards)])
        self.goal = self._free_point([self.pos, *self.hazards], self.HAZARD_RADIUS + self.GOAL_RADIUS)
        self.t = 0
        return self._obs(), self._info(0.0)

    def _edge_distances(self) -> np.ndarray:
        return np.linalg.norm(self.hazards - self.pos, axis=1) - self.HAZARD_RADIUS

    def _obs(self) -> np.ndarray:
        rel = self.hazards - self.pos
        edge = self._edge_distances()
        reach = self.sensor_range if math.isfinite(self.sensor_range) else 3.0
        lidar = np.zeros(self.N_BINS)
        bins = ((np.arctan2(rel[:, 1], rel[:, 0]) % (2 * np.pi)) / (2 * np.pi) * self.N_BINS).astype(int)
        for b, d in zip(bins % self.N_BINS, edge, strict=True):
            if d <= self.sensor_range:
                lidar[b] = max(lidar[b], 1.0 - max(d, 0.0) / reach)
        obs = np.concatenate([self.pos, self.vel, self.goal - self.pos, lidar])
        if self.obs_noise > 0:
            obs = obs + self.np_random.normal(0.0, self.obs_noise, obs.shape)
        return obs.astype(np.float32)

    def _info(self, cost: float) -> dict[str, Any]:
        rel = self.hazards - self.pos
        order = np.argsort(np.linalg.norm(rel, axis=1))
        haz = np.concatenate([rel[order], np.full((self.n_hazards, 1), self.HAZARD_RADIUS)], 1).ravel()
        priv = np.concatenate([haz, [self._edge_distances().min()], self.goal]).astype(np.float32)
        return {"cost": float(cost), "privileged": priv}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not hasattr(self, "pos"):
            raise RuntimeError("call reset before step")
        a = check_array(action, "action", ndim=1, dtype=float, shape=(2,))
        a = np.clip(a, -1.0, 1.0)
        prev = np.linalg.norm(self.goal - self.pos)
        self.vel = 0.8 * self.vel + 0.2 * a
        new = self.pos + 0.05 * self.vel
        hit = np.abs(new) > 1.0
        self.vel[hit] = 0.0
        self.pos = np.clip(new, -1.0, 1.0)
        dist = np.linalg.norm(self.goal - self.pos)
        reward = 10.0 * (prev - dist)
        if dist <= self.GOAL_RADIUS:
            reward += 1.0
            self.goal = self._free_point([self.pos, *self.hazards], self.HAZARD_RADIUS + self.GOAL_RADIUS)
        cost = float(self._edge_distances().min() <= 0.0)
        self.t += 1
        return self._obs(), float(reward), False, self.t >= self.episode_len, self._info(cost)


class HiddenHazardCorridor(gym.Env):
    """A tabular constrained POMDP: 5 corridor cells (0-4, junction at 4), a left (5) and a right (6) branch cell
    and the goal (7, terminal).  A hidden layout (``0`` = cost on the left branch, ``1`` = on the right, drawn
    uniformly at reset) puts cost 1 on entering one branch cell.

    Actions: ``0`` = forward / take the left branch, ``1`` = forward / take the right branch; every move fails
    (the agent stays) with probability ``slip``.  Reward ``+1`` on reaching the goal.  The observation is the cell
    and a sensor reading: ``0`` everywhere but cell 1, where it shows ``1 + layout`` with probability
    ``sensor_prob`` (else ``0``); the privileged state is ``[cell, layout]``.
    """

    metadata = {"render_modes": []}
    N_CELLS = 8
    JUNCTION, LEFT, RIGHT, GOAL, SENSOR = 4, 5, 6, 7, 1

    def __init__(self, sensor_prob: float = 0.8, slip: float = 0.1, max_steps: int = 50, seed: int | None = None):
        self.sensor_prob = check_scalar(sensor_prob, "sensor_prob", "real", min=0.0, max=1.0)
        self.slip = check_scalar(slip, "slip", "real", min=0.0, max=1.0, inclusive="left")
        self.max_steps = check_scalar(max_steps, "max_steps", "int", min=1)
        self._seed = check_seed(seed)
        self._seeded = False
        self.observation_space = spaces.MultiDiscrete([self.N_CELLS, 3])
        self.action_space = spaces.Discrete(2)

    def _move(self, cell: int, action: int) -> int:
        if cell < self.JUNCTION:
            return cell + 1
        if cell == self.JUNCTION:
            return self.LEFT if action == 0 else self.RIGHT
        return self.GOAL

    def model(self) -> dict[str, np.ndarray]:
        """The exact model over hidden states ``s = 2 * cell + layout`` (16 states): ``P[a, s, s']``,
        ``reward[a, s, s']``, ``cost[a, s, s']``, ``terminal[s]`` and ``p_signal[s, k]`` (sensor reading ``k`` on
        entering ``s``)."""
        n = 2 * self.N_CELLS
        P, R, C = np.zeros((2, n, n)), np.zeros((2, n, n)), np.zeros((2, n, n))
        terminal = np.zeros(n, bool)
        p_signal = np.zeros((n, 3))
        p_signal[:, 0] = 1.0
        for cell in range(self.N_CELLS):
            for layout in (0, 1):
                s = 2 * cell + layout
                terminal[s] = cell == self.GOAL
                if cell == self.SENSOR:
                    p_signal[s] = 0.0
                    p_signal[s, 0], p_signal[s, 1 + layout] = 1 - self.sensor_prob, self.sensor_prob
                for a in (0, 1):
                    if terminal[s]:
                        P[a, s, s] = 1.0
                        continue
                    nxt = 2 * self._move(cell, a) + layout
                    P[a, s, nxt] += 1 - self.slip
                    P[a, s, s] += self.slip
                    R[a, s, nxt] = float(nxt // 2 == self.GOAL)
                    C[a, s, nxt] = float(nxt // 2 == (self.LEFT if layout == 0 else self.RIGHT))
        return {"P": P, "reward": R, "cost": C, "terminal": terminal, "p_signal": p_signal}

    def _signal(self) -> int:
        if self.cell == self.SENSOR and self.np_random.random() < self.sensor_prob:
            return 1 + self.layout
        return 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        _check_reset(seed, options)
        if seed is None and not self._seeded:
            seed = self._seed
        super().reset(seed=seed)
        self._seeded = True
        self.cell, self.layout, self.t = 0, int(self.np_random.integers(2)), 0
        return np.array([self.cell, 0], dtype=np.int64), self._info(0.0)

    def _info(self, cost: float) -> dict[str, Any]:
        return {"cost": cost, "privileged": np.array([self.cell, self.layout], dtype=np.float32)}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not hasattr(self, "cell"):
            raise RuntimeError("call reset before step")
        action = check_scalar(action, "action", "int", min=0, max=1)
        nxt = self.cell if self.np_random.random() < self.slip else self._move(self.cell, action)
        moved = nxt != self.cell
        self.cell, self.t = nxt, self.t + 1
        reward = float(moved and nxt == self.GOAL)
        cost = float(moved and nxt == (self.LEFT if self.layout == 0 else self.RIGHT))
        obs = np.array([self.cell, self._signal()], dtype=np.int64)
        return obs, reward, self.cell == self.GOAL, self.t >= self.max_steps, self._info(cost)


class SafetyGymAdapter(gym.Wrapper):
    """Safety-Gymnasium's ``step -> (obs, reward, cost, terminated, truncated, info)`` as gymnasium's 5-tuple with
    the cost in ``info["cost"]`` (a non-negative finite float; anything else raises)."""

    def __init__(self, env: gym.Env) -> None:
        check_instance(env, "env", gym.Env)
        super().__init__(env)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        out = self.env.step(action)
        if len(out) == 5:
            obs, reward, terminated, truncated, info = out
            cost = info.get("cost", 0.0)
        elif len(out) == 6:
            obs, reward, cost, terminated, truncated, info = out
        else:
            raise ValueError(f"env.step must return 5 or 6 values, got {len(out)}")
        cost = float(cost)
        if not math.isfinite(cost) or cost < 0:
            raise ValueError(f"the env's cost must be a non-negative finite number, got {cost}")
        return obs, reward, terminated, truncated, {**info, "cost": cost}
