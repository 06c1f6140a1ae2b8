"""Valid calls of the DreamerV3 core, the safe-RL environments and PIGDreamer (``icml25.rl``)."""

from functools import cache

import numpy as np
import torch

from api_examples._core import Example
from icml25 import rl

TINY = {"deter": 8, "stoch": 2, "classes": 3, "hidden": 8}
FEAT = 8 + 2 * 3


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def _t(*shape, seed=0):
    return torch.randn(*shape, generator=_g(seed))


@cache
def _rssm():
    return rl.RSSM(embed_dim=4, act_dim=2, **TINY, seed=0)


@cache
def _actor():
    return rl.Actor(FEAT, 2, hidden=8, seed=0)


@cache
def _critic():
    return rl.Critic(FEAT, hidden=8, seed=0)


def _nav():
    env = rl.PrivilegedHazardNav(seed=0)
    env.reset()
    return env


def _corridor():
    env = rl.HiddenHazardCorridor(seed=0)
    env.reset()
    return env


def _adapter():
    env = rl.SafetyGymAdapter(rl.PrivilegedHazardNav(seed=0))
    env.reset(seed=0)
    return env


@cache
def _corridor_model():
    return rl.HiddenHazardCorridor().model()


def _eval_kwargs():
    m = _corridor_model()
    policy = np.tile([1.0, 0.0], (16, 1))
    return {"P": m["P"], "signal": m["cost"], "terminal": m["terminal"], "policy": policy, "gamma": 0.9}


def _td_kwargs():
    return {"keys": np.array([0, 1, 2, 0]), "signals": np.array([0.0, 1.0, 0.0, 0.0]),
            "next_keys": np.array([1, 2, 0, 1]), "dones": np.array([False, False, True, False]), "n_keys": 3}


def _batch(priv=True):
    b = {"obs": _t(2, 4, 14), "action": _t(2, 4, 2).clamp(-1, 1), "reward": _t(2, 4), "cost": torch.zeros(2, 4),
         "is_first": torch.zeros(2, 4), "is_terminal": torch.zeros(2, 4)}
    if priv:
        b["priv"] = _t(2, 4, 21)
    return b


@cache
def _wm():
    return rl.AsymWorldModel(14, 2, 21, "pig", **TINY, seed=0)


@cache
def _unpriv_wm():
    return rl.AsymWorldModel(14, 2, 0, "unprivileged", **TINY, seed=0)


@cache
def _agent():
    return rl.PIGDreamer(14, 2, 21, variant="pig", **TINY, batch_size=2, seq_len=4, prefill=5, horizon=2, seed=0)


def _obs():
    return rl.PrivilegedHazardNav(seed=0).reset()[0]


_TENSOR_FREE = ("empty", "ndim", "nan")  # element-wise or broadcasting: any shape and NaN propagate
_LAG = {"cost_limit": 5.0, "multiplier": 1.0, "mu": 0.1, "nu": 0.01, "mu_max": 1.0}

EXAMPLES = {
    "icml25.rl.symlog": Example(rl.symlog, lambda: {"x": _t(3)}, allow={"x": _TENSOR_FREE}),
    "icml25.rl.symexp": Example(rl.symexp, lambda: {"x": _t(3)}, allow={"x": _TENSOR_FREE}),
    "icml25.rl.symlog_bins": Example(rl.symlog_bins, {"n_bins": 11, "low": -2.0, "high": 2.0}, positive=("n_bins",)),
    "icml25.rl.twohot": Example(rl.twohot, lambda: {"y": _t(3), "bins": rl.symlog_bins(11)},
                                allow={"y": ("empty", "ndim")}),
    "icml25.rl.twohot_loss": Example(rl.twohot_loss, lambda: {"logits": _t(3, 11), "target": _t(3),
                                                              "bins": rl.symlog_bins(11)},
                                     allow={"logits": "nan"}),
    "icml25.rl.twohot_mean": Example(rl.twohot_mean, lambda: {"logits": _t(3, 11), "bins": rl.symlog_bins(11)},
                                     allow={"logits": ("nan", "empty", "ndim")}),
    "icml25.rl.kl_balance": Example(rl.kl_balance, lambda: {"post_logits": _t(2, 3, 4),
                                                            "prior_logits": _t(2, 3, 4, seed=1)},
                                    allow={"post_logits": "nan", "prior_logits": "nan"},
                                    nonneg=("dyn_scale", "rep_scale", "free_nats")),
    "icml25.rl.lambda_returns": Example(rl.lambda_returns, lambda: {"reward": _t(4, 2), "value": _t(5, 2),
                                                                    "cont": torch.ones(4, 2)},
                                        allow={"reward": "nan", "value": "nan", "cont": "nan"},
                                        nonneg=("gamma", "lam")),
    "icml25.rl.mix_uniform": Example(rl.mix_uniform, lambda: {"logits": _t(3, 4)},
                                     allow={"logits": ("nan", "empty", "ndim")}, nonneg=("unimix",)),
    "icml25.rl.sample_onehot": Example(rl.sample_onehot, lambda: {"logits": _t(3, 4), "generator": _g()},
                                       allow={"logits": "ndim"}, skip={"generator": "a torch.Generator"}),
    "icml25.rl.RSSM": Example(rl.RSSM, {"embed_dim": 4, "act_dim": 2, **TINY, "seed": 0},
                              positive=("embed_dim", "act_dim", "deter", "stoch", "hidden"), nonneg=("unimix",)),
    "icml25.rl.RSSM.initial": Example(lambda **kw: _rssm().initial(**kw), {"batch_size": 2}, positive=("batch_size",)),
    "icml25.rl.RSSM.img_step": Example(lambda **kw: _rssm().img_step(**kw),
                                       lambda: {"state": _rssm().initial(2), "action": _t(2, 2), "generator": _g()},
                                       skip={"generator": "a torch.Generator"}),
    "icml25.rl.RSSM.obs_step": Example(lambda **kw: _rssm().obs_step(**kw),
                                       lambda: {"state": _rssm().initial(2), "action": _t(2, 2), "embed": _t(2, 4),
                                                "is_first": torch.tensor([1.0, 0.0]), "generator": _g()},
                                       skip={"generator": "a torch.Generator"}),
    "icml25.rl.RSSM.forward": Example(lambda **kw: _rssm()(**kw),
                                      lambda: {"embed": _t(2, 3, 4), "action": _t(2, 3, 2),
                                               "is_first": torch.zeros(2, 3), "generator": _g()},
                                      skip={"generator": "a torch.Generator"}),
    "icml25.rl.Actor": Example(rl.Actor, {"feat_dim": FEAT, "act_dim": 2, "hidden": 8, "seed": 0},
                               positive=("feat_dim", "act_dim", "hidden", "min_std", "max_std")),
    "icml25.rl.Actor.forward": Example(lambda **kw: _actor()(**kw), lambda: {"feat": _t(3, FEAT)},
                                       allow={"feat": _TENSOR_FREE}),
    "icml25.rl.Actor.sample": Example(lambda **kw: _actor().sample(**kw), lambda: {"feat": _t(3, FEAT),
                                                                                  "generator": _g()},
                                      allow={"feat": ("empty", "ndim")}, skip={"generator": "a torch.Generator"}),
    "icml25.rl.Critic": Example(rl.Critic, {"feat_dim": FEAT, "hidden": 8, "seed": 0},
                                positive=("feat_dim", "hidden", "n_bins"), nonneg=("slow_decay",)),
    "icml25.rl.Critic.forward": Example(lambda **kw: _critic()(**kw), lambda: {"feat": _t(3, FEAT)},
                                        allow={"feat": _TENSOR_FREE}),
    "icml25.rl.Critic.loss": Example(lambda **kw: _critic().loss(**kw), lambda: {"feat": _t(3, FEAT),
                                                                                "target": _t(3)}),
    "icml25.rl.ReturnNormalizer": Example(rl.ReturnNormalizer, {"decay": 0.99, "low": 0.05, "high": 0.95},
                                          nonneg=("decay", "low", "high")),
    "icml25.rl.ReturnNormalizer.update": Example(lambda **kw: rl.ReturnNormalizer().update(**kw),
                                                 lambda: {"returns": _t(10)}, allow={"returns": "ndim"}),
    "icml25.rl.SequenceReplay": Example(rl.SequenceReplay, {"capacity": 10, "seed": 0}, positive=("capacity",)),
    "icml25.rl.SequenceReplay.add": Example(lambda **kw: rl.SequenceReplay(4).add(**kw),
                                            {"step": {"obs": np.zeros(3), "is_first": 1.0}}),
    "icml25.rl.SequenceReplay.sample": Example(
        lambda **kw: _filled().sample(**kw), {"batch_size": 2, "seq_len": 3}, positive=("batch_size", "seq_len")),
    "icml25.rl.exact_policy_eval": Example(rl.exact_policy_eval, _eval_kwargs, nonneg=("gamma",)),
    "icml25.rl.td0_evaluate": Example(rl.td0_evaluate, _td_kwargs, positive=("n_keys",), nonneg=("gamma",)),
    "icml25.rl.PrivilegedHazardNav": Example(rl.PrivilegedHazardNav, {"seed": 0},
                                             positive=("sensor_range", "n_hazards", "episode_len"),
                                             nonneg=("obs_noise",)),
    "icml25.rl.PrivilegedHazardNav.reset": Example(lambda **kw: rl.PrivilegedHazardNav().reset(**kw), {"seed": 0}),
    "icml25.rl.PrivilegedHazardNav.step": Example(lambda **kw: _nav().step(**kw),
                                                  lambda: {"action": np.array([0.5, -0.5], np.float32)}),
    "icml25.rl.HiddenHazardCorridor": Example(rl.HiddenHazardCorridor, {"seed": 0}, positive=("max_steps",),
                                              nonneg=("sensor_prob", "slip")),
    "icml25.rl.HiddenHazardCorridor.reset": Example(lambda **kw: rl.HiddenHazardCorridor().reset(**kw),
                                                    {"seed": 0}),
    "icml25.rl.HiddenHazardCorridor.step": Example(lambda **kw: _corridor().step(**kw), {"action": 1}),
    "icml25.rl.SafetyGymAdapter": Example(rl.SafetyGymAdapter, lambda: {"env": rl.PrivilegedHazardNav(seed=0)}),
    "icml25.rl.SafetyGymAdapter.step": Example(lambda **kw: _adapter().step(**kw),
                                               lambda: {"action": np.array([0.5, -0.5], np.float32)}),
    "icml25.rl.AugmentedLagrangian": Example(rl.AugmentedLagrangian, _LAG, positive=("mu", "mu_max"),
                                             nonneg=("cost_limit", "multiplier", "nu")),
    "icml25.rl.AugmentedLagrangian.penalty": Example(lambda **kw: rl.AugmentedLagrangian(**_LAG).penalty(**kw),
                                                     {"cost_return": 7.0}, nonneg=("cost_return",)),
    "icml25.rl.AugmentedLagrangian.weight": Example(lambda **kw: rl.AugmentedLagrangian(**_LAG).weight(**kw),
                                                    {"cost_return": 7.0}, nonneg=("cost_return",)),
    "icml25.rl.AugmentedLagrangian.update": Example(lambda **kw: rl.AugmentedLagrangian(**_LAG).update(**kw),
                                                    {"cost_return": 7.0}, nonneg=("cost_return",)),
    "icml25.rl.AsymWorldModel": Example(rl.AsymWorldModel, {"obs_dim": 14, "act_dim": 2, "priv_dim": 21, **TINY,
                                                            "seed": 0},
                                        positive=("obs_dim", "act_dim", "priv_dim", "deter", "stoch", "hidden"),
                                        nonneg=("align_alpha", "align_beta", "align_free_nats")),
    "icml25.rl.AsymWorldModel.loss": Example(lambda **kw: _wm().loss(**kw), lambda: {"batch": _batch(),
                                                                                    "generator": _g()},
                                             skip={"generator": "a torch.Generator"}),
    "icml25.rl.AsymWorldModel.predict": Example(lambda **kw: _unpriv_wm().predict(**kw),
                                                lambda: {"naive": _t(3, FEAT)}, allow={"naive": _TENSOR_FREE}),
    "icml25.rl.DeployablePolicy": Example(rl.DeployablePolicy, lambda: {"encoder": _agent().world_model.encoder,
                                                                        "rssm": _agent().world_model.rssm,
                                                                        "actor": _agent().actor}),
    "icml25.rl.DeployablePolicy.act": Example(lambda **kw: _agent().policy().act(**kw),
                                              lambda: {"obs": _obs(), "generator": _g()},
                                              skip={"generator": "a torch.Generator"}),
    "icml25.rl.PIGDreamer": Example(rl.PIGDreamer, {"obs_dim": 14, "act_dim": 2, "priv_dim": 21, **TINY, "seed": 0},
                                    positive=("obs_dim", "act_dim", "episode_len", "horizon", "deter", "stoch",
                                              "hidden", "batch_size", "seq_len", "train_every", "model_lr",
                                              "ac_lr"),
                                    nonneg=("priv_dim", "cost_limit", "gamma", "lam", "prefill", "entropy")),
    "icml25.rl.PIGDreamer.act": Example(lambda **kw: _agent().act(**kw), lambda: {"obs": _obs()}),
    "icml25.rl.PIGDreamer.update": Example(lambda **kw: _agent().update(**kw), lambda: {"batch": _batch()}),
    "icml25.rl.PIGDreamer.train": Example(
        lambda **kw: rl.PIGDreamer(14, 2, 21, **TINY, batch_size=2, seq_len=4, prefill=5, horizon=2,
                                   seed=0).train(**kw),
        lambda: {"env": rl.PrivilegedHazardNav(seed=0, episode_len=10), "total_steps": 12},
        positive=("total_steps",), timeout=30.0),
}


def _filled():
    replay = rl.SequenceReplay(8, seed=0)
    for t in range(6):
        replay.add({"obs": np.full(2, t, np.float32), "is_first": float(t == 0)})
    return replay
