"""Reinforcement learning: a compact DreamerV3 core, PIGDreamer and safe-RL environments (needs the ``rl`` extra).

Names are imported lazily, so ``import icml25.rl`` stays cheap; the environments are registered with
``gymnasium.register`` under ``icml25/<Name>-v0`` (entry points as strings, nothing imported until ``gym.make``).
"""

from importlib import import_module

_EXPORTS = {
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
}

_ENVIRONMENTS = {
    "icml25/PrivilegedHazardNav-v0": "icml25.rl.safety_envs:PrivilegedHazardNav",
    "icml25/HiddenHazardCorridor-v0": "icml25.rl.safety_envs:HiddenHazardCorridor",
}

__all__ = list(_EXPORTS)


def _register() -> None:
    try:
        import gymnasium
    except ImportError:  # the rl extra is not installed: nothing to register
        return
    for env_id, entry_point in _ENVIRONMENTS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


_register()


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.rl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
