"""``PlanarSkills``: a 2-D end-effector toy for skill learning (registered as ``icml25/PlanarSkills-v0``).

Three tasks share one observation layout: ``detour`` (go from the bottom to the top of the workspace around a
central disc, the scripted expert taking the left or the right side at random: two equally likely modes),
``reach`` (a random goal) and ``pick_place`` (reach the object, close the gripper, carry it to the goal, open).
Our construction for the paper's multimodality and long-horizon checks (Li et al., ICML 2025, arXiv:2506.03863);
no MuJoCo needed.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from icml25.utils.random import Seed, as_generator, check_seed
from icml25.utils.validation import check_array, check_choice, check_scalar

__all__ = ["PLANAR_TASKS", "PlanarSkillsEnv", "PlanarSkillsExpert"]

PLANAR_TASKS = ("detour", "reach", "pick_place")
STEP, RADIUS, TOL = 0.06, 0.35, 0.08
OBS_DIM = 8 + len(PLANAR_TASKS)


class PlanarSkillsEnv(gymnasium.Env):
    """Observation (11, in [-1, 1]): end effector ``xy``, gripper (0 open, 1 closed), object ``xy``, goal ``xy``,
    holding flag, task one-hot. Action (3, in [-1, 1]): ``xy`` velocity (``0.06`` per unit) and gripper command
    (``> 0`` closes). Reward: minus the distance to the current sub-goal; ``terminated`` on success
    (``info["success"]``), ``truncated`` after ``max_episode_steps``.

    Parameters
    ----------
    task : one of :data:`PLANAR_TASKS`, or None to draw one per reset (``options={"task": name}`` overrides).
    max_episode_steps : episode length limit.
    """

    metadata = {"render_modes": []}

    def __init__(self, task: str | None = None, max_episode_steps: int = 100) -> None:
        self.task = None if task is None else check_choice(task, "task", PLANAR_TASKS)
        self.max_episode_steps = check_scalar(max_episode_steps, "max_episode_steps", "int", min=1)
        self.observation_space = spaces.Box(-1.0, 1.0, (OBS_DIM,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (3,), np.float32)
        self._state: dict[str, Any] = {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=check_seed(seed))
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        rng = self.np_random
        task = (options or {}).get("task", self.task)
        task = PLANAR_TASKS[int(rng.integers(len(PLANAR_TASKS)))] if task is None else check_choice(
            task, "task", PLANAR_TASKS)
        if task == "detour":
            pos = np.array([rng.uniform(-0.1, 0.1), rng.uniform(-0.9, -0.75)])
            goal = np.array([rng.uniform(-0.1, 0.1), rng.uniform(0.75, 0.9)])
            obj = np.zeros(2)
        else:
            pos, obj, goal = (rng.uniform(-0.8, 0.8, 2) for _ in range(3))
        self._state = {"task": task, "pos": pos, "grip": 0.0, "obj": obj, "goal": goal, "holding": False, "t": 0}
        return self._obs(), {"task": task, "task_index": PLANAR_TASKS.index(task), "success": False}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self._state:
            raise RuntimeError("call reset() before step()")
        a = check_array(action, "action", ndim=1, shape=(3,), finite=True)
        a = np.clip(a, -1.0, 1.0)
        s = self._state
        new = np.clip(s["pos"] + STEP * a[:2], -1.0, 1.0)
        if s["task"] == "detour" and np.linalg.norm(new) < RADIUS:  # the disc is solid: project onto its rim
            new = new / max(np.linalg.norm(new), 1e-9) * RADIUS
        s["pos"], s["grip"], s["t"] = new, float(a[2] > 0), s["t"] + 1
        if s["task"] == "pick_place":
            if s["grip"] and np.linalg.norm(s["pos"] - s["obj"]) < TOL:
                s["holding"] = True
            if not s["grip"]:
                s["holding"] = False
            if s["holding"]:
                s["obj"] = s["pos"].copy()
        success = self._success()
        reward = -float(np.linalg.norm(s["pos"] - self._subgoal()))
        truncated = s["t"] >= self.max_episode_steps and not success
        return self._obs(), reward, success, truncated, {"task": s["task"], "success": success,
                                                         "task_index": PLANAR_TASKS.index(s["task"])}

    def _subgoal(self) -> np.ndarray:
        s = self._state
        return s["obj"] if s["task"] == "pick_place" and not s["holding"] else s["goal"]

    def _success(self) -> bool:
        s = self._state
        if s["task"] == "pick_place":
            return bool(np.linalg.norm(s["obj"] - s["goal"]) < TOL and not s["grip"])
        return bool(np.linalg.norm(s["pos"] - s["goal"]) < TOL)

    def _obs(self) -> np.ndarray:
        s = self._state
        onehot = np.eye(len(PLANAR_TASKS))[PLANAR_TASKS.index(s["task"])]
        return np.concatenate([s["pos"], [s["grip"]], s["obj"], s["goal"], [float(s["holding"])],
                               onehot]).astype(np.float32)


class PlanarSkillsExpert:
    """The scripted expert of :class:`PlanarSkillsEnv`, reading only the observation.

    ``detour`` goes through the waypoint ``(±0.55, 0)`` (side drawn per :meth:`reset` from ``seed``, or fixed
    by ``side`` = -1 left / +1 right) then to the goal; ``pick_place`` goes to the object with the gripper
    open, closes it, carries it to the goal and opens it. Velocities are unit vectors (shorter near a target).
    """

    def __init__(self, side: int | None = None, seed: Seed = None) -> None:
        if side is not None:
            side = check_choice(side, "side", (-1, 1))
        self.fixed_side = side
        self.rng = as_generator(seed)
        self.side = side if side is not None else 1
        self.passed = False

    def reset(self) -> None:
        """Start a new episode (draws the detour side)."""
        self.side = self.fixed_side if self.fixed_side is not None else int(self.rng.choice((-1, 1)))
        self.passed = False

    def __call__(self, obs) -> np.ndarray:
        obs = check_array(obs, "obs", ndim=1, shape=(OBS_DIM,))
        pos, obj, goal, holding = obs[:2], obs[3:5], obs[5:7], obs[7] > 0.5
        task = PLANAR_TASKS[int(np.argmax(obs[8:]))]
        grip = -1.0
        if task == "detour":
            waypoint = np.array([0.55 * self.side, 0.0])
            self.passed = self.passed or pos[1] > -0.05 or np.linalg.norm(pos - waypoint) < TOL
            target = goal if self.passed else waypoint
        elif task == "reach":
            target = goal
        else:
            near_obj = np.linalg.norm(pos - obj) < TOL / 2
            at_goal = np.linalg.norm(obj - goal) < TOL / 2
            target = obj if not holding else goal
            grip = 1.0 if (holding and not at_goal) or (near_obj and not holding and not at_goal) else -1.0
        delta = (target - pos) / STEP
        norm = np.linalg.norm(delta)
        return np.concatenate([delta / max(norm, 1.0), [grip]]).astype(np.float32)
