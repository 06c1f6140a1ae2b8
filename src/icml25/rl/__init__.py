"""Reinforcement learning in CleanRL's style on gymnasium's v1 API.

The core: a replay buffer (:mod:`icml25.rl.buffers`), seeding and evaluation helpers
(:mod:`icml25.rl.wrappers`), and one readable file per learner with CleanRL's hyperparameter names:
tabular Q-learning (:mod:`icml25.rl.tabular_q`), DQN (:mod:`icml25.rl.dqn`), TD3 (:mod:`icml25.rl.td3`) and
PPO (:mod:`icml25.rl.ppo`); a compact DreamerV3 core (:mod:`icml25.rl.dreamer`). Papers: Hyper's
hyperparameter-robust exploration (:mod:`icml25.rl.hyper_exploration`) on the ``DeceptiveRooms`` gridworld
(:mod:`icml25.rl.envs`); PIGDreamer's privileged world models for safe RL (:mod:`icml25.rl.pigdreamer`) on
safe-RL environments (:mod:`icml25.rl.safety_envs`); STAR's rotation-augmented residual skill quantization and
causal skill transformer (:mod:`icml25.rl.star_skills`) on ``PlanarSkills`` and MetaWorld MT10.

Importing this package registers our environments with gymnasium (string entry points, nothing is
imported until ``gymnasium.make``):

>>> import gymnasium
>>> import icml25.rl
>>> env = gymnasium.make("icml25/DeceptiveRooms-v0")
>>> env.reset(seed=0)[0] == env.unwrapped.start
True

The names are imported lazily (the deep learners need the ``torch`` extra, MetaWorld the ``rl`` extra).
"""

from importlib import import_module

import gymnasium

_EXPORTS = {
    "ReplayBuffer": "icml25.rl.buffers",
    "ReplayBufferSamples": "icml25.rl.buffers",
    "EpisodeStats": "icml25.rl.wrappers",
    "FixedSeedReset": "icml25.rl.wrappers",
    "evaluate_policy": "icml25.rl.wrappers",
    "TabularQ": "icml25.rl.tabular_q",
    "DQNArgs": "icml25.rl.dqn",
    "DQNAgent": "icml25.rl.dqn",
    "train_dqn": "icml25.rl.dqn",
    "TD3Args": "icml25.rl.td3",
    "TD3Agent": "icml25.rl.td3",
    "train_td3": "icml25.rl.td3",
    "PPOArgs": "icml25.rl.ppo",
    "PPOAgent": "icml25.rl.ppo",
    "train_ppo": "icml25.rl.ppo",
    "DeceptiveRooms": "icml25.rl.envs",
    "CountBonus": "icml25.rl.hyper_exploration",
    "RND": "icml25.rl.hyper_exploration",
    "Disagreement": "icml25.rl.hyper_exploration",
    "Hyper": "icml25.rl.hyper_exploration",
    "Decouple": "icml25.rl.hyper_exploration",
    "Curiosity": "icml25.rl.hyper_exploration",
    "HyperHistory": "icml25.rl.hyper_exploration",
    "truncated_geometric": "icml25.rl.hyper_exploration",
    "truncated_geometric_mean": "icml25.rl.hyper_exploration",
    "c_for_mean_fraction": "icml25.rl.hyper_exploration",
    "symlog": "icml25.rl.dreamer",
    "symexp": "icml25.rl.dreamer",
    "symlog_bins": "icml25.rl.dreamer",
    "twohot": "icml25.rl.dreamer",
    "twohot_loss": "icml25.rl.dreamer",
    "twohot_mean": "icml25.rl.dreamer",
    "kl_balance": "icml25.rl.dreamer",
    "lambda_returns": "icml25.rl.dreamer",
    "RSSM": "icml25.rl.dreamer",
    "Actor": "icml25.rl.dreamer",
    "Critic": "icml25.rl.dreamer",
    "ReturnNormalizer": "icml25.rl.dreamer",
    "SequenceReplay": "icml25.rl.dreamer",
    "mix_uniform": "icml25.rl.dreamer",
    "sample_onehot": "icml25.rl.dreamer",
    "PrivilegedHazardNav": "icml25.rl.safety_envs",
    "HiddenHazardCorridor": "icml25.rl.safety_envs",
    "SafetyGymAdapter": "icml25.rl.safety_envs",
    "exact_policy_eval": "icml25.rl.acpomdp",
    "td0_evaluate": "icml25.rl.acpomdp",
    "AugmentedLagrangian": "icml25.rl.pigdreamer",
    "AsymWorldModel": "icml25.rl.pigdreamer",
    "PIGDreamer": "icml25.rl.pigdreamer",
    "DeployablePolicy": "icml25.rl.pigdreamer",
    "MT10_TASKS": "icml25.rl.star_skills",
    "PLANAR_TASKS": "icml25.rl.star_skills",
    "CausalSkillTransformer": "icml25.rl.star_skills",
    "ChunkDataset": "icml25.rl.star_skills",
    "ChunkMLPPolicy": "icml25.rl.star_skills",
    "MetaWorldTaskEnv": "icml25.rl.star_skills",
    "PlanarSkillsEnv": "icml25.rl.star_skills",
    "PlanarSkillsExpert": "icml25.rl.star_skills",
    "RaRSQ": "icml25.rl.star_skills",
    "ResidualSkillQuantizer": "icml25.rl.star_skills",
    "code_usage": "icml25.rl.star_skills",
    "collect_metaworld_demos": "icml25.rl.star_skills",
    "collect_planar_demos": "icml25.rl.star_skills",
    "make_chunks": "icml25.rl.star_skills",
    "make_metaworld_env": "icml25.rl.star_skills",
    "rollout_success": "icml25.rl.star_skills",
    "rotate_to": "icml25.rl.star_skills",
    "rotation_apply": "icml25.rl.star_skills",
    "train_policy": "icml25.rl.star_skills",
    "train_rarsq": "icml25.rl.star_skills",
}

# environment id -> ("module:callable", max_episode_steps or None)
ENVIRONMENTS = {
    "icml25/DeceptiveRooms-v0": ("icml25.rl.envs:DeceptiveRooms", 100),
    "icml25/PrivilegedHazardNav-v0": ("icml25.rl.safety_envs:PrivilegedHazardNav", None),
    "icml25/HiddenHazardCorridor-v0": ("icml25.rl.safety_envs:HiddenHazardCorridor", None),
    "icml25/PlanarSkills-v0": ("icml25.rl.star_skills.planar:PlanarSkillsEnv", None),
    "icml25/MetaWorldMT10-v0": ("icml25.rl.star_skills.data:make_metaworld_env", None),
}

__all__ = list(_EXPORTS)


def _register_environments() -> None:
    for env_id, (entry_point, max_steps) in ENVIRONMENTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point, max_episode_steps=max_steps)


_register_environments()


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.rl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
