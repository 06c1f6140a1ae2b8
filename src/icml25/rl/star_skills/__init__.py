"""STAR (Li et al., "STAR: Learning Diverse Robot Skill Abstractions through Rotation-Augmented Vector
Quantization", ICML 2025, arXiv:2506.03863): rotation-augmented residual skill quantization (RaRSQ), the causal
skill transformer (CST) with depth-autoregressive codes and an offset head, the chunked-BC baseline, MetaWorld
MT10 scripted demonstrations and the ``PlanarSkills`` toy environment."""

from icml25.rl.star_skills.data import (
    MT10_TASKS,
    MetaWorldTaskEnv,
    collect_metaworld_demos,
    collect_planar_demos,
    make_metaworld_env,
    rollout_success,
)
from icml25.rl.star_skills.planar import PLANAR_TASKS, PlanarSkillsEnv, PlanarSkillsExpert
from icml25.rl.star_skills.policy import (
    CausalSkillTransformer,
    ChunkDataset,
    ChunkMLPPolicy,
    RaRSQ,
    make_chunks,
    train_policy,
    train_rarsq,
)
from icml25.rl.star_skills.quantizer import ResidualSkillQuantizer, code_usage, rotate_to, rotation_apply

__all__ = ["MT10_TASKS", "PLANAR_TASKS", "MetaWorldTaskEnv", "CausalSkillTransformer", "ChunkDataset", "ChunkMLPPolicy",
           "PlanarSkillsEnv", "PlanarSkillsExpert", "RaRSQ", "ResidualSkillQuantizer", "code_usage",
           "collect_metaworld_demos", "collect_planar_demos", "make_chunks", "make_metaworld_env", "rollout_success",
           "rotate_to", "rotation_apply", "train_policy", "train_rarsq"]
