"""A replay buffer in CleanRL's (Stable-Baselines3's) terms: ``add`` one transition, ``sample`` a batch.

NumPy in, NumPy out; learners move the batch to their device.  One environment (no vector axis): the
shape of a stored observation is the observation space's shape.  ``reward`` is stored as given; a
learner that needs a different reward (an intrinsic bonus recomputed at sampling time, as in Hyper)
passes its own rewards to its ``update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_scalar

__all__ = ["ReplayBuffer", "ReplayBufferSamples"]


@dataclass(frozen=True)
class ReplayBufferSamples:
    """A batch of transitions (CleanRL's field names): arrays with the batch on axis 0."""

    observations: np.ndarray
    actions: np.ndarray
    next_observations: np.ndarray
    dones: np.ndarray
    rewards: np.ndarray

    def __len__(self) -> int:
        return len(self.rewards)


def _space_shape_dtype(space: Any, name: str) -> tuple[tuple[int, ...], np.dtype]:
    import gymnasium

    if not isinstance(space, gymnasium.spaces.Space):
        raise TypeError(f"{name} must be a gymnasium space, got {type(space).__name__}")
    if isinstance(space, gymnasium.spaces.Discrete):
        return (), np.dtype(np.int64)
    if not isinstance(space, (gymnasium.spaces.Box, gymnasium.spaces.MultiDiscrete, gymnasium.spaces.MultiBinary)):
        raise TypeError(f"{name} must be a Discrete, Box, MultiDiscrete or MultiBinary space, got {space}")
    return tuple(space.shape), np.dtype(space.dtype)


class ReplayBuffer:
    """A circular buffer of ``buffer_size`` transitions ``(obs, next_obs, action, reward, done)``.

    Parameters
    ----------
    buffer_size : capacity; the oldest transition is overwritten when it is full.
    observation_space, action_space : gymnasium spaces fixing the stored shapes and dtypes.
    seed : the sampling randomness.
    """

    def __init__(self, buffer_size: int, observation_space: Any, action_space: Any, seed: Seed = None) -> None:
        self.buffer_size = check_scalar(buffer_size, "buffer_size", "int", min=1)
        obs_shape, obs_dtype = _space_shape_dtype(observation_space, "observation_space")
        act_shape, act_dtype = _space_shape_dtype(action_space, "action_space")
        self.observation_space, self.action_space = observation_space, action_space
        self.observations = np.zeros((self.buffer_size, *obs_shape), dtype=obs_dtype)
        self.next_observations = np.zeros_like(self.observations)
        self.actions = np.zeros((self.buffer_size, *act_shape), dtype=act_dtype)
        self.rewards = np.zeros(self.buffer_size, dtype=np.float32)
        self.dones = np.zeros(self.buffer_size, dtype=np.float32)
        self.pos, self.full = 0, False
        self.rng = as_generator(seed)

    def __len__(self) -> int:
        return self.buffer_size if self.full else self.pos

    def add(self, obs: Any, next_obs: Any, action: Any, reward: float, done: bool) -> None:
        """Store one transition; ``done`` is the *termination* flag (a time-limit truncation is not done)."""
        obs = check_array(obs, "obs", shape=self.observations.shape[1:])
        next_obs = check_array(next_obs, "next_obs", shape=self.observations.shape[1:])
        action = check_array(action, "action", shape=self.actions.shape[1:])
        if not self.action_space.contains(action.astype(self.actions.dtype)) or not np.array_equal(
                action, action.astype(self.actions.dtype)):
            raise ValueError(f"action must lie in the action space {self.action_space}, got {action!r}")
        reward = check_scalar(reward, "reward", "real")
        self._add(obs, next_obs, action, reward, check_bool(done, "done"))

    def _add(self, obs: Any, next_obs: Any, action: Any, reward: float, done: bool) -> None:
        """``add`` without the checks, for a training loop whose data comes from a checked environment."""
        i = self.pos
        self.observations[i], self.next_observations[i], self.actions[i] = obs, next_obs, action
        self.rewards[i], self.dones[i] = reward, float(done)
        self.pos = (self.pos + 1) % self.buffer_size
        self.full = self.full or self.pos == 0

    def sample(self, batch_size: int) -> ReplayBufferSamples:
        """``batch_size`` transitions drawn uniformly with replacement."""
        batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
        if len(self) == 0:
            raise ValueError("the buffer is empty: add transitions before sampling (batch_size has nothing to draw)")
        idx = self.rng.integers(0, len(self), size=batch_size)
        return ReplayBufferSamples(self.observations[idx], self.actions[idx], self.next_observations[idx],
                                   self.dones[idx], self.rewards[idx])
