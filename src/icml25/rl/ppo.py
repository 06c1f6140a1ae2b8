"""Proximal Policy Optimization (Schulman et al., 2017) in the shape of CleanRL's ``ppo.py``
(docs.cleanrl.dev/rl-algorithms/ppo): discrete actions, synchronous vector environments, GAE,
clipped surrogate and value losses, advantage normalisation, learning-rate annealing.

``PPOArgs`` holds CleanRL's hyperparameters under CleanRL's names and defaults; ``PPOAgent`` is CleanRL's
actor-critic ``nn.Module`` (two tanh MLPs, orthogonal initialisation); ``train_ppo`` is the loop, top to
bottom, on ``num_envs`` copies of ``env_fn()`` in a gymnasium ``SyncVectorEnv``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
import torch
from torch import nn

from icml25.rl._common import check_box, check_discrete
from icml25.utils.random import Seed, init_rng, int_seed, torch_generator
from icml25.utils.validation import check_bool, check_callable, check_instance, check_scalar, check_tensor

__all__ = ["PPOAgent", "PPOArgs", "train_ppo"]


@dataclass
class PPOArgs:
    """CleanRL ``ppo.py``'s hyperparameters (its defaults; ``target_kl=None`` disables early stopping)."""

    total_timesteps: int = 500_000
    learning_rate: float = 2.5e-4
    num_envs: int = 4
    num_steps: int = 128
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    target_kl: float | None = None

    def __post_init__(self) -> None:
        for name in ("anneal_lr", "norm_adv", "clip_vloss"):
            setattr(self, name, check_bool(getattr(self, name), name))
        for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs"):
            setattr(self, name, check_scalar(getattr(self, name), name, "int", min=1))
        self.learning_rate = check_scalar(self.learning_rate, "learning_rate", "real", min=0, inclusive="neither")
        for name in ("gamma", "gae_lambda"):
            setattr(self, name, check_scalar(getattr(self, name), name, "real", min=0, max=1))
        for name in ("clip_coef", "ent_coef", "vf_coef", "max_grad_norm"):
            setattr(self, name, check_scalar(getattr(self, name), name, "real", min=0))
        if self.target_kl is not None:
            self.target_kl = check_scalar(self.target_kl, "target_kl", "real", min=0, inclusive="neither")
        if self.batch_size % self.num_minibatches:
            raise ValueError(f"num_minibatches must divide num_envs * num_steps = {self.batch_size}, "
                             f"got {self.num_minibatches}")

    @property
    def batch_size(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def minibatch_size(self) -> int:
        return self.batch_size // self.num_minibatches

    @property
    def num_iterations(self) -> int:
        return max(1, self.total_timesteps // self.batch_size)


def _layer(n_in: int, n_out: int, std: float = float(np.sqrt(2)), bias_const: float = 0.0) -> nn.Linear:
    layer = nn.Linear(n_in, n_out)
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class PPOAgent(nn.Module):
    """CleanRL's actor-critic: ``critic`` and ``actor`` MLPs (``hidden`` tanh units, orthogonal init).

    ``observation_space`` must be a ``Box`` and ``action_space`` a ``Discrete`` space (else ``TypeError``).
    """

    def __init__(self, observation_space: Any, action_space: Any, hidden: int = 64, seed: Seed = None) -> None:
        super().__init__()
        obs_dim = int(np.prod(check_box(observation_space, "observation_space")))
        self.obs_shape = tuple(observation_space.shape)
        n_actions = check_discrete(action_space, "action_space")
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        with init_rng(seed):
            self.critic = nn.Sequential(_layer(obs_dim, hidden), nn.Tanh(), _layer(hidden, hidden), nn.Tanh(),
                                        _layer(hidden, 1, std=1.0))
            self.actor = nn.Sequential(_layer(obs_dim, hidden), nn.Tanh(), _layer(hidden, hidden), nn.Tanh(),
                                       _layer(hidden, n_actions, std=0.01))

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """The critic's value of each row of ``x`` (shape ``(batch, 1)``)."""
        return self.critic(self._check(x).flatten(1))

    def _check(self, x: Any) -> torch.Tensor:
        check_tensor(x, "x", ndim=1 + len(self.obs_shape), shape=(None, *self.obs_shape), floating=True, finite=True)
        if len(x) == 0:
            raise ValueError("x must hold at least one observation, got an empty batch")
        return x

    def get_action_and_value(self, x: torch.Tensor, action: torch.Tensor | None = None,
                             generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
        """``(action, log_prob, entropy, value)``; the action is sampled (with ``generator``) unless given."""
        x = self._check(x)
        logits = self.actor(x.flatten(1))
        probs = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = torch.multinomial(probs.probs, 1, generator=generator).squeeze(1)
        return action, probs.log_prob(action), probs.entropy(), self.critic(x.flatten(1))


def train_ppo(env_fn: Callable[[], gymnasium.Env], args: PPOArgs | None = None,
              seed: Seed = 1) -> tuple[PPOAgent, np.ndarray]:
    """CleanRL's PPO loop on ``args.num_envs`` copies of ``env_fn()``; returns the agent and the
    ``(global_step, episodic_return)`` rows of the finished episodes."""
    check_callable(env_fn, "env_fn")
    args = PPOArgs() if args is None else check_instance(args, "args", PPOArgs)
    seed = int_seed(seed)
    envs = gymnasium.vector.SyncVectorEnv([env_fn for _ in range(args.num_envs)],
                                          autoreset_mode=gymnasium.vector.AutoresetMode.SAME_STEP)
    try:
        return _train(envs, args, seed)
    finally:
        envs.close()


def _train(envs: gymnasium.vector.VectorEnv, args: PPOArgs, seed: int) -> tuple[PPOAgent, np.ndarray]:
    agent = PPOAgent(envs.single_observation_space, envs.single_action_space, seed=seed)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    generator = torch_generator(seed + 1)
    obs_shape = envs.single_observation_space.shape
    obs = torch.zeros((args.num_steps, args.num_envs, *obs_shape))
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.int64)
    logprobs, rewards, dones, values = (torch.zeros((args.num_steps, args.num_envs)) for _ in range(4))
    next_obs = torch.as_tensor(envs.reset(seed=seed)[0], dtype=torch.float32)
    next_done = torch.zeros(args.num_envs)
    episodes, ep_returns, global_step = [], np.zeros(args.num_envs), 0
    for iteration in range(1, args.num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / args.num_iterations) * args.learning_rate
        for step in range(args.num_steps):  # rollout
            global_step += args.num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs, generator=generator)
            values[step], actions[step], logprobs[step] = value.flatten(), action, logprob
            raw_obs, reward, terminations, truncations, _ = envs.step(action.numpy())
            ep_returns += reward
            for i in np.flatnonzero(np.logical_or(terminations, truncations)):
                episodes.append((global_step, ep_returns[i]))
                ep_returns[i] = 0.0
            rewards[step] = torch.as_tensor(reward, dtype=torch.float32)
            next_obs = torch.as_tensor(raw_obs, dtype=torch.float32)
            next_done = torch.as_tensor(np.logical_or(terminations, truncations), dtype=torch.float32)
        with torch.no_grad():  # generalised advantage estimation
            next_value = agent.get_value(next_obs).flatten()
            advantages, lastgaelam = torch.zeros_like(rewards), 0.0
            for t in reversed(range(args.num_steps)):
                nextnonterminal = 1.0 - (next_done if t == args.num_steps - 1 else dones[t + 1])
                nextvalues = next_value if t == args.num_steps - 1 else values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values
        b_obs, b_actions = obs.reshape(-1, *obs_shape), actions.reshape(-1)
        b_logprobs, b_advantages = logprobs.reshape(-1), advantages.reshape(-1)
        b_returns, b_values = returns.reshape(-1), values.reshape(-1)
        for _ in range(args.update_epochs):  # optimise the policy and value network
            b_inds = torch.randperm(args.batch_size, generator=generator)
            approx_kl = torch.zeros(())
            for start in range(0, args.batch_size, args.minibatch_size):
                mb = b_inds[start:start + args.minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    approx_kl = ((ratio - 1) - logratio).mean()
                mb_adv = b_advantages[mb]
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio,
                                    -mb_adv * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_clipped = b_values[mb] + (newvalue - b_values[mb]).clamp(-args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
            if args.target_kl is not None and approx_kl > args.target_kl:
                break
    return agent, np.array(episodes, dtype=float).reshape(-1, 2)
