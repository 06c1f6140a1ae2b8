"""Seeding and evaluation around gymnasium environments.

``FixedSeedReset`` holds a procedurally generated layout (a MiniGrid maze) constant by resetting with the
same seed every episode; ``evaluate_policy`` runs a policy for a few episodes and returns their
statistics (``EpisodeStats``), the way CleanRL's ``evaluate`` helpers do after training.  Per-episode
statistics during training come from gymnasium's own ``RecordEpisodeStatistics`` wrapper.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np

from icml25.utils.random import Seed, int_seed
from icml25.utils.validation import check_callable, check_instance, check_scalar

__all__ = ["EpisodeStats", "FixedSeedReset", "evaluate_policy"]


class FixedSeedReset(gymnasium.Wrapper):
    """Reset the wrapped environment with ``seed`` every episode, whatever seed ``reset`` is given.

    A MiniGrid environment draws its layout from the reset seed, so this holds one layout fixed (a
    tabular or a quick deep-RL test).  A seed given to ``reset`` then reseeds the environment's
    ``np_random`` for the rest of the episode (after the layout is built), so ``reset(seed=)`` keeps
    gymnasium's meaning for everything but the layout.
    """

    def __init__(self, env: gymnasium.Env, seed: int = 0) -> None:
        check_instance(env, "env", gymnasium.Env)
        super().__init__(env)
        self.fixed_seed = check_scalar(seed, "seed", "int", min=0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        """Reset with the fixed seed; then reseed ``np_random`` from ``seed`` (an int >= 0) if it is given."""
        if seed is not None:
            seed = check_scalar(seed, "seed", "int", min=0)
        if options is not None:
            check_instance(options, "options", dict)
        out = self.env.reset(seed=self.fixed_seed, options=options)
        if seed is not None:
            self.env.unwrapped.np_random = np.random.default_rng(seed)
        return out


@dataclass(frozen=True)
class EpisodeStats:
    """Returns and lengths of evaluation episodes, and whether each ended by termination."""

    returns: np.ndarray
    lengths: np.ndarray
    terminated: np.ndarray

    @property
    def mean_return(self) -> float:
        return float(self.returns.mean())


def evaluate_policy(env: gymnasium.Env, policy: Callable[[Any], Any], n_episodes: int = 1,
                    seed: Seed = 0) -> EpisodeStats:
    """Run ``policy(obs) -> action`` for ``n_episodes`` episodes on ``env`` (reset with seeds drawn from ``seed``).

    The environment must end its episodes (terminate, or truncate through a time limit).
    """
    check_instance(env, "env", gymnasium.Env)
    check_callable(policy, "policy")
    n_episodes = check_scalar(n_episodes, "n_episodes", "int", min=1)
    first = int_seed(seed)
    returns, lengths, terms = [], [], []
    for i in range(n_episodes):
        obs, _ = env.reset(seed=first + i)
        total, length, terminated, truncated = 0.0, 0, False, False
        while not (terminated or truncated):
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total, length = total + float(reward), length + 1
        returns.append(total)
        lengths.append(length)
        terms.append(terminated)
    return EpisodeStats(np.array(returns), np.array(lengths), np.array(terms))
