"""Valid calls of ``icml25.learning_theory`` (early-stopped GD, neurovarieties, CGRO and attacks)."""

from functools import cache

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import learning_theory as lt


def _torch():
    import torch

    return torch


# ---------------------------------------------------------------- early-stopped logistic GD


def _logreg_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 30))
    return X, np.where(X[:, 0] > 0, 1.0, -1.0)


@cache
def _gd():
    return lt.EarlyStoppedLogisticGD(max_eta_t=100.0, n_checkpoints=5, random_state=0).fit(*_logreg_data())


@cache
def _gauss():
    return lt.GaussianLogisticModel(np.array([1.0, 0.5, 0.25]), np.array([1.0, -1.0, 0.0]), seed=0, n_nodes=16)


def _xy():
    X, y = _logreg_data()
    return {"X": X, "y": y}


def _xgd():
    return {"X": _logreg_data()[0][:3]}


def _w():
    return {"W": np.array([[0.5, 0.1, 0.0], [1.0, -1.0, 0.0]])}


# ---------------------------------------------------------------- neuroalgebraic


@cache
def _net():
    return lt.PolyNet((2, 2, 1), 2)


def _theta():
    return np.array([0.5, -0.3, 0.2, 0.8, 1.0, -0.5])


@cache
def _variety():
    return lt.quadratic_shallow_equations(2, 1)


# ---------------------------------------------------------------- CGRO and attacks


def _clf():
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    with torch.random.fork_rng(devices=[]):  # the layers' default initialisation must not draw from the global RNG
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model


def _points():
    torch = _torch()
    X = torch.tensor([[0.1, 0.1, 0.1, 0.1], [0.9, 0.9, 0.9, 0.9], [0.1, 0.9, 0.1, 0.9], [0.9, 0.1, 0.9, 0.1]])
    return X, torch.tensor([0, 1, 2, 0])


@cache
def _memorizer():
    X, y = _points()
    return lt.RobustMemorizer(_clf(), X, y, eps=0.05)


def _attack_kwargs():
    X, y = _points()
    return {"model": _clf(), "x": X, "y": y, "eps": 0.05}


def _acc_kwargs():
    X, y = _points()
    return {"model": _clf(), "X": X, "y": y}


@cache
def _cnn():
    return lt.TwoLayerPatchCNN(3, m=2, seed=0)


def _tracker_kwargs():
    return {"w_star": np.array([1.0, 0.0, 0.0]), "train_noise": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])}


@cache
def _tracker():
    tracker = lt.DynamicsTracker(**_tracker_kwargs())
    tracker(0, _cnn())
    tracker(1, _cnn())
    return tracker



EXAMPLES = {
    # early-stopped logistic GD
    "icml25.learning_theory.EarlyStoppedLogisticGD": Example(
        lambda **kw: lt.EarlyStoppedLogisticGD(**kw).fit(*_logreg_data()),
        {"max_eta_t": 100.0, "n_checkpoints": 5, "random_state": 0},
        positive=("max_eta_t", "min_eta_t", "n_checkpoints", "validation_fraction")),
    "icml25.learning_theory.EarlyStoppedLogisticGD.fit": Example(
        lambda **kw: lt.EarlyStoppedLogisticGD(max_eta_t=100.0, n_checkpoints=5, random_state=0).fit(**kw), _xy,
        paired=[("X", "y")]),
    "icml25.learning_theory.EarlyStoppedLogisticGD.stop_at": Example(
        lambda **kw: lt.EarlyStoppedLogisticGD(max_eta_t=100.0, n_checkpoints=5, random_state=0).fit(
            *_logreg_data()).stop_at(**kw), {"index": 2}, allow={"index": "neg"}),
    "icml25.learning_theory.EarlyStoppedLogisticGD.decision_function": Example(
        lambda **kw: _gd().decision_function(**kw), _xgd),
    "icml25.learning_theory.EarlyStoppedLogisticGD.predict_proba": Example(
        lambda **kw: _gd().predict_proba(**kw), _xgd),
    "icml25.learning_theory.EarlyStoppedLogisticGD.predict": Example(lambda **kw: _gd().predict(**kw), _xgd),
    "icml25.learning_theory.GaussianLogisticModel": Example(
        lt.GaussianLogisticModel, lambda: {"cov_diag": np.array([1.0, 0.5]), "w_star": np.array([1.0, 0.0]),
                                           "seed": 0, "n_nodes": 16}, paired=[("cov_diag", "w_star")]),
    "icml25.learning_theory.GaussianLogisticModel.sample": Example(
        lambda **kw: _gauss().sample(**kw), {"n": 5}, positive=("n",)),
    "icml25.learning_theory.GaussianLogisticModel.logistic_risk": Example(
        lambda **kw: _gauss().logistic_risk(**kw), _w),
    "icml25.learning_theory.GaussianLogisticModel.zero_one_risk": Example(
        lambda **kw: _gauss().zero_one_risk(**kw), _w),
    "icml25.learning_theory.GaussianLogisticModel.calibration_error": Example(
        lambda **kw: _gauss().calibration_error(**kw), _w),
    "icml25.learning_theory.empirical_logistic_loss": Example(
        lt.empirical_logistic_loss, lambda: {"W": np.zeros(30), **_xy()}, paired=[("X", "y")],
        allow={"W": "ndim"}),
    "icml25.learning_theory.max_margin_direction": Example(
        lt.max_margin_direction, _xy, paired=[("X", "y")], positive=("tol", "max_iter")),
    "icml25.learning_theory.ridge_logistic_path": Example(
        lt.ridge_logistic_path, lambda: {**_xy(), "lambdas": np.array([1.0, 0.1])}, paired=[("X", "y")],
        positive=("tol", "max_iter")),
    # neuroalgebraic
    "icml25.learning_theory.DimResult": Exempt("record"),
    "icml25.learning_theory.PolyNet": Example(lt.PolyNet, {"widths": (2, 2, 1), "r": 2}, positive=("r",)),
    "icml25.learning_theory.PolyNet.unpack": Example(lambda **kw: _net().unpack(**kw), lambda: {"theta": _theta()}),
    "icml25.learning_theory.PolyNet.pack": Example(
        lambda **kw: _net().pack(**kw), lambda: {"layers": _net().unpack(_theta())}),
    "icml25.learning_theory.PolyNet.random_params": Example(lambda **kw: _net().random_params(**kw), {"seed": 0}),
    "icml25.learning_theory.PolyNet.random_points": Example(
        lambda **kw: _net().random_points(**kw), {"n_points": 3, "seed": 0}, positive=("n_points",)),
    "icml25.learning_theory.PolyNet.forward": Example(
        lambda **kw: _net().forward(**kw), lambda: {"theta": _theta(), "X": np.array([[1.0, 0.0], [0.6, 0.8]])}),
    "icml25.learning_theory.PolyNet.jacobian": Example(
        lambda **kw: _net().jacobian(**kw), lambda: {"theta": _theta(), "X": np.array([[1.0, 0.0], [0.6, 0.8]])}),
    "icml25.learning_theory.expected_dim": Example(lt.expected_dim, {"widths": (2, 2, 1), "r": 2}, positive=("r",)),
    "icml25.learning_theory.ah_secant_dim": Example(lt.ah_secant_dim, {"d0": 2, "d1": 2, "r": 3},
                                                    positive=("d0", "d1", "r")),
    "icml25.learning_theory.linear_net_dim": Example(lt.linear_net_dim, {"widths": (2, 2, 1)}),
    "icml25.learning_theory.neurovariety_dim": Example(
        lt.neurovariety_dim, {"widths": (2, 2, 1), "r": 2, "n_seeds": 1, "seed": 0},
        positive=("r", "n_seeds", "prime"), allow={"prime": "none"}),
    "icml25.learning_theory.param_rank": Example(
        lt.param_rank, lambda: {"widths": (2, 2, 1), "r": 2, "theta": _theta(), "seed": 0}, positive=("r",)),
    "icml25.learning_theory.rank_with_samples": Example(
        lt.rank_with_samples, {"widths": (2, 2, 1), "r": 2, "n_samples": 2, "seed": 0},
        positive=("r", "n_samples")),
    "icml25.learning_theory.activation_degree_threshold": Example(
        lt.activation_degree_threshold, {"widths": (2, 2, 1), "r_max": 2, "seed": 0}, positive=("r_max",)),
    "icml25.learning_theory.quadratic_coefficients": Example(
        lt.quadratic_coefficients, lambda: {"theta": _theta(), "d0": 2, "d1": 2}, positive=("d0", "d1")),
    "icml25.learning_theory.quadratic_shallow_equations": Example(
        lt.quadratic_shallow_equations, {"d0": 2, "d1": 1}, positive=("d0", "d1")),
    "icml25.learning_theory.is_singular_point": Example(
        lt.is_singular_point, lambda: {"variety": _variety(), "point": np.array([1.0, 1.0, 1.0])},
        positive=("tol",)),
    # CGRO
    "icml25.learning_theory.RobustMemorizer": Example(
        lambda **kw: lt.RobustMemorizer(**kw),
        lambda: {"clean_model": _clf(), "X_train": _points()[0], "y_train": _points()[1], "eps": 0.05},
        paired=[("X_train", "y_train")], positive=("eps", "tau", "M"), allow={"clip": "none"}),
    "icml25.learning_theory.RobustMemorizer.bump_output": Example(
        lambda **kw: _memorizer().bump_output(**kw), lambda: {"x": _points()[0]}, allow={"x": ("nan", "empty")}),
    "icml25.learning_theory.RobustMemorizer.forward": Example(
        lambda **kw: _memorizer().forward(**kw), lambda: {"x": _points()[0]}, allow={"x": ("nan", "empty")}),
    "icml25.learning_theory.RobustMemorizer.certify": Example(
        lambda **kw: _memorizer().certify(**kw), lambda: {"X": _points()[0], "y": _points()[1]},
        paired=[("X", "y")]),
    "icml25.learning_theory.TwoLayerPatchCNN": Example(
        lt.TwoLayerPatchCNN, {"d": 3, "m": 2, "seed": 0}, positive=("d", "m", "q", "init_std", "rho")),
    "icml25.learning_theory.TwoLayerPatchCNN.act": Example(
        lambda **kw: _cnn().act(**kw), lambda: {"z": _torch().tensor([-1.0, 0.5, 2.0])},
        allow={"z": ("nan", "empty", "ndim")}),
    "icml25.learning_theory.TwoLayerPatchCNN.forward": Example(
        lambda **kw: _cnn()(**kw), lambda: {"x": _torch().ones(2, 4, 3)}, allow={"x": ("nan", "empty")}),
    "icml25.learning_theory.DynamicsTracker": Example(lt.DynamicsTracker, _tracker_kwargs,
                                                      positive=("every", "eval_every"),
                                                      allow={"train_noise": "ndim"}),
    "icml25.learning_theory.DynamicsTracker.feature_alignment": Example(
        lambda **kw: _tracker().feature_alignment(**kw), lambda: {"model": _cnn()}),
    "icml25.learning_theory.DynamicsTracker.noise_memorization": Example(
        lambda **kw: _tracker().noise_memorization(**kw), lambda: {"model": _cnn()}),
    "icml25.learning_theory.DynamicsTracker.stages": Example(
        lambda **kw: _tracker().stages(**kw), {"feature_fraction": 0.9, "memorization_fraction": 0.5},
        positive=("feature_fraction", "memorization_fraction")),
    "icml25.learning_theory.DynamicsTracker.value_at": Example(
        lambda **kw: _tracker().value_at(**kw), {"step": 1, "which": "phi"}),
    "icml25.learning_theory.interval_bounds": Example(
        lt.interval_bounds, lambda: {"model": _clf(), "lower": _points()[0] - 0.05, "upper": _points()[0] + 0.05},
        paired=[("lower", "upper")]),
    "icml25.learning_theory.separation": Example(
        lt.separation, lambda: {"X": _points()[0], "y": _points()[1]}, paired=[("X", "y")]),
    # attacks
    "icml25.learning_theory.History": Exempt("record"),
    "icml25.learning_theory.pgd": Example(lt.pgd, _attack_kwargs, paired=[("x", "y")], allow={"clip": "none"},
                                          positive=("eps", "alpha", "steps", "restarts")),
    "icml25.learning_theory.fgsm": Example(lt.fgsm, _attack_kwargs, paired=[("x", "y")], allow={"clip": "none"},
                                           positive=("eps", "alpha")),
    "icml25.learning_theory.clean_accuracy": Example(lt.clean_accuracy, _acc_kwargs, paired=[("X", "y")]),
    "icml25.learning_theory.robust_accuracy": Example(
        lt.robust_accuracy, lambda: {**_acc_kwargs(), "eps": 0.05, "steps": 2}, paired=[("X", "y")],
        allow={"clip": "none"},
        positive=("eps", "steps", "restarts", "alpha", "batch_size")),
    "icml25.learning_theory.adversarial_train": Example(
        lt.adversarial_train, lambda: {**_acc_kwargs(), "eps": 0.05, "epochs": 1, "steps": 1, "batch_size": 2},
        paired=[("X", "y")], allow={"clip": "none", "batch_size": "none"},
        positive=("eps", "epochs", "steps", "alpha", "batch_size", "lr", "eval_every", "eval_steps", "eval_eps"),
        nonneg=("weight_decay",)),
}

EXAMPLES.update({
    "icml25.learning_theory.GaussianLogisticModel.power_law": Example(
        lt.GaussianLogisticModel.power_law, {"d": 8, "n_signal": 2, "seed": 0}, positive=("d",),
        allow={"n_signal": "zero"}, nonneg=("decay",)),
})


def _plane_curve():
    import sympy

    x, y = sympy.symbols("x y")
    return {"equations": [x * y - 1], "symbols": (x, y), "codim": 1}


_NA = "icml25.learning_theory.neuroalgebraic."

EXAMPLES.update({
    _NA + "ImplicitVariety": Example(lt.neuroalgebraic.ImplicitVariety, _plane_curve),
    _NA + "ImplicitVariety.residuals": Example(lambda **kw: _variety().residuals(**kw),
                                               lambda: {"point": np.array([1.0, 1.0, 1.0])}),
    _NA + "ImplicitVariety.jacobian": Example(lambda **kw: _variety().jacobian(**kw),
                                              lambda: {"point": np.array([1.0, 1.0, 1.0])}),
    _NA + "RankResult": Exempt("record"),
    _NA + "exact_rank": Example(lt.neuroalgebraic.exact_rank, lambda: {"J": np.array([[1, 2], [2, 4], [0, 1]])},
                                allow={"prime": "none"}),  # None: rank over the rationals
    _NA + "numerical_rank": Example(lt.neuroalgebraic.numerical_rank,
                                    lambda: {"J": np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])},
                                    positive=("rtol", "min_gap")),
    _NA + "singularity_report": Example(lt.neuroalgebraic.singularity_report,
                                        lambda: {"variety": _variety(), "point": np.array([1.0, 1.0, 1.0])}),
    _NA + "sym_coordinates": Example(lt.neuroalgebraic.sym_coordinates, lambda: {"S": np.array([[1.0, 2.0],
                                                                                             [2.0, 3.0]])}),
})
