"""Tabular Q-learning (Watkins & Dayan, 1992) as an off-policy learner over replayed transitions.

One table ``q[s, a]``, epsilon-greedy behaviour, and the update
``q[s, a] += learning_rate * (r + gamma * (1 - done) * max_a' q[s', a'] - q[s, a])`` applied to a batch of
transitions with rewards the caller chooses (the extrinsic reward, or a reward plus a scaled intrinsic
bonus): the same ``act`` / ``update`` pair as :class:`icml25.rl.DQNAgent` and :class:`icml25.rl.TD3Agent`,
so the exploration schemes of :mod:`icml25.rl.hyper_exploration` run on any of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from icml25.rl.buffers import ReplayBufferSamples
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar

__all__ = ["TabularQ"]


def check_rewards(rewards: Any, batch: ReplayBufferSamples) -> np.ndarray:
    """``rewards`` as a finite 1-d float array with one entry per transition of ``batch``."""
    check_instance(batch, "batch", ReplayBufferSamples)
    rewards = check_array(rewards, "rewards", ndim=1, dtype=float)
    if len(rewards) != len(batch):
        raise ValueError(f"rewards must have one entry per transition of batch ({len(batch)}), got {len(rewards)}")
    return rewards


class TabularQ:
    """An epsilon-greedy Q-table for ``Discrete`` observation and action spaces.

    Parameters
    ----------
    observation_space, action_space : gymnasium ``Discrete`` spaces (anything else is a ``TypeError``).
    learning_rate : the step size (0.1).
    gamma : the discount (0.99).
    epsilon : the behaviour's exploration rate, ``act(obs, explore=True)`` (0.05).
    q_init : the initial value of every entry (0).
    seed : the behaviour's randomness; ties of the greedy action break at random too.
    """

    def __init__(self, observation_space: Any, action_space: Any, learning_rate: float = 0.1, gamma: float = 0.99,
                 epsilon: float = 0.05, q_init: float = 0.0, seed: Seed = None) -> None:
        import gymnasium

        for name, space in (("observation_space", observation_space), ("action_space", action_space)):
            if not isinstance(space, gymnasium.spaces.Discrete):
                raise TypeError(f"{name} must be a gymnasium Discrete space for a Q-table, got {space!r}")
        self.observation_space, self.action_space = observation_space, action_space
        self.learning_rate = check_scalar(learning_rate, "learning_rate", "real", min=0, max=1, inclusive="right")
        self.gamma = check_scalar(gamma, "gamma", "real", min=0, max=1)
        self.epsilon = check_scalar(epsilon, "epsilon", "real", min=0, max=1)
        q_init = check_scalar(q_init, "q_init", "real")
        self.q = np.full((int(observation_space.n), int(action_space.n)), q_init)
        self.rng = as_generator(seed)

    def _act(self, obs: int, explore: bool) -> int:
        if explore and self.rng.random() < self.epsilon:
            return int(self.rng.integers(self.q.shape[1]))
        row = self.q[obs]
        best = np.flatnonzero(row == row.max())
        return int(best[0] if len(best) == 1 else self.rng.choice(best))

    def act(self, obs: int, explore: bool = False) -> int:
        """The greedy action at ``obs`` (ties at random), or an epsilon-greedy one when ``explore``."""
        if isinstance(obs, (bool, np.bool_)) or not isinstance(obs, (int, np.integer)) or not 0 <= obs < len(self.q):
            raise ValueError(f"obs must be an integer in [0, {self.q.shape[0] - 1}], got {obs!r}")
        return self._act(int(obs), check_bool(explore, "explore"))

    def update(self, batch: ReplayBufferSamples, rewards: Any) -> dict[str, float]:
        """One Q-learning step on every transition of ``batch`` with ``rewards`` (repeated pairs add up)."""
        rewards = check_rewards(rewards, batch)
        return self._update(batch, rewards)

    def _update(self, batch: ReplayBufferSamples, rewards: np.ndarray) -> dict[str, float]:
        s, a = batch.observations, batch.actions
        target = rewards + self.gamma * (1.0 - batch.dones) * self.q[batch.next_observations].max(axis=1)
        td = target - self.q[s, a]
        np.add.at(self.q, (s, a), self.learning_rate * td)
        return {"td_abs": float(np.abs(td).sum()) / len(td)}
