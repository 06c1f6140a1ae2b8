"""Scripted demonstrations and closed-loop evaluation for STAR (Li et al., ICML 2025, arXiv:2506.03863):
MetaWorld MT10 with its own scripted policies (``metaworld.policies``, state observations, nothing downloaded)
and the :mod:`~icml25.rl.star_skills.planar` toy.

Demonstrations follow DART: the executed action is the expert's plus Gaussian noise ``noise`` (for state
diversity) and the recorded label is the expert's clean action; only successful episodes are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import gymnasium
import numpy as np
import torch
from gymnasium import spaces

from icml25.rl.star_skills.planar import PLANAR_TASKS, PlanarSkillsEnv, PlanarSkillsExpert
from icml25.utils.random import Seed, as_generator, check_seed, int_seed
from icml25.utils.validation import check_array, check_bool, check_callable, check_choice, check_scalar, check_sequence

__all__ = ["MT10_TASKS", "MetaWorldTaskEnv", "collect_metaworld_demos", "collect_planar_demos", "make_metaworld_env",
           "rollout_success"]

MT10_TASKS = ("reach-v3", "push-v3", "pick-place-v3", "door-open-v3", "drawer-open-v3", "drawer-close-v3",
              "button-press-topdown-v3", "peg-insert-side-v3", "window-open-v3", "window-close-v3")


class MetaWorldTaskEnv(gymnasium.Env):
    """One MetaWorld MT10 task with state observations (``[39]``, float32) and actions ``[4]`` in [-1, 1]:
    :meth:`reset` draws the object and goal positions from MetaWorld's own reset distribution (the one MT10's
    50 variations are drawn from) with the reset seed; the goal is observable, as in MT10;
    ``info["success"]`` as in MetaWorld; truncated after ``max_episode_steps`` (at most 500, MetaWorld's own
    limit). Registered as ``icml25/MetaWorldMT10-v0``.

    Parameters
    ----------
    task : one of :data:`MT10_TASKS`.
    max_episode_steps : episode length limit.
    """

    metadata = {"render_modes": []}

    def __init__(self, task: str = "reach-v3", max_episode_steps: int = 200) -> None:
        self.task = check_choice(task, "task", MT10_TASKS)
        self.max_episode_steps = check_scalar(max_episode_steps, "max_episode_steps", "int", min=1, max=500)
        from metaworld import ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE

        self.env = ALL_V3_ENVIRONMENTS_GOAL_OBSERVABLE[f"{self.task}-goal-observable"]()
        self.env._freeze_rand_vec = False  # a fresh variation on every reset ...
        self.env.seeded_rand_vec = True  # ... drawn from the env's seeded np_random, not numpy's global RNG
        self.observation_space = spaces.Box(-np.inf, np.inf, self.env.observation_space.shape, np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, self.env.action_space.shape, np.float32)
        self._t = -1

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=check_seed(seed))
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
        self.env.seed(int(self.np_random.integers(2**31)))
        obs, _ = self.env.reset()
        self._t = 0
        return obs.astype(np.float32), {"success": False}

    def step(self, action) -> tuple[np.ndarray, float, bool, bool, dict]:
        if self._t < 0:
            raise RuntimeError("call reset() before step()")
        a = np.clip(check_array(action, "action", ndim=1, shape=self.action_space.shape, finite=True), -1.0, 1.0)
        obs, reward, _, _, info = self.env.step(a.astype(np.float32))
        self._t += 1
        success = bool(info.get("success"))
        return (obs.astype(np.float32), float(reward), success, self._t >= self.max_episode_steps and not success,
                {"success": success})

    def close(self) -> None:
        self.env.close()


def make_metaworld_env(task: str = "reach-v3", max_episode_steps: int = 200) -> MetaWorldTaskEnv:
    """:class:`MetaWorldTaskEnv` (the entry point of ``icml25/MetaWorldMT10-v0``)."""
    return MetaWorldTaskEnv(task, max_episode_steps)


def _expert(task: str):
    from metaworld.policies import ENV_POLICY_MAP

    return ENV_POLICY_MAP[task]()


def _check_noise(noise) -> float:
    return check_scalar(noise, "noise", "real", min=0.0)


def collect_metaworld_demos(tasks: Sequence[str] | None = None, n_demos: int = 10, *, noise: float = 0.1,
                            max_steps: int = 200, seed: Seed = None, max_tries: int = 3) -> list[dict]:
    """Successful scripted demonstrations of MT10 ``tasks`` (default: all ten), ``n_demos`` each.

    Returns a list of episodes ``{"obs" [L, 39], "actions" [L, 4], "task" (index in ``tasks``), "name"}``,
    each ending at its first success. Raises ``RuntimeError`` if a task yields fewer than ``n_demos``
    successes in ``max_tries * n_demos`` attempts.
    """
    tasks = MT10_TASKS if tasks is None else tuple(check_sequence(
        tasks, "tasks", min_len=1, item=lambda t, name: check_choice(t, name, MT10_TASKS)))
    n_demos = check_scalar(n_demos, "n_demos", "int", min=1)
    noise = _check_noise(noise)
    max_steps = check_scalar(max_steps, "max_steps", "int", min=1, max=500)
    max_tries = check_scalar(max_tries, "max_tries", "int", min=1)
    rng = as_generator(seed)
    episodes = []
    for i, task in enumerate(tasks):
        policy, kept, env = _expert(task), 0, make_metaworld_env(task, max_steps)
        for _ in range(max_tries * n_demos):
            obs, _ = env.reset(seed=int_seed(rng))
            ep = _run_expert(env, obs, policy.get_action, noise, max_steps, rng)
            if ep is not None:
                episodes.append({**ep, "task": i, "name": task})
                kept += 1
                if kept == n_demos:
                    break
        env.close()
        if kept < n_demos:
            raise RuntimeError(f"the scripted {task} policy succeeded {kept} times in {max_tries * n_demos} tries "
                               f"at noise={noise}; lower noise or raise max_tries")
    return episodes


def _run_expert(env, obs, expert: Callable, noise: float, max_steps: int, rng) -> dict | None:
    observations, actions = [], []
    for _ in range(max_steps):
        a = np.clip(np.asarray(expert(obs), dtype=np.float64), -1.0, 1.0)
        observations.append(np.asarray(obs, dtype=np.float32))
        actions.append(a.astype(np.float32))
        executed = np.clip(a + noise * rng.standard_normal(a.shape), -1.0, 1.0)
        obs, _, terminated, truncated, info = env.step(executed.astype(np.float32))
        if info.get("success"):
            return {"obs": np.stack(observations), "actions": np.stack(actions)}
        if terminated or truncated:
            return None
    return None


def collect_planar_demos(n_demos: int = 20, tasks: Sequence[str] | None = None, *, noise: float = 0.1,
                         side: int | None = None, max_steps: int = 100, seed: Seed = None) -> list[dict]:
    """Successful scripted :class:`PlanarSkillsEnv` demonstrations, ``n_demos`` per task (default: all three);
    episodes as in :func:`collect_metaworld_demos` (``task`` indexes ``tasks``). ``side`` fixes the detour mode
    (-1 left, +1 right; default: drawn per episode)."""
    tasks = PLANAR_TASKS if tasks is None else tuple(check_sequence(
        tasks, "tasks", min_len=1, item=lambda t, name: check_choice(t, name, PLANAR_TASKS)))
    n_demos = check_scalar(n_demos, "n_demos", "int", min=1)
    noise = _check_noise(noise)
    max_steps = check_scalar(max_steps, "max_steps", "int", min=1)
    rng = as_generator(seed)
    expert = PlanarSkillsExpert(side=side, seed=rng)
    episodes = []
    for i, task in enumerate(tasks):
        env, kept = PlanarSkillsEnv(task, max_episode_steps=max_steps), 0
        while kept < n_demos:
            obs, _ = env.reset(seed=int_seed(rng))
            expert.reset()
            ep = _run_expert(env, obs, expert, noise, max_steps, rng)
            if ep is not None:
                episodes.append({**ep, "task": i, "name": task})
                kept += 1
    return episodes


def rollout_success(policy, make_env: Callable[[int], gymnasium.Env], n_tasks: int, episodes: int = 10, *,
                    max_steps: int = 200, n_exec: int | None = None, seed: Seed = None, close: bool = True,
                    **act_kw) -> dict[int, float]:
    """Closed-loop success rate per task over ``episodes`` episodes of each task ``0..n_tasks-1``.

    ``make_env(task)`` builds one environment per task (its ``reset(seed=...)`` draws the episode's
    initial state; ``info["success"]`` marks success); each round runs one episode of every task in lockstep.
    ``policy.act(obs [B, history, obs_dim], tasks [B], seed=...)`` returns chunks ``[B, T, A]`` of which the
    first ``n_exec`` (default: all) actions are executed before re-planning. An episode succeeds if
    ``info["success"]`` is true at any step within ``max_steps``. The environments are closed at the end unless
    ``close=False`` (for a ``make_env`` that hands out cached environments).
    """
    check_callable(make_env, "make_env")
    n_tasks = check_scalar(n_tasks, "n_tasks", "int", min=1)
    episodes = check_scalar(episodes, "episodes", "int", min=1)
    max_steps = check_scalar(max_steps, "max_steps", "int", min=1)
    close = check_bool(close, "close")
    if not callable(getattr(policy, "act", None)):
        raise TypeError(f"policy must have an act(obs, tasks) method, got {type(policy).__name__}")
    rng = as_generator(seed)
    envs = [make_env(t) for t in range(n_tasks)]
    tasks = torch.arange(n_tasks)
    dtype = next(policy.parameters()).dtype
    success = np.zeros((episodes, n_tasks), bool)
    for ep in range(episodes):
        hist = [[np.asarray(env.reset(seed=int_seed(rng))[0], dtype=np.float32)] * policy.history for env in envs]
        done = np.zeros(n_tasks, bool)
        t_env = np.zeros(n_tasks, int)
        while not done.all():
            live = np.flatnonzero(~done)
            obs = torch.tensor(np.stack([np.stack(hist[i][-policy.history:]) for i in live]), dtype=dtype)
            chunks = policy.act(obs, tasks[live], seed=int_seed(rng), **act_kw).double().numpy()
            n = chunks.shape[1] if n_exec is None else check_scalar(n_exec, "n_exec", "int", min=1,
                                                                     max=chunks.shape[1])
            for j, i in enumerate(live):
                for a in chunks[j, :n]:
                    o, _, terminated, truncated, info = envs[i].step(np.clip(a, -1, 1).astype(np.float32))
                    hist[i].append(np.asarray(o, dtype=np.float32))
                    t_env[i] += 1
                    success[ep, i] = bool(info.get("success"))
                    if success[ep, i] or terminated or truncated or t_env[i] >= max_steps:
                        done[i] = True
                        break
    for env in envs if close else ():
        env.close()
    return {t: float(success[:, t].mean()) for t in range(n_tasks)}
