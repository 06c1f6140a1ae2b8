"""Deep Q-Network (Mnih et al., 2015) in the shape of CleanRL's ``dqn.py`` (docs.cleanrl.dev/rl-algorithms/dqn).

``DQNArgs`` holds CleanRL's hyperparameters under CleanRL's names and defaults; ``DQNAgent`` is the
Q-network, its target copy and the optimiser with ``act`` (epsilon-greedy on CleanRL's linear schedule)
and ``update`` (one TD step on a replayed batch with the caller's rewards, the target network copied
every ``target_network_frequency`` environment steps); ``train_dqn`` is CleanRL's loop, top to bottom,
on one gymnasium environment with a ``Box`` observation and ``Discrete`` action space.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.rl._common import check_box, check_discrete, check_obs, linear_schedule
from icml25.rl.buffers import ReplayBuffer, ReplayBufferSamples
from icml25.rl.tabular_q import check_rewards
from icml25.utils.random import Seed, as_generator, init_rng, int_seed
from icml25.utils.validation import check_bool, check_instance, check_scalar

__all__ = ["DQNAgent", "DQNArgs", "train_dqn"]


@dataclass
class DQNArgs:
    """CleanRL ``dqn.py``'s hyperparameters (its defaults; ``hidden`` is the two layer widths)."""

    total_timesteps: int = 500_000
    learning_rate: float = 2.5e-4
    buffer_size: int = 10_000
    gamma: float = 0.99
    tau: float = 1.0
    target_network_frequency: int = 500
    batch_size: int = 128
    start_e: float = 1.0
    end_e: float = 0.05
    exploration_fraction: float = 0.5
    learning_starts: int = 10_000
    train_frequency: int = 10
    hidden: tuple[int, int] = (120, 84)

    def __post_init__(self) -> None:
        for name in ("total_timesteps", "buffer_size", "target_network_frequency", "batch_size", "train_frequency"):
            setattr(self, name, check_scalar(getattr(self, name), name, "int", min=1))
        self.learning_starts = check_scalar(self.learning_starts, "learning_starts", "int", min=0)
        self.learning_rate = check_scalar(self.learning_rate, "learning_rate", "real", min=0, inclusive="neither")
        for name in ("gamma", "start_e", "end_e", "exploration_fraction"):
            setattr(self, name, check_scalar(getattr(self, name), name, "real", min=0, max=1))
        self.tau = check_scalar(self.tau, "tau", "real", min=0, max=1, inclusive="right")
        if not isinstance(self.hidden, (tuple, list)) or len(self.hidden) != 2:
            raise ValueError(f"hidden must be two layer widths, got {self.hidden!r}")
        self.hidden = tuple(check_scalar(h, "hidden", "int", min=1) for h in self.hidden)


class DQNAgent:
    """A Q-network ``obs -> Q(obs, .)`` (an MLP with ReLU), its target network and Adam.

    Parameters
    ----------
    observation_space : a ``Box`` space (flattened into the MLP's input).
    action_space : a ``Discrete`` space (anything else is a ``TypeError``).
    args : the hyperparameters (:class:`DQNArgs`; default CleanRL's).
    seed : the weights and the exploration randomness.
    """

    def __init__(self, observation_space: Any, action_space: Any, args: DQNArgs | None = None,
                 seed: Seed = None) -> None:
        shape = check_box(observation_space, "observation_space")
        n_actions = check_discrete(action_space, "action_space")
        self.args = DQNArgs() if args is None else check_instance(args, "args", DQNArgs)
        self.observation_space, self.action_space = observation_space, action_space
        h1, h2 = self.args.hidden
        with init_rng(int_seed(seed)):
            self.q_network = nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(shape)), h1), nn.ReLU(),
                                           nn.Linear(h1, h2), nn.ReLU(), nn.Linear(h2, n_actions))
        self.target_network = _copy(self.q_network)
        self.optimizer = torch.optim.Adam(self.q_network.parameters(), lr=self.args.learning_rate)
        self.rng = as_generator(seed)
        self.env_steps = 0  # act(explore=True) calls: the clock of the epsilon and target schedules
        self.n_updates = 0

    @property
    def epsilon(self) -> float:
        a = self.args
        return linear_schedule(a.start_e, a.end_e, a.exploration_fraction * a.total_timesteps, self.env_steps)

    def act(self, obs: Any, explore: bool = False) -> int:
        """The greedy action, or (``explore``) an epsilon-greedy one on the linear schedule; a step of its clock."""
        obs = check_obs(obs, self.observation_space)
        if check_bool(explore, "explore"):
            eps = self.epsilon
            self.env_steps += 1
            if self.rng.random() < eps:
                return int(self.rng.integers(self.action_space.n))
        with torch.no_grad():
            return int(self.q_network(torch.as_tensor(obs)[None]).argmax(dim=1)[0])

    def update(self, batch: ReplayBufferSamples, rewards: Any) -> dict[str, float]:
        """One TD step: ``loss = MSE(Q(s, a), r + gamma (1 - done) max_a' Q_target(s', a'))``."""
        rewards = torch.as_tensor(check_rewards(rewards, batch), dtype=torch.float32)
        obs = torch.as_tensor(batch.observations, dtype=torch.float32)
        next_obs = torch.as_tensor(batch.next_observations, dtype=torch.float32)
        with torch.no_grad():
            target_max = self.target_network(next_obs).max(dim=1).values
            td_target = rewards + self.args.gamma * target_max * (1 - torch.as_tensor(batch.dones))
        old_val = self.q_network(obs).gather(1, torch.as_tensor(batch.actions, dtype=torch.int64)[:, None]).squeeze(1)
        loss = F.mse_loss(td_target, old_val)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.n_updates += 1
        period = max(1, self.args.target_network_frequency // self.args.train_frequency)
        if self.n_updates % period == 0:
            _soft_update(self.target_network, self.q_network, self.args.tau)
        return {"td_loss": float(loss.detach()), "q_values": float(old_val.detach().mean())}


def _copy(net: nn.Module) -> nn.Module:
    import copy

    target = copy.deepcopy(net)
    target.requires_grad_(False)
    return target


def _soft_update(target: nn.Module, source: nn.Module, tau: float) -> None:
    with torch.no_grad():
        for t, s in zip(target.parameters(), source.parameters(), strict=True):
            t.mul_(1.0 - tau).add_(tau * s)


def train_dqn(env: gymnasium.Env, args: DQNArgs | None = None, seed: Seed = 1) -> tuple[DQNAgent, np.ndarray]:
    """CleanRL's DQN loop on ``env``; returns the agent and the ``(global_step, episodic_return)`` rows.

    Random actions for ``learning_starts`` steps, then epsilon-greedy; one TD step every
    ``train_frequency`` steps on a batch of ``batch_size``; terminations (not truncations) cut the bootstrap.
    """
    check_instance(env, "env", gymnasium.Env)
    args = DQNArgs() if args is None else check_instance(args, "args", DQNArgs)
    seed = int_seed(seed)
    agent = DQNAgent(env.observation_space, env.action_space, args, seed=seed)
    rb = ReplayBuffer(args.buffer_size, env.observation_space, env.action_space, seed=seed + 1)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    episodes, ep_return, ep_count = [], 0.0, 0
    for global_step in range(args.total_timesteps):
        if global_step < args.learning_starts:
            action = env.action_space.sample()
            agent.env_steps += 1
        else:
            action = agent.act(obs, explore=True)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        ep_return += float(reward)
        rb._add(obs, next_obs, action, reward, terminated)
        obs = next_obs
        if terminated or truncated:
            episodes.append((global_step + 1, ep_return))
            ep_count += 1
            obs, ep_return = env.reset(seed=seed + ep_count)[0], 0.0
        if global_step > args.learning_starts and global_step % args.train_frequency == 0:
            data = rb.sample(args.batch_size)
            agent.update(data, data.rewards)
    return agent, np.array(episodes, dtype=float).reshape(-1, 2)
