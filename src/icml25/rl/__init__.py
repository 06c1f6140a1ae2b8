"""Reinforcement and imitation learning: STAR's rotation-augmented residual skill quantization and causal skill
transformer (:mod:`icml25.rl.star_skills`), with the ``icml25/PlanarSkills-v0`` and ``icml25/MetaWorldMT10-v0``
environments.

Everything here needs the ``rl`` extra (PyTorch; MetaWorld for its demonstrations); the names are imported
lazily, so ``import icml25.rl`` itself works without them and registers the environments with gymnasium.
"""

from importlib import import_module

import gymnasium

_EXPORTS = {
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

for _id, _entry in (("icml25/PlanarSkills-v0", "icml25.rl.star_skills.planar:PlanarSkillsEnv"),
                   ("icml25/MetaWorldMT10-v0", "icml25.rl.star_skills.data:make_metaworld_env")):
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point=_entry)
del _id, _entry

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'icml25.rl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
