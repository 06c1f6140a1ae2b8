"""Twin Delayed DDPG (Fujimoto et al., 2018) in the shape of CleanRL's ``td3_continuous_action.py``
(docs.cleanrl.dev/rl-algorithms/td3).

``TD3Args`` holds CleanRL's hyperparameters under CleanRL's names and defaults; ``TD3Agent`` holds the
deterministic actor, the twin critics, their target copies and optimisers, with ``act`` (Gaussian
exploration noise of ``exploration_noise * action_scale``) and ``update`` (clipped double-Q target with
target-policy smoothing; the actor and the Polyak-averaged targets every ``policy_frequency`` updates);
``train_td3`` is CleanRL's loop on one gymnasium environment with ``Box`` observation and action spaces.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml25.rl._common import check_box, check_obs
from icml25.rl.buffers import ReplayBuffer, ReplayBufferSamples
from icml25.rl.tabular_q import check_rewards
from icml25.utils.random import Seed, as_generator, init_rng, int_seed, torch_generator
from icml25.utils.validation import check_bool, check_instance, check_scalar

__all__ = ["TD3Agent", "TD3Args", "train_td3"]


@dataclass
class TD3Args:
    """CleanRL ``td3_continuous_action.py``'s hyperparameters (its defaults; ``hidden``: the MLP width)."""

    total_timesteps: int = 1_000_000
    learning_rate: float = 3e-4
    buffer_size: int = 1_000_000
    gamma: float = 0.99
    tau: float = 0.005
    batch_size: int = 256
    policy_noise: float = 0.2
    exploration_noise: float = 0.1
    learning_starts: int = 25_000
    policy_frequency: int = 2
    noise_clip: float = 0.5
    hidden: int = 256

    def __post_init__(self) -> None:
        for name in ("total_timesteps", "buffer_size", "batch_size", "policy_frequency", "hidden"):
            setattr(self, name, check_scalar(getattr(self, name), name, "int", min=1))
        self.learning_starts = check_scalar(self.learning_starts, "learning_starts", "int", min=0)
        self.learning_rate = check_scalar(self.learning_rate, "learning_rate", "real", min=0, inclusive="neither")
        self.gamma = check_scalar(self.gamma, "gamma", "real", min=0, max=1)
        self.tau = check_scalar(self.tau, "tau", "real", min=0, max=1, inclusive="right")
        for name in ("policy_noise", "exploration_noise", "noise_clip"):
            setattr(self, name, check_scalar(getattr(self, name), name, "real", min=0))


def _frozen(net: nn.Module) -> nn.Module:
    target = copy.deepcopy(net)
    target.requires_grad_(False)
    return target


class TD3Agent:
    """Actor ``obs -> tanh(.) * action_scale + action_bias`` and twin critics ``(obs, action) -> Q``.

    Parameters
    ----------
    observation_space : a ``Box`` space; action_space : a bounded ``Box`` space (else ``TypeError`` /
        ``ValueError``); args : :class:`TD3Args` (default CleanRL's); seed : weights and noise.
    """

    def __init__(self, observation_space: Any, action_space: Any, args: TD3Args | None = None,
                 seed: Seed = None) -> None:
        obs_dim = int(np.prod(check_box(observation_space, "observation_space")))
        act_dim = int(np.prod(check_box(action_space, "action_space")))
        if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
            raise ValueError(f"action_space must be bounded, got {action_space!r}")
        self.args = TD3Args() if args is None else check_instance(args, "args", TD3Args)
        self.observation_space, self.action_space = observation_space, action_space
        h = self.args.hidden

        def critic() -> nn.Module:
            return nn.Sequential(nn.Linear(obs_dim + act_dim, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                                 nn.Linear(h, 1))

        with init_rng(int_seed(seed)):
            self.actor = nn.Sequential(nn.Linear(obs_dim, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                                       nn.Linear(h, act_dim), nn.Tanh())
            self.qf1, self.qf2 = critic(), critic()
        self.target_actor, self.qf1_target, self.qf2_target = _frozen(self.actor), _frozen(self.qf1), _frozen(self.qf2)
        self.action_scale = torch.as_tensor((action_space.high - action_space.low) / 2.0, dtype=torch.float32)
        self.action_bias = torch.as_tensor((action_space.high + action_space.low) / 2.0, dtype=torch.float32)
        self.q_optimizer = torch.optim.Adam([*self.qf1.parameters(), *self.qf2.parameters()],
                                            lr=self.args.learning_rate)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=self.args.learning_rate)
        self.rng = as_generator(seed)
        self.generator = torch_generator(int(self.rng.integers(2**31)))
        self.n_updates = 0

    def _policy(self, actor: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return actor(obs.flatten(1)) * self.action_scale + self.action_bias

    def act(self, obs: Any, explore: bool = False) -> np.ndarray:
        """The actor's action, plus ``N(0, (exploration_noise * action_scale)^2)`` and clipping when ``explore``."""
        obs = torch.as_tensor(check_obs(obs, self.observation_space))[None]
        with torch.no_grad():
            action = self._policy(self.actor, obs)[0].numpy()
        if check_bool(explore, "explore"):
            action = action + self.rng.normal(0.0, self.action_scale.numpy() * self.args.exploration_noise)
        low, high = self.action_space.low, self.action_space.high
        return np.clip(action, low, high).reshape(self.action_space.shape).astype(self.action_space.dtype)

    def _q(self, qf: nn.Module, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return qf(torch.cat([obs.flatten(1), actions.flatten(1)], dim=1)).squeeze(1)

    def update(self, batch: ReplayBufferSamples, rewards: Any) -> dict[str, float]:
        """One critic step on ``batch`` with ``rewards``; every ``policy_frequency``-th call also the actor
        (deterministic policy gradient through ``qf1``) and the Polyak averaging of all targets."""
        rewards = torch.as_tensor(check_rewards(rewards, batch), dtype=torch.float32)
        a = self.args
        obs = torch.as_tensor(batch.observations, dtype=torch.float32)
        next_obs = torch.as_tensor(batch.next_observations, dtype=torch.float32)
        actions = torch.as_tensor(batch.actions, dtype=torch.float32)
        with torch.no_grad():
            noise = torch.randn(actions.shape, generator=self.generator) * a.policy_noise
            noise = noise.clamp(-a.noise_clip, a.noise_clip) * self.action_scale
            low, high = self.action_bias - self.action_scale, self.action_bias + self.action_scale
            next_actions = (self._policy(self.target_actor, next_obs) + noise).clamp(low, high)
            min_target = torch.min(self._q(self.qf1_target, next_obs, next_actions),
                                   self._q(self.qf2_target, next_obs, next_actions))
            next_q = rewards + (1 - torch.as_tensor(batch.dones)) * a.gamma * min_target
        qf1_a, qf2_a = self._q(self.qf1, obs, actions), self._q(self.qf2, obs, actions)
        qf_loss = F.mse_loss(qf1_a, next_q) + F.mse_loss(qf2_a, next_q)
        self.q_optimizer.zero_grad()
        qf_loss.backward()
        self.q_optimizer.step()
        self.n_updates += 1
        out = {"qf_loss": float(qf_loss.detach()), "qf1_values": float(qf1_a.detach().mean())}
        if self.n_updates % a.policy_frequency == 0:
            actor_loss = -self._q(self.qf1, obs, self._policy(self.actor, obs)).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
            with torch.no_grad():
                for net, target in ((self.actor, self.target_actor), (self.qf1, self.qf1_target),
                                    (self.qf2, self.qf2_target)):
                    for p, tp in zip(net.parameters(), target.parameters(), strict=True):
                        tp.mul_(1 - a.tau).add_(a.tau * p)
            out["actor_loss"] = float(actor_loss.detach())
        return out


def train_td3(env: gymnasium.Env, args: TD3Args | None = None, seed: Seed = 1) -> tuple[TD3Agent, np.ndarray]:
    """CleanRL's TD3 loop on ``env``; returns the agent and the ``(global_step, episodic_return)`` rows.

    Uniformly random actions for ``learning_starts`` steps, then the noisy actor; one update per step
    after that; terminations (not truncations) cut the bootstrap.
    """
    check_instance(env, "env", gymnasium.Env)
    args = TD3Args() if args is None else check_instance(args, "args", TD3Args)
    seed = int_seed(seed)
    agent = TD3Agent(env.observation_space, env.action_space, args, seed=seed)
    rb = ReplayBuffer(args.buffer_size, env.observation_space, env.action_space, seed=seed + 1)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    episodes, ep_return, ep_count = [], 0.0, 0
    for global_step in range(args.total_timesteps):
        if global_step < args.learning_starts:
            action = env.action_space.sample()
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
        if global_step > args.learning_starts:
            data = rb.sample(args.batch_size)
            agent.update(data, data.rewards)
    return agent, np.array(episodes, dtype=float).reshape(-1, 2)
