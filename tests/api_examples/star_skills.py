"""Valid calls of STAR's public names in ``icml25.rl`` (quantizer, stage-0/1 models, environments, demos)."""

from functools import cache

import numpy as np
import torch

from api_examples._core import Example, Exempt
from icml25 import rl


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _chunks():
    return torch.rand(6, 4, 2, generator=_g()) * 2 - 1


def _obs():
    return torch.randn(6, 1, 3, generator=_g(1))


def _tasks():
    return torch.tensor([0, 1, 0, 1, 0, 1])


@cache
def _rarsq():
    return rl.RaRSQ(2, chunk=4, latent=8, hidden=16, seed=0, codebook_size=4)


def _cst():
    return rl.CausalSkillTransformer(3, 2, _rarsq(), d_model=8, n_layers=1, n_heads=2, seed=0)


def _mlp():
    return rl.ChunkMLPPolicy(3, 2, 2, 4, hidden=8, seed=0)


def _vq():
    return rl.ResidualSkillQuantizer(8, codebook_size=4, depth=2, seed=0)


def _episodes():
    return [{"obs": np.zeros((5, 3), np.float32), "actions": np.zeros((5, 2), np.float32), "task": 0}]


def _dataset():
    return rl.make_chunks(_episodes(), chunk=4)


def _planar():
    env = rl.PlanarSkillsEnv("reach")
    env.reset(seed=0)
    return env


@cache
def _mw():
    return rl.MetaWorldTaskEnv("reach-v3", max_episode_steps=20)


def _mw_reset():
    env = _mw()
    env.reset(seed=0)
    return env


_POLICY = {"tasks": "integer task ids; range checked against n_tasks"}

EXAMPLES = {
    "icml25.rl.rotate_to": Example(rl.rotate_to, lambda: {"r": torch.randn(4, 3, generator=_g()),
                                                         "e": torch.randn(4, 3, generator=_g(1))},
                                   allow={"r": "nan", "e": "nan"}, positive=("eps",)),
    "icml25.rl.rotation_apply": Example(rl.rotation_apply, lambda: {
        "u": torch.eye(3)[:2], "v": torch.eye(3)[1:], "x": torch.ones(2, 3)},
        allow={"u": "nan", "v": "nan", "x": "nan"}),
    "icml25.rl.code_usage": Example(rl.code_usage, lambda: {"indices": torch.tensor([[0, 1], [2, 1]]),
                                                           "codebook_size": 4}),
    "icml25.rl.ResidualSkillQuantizer": Example(rl.ResidualSkillQuantizer, {"dim": 8, "seed": 0},
                                                positive=("eps",), nonneg=("beta", "ema_decay")),
    "icml25.rl.ResidualSkillQuantizer.forward": Example(lambda **kw: _vq()(**kw),
                                                        lambda: {"z": torch.randn(5, 8, generator=_g())},
                                                        allow={"z": "nan"}),
    "icml25.rl.ResidualSkillQuantizer.codes_from_indices": Example(
        lambda **kw: _vq().codes_from_indices(**kw), lambda: {"indices": torch.tensor([[0, 3], [1, 2]])},
        allow={"indices": "empty"}),
    "icml25.rl.ResidualSkillQuantizer.usage_stats": Example(lambda **kw: _vq().usage_stats(**kw),
                                                            lambda: {"indices": torch.tensor([[0, 3], [1, 2]])}),
    "icml25.rl.RaRSQ": Example(rl.RaRSQ, {"action_dim": 2, "chunk": 4, "latent": 8, "hidden": 16, "seed": 0}),
    "icml25.rl.RaRSQ.forward": Example(lambda **kw: _rarsq()(**kw), lambda: {"chunks": _chunks()},
                                       allow={"chunks": "nan"}),
    "icml25.rl.RaRSQ.loss": Example(lambda **kw: _rarsq().loss(**kw), lambda: {"chunks": _chunks()},
                                    allow={"chunks": "nan"}),
    "icml25.rl.RaRSQ.encode": Example(lambda **kw: _rarsq().encode(**kw), lambda: {"chunks": _chunks()},
                                      allow={"chunks": "nan"}),
    "icml25.rl.RaRSQ.decode": Example(lambda **kw: _rarsq().decode(**kw), lambda: {"indices": torch.tensor([[0, 1]])},
                                      allow={"indices": "empty"}),
    "icml25.rl.ChunkDataset": Exempt("record"),
    "icml25.rl.make_chunks": Example(rl.make_chunks, lambda: {"episodes": _episodes(), "chunk": 4}),
    "icml25.rl.CausalSkillTransformer": Example(rl.CausalSkillTransformer, lambda: {
        "obs_dim": 3, "n_tasks": 2, "rarsq": _rarsq(), "d_model": 8, "n_layers": 1, "n_heads": 2, "seed": 0},
        nonneg=("offset_weight",)),
    "icml25.rl.CausalSkillTransformer.train": Example(lambda **kw: _cst().train(**kw), {"mode": True}),
    "icml25.rl.CausalSkillTransformer.set_obs_stats": Example(lambda **kw: _cst().set_obs_stats(**kw),
                                                              lambda: {"mean": torch.zeros(3), "std": torch.ones(3)},
                                                              allow={"mean": "nan", "std": "nan"}),
    "icml25.rl.CausalSkillTransformer.loss": Example(lambda **kw: _cst().loss(**kw), lambda: {
        "obs": _obs(), "tasks": _tasks(), "chunks": _chunks()}, allow={"chunks": "nan"},
        skip=_POLICY, paired=[("obs", "chunks")]),
    "icml25.rl.CausalSkillTransformer.sample_codes": Example(lambda **kw: _cst().sample_codes(**kw), lambda: {
        "obs": _obs(), "tasks": _tasks(), "seed": 0}, skip=_POLICY, positive=("temperature",)),
    "icml25.rl.CausalSkillTransformer.act": Example(lambda **kw: _cst().act(**kw), lambda: {
        "obs": _obs(), "tasks": _tasks(), "seed": 0}, skip=_POLICY, positive=("temperature",)),
    "icml25.rl.ChunkMLPPolicy": Example(rl.ChunkMLPPolicy, {"obs_dim": 3, "n_tasks": 2, "action_dim": 2, "chunk": 4,
                                                            "hidden": 8, "seed": 0}),
    "icml25.rl.ChunkMLPPolicy.forward": Example(lambda **kw: _mlp()(**kw), lambda: {"obs": _obs(), "tasks": _tasks()},
                                                skip=_POLICY),
    "icml25.rl.ChunkMLPPolicy.loss": Example(lambda **kw: _mlp().loss(**kw), lambda: {
        "obs": _obs(), "tasks": _tasks(), "chunks": _chunks()}, allow={"chunks": "nan"}, skip=_POLICY,
        paired=[("obs", "chunks")]),
    "icml25.rl.ChunkMLPPolicy.act": Example(lambda **kw: _mlp().act(**kw), lambda: {"obs": _obs(), "tasks": _tasks()},
                                            skip=_POLICY),
    "icml25.rl.train_rarsq": Example(rl.train_rarsq, lambda: {"model": rl.RaRSQ(2, 4, 8, 16, seed=0),
                                                             "chunks": _chunks(), "steps": 2, "seed": 0},
                                     allow={"chunks": "nan"}, positive=("lr",)),
    "icml25.rl.train_policy": Example(rl.train_policy, lambda: {"policy": rl.ChunkMLPPolicy(3, 1, 2, 4, hidden=8,
                                                                                            seed=0),
                                                               "data": _dataset(), "steps": 2, "seed": 0},
                                      positive=("lr",)),
    "icml25.rl.PlanarSkillsEnv": Example(rl.PlanarSkillsEnv, {"task": "detour"}),
    "icml25.rl.PlanarSkillsEnv.reset": Example(lambda **kw: rl.PlanarSkillsEnv().reset(**kw),
                                               {"seed": 0, "options": {"task": "reach"}}),
    "icml25.rl.PlanarSkillsEnv.step": Example(lambda **kw: _planar().step(**kw),
                                              lambda: {"action": np.array([0.5, -0.5, 1.0])}),
    "icml25.rl.PlanarSkillsExpert": Example(rl.PlanarSkillsExpert, {"side": -1, "seed": 0},
                                            allow={"side": "neg"}),
    "icml25.rl.collect_planar_demos": Example(rl.collect_planar_demos, {"n_demos": 1, "seed": 0},
                                              nonneg=("noise",)),
    "icml25.rl.MetaWorldTaskEnv": Example(rl.MetaWorldTaskEnv, {"task": "reach-v3", "max_episode_steps": 20}),
    "icml25.rl.MetaWorldTaskEnv.reset": Example(lambda **kw: _mw().reset(**kw), {"seed": 0}),
    "icml25.rl.MetaWorldTaskEnv.step": Example(lambda **kw: _mw_reset().step(**kw),
                                               lambda: {"action": np.zeros(4, np.float32)}),
    "icml25.rl.make_metaworld_env": Example(rl.make_metaworld_env, {"task": "reach-v3", "max_episode_steps": 20},
                                            timeout=30.0),
    "icml25.rl.collect_metaworld_demos": Example(rl.collect_metaworld_demos, {
        "tasks": ["reach-v3"], "n_demos": 1, "max_steps": 100, "seed": 0}, nonneg=("noise",), timeout=30.0),
    "icml25.rl.rollout_success": Example(rl.rollout_success, lambda: {
        "policy": rl.ChunkMLPPolicy(11, 1, 3, 4, hidden=8, seed=0), "make_env": lambda t: rl.PlanarSkillsEnv("reach"),
        "n_tasks": 1, "episodes": 1, "max_steps": 8, "seed": 0}),
}
