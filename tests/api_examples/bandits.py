"""Valid calls of ``icml25.bandits`` (base protocol, private_bandits, ucb_ogd)."""

import functools

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import bandits as bd
from icml25.bandits.private_bandits import laplace_noise

RNG = {"rng": "a live numpy Generator handed over by the runner at every round (per-round protocol hook)"}


def _rng():
    return np.random.default_rng(0)


def _losses():
    return np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.4], [0.5, 0.0]])


def _acted(learner, *advice):
    learner.act(_rng(), *advice)
    return learner


def _advice():
    return np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]])


def _expert_env():
    return bd.ExpertAdviceEnv(np.array([[0, 1], [1, 1], [0, 0], [1, 0]]), _losses())


# ------------------------------------------------------------------ ucb_ogd fixtures
def _features(n=6, d=3):
    return np.random.default_rng(1).normal(size=(n, d))


def _y(n=6):
    return np.array([0, 1] * (n // 2))


def _eval_sets():
    return [(_features(), _y()), (_features() + 1.0, _y())]


def _sources():
    return [bd.ArraySource(_features(), _y()), bd.ArraySource(_features() + 1.0, _y())]


@functools.cache
def _logistic():
    model = bd.LogisticModel(3)
    model.params = np.array([0.1, -0.2, 0.3])
    return model


@functools.cache
def _softmax():
    return bd.SoftmaxModel(3, 2)


@functools.cache
def _torch_model():
    import torch

    return bd.TorchModel(torch.nn.Linear(3, 2))


def _fresh_torch():
    import torch

    return bd.TorchModel(torch.nn.Linear(3, 2))


def _collector(selector=None):
    return bd.AdaptiveCollector(bd.LogisticModel(3), selector or bd.UCBSelector(2), radius=2.0, seed=0)


def _data(**extra):
    return lambda: {"X": _features(), "y": _y(), **extra}


def _model_methods(prefix, factory, fresh, names):
    out = {}
    for name in names:
        if name in ("loss", "grad", "loss_grad"):
            out[f"{prefix}.{name}"] = Example(lambda name=name, **kw: getattr(factory(), name)(**kw), _data(),
                                              paired=[("X", "y")])
        elif name in ("predict_proba", "predict"):
            out[f"{prefix}.{name}"] = Example(lambda name=name, **kw: getattr(factory(), name)(**kw),
                                              lambda: {"X": _features()})
        elif name == "step":
            out[f"{prefix}.step"] = Example(lambda **kw: fresh().step(**kw),
                                            lambda: {"grad": np.full(fresh().params.size, 0.1), "lr": 0.5},
                                            positive=["lr"])
        elif name == "project":
            out[f"{prefix}.project"] = Example(lambda **kw: fresh().project(**kw), {"radius": 1.0},
                                               positive=["radius"])
    return out


def _selector_select(cls, *args, **kw):
    return Example(lambda **k: cls(*args, **kw).select(**k), lambda: {"rng": _rng()}, skip=RNG)


EXAMPLES = {
    # ---------------------------------------------------------------- protocols
    "icml25.bandits.BanditAlgorithm": Exempt("abstract"),
    "icml25.bandits.BanditAlgorithm.act": Exempt("abstract"),
    "icml25.bandits.BanditAlgorithm.update": Exempt("abstract"),
    "icml25.bandits.ExpertAlgorithm": Exempt("abstract"),
    "icml25.bandits.ExpertAlgorithm.act": Exempt("abstract"),
    "icml25.bandits.ExpertAlgorithm.update": Exempt("abstract"),
    "icml25.bandits.OnlineModel": Exempt("abstract"),
    **{f"icml25.bandits.OnlineModel.{m}": Exempt("abstract")
       for m in ("loss", "grad", "loss_grad", "step", "project", "predict_proba")},
    # ---------------------------------------------------------------- base algorithms
    "icml25.bandits.EXP3": Example(bd.EXP3, {"n_arms": 3, "horizon": 10, "eta": 0.1, "gamma": 0.1, "clip": 0.5},
                                   positive=["n_arms", "horizon"], nonneg=["eta", "gamma", "clip"]),
    "icml25.bandits.EXP3.act": Example(lambda **kw: bd.EXP3(3, 10).act(**kw), lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.EXP3.update": Example(lambda **kw: bd.EXP3(3, 10).update(**kw), {"arm": 1, "loss": 0.5},
                                          nonneg=["loss"]),
    "icml25.bandits.EXP4": Example(bd.EXP4, {"n_experts": 2, "n_actions": 3, "horizon": 10, "eta": 0.1,
                                             "gamma": 0.1, "clip": 0.5},
                                   positive=["n_experts", "n_actions", "horizon"], nonneg=["eta", "gamma", "clip"]),
    "icml25.bandits.EXP4.action_distribution": Example(lambda **kw: bd.EXP4(2, 3, 10).action_distribution(**kw),
                                                       lambda: {"advice": _advice()}),
    "icml25.bandits.EXP4.act": Example(lambda **kw: bd.EXP4(2, 3, 10).act(**kw),
                                       lambda: {"rng": _rng(), "advice": _advice()}, skip=RNG),
    "icml25.bandits.EXP4.update": Example(lambda **kw: _acted(bd.EXP4(2, 3, 10), np.array([2, 2])).update(**kw),
                                          {"action": 2, "loss": 0.5}, nonneg=["loss"]),
    "icml25.bandits.UCB": Example(bd.UCB, {"n_arms": 3, "scale": 1.0}, positive=["n_arms"], nonneg=["scale"]),
    "icml25.bandits.UCB.act": Example(lambda **kw: bd.UCB(3).act(**kw), lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.UCB.update": Example(lambda **kw: bd.UCB(3).update(**kw), {"arm": 1, "loss": 0.5},
                                         nonneg=["loss"]),
    "icml25.bandits.TsallisINF": Example(bd.TsallisINF, {"n_arms": 3, "eta0": 2.0}, positive=["n_arms", "eta0"]),
    "icml25.bandits.TsallisINF.act": Example(lambda **kw: bd.TsallisINF(3).act(**kw), lambda: {"rng": _rng()},
                                             skip=RNG),
    "icml25.bandits.TsallisINF.update": Example(lambda **kw: bd.TsallisINF(3).update(**kw), {"arm": 1, "loss": 0.5}),
    "icml25.bandits.FollowTheLeader": Example(bd.FollowTheLeader, {"n_arms": 3, "prior": 0.5}, positive=["n_arms"]),
    "icml25.bandits.FollowTheLeader.act": Example(lambda **kw: bd.FollowTheLeader(3).act(**kw),
                                                  lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.FollowTheLeader.update": Example(lambda **kw: bd.FollowTheLeader(3).update(**kw),
                                                     {"arm": 1, "loss": 0.5}),
    "icml25.bandits.Uniform": Example(bd.Uniform, {"n_arms": 3}, positive=["n_arms"]),
    "icml25.bandits.Uniform.act": Example(lambda **kw: bd.Uniform(3).act(**kw), lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.Uniform.update": Example(lambda **kw: bd.Uniform(3).update(**kw), {"arm": 1, "loss": 0.5}),
    "icml25.bandits.FixedArm": Example(bd.FixedArm, {"n_arms": 3, "arm": 1}, positive=["n_arms"]),
    "icml25.bandits.FixedArm.act": Example(lambda **kw: bd.FixedArm(3).act(**kw), lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.FixedArm.update": Example(lambda **kw: bd.FixedArm(3).update(**kw), {"arm": 1, "loss": 0.5}),
    # ---------------------------------------------------------------- environments
    "icml25.bandits.BernoulliEnv": Example(bd.BernoulliEnv, lambda: {"means": np.array([0.25, 0.75]), "horizon": 10,
                                                                      "switch_every": 5},
                                           positive=["horizon", "switch_every"],
                                           allow={"means": "ndim"}),  # (S, K) switching means
    "icml25.bandits.BernoulliEnv.segment": Example(lambda **kw: bd.BernoulliEnv([0.2, 0.8], 10).segment(**kw),
                                                   lambda: {"t": np.arange(4)},
                                                   allow={"t": ("empty", "ndim")}),  # elementwise over any rounds
    "icml25.bandits.BernoulliEnv.mean_loss": Example(lambda **kw: bd.BernoulliEnv([0.2, 0.8], 10).mean_loss(**kw),
                                                     lambda: {"t": np.arange(4), "arms": np.array([0, 1, 1, 0])},
                                                     paired=[("t", "arms")]),
    "icml25.bandits.BernoulliEnv.sample_sum": Example(lambda **kw: bd.BernoulliEnv([0.2, 0.8], 10).sample_sum(**kw),
                                                      lambda: {"arm": 1, "start": 2, "stop": 5, "rng": _rng()},
                                                      skip=RNG),
    "icml25.bandits.switching_means": Example(bd.switching_means, {"n_arms": 3, "n_segments": 2, "best": 0.25,
                                                                   "other": 0.75},
                                              positive=["n_arms", "n_segments"], nonneg=["best", "other"]),
    "icml25.bandits.LossMatrixEnv": Example(bd.LossMatrixEnv, lambda: {"losses": _losses()}),
    "icml25.bandits.LossMatrixEnv.mean_loss": Example(lambda **kw: bd.LossMatrixEnv(_losses()).mean_loss(**kw),
                                                      lambda: {"t": np.arange(4), "arms": np.array([0, 1, 1, 0])},
                                                      paired=[("t", "arms")]),
    "icml25.bandits.LossMatrixEnv.sample_sum": Example(lambda **kw: bd.LossMatrixEnv(_losses()).sample_sum(**kw),
                                                       lambda: {"arm": 1, "start": 0, "stop": 3, "rng": _rng()},
                                                       skip=RNG),
    "icml25.bandits.ExpertAdviceEnv": Example(bd.ExpertAdviceEnv,
                                              lambda: {"advice": np.array([[0, 1], [1, 1], [0, 0], [1, 0]]),
                                                       "losses": _losses()},
                                              paired=[("advice", "losses")]),
    "icml25.bandits.ExpertAdviceEnv.loss": Example(lambda **kw: _expert_env().loss(**kw), {"t": 2, "action": 1}),
    "icml25.bandits.check_advice": Example(bd.check_advice, lambda: {"advice": _advice(), "n_experts": 2,
                                                                     "n_actions": 3},
                                           positive=["n_experts", "n_actions"]),
    # ---------------------------------------------------------------- runners and regret
    "icml25.bandits.run_bandit": Example(bd.run_bandit, lambda: {"algorithm": bd.UCB(2), "env": bd.LossMatrixEnv(
        _losses()), "seed": 0}),
    "icml25.bandits.run_experts": Example(bd.run_experts, lambda: {"algorithm": bd.EXP4(2, 2, 4),
                                                                   "env": _expert_env(), "seed": 0}),
    "icml25.bandits.regret": Example(bd.regret, lambda: {"actions": np.array([0, 1, 1, 0]), "losses": _losses()},
                                     paired=[("actions", "losses")]),
    "icml25.bandits.pseudo_regret": Example(bd.pseudo_regret, lambda: {"env": bd.LossMatrixEnv(_losses()),
                                                                       "actions": np.array([0, 1, 1, 0])}),
    "icml25.bandits.regret_curve": Example(bd.regret_curve, lambda: {"env": bd.LossMatrixEnv(_losses()),
                                                                     "actions": np.array([0, 1, 1, 0])}),
    "icml25.bandits.expert_regret": Example(bd.expert_regret, lambda: {"env": _expert_env(),
                                                                       "actions": np.array([0, 1, 1, 0])}),
    "icml25.bandits.sample_index": Example(bd.sample_index, lambda: {"rng": _rng(), "p": np.array([0.2, 0.5, 0.3])},
                                           skip=RNG),
    # ---------------------------------------------------------------- private_bandits
    "icml25.bandits.BatchedPrivateBandit": Example(
        bd.BatchedPrivateBandit, lambda: {"base": bd.TsallisINF(2), "horizon": 8, "epsilon": 0.5, "batch_size": 2,
                                          "noise_fn": laplace_noise},
        positive=["horizon", "epsilon", "batch_size"]),
    "icml25.bandits.BatchedPrivateBandit.batch_length": Example(
        lambda **kw: bd.BatchedPrivateBandit(bd.TsallisINF(2), 7, 0.5).batch_length(**kw), {"j": 1}),
    "icml25.bandits.BatchedPrivateBandit.noise_scale": Example(
        lambda **kw: bd.BatchedPrivateBandit(bd.TsallisINF(2), 7, 0.5).noise_scale(**kw), {"j": 1}),
    "icml25.bandits.BatchedPrivateBandit.act": Example(
        lambda **kw: bd.BatchedPrivateBandit(bd.TsallisINF(2), 8, 0.5).act(**kw), lambda: {"rng": _rng()}, skip=RNG),
    "icml25.bandits.BatchedPrivateBandit.update": Example(
        lambda **kw: _acted(bd.BatchedPrivateBandit(bd.FixedArm(2, 1), 8, 0.5)).update(**kw),
        {"arm": 1, "loss": 0.5}, nonneg=["loss"]),
    "icml25.bandits.BatchedPrivateBandit.run": Example(
        lambda **kw: bd.BatchedPrivateBandit(bd.TsallisINF(2), 4, 0.5).run(**kw),
        lambda: {"env": bd.LossMatrixEnv(_losses()), "seed": 0}),
    "icml25.bandits.PerRoundLaplaceBandit": Example(
        bd.PerRoundLaplaceBandit, lambda: {"base": bd.TsallisINF(2), "horizon": 8, "epsilon": 0.5,
                                           "noise_fn": laplace_noise},
        positive=["horizon", "epsilon"]),
    "icml25.bandits.BatchedExpertsAsArms": Example(
        bd.BatchedExpertsAsArms, lambda: {"base": bd.TsallisINF(2), "n_actions": 3, "horizon": 8, "epsilon": 0.5,
                                          "batch_size": 2, "noise_fn": laplace_noise},
        positive=["n_actions", "horizon", "epsilon", "batch_size"]),
    "icml25.bandits.BatchedExpertsAsArms.act": Example(
        lambda **kw: bd.BatchedExpertsAsArms(bd.TsallisINF(2), 3, 8, 0.5).act(**kw),
        lambda: {"rng": _rng(), "advice": _advice()}, skip=RNG),
    "icml25.bandits.BatchedExpertsAsArms.update": Example(
        lambda **kw: _acted(bd.BatchedExpertsAsArms(bd.FixedArm(2, 1), 3, 8, 0.5), _advice()).update(**kw),
        {"action": 2, "loss": 0.5}, nonneg=["loss"]),
    "icml25.bandits.PrivateEXP4": Example(
        bd.PrivateEXP4, lambda: {"n_experts": 2, "n_actions": 3, "horizon": 8, "epsilon": 0.5, "eta": 0.1,
                                 "clip": 2.0, "noise_fn": laplace_noise},
        positive=["n_experts", "n_actions", "horizon", "epsilon"], nonneg=["eta", "clip"]),
    "icml25.bandits.PrivateEXP4.act": Example(lambda **kw: bd.PrivateEXP4(2, 3, 8, 0.5).act(**kw),
                                              lambda: {"rng": _rng(), "advice": _advice()}, skip=RNG),
    "icml25.bandits.PrivateEXP4.update": Example(
        lambda **kw: _acted(bd.PrivateEXP4(2, 3, 8, 0.5), np.array([2, 2])).update(**kw),
        {"action": 2, "loss": 0.5}, nonneg=["loss"]),
    "icml25.bandits.two_batch_audit": Example(bd.two_batch_audit, {"epsilon": 1.0, "loss_values": (0.0, 1.0),
                                                                   "n_arms": 1, "horizon": 2,
                                                                   "noise_multiplier": 1.0},
                                              positive=["epsilon", "n_arms", "horizon", "noise_multiplier"]),
    # ---------------------------------------------------------------- ucb_ogd: models
    "icml25.bandits.LogisticModel": Example(bd.LogisticModel, {"n_features": 3, "fit_intercept": True},
                                            positive=["n_features"]),
    **_model_methods("icml25.bandits.LogisticModel", _logistic, lambda: bd.LogisticModel(3),
                     ("loss", "grad", "loss_grad", "predict_proba", "predict", "step", "project")),
    "icml25.bandits.LogisticModel.loss_path": Example(lambda **kw: _logistic().loss_path(**kw),
                                                      _data(params=np.ones((2, 3))), paired=[("X", "y")]),
    "icml25.bandits.SoftmaxModel": Example(bd.SoftmaxModel, {"n_features": 3, "n_classes": 2, "fit_intercept": True},
                                           positive=["n_features", "n_classes"]),
    **_model_methods("icml25.bandits.SoftmaxModel", _softmax, lambda: bd.SoftmaxModel(3, 2),
                     ("loss", "grad", "loss_grad", "predict_proba")),
    "icml25.bandits.TorchModel": Example(bd.TorchModel, lambda: {"module": __import__("torch").nn.Linear(3, 2)}),
    **_model_methods("icml25.bandits.TorchModel", _torch_model, _fresh_torch,
                     ("loss", "grad", "loss_grad", "predict_proba", "predict", "step", "project")),
    # ---------------------------------------------------------------- ucb_ogd: selectors
    "icml25.bandits.SourceSelector": Example(bd.SourceSelector, {"n_sources": 3}, positive=["n_sources"]),
    "icml25.bandits.UCBSelector": Example(bd.UCBSelector, {"n_sources": 3, "loss_bound": 1.0, "bonus_scale": 1.0,
                                                           "window": 4},
                                          positive=["n_sources", "loss_bound", "window"], nonneg=["bonus_scale"]),
    "icml25.bandits.UCBSelector.select": _selector_select(bd.UCBSelector, 3),
    "icml25.bandits.UniformSelector": Example(bd.UniformSelector, {"n_sources": 3}, positive=["n_sources"]),
    "icml25.bandits.UniformSelector.select": _selector_select(bd.UniformSelector, 3),
    "icml25.bandits.RoundRobinSelector": Example(bd.RoundRobinSelector, {"n_sources": 3}, positive=["n_sources"]),
    "icml25.bandits.RoundRobinSelector.select": _selector_select(bd.RoundRobinSelector, 3),
    "icml25.bandits.GreedySelector": Example(bd.GreedySelector, {"n_sources": 3, "epsilon": 0.05, "window": 4},
                                             positive=["n_sources", "window"], nonneg=["epsilon"]),
    "icml25.bandits.GreedySelector.select": _selector_select(bd.GreedySelector, 3),
    "icml25.bandits.EXP3Selector": Example(bd.EXP3Selector, {"n_sources": 3, "horizon": 10, "loss_bound": 1.0,
                                                             "gamma": 0.1},
                                           positive=["n_sources", "horizon", "loss_bound"], nonneg=["gamma"]),
    "icml25.bandits.EXP3Selector.select": _selector_select(bd.EXP3Selector, 3, 10),
    "icml25.bandits.EXP3Selector.update": Example(lambda **kw: bd.EXP3Selector(3, 10).update(**kw),
                                                  {"source": 1, "loss": 0.5}),
    "icml25.bandits.UncertaintySelector": Example(bd.UncertaintySelector, {"n_sources": 3, "measure": "margin"},
                                                  positive=["n_sources"]),
    "icml25.bandits.UncertaintySelector.uncertainty": Example(
        lambda **kw: bd.UncertaintySelector(2).uncertainty(**kw), lambda: {"proba": np.array([[0.2, 0.8],
                                                                                                [0.5, 0.5]])}),
    "icml25.bandits.UncertaintySelector.select": Example(
        lambda **kw: bd.UncertaintySelector(2).select(**kw),
        lambda: {"rng": _rng(), "model": _logistic(), "candidates": [_features(), _features() + 1.0]}, skip=RNG),
    # ---------------------------------------------------------------- ucb_ogd: the loop and metrics
    "icml25.bandits.History": Exempt("record"),
    "icml25.bandits.ArraySource": Example(bd.ArraySource, lambda: {"X": _features(), "y": _y(),
                                                                   "transform": lambda X, rng: X + 0.0},
                                          paired=[("X", "y")]),
    "icml25.bandits.AdaptiveCollector": Example(
        bd.AdaptiveCollector, lambda: {"model": bd.LogisticModel(3), "selector": bd.UCBSelector(2), "loss_bound": 1.0,
                                       "eta0": 0.1, "radius": 2.0, "batch_size": 2, "seed": 0},
        positive=["loss_bound", "eta0", "radius", "batch_size"]),
    "icml25.bandits.AdaptiveCollector.select_source": Example(
        lambda **kw: _collector(bd.UncertaintySelector(2)).select_source(**kw),
        lambda: {"candidates": [_features(), _features() + 1.0]}),
    "icml25.bandits.AdaptiveCollector.observe": Example(lambda **kw: _collector().observe(**kw),
                                                        _data(source=1), paired=[("X", "y")]),
    "icml25.bandits.AdaptiveCollector.run": Example(lambda **kw: _collector().run(**kw),
                                                    lambda: {"sources": _sources(), "budget": 4,
                                                             "record_params": True},
                                                    positive=["budget"]),
    "icml25.bandits.UCBOGD": Example(
        bd.UCBOGD, lambda: {"n_sources": 2, "model": bd.LogisticModel(3), "loss_bound": 1.0, "eta0": 0.1,
                            "radius": 2.0, "bonus_scale": 1.0, "window": 4, "batch_size": 2, "seed": 0},
        positive=["n_sources", "loss_bound", "eta0", "radius", "window", "batch_size"], nonneg=["bonus_scale"]),
    "icml25.bandits.source_losses": Example(bd.source_losses, lambda: {"model": _logistic(),
                                                                       "eval_sets": _eval_sets()}),
    "icml25.bandits.worst_source_loss": Example(bd.worst_source_loss, lambda: {"model": _logistic(),
                                                                               "eval_sets": _eval_sets()}),
    "icml25.bandits.source_accuracies": Example(bd.source_accuracies, lambda: {"model": _logistic(),
                                                                               "eval_sets": _eval_sets()}),
    "icml25.bandits.worst_source_accuracy": Example(bd.worst_source_accuracy, lambda: {"model": _logistic(),
                                                                                       "eval_sets": _eval_sets()}),
    "icml25.bandits.worst_loss_path": Example(bd.worst_loss_path, lambda: {"model": _logistic(),
                                                                           "params": np.ones((3, 3)),
                                                                           "eval_sets": _eval_sets()}),
    "icml25.bandits.minimax_reference": Example(bd.minimax_reference, lambda: {"model": _logistic(),
                                                                               "eval_sets": _eval_sets(),
                                                                               "radius": 2.0, "max_iter": 20},
                                                positive=["radius", "max_iter"]),
    "icml25.bandits.solve_minimax": Example(
        bd.solve_minimax, lambda: {"losses_and_grads": lambda th: (np.array([th @ th, (th - 1) @ (th - 1)]),
                                                                   np.array([2 * th, 2 * (th - 1)])),
                                   "theta0": np.zeros(2), "radius": 2.0, "max_iter": 20},
        positive=["radius", "max_iter"]),
    "icml25.bandits.regret_exponent": Example(bd.regret_exponent, lambda: {"horizons": [10.0, 100.0, 1000.0],
                                                                           "regrets": [3.0, 10.0, 31.0]},
                                              paired=[("horizons", "regrets")]),
}

EXAMPLES.update({"icml25.bandits.SourceSelector.select": Exempt("abstract")})

EXAMPLES.update({
    "icml25.bandits.private_bandits.AuditResult": Exempt("record"),
    "icml25.bandits.private_bandits.NoiseFn": Exempt("alias"),
    "icml25.bandits.private_bandits.default_batch_size": Example(
        bd.private_bandits.default_batch_size, {"epsilon": 0.1}, positive=["epsilon"]),
    "icml25.bandits.private_bandits.laplace_noise": Example(
        laplace_noise, lambda: {"rng": np.random.default_rng(0), "scale": 2.0}, positive=["scale"]),
    "icml25.bandits.private_bandits.two_batch_output_distribution": Example(
        bd.private_bandits.two_batch_output_distribution,
        lambda: {"losses": np.array([[0.0, 1.0], [1.0, 0.0]]), "epsilon": 1.0, "bound": 3.0},
        positive=["epsilon", "noise_multiplier", "bound"]),
})
