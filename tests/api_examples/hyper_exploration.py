"""Valid calls of ``icml25.rl``: the core (buffer, wrappers, tabular Q, DQN, TD3, PPO) and Hyper's exploration."""

from functools import cache

import gymnasium
import numpy as np
import torch

from api_examples._core import Example, Exempt
from icml25 import rl

RNG = {"seed": "any seed is valid"}


def _rooms():
    return rl.DeceptiveRooms()


def _reset(env):
    env.reset(seed=0)
    return env


def _cartpole():
    return gymnasium.make("CartPole-v1")


def _pendulum():
    return gymnasium.make("Pendulum-v1")


def _batch():
    obs = np.array([14, 15, 20])
    return rl.ReplayBufferSamples(obs, np.array([0, 1, 2]), obs + 1, np.zeros(3, np.float32), np.ones(3, np.float32))


def _box_batch(obs_dim, actions):
    obs = np.linspace(-0.1, 0.1, 3 * obs_dim, dtype=np.float32).reshape(3, obs_dim)
    return rl.ReplayBufferSamples(obs, actions, obs, np.zeros(3, np.float32), np.ones(3, np.float32))


def _tabular(env, seed):
    return rl.TabularQ(env.observation_space, env.action_space, seed=seed)


def _dqn_args():
    return rl.DQNArgs(total_timesteps=60, learning_starts=20, buffer_size=60, batch_size=8, hidden=(8, 8))


def _td3_args():
    return rl.TD3Args(total_timesteps=40, learning_starts=20, buffer_size=40, batch_size=8, hidden=8)


def _ppo_args():
    return rl.PPOArgs(total_timesteps=32, num_envs=1, num_steps=16, num_minibatches=2, update_epochs=1)


@cache
def _dqn():
    env = _cartpole()
    return rl.DQNAgent(env.observation_space, env.action_space, _dqn_args(), seed=0)


@cache
def _td3():
    env = _pendulum()
    return rl.TD3Agent(env.observation_space, env.action_space, _td3_args(), seed=0)


@cache
def _ppo():
    env = _cartpole()
    return rl.PPOAgent(env.observation_space, env.action_space, hidden=8, seed=0)


def _buffer():
    buf = rl.ReplayBuffer(8, gymnasium.spaces.Box(-1, 1, (2,)), gymnasium.spaces.Discrete(3), seed=0)
    buf.add(np.zeros(2, np.float32), np.ones(2, np.float32), 1, 0.5, False)
    return buf


@cache
def _trained_hyper():
    agent = rl.Hyper(_tabular, rl.CountBonus(), beta=1.0, learning_starts=50, seed=0)
    agent.train(_rooms(), 200, eval_every=100)
    return agent


_TRANSITIONS = {"obs": np.array([1, 2, 3]), "action": np.array([0, 1, 0]), "next_obs": np.array([2, 3, 4])}


def _float_transitions():
    obs = np.linspace(-1, 1, 12).reshape(4, 3)
    return {"obs": obs, "action": np.array([0, 1, 0, 1]), "next_obs": obs + 0.1}


_SPACES = {"observation_space": "a gymnasium space object (checked by type)",
           "action_space": "a gymnasium space object (checked by type)"}

EXAMPLES = {
    # records
    "icml25.rl.ReplayBufferSamples": Exempt("record"),
    "icml25.rl.EpisodeStats": Exempt("record"),
    "icml25.rl.HyperHistory": Exempt("record"),
    # buffer and wrappers
    "icml25.rl.ReplayBuffer": Example(
        rl.ReplayBuffer, lambda: {"buffer_size": 4, "observation_space": gymnasium.spaces.Box(-1, 1, (2,)),
                                  "action_space": gymnasium.spaces.Discrete(3), "seed": 0}, positive=["buffer_size"]),
    "icml25.rl.ReplayBuffer.add": Example(
        lambda **kw: _buffer().add(**kw),
        lambda: {"obs": np.zeros(2, np.float32), "next_obs": np.ones(2, np.float32), "action": 2, "reward": 1.0,
                 "done": True}),
    "icml25.rl.ReplayBuffer.sample": Example(lambda **kw: _buffer().sample(**kw), {"batch_size": 4},
                                             positive=["batch_size"]),
    "icml25.rl.FixedSeedReset": Example(rl.FixedSeedReset, lambda: {"env": _rooms(), "seed": 3}, skip=RNG),
    "icml25.rl.FixedSeedReset.reset": Example(lambda **kw: rl.FixedSeedReset(_rooms(), 3).reset(**kw), {"seed": 1}),
    "icml25.rl.evaluate_policy": Example(
        rl.evaluate_policy, lambda: {"env": _rooms(), "policy": lambda obs: 2, "n_episodes": 2, "seed": 0},
        positive=["n_episodes"]),
    # the environment
    "icml25.rl.DeceptiveRooms": Example(rl.DeceptiveRooms, {"max_episode_steps": 50},
                                        positive=["max_episode_steps"]),
    "icml25.rl.DeceptiveRooms.reset": Example(lambda **kw: _rooms().reset(**kw), {"seed": 0}),
    "icml25.rl.DeceptiveRooms.step": Example(lambda **kw: _reset(_rooms()).step(**kw), {"action": 1}),
    # learners
    "icml25.rl.TabularQ": Example(
        rl.TabularQ, lambda: {"observation_space": gymnasium.spaces.Discrete(5),
                              "action_space": gymnasium.spaces.Discrete(2), "learning_rate": 0.1, "seed": 0},
        positive=["learning_rate"], nonneg=["gamma", "epsilon"]),
    "icml25.rl.TabularQ.act": Example(lambda **kw: _tabular(_rooms(), 0).act(**kw), {"obs": 14, "explore": True}),
    "icml25.rl.TabularQ.update": Example(lambda **kw: _tabular(_rooms(), 0).update(**kw),
                                         lambda: {"batch": _batch(), "rewards": np.array([0.0, 1.0, 0.5])}),
    "icml25.rl.DQNArgs": Example(rl.DQNArgs, {"total_timesteps": 100, "learning_rate": 1e-3, "hidden": (8, 8)},
                                 positive=["total_timesteps", "learning_rate", "buffer_size", "batch_size",
                                           "target_network_frequency", "train_frequency", "tau"],
                                 nonneg=["gamma", "start_e", "end_e", "exploration_fraction"]),
    "icml25.rl.DQNAgent": Example(rl.DQNAgent, lambda: {"observation_space": gymnasium.spaces.Box(-1, 1, (3,)),
                                                        "action_space": gymnasium.spaces.Discrete(2), "seed": 0},
                                  skip=_SPACES | {"args": "None or a DQNArgs (checked by type)"}),
    "icml25.rl.DQNAgent.act": Example(lambda **kw: _dqn().act(**kw),
                                      lambda: {"obs": np.zeros(4, np.float32), "explore": False}),
    "icml25.rl.DQNAgent.update": Example(
        lambda **kw: _dqn().update(**kw),
        lambda: {"batch": _box_batch(4, np.array([0, 1, 0])), "rewards": np.array([0.0, 1.0, 0.5])}),
    "icml25.rl.train_dqn": Example(rl.train_dqn, lambda: {"env": _cartpole(), "args": _dqn_args(), "seed": 0},
                                   timeout=20.0),
    "icml25.rl.TD3Args": Example(rl.TD3Args, {"total_timesteps": 100, "learning_rate": 1e-3, "hidden": 8},
                                 positive=["total_timesteps", "learning_rate", "buffer_size", "batch_size",
                                           "policy_frequency", "hidden", "tau"],
                                 nonneg=["gamma", "policy_noise", "exploration_noise", "noise_clip"]),
    "icml25.rl.TD3Agent": Example(rl.TD3Agent, lambda: {"observation_space": gymnasium.spaces.Box(-1, 1, (3,)),
                                                        "action_space": gymnasium.spaces.Box(-2, 2, (1,)), "seed": 0},
                                  skip=_SPACES | {"args": "None or a TD3Args (checked by type)"}),
    "icml25.rl.TD3Agent.act": Example(lambda **kw: _td3().act(**kw),
                                      lambda: {"obs": np.zeros(3, np.float32), "explore": True}),
    "icml25.rl.TD3Agent.update": Example(
        lambda **kw: _td3().update(**kw),
        lambda: {"batch": _box_batch(3, np.zeros((3, 1), np.float32)), "rewards": np.array([0.0, 1.0, 0.5])}),
    "icml25.rl.train_td3": Example(rl.train_td3, lambda: {"env": _pendulum(), "args": _td3_args(), "seed": 0},
                                   timeout=20.0),
    "icml25.rl.PPOArgs": Example(rl.PPOArgs, {"total_timesteps": 100, "num_envs": 2, "num_steps": 8},
                                 positive=["total_timesteps", "learning_rate", "num_envs", "num_steps",
                                           "num_minibatches", "update_epochs"],
                                 nonneg=["gamma", "gae_lambda", "clip_coef", "ent_coef", "vf_coef", "max_grad_norm"]),
    "icml25.rl.PPOAgent": Example(rl.PPOAgent, lambda: {"observation_space": gymnasium.spaces.Box(-1, 1, (3,)),
                                                        "action_space": gymnasium.spaces.Discrete(2), "hidden": 8,
                                                        "seed": 0}, skip=_SPACES, positive=["hidden"]),
    "icml25.rl.PPOAgent.get_value": Example(lambda **kw: _ppo().get_value(**kw),
                                            lambda: {"x": torch.zeros(2, 4)}),
    "icml25.rl.PPOAgent.get_action_and_value": Example(
        lambda **kw: _ppo().get_action_and_value(**kw),
        lambda: {"x": torch.zeros(2, 4), "generator": torch.Generator().manual_seed(0)},
        skip={"generator": "a torch.Generator handed to torch.multinomial"}),
    "icml25.rl.train_ppo": Example(rl.train_ppo, lambda: {"env_fn": _cartpole, "args": _ppo_args(), "seed": 0},
                                   timeout=20.0),
    # Hyper's exploration
    "icml25.rl.CountBonus": Example(rl.CountBonus, {"mode": "state_action", "power": 0.5}, positive=["power"]),
    "icml25.rl.CountBonus.compute": Example(lambda **kw: rl.CountBonus().compute(**kw), _TRANSITIONS),
    "icml25.rl.CountBonus.update": Example(lambda **kw: rl.CountBonus().update(**kw), _TRANSITIONS),
    "icml25.rl.RND": Example(rl.RND, {"obs_dim": 3, "hidden": 8, "out_dim": 4, "seed": 0},
                             positive=["obs_dim", "hidden", "out_dim", "learning_rate"], nonneg=["gamma"]),
    "icml25.rl.RND.compute": Example(lambda **kw: rl.RND(3, hidden=8, out_dim=4, seed=0).compute(**kw),
                                     _float_transitions),
    "icml25.rl.RND.update": Example(lambda **kw: rl.RND(3, hidden=8, out_dim=4, seed=0).update(**kw),
                                    _float_transitions),
    "icml25.rl.Disagreement": Example(rl.Disagreement, {"obs_dim": 3, "act_dim": 2, "n_models": 2, "hidden": 8,
                                                        "seed": 0},
                                      positive=["obs_dim", "act_dim", "n_models", "hidden", "learning_rate"],
                                      nonneg=["gamma"]),
    "icml25.rl.Disagreement.compute": Example(
        lambda **kw: rl.Disagreement(3, 2, n_models=2, hidden=8, n_actions=2, seed=0).compute(**kw),
        _float_transitions),
    "icml25.rl.Disagreement.update": Example(
        lambda **kw: rl.Disagreement(3, 2, n_models=2, hidden=8, n_actions=2, seed=0).update(**kw),
        _float_transitions),
    "icml25.rl.Hyper": Example(rl.Hyper, lambda: {"make_learner": _tabular, "curiosity": rl.CountBonus(),
                                                  "beta": 1.0, "c": 0.9, "seed": 0},
                               nonneg=["beta", "c"], positive=["buffer_size", "batch_size", "train_frequency"],
                               allow={"horizon": "none"}),
    # train/act are defined once on Hyper; the suite keys them under the first exporting name, Curiosity
    "icml25.rl.Curiosity.train": Example(lambda **kw: rl.Hyper(_tabular, rl.CountBonus(), seed=0).train(**kw),
                                     lambda: {"env": _rooms(), "total_timesteps": 100, "eval_every": 50},
                                     positive=["total_timesteps", "eval_every", "eval_episodes"]),
    "icml25.rl.Curiosity.act": Example(lambda **kw: _trained_hyper().act(**kw), {"obs": 14}),
    "icml25.rl.Decouple": Example(rl.Decouple, lambda: {"make_learner": _tabular, "curiosity": rl.CountBonus(),
                                                        "beta": 1.0, "seed": 0},
                                  nonneg=["beta"], positive=["buffer_size", "batch_size", "train_frequency"]),
    "icml25.rl.Curiosity": Example(rl.Curiosity, lambda: {"make_learner": _tabular, "curiosity": rl.CountBonus(),
                                                          "beta": 1.0, "seed": 0},
                                   nonneg=["beta"], positive=["buffer_size", "batch_size", "train_frequency"]),
    "icml25.rl.truncated_geometric": Example(rl.truncated_geometric, {"c": 0.9, "horizon": 20, "seed": 0},
                                             nonneg=["c"], positive=["horizon"]),
    "icml25.rl.truncated_geometric_mean": Example(rl.truncated_geometric_mean, {"c": 0.9, "horizon": 20},
                                                  nonneg=["c"], positive=["horizon"]),
    "icml25.rl.c_for_mean_fraction": Example(rl.c_for_mean_fraction, {"frac": 0.2, "horizon": 20},
                                             nonneg=["frac"], positive=["horizon"]),
}
