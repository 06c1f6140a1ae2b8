"""Valid calls of ``icml25.optim`` (generalized-smoothness GD and the Squisher)."""

import functools

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import optim

_VECTORISED = ("empty", "ndim")  # ℓ and its step are vectorised over gradient norms of any shape


def _torch():
    import torch

    return torch


def _cosh():
    return optim.CoshSum(np.array([0.5, 1.0, 2.0]))


def _x0():
    return np.ones(3)


def _solver(extra):
    fn = _cosh()
    return lambda: {"grad_fn": fn.grad, "x0": _x0(), **extra, "f": fn.f, "max_iter": 30, "tol": 1e-6,
                    "domain": fn.domain, "callback": lambda k, x, s: False}


@functools.cache
def _result():
    fn = _cosh()
    return optim.ell_gd(fn.grad, _x0(), fn.ell, f=fn.f, max_iter=30)


def _norms():
    return np.array([0.5, 2.0])


def _points():
    return np.array([[0.5, -0.2, 0.1], [1.0, 0.3, -0.4]])


# ---------------------------------------------------------------- PyTorch fixtures


def _model():
    from icml25.utils.nn import make_mlp

    return make_mlp([3, 4, 2], seed=0)


def _data():
    torch = _torch()
    g = torch.Generator().manual_seed(0)
    return torch.randn(8, 3, generator=g), torch.randint(0, 2, (8,), generator=g)


@functools.cache
def _trained():
    """A model trained briefly with Adam and its optimizer (read only by the examples)."""
    from icml25.utils.nn import train_classifier

    model = _model()
    X, y = _data()
    opt = train_classifier(model, X, y, epochs=1, batch_size=4)
    return model, opt


def _importance(seed=0):
    return optim.random_importance(_model(), seed=seed)


def _state(seed=0):
    torch = _torch()
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(v.shape, generator=g) for k, v in _model().state_dict().items()}


def _masks():
    return optim.random_mask(_model(), 0.5, seed=0)


def _param():
    torch = _torch()
    p = torch.zeros(2, requires_grad=True)
    p.grad = torch.ones(2)
    return p


def _ell_gd_opt():
    return optim.EllGD([_param()], optim.AffineEll(1.0, 1.0))


_LAST_OPT = {}


def _closure_kwargs():
    """A fresh optimizer (kept in ``_LAST_OPT`` for the call) and a closure re-evaluating its loss."""
    torch = _torch()
    p = torch.ones(2, requires_grad=True)
    opt = _LAST_OPT["opt"] = optim.EllGD([p], optim.AffineEll(1.0, 1.0))

    def closure():
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    return {"closure": closure}


EXAMPLES = {
    # ---------------------------------------------------------------- ℓ functions
    "icml25.optim.Ell": Exempt("abstract"),
    "icml25.optim.Ell.step": Exempt("abstract"),
    "icml25.optim.EllFunction": Example(optim.EllFunction, {}),
    "icml25.optim.AffineEll": Example(optim.AffineEll, {"L0": 1.0, "L1": 1.0}, positive=["L0"], nonneg=["L1"]),
    "icml25.optim.AffineEll.step": Example(lambda **kw: optim.AffineEll(1.0, 1.0).step(**kw), lambda: {"s": _norms()},
                                           allow={"s": _VECTORISED}),
    "icml25.optim.ConstantEll": Example(optim.ConstantEll, {"L": 2.0}, positive=["L"]),
    "icml25.optim.ConstantEll.step": Example(lambda **kw: optim.ConstantEll(2.0).step(**kw), lambda: {"s": _norms()},
                                             allow={"s": _VECTORISED}),
    "icml25.optim.SquaredAffineEll": Example(optim.SquaredAffineEll, {"a": 1.0, "b": 1.0}, positive=["a"],
                                             nonneg=["b"]),
    "icml25.optim.SquaredAffineEll.step": Example(lambda **kw: optim.SquaredAffineEll(1.0, 1.0).step(**kw),
                                                  lambda: {"s": _norms()}, allow={"s": _VECTORISED}),
    "icml25.optim.PowerEll": Example(optim.PowerEll, {"L0": 1.0, "L1": 1.0, "rho": 0.5}, positive=["L0"],
                                     nonneg=["L1", "rho"]),
    "icml25.optim.PowerEll.step": Example(lambda **kw: optim.PowerEll(1.0, 1.0, 0.5).step(**kw),
                                          lambda: {"s": _norms()}, allow={"s": _VECTORISED}),
    "icml25.optim.CallableEll": Example(optim.CallableEll, {"fn": lambda u: 1.0 + u, "n_nodes": 8, "vectorized": True},
                                        positive=["n_nodes"]),
    "icml25.optim.as_ell": Example(optim.as_ell, {"ell": 2.0}, positive=["ell"]),
    "icml25.optim.ell_step": Example(optim.ell_step, lambda: {"ell": optim.AffineEll(1.0, 1.0), "grad_norm": _norms()},
                                     allow={"grad_norm": _VECTORISED}),
    "icml25.optim.quadrature_step": Example(optim.quadrature_step, lambda: {"ell": lambda u: 1.0 + u, "s": _norms(),
                                                                            "n_nodes": 8, "validate": True},
                                            positive=["n_nodes"], allow={"s": _VECTORISED}),
    # ---------------------------------------------------------------- solvers
    "icml25.optim.ell_gd": Example(optim.ell_gd, _solver({"ell": optim.AffineEll(4.0, 2.0)}), nonneg=["tol"]),
    "icml25.optim.constant_gd": Example(optim.constant_gd, _solver({"step": 0.1}), positive=["step"], nonneg=["tol"]),
    "icml25.optim.clipped_gd": Example(optim.clipped_gd, _solver({"L0": 4.0, "L1": 2.0}), positive=["L0"],
                                       nonneg=["L1", "tol"]),
    "icml25.optim.l0l1_gd": Example(optim.l0l1_gd, _solver({"L0": 4.0, "L1": 2.0}), positive=["L0"],
                                    nonneg=["L1", "tol"]),
    "icml25.optim.normalized_gd": Example(optim.normalized_gd, _solver({"c": 0.1}), positive=["c"], nonneg=["tol"]),
    "icml25.optim.armijo_gd": Example(
        optim.armijo_gd,
        lambda: {"grad_fn": _cosh().grad, "x0": _x0(), "f": _cosh().f, "step0": 1.0, "shrink": 0.5, "growth": 2.0,
                 "c1": 1e-4, "max_backtracks": 20, "max_iter": 30, "tol": 1e-6, "domain": _cosh().domain,
                 "callback": lambda k, x, s: False},
        positive=["step0", "shrink", "growth", "c1", "max_backtracks"], nonneg=["tol"]),
    "icml25.optim.theory_constant_step": Example(optim.theory_constant_step,
                                                 lambda: {"ell": optim.AffineEll(1.0, 1.0), "grad_norm0": 2.0},
                                                 nonneg=["grad_norm0"]),
    "icml25.optim.grid_search": Example(
        optim.grid_search,
        lambda: {"run": lambda v: optim.constant_gd(_cosh().grad, _x0(), v, max_iter=20), "values": [0.05, 0.1]}),
    "icml25.optim.GDResult": Exempt("record"),
    "icml25.optim.GridResult": Exempt("record"),
    "icml25.optim.GDResult.descent_violations": Example(lambda **kw: _result().descent_violations(**kw),
                                                        {"rtol": 1e-9}, nonneg=["rtol"]),
    # ---------------------------------------------------------------- estimation
    "icml25.optim.measure_curvature": Example(
        optim.measure_curvature,
        lambda: {"grad_fn": _cosh().grad, "hvp_fn": _cosh().hvp, "points": _points(), "n_power_iter": 5, "seed": 0},
        positive=["n_power_iter"], allow={"hvp_fn": "none"}),  # None: finite differences of grad_fn
    "icml25.optim.estimate_ell": Example(
        optim.estimate_ell,
        lambda: {"grad_fn": _cosh().grad, "hvp_fn": _cosh().hvp, "points": _points(), "n_power_iter": 5,
                 "weight": 1.0, "seed": 0},
        positive=["n_power_iter"], nonneg=["weight"], allow={"hvp_fn": "none"}),
    "icml25.optim.fit_affine_envelope": Example(
        optim.fit_affine_envelope, lambda: {"s": np.array([0.5, 1.0, 2.0]), "h": np.array([1.0, 1.5, 3.0]),
                                            "weight": 1.0},
        paired=[("s", "h")], nonneg=["weight"]),
    # ---------------------------------------------------------------- certified test functions
    "icml25.optim.CertifiedFunction": Example(optim.CertifiedFunction, {}),
    "icml25.optim.CertifiedFunction.domain": Example(lambda **kw: _cosh().domain(**kw), lambda: {"x": _x0()}),
    "icml25.optim.CertifiedFunction.f": Example(lambda **kw: optim.DoubleWell(3).f(**kw), lambda: {"x": _x0()}),
    "icml25.optim.CertifiedFunction.grad": Example(lambda **kw: _cosh().grad(**kw), lambda: {"x": _x0()}),
    "icml25.optim.CertifiedFunction.hess_norm": Example(lambda **kw: _cosh().hess_norm(**kw), lambda: {"x": _x0()}),
    "icml25.optim.CertifiedFunction.hvp": Example(lambda **kw: _cosh().hvp(**kw), lambda: {"x": _x0(), "v": _x0()}),
    "icml25.optim.CertifiedFunction.check_ell": Example(lambda **kw: _cosh().check_ell(**kw),
                                                        {"n_points": 20, "seed": 0}, positive=["n_points"]),
    "icml25.optim.CoshSum": Example(optim.CoshSum, lambda: {"a": np.array([0.5, 1.0, 2.0])}),
    "icml25.optim.CoshSum.f": Example(lambda **kw: _cosh().f(**kw), lambda: {"x": _x0()}),
    "icml25.optim.DoubleWell": Example(optim.DoubleWell, {"d": 3}, positive=["d"]),
    "icml25.optim.LogBarrier": Example(optim.LogBarrier, lambda: {"c": np.array([0.5, 1.0, 2.0])}),
    # ---------------------------------------------------------------- PyTorch
    "icml25.optim.EllGD": Example(lambda **kw: optim.EllGD(**kw),
                                  lambda: {"params": [_param()], "ell": optim.AffineEll(1.0, 1.0), "lr": 1.0,
                                           "maximize": False},
                                  nonneg=["lr"]),
    "icml25.optim.EllGD.add_param_group": Example(lambda **kw: _ell_gd_opt().add_param_group(**kw),
                                                  lambda: {"param_group": {"params": [_param()], "lr": 0.5}}),
    "icml25.optim.EllGD.load_state_dict": Example(lambda **kw: _ell_gd_opt().load_state_dict(**kw),
                                                  lambda: {"state_dict": _ell_gd_opt().state_dict()}),
    "icml25.optim.EllGD.step": Example(lambda **kw: _LAST_OPT["opt"].step(**kw), _closure_kwargs),
    "icml25.optim.scale_grad_by_ell_": Example(optim.scale_grad_by_ell_, lambda: {"parameters": [_param()],
                                                                                  "ell": 2.0},
                                               positive=["ell"],
                                               allow={"parameters": "empty"}),  # as clip_grad_norm_: gamma(0)
    # ---------------------------------------------------------------- the Squisher and its consumers
    "icml25.optim.read_squisher": Example(
        optim.read_squisher,
        lambda: {"optimizer": _trained()[1], "model": _trained()[0], "n_data": 8, "batch_size": 4,
                 "reduction": "mean", "scale": "fisher_sum", "bias_correction": True, "strict": True},
        positive=["n_data", "batch_size"]),
    "icml25.optim.fisher_diagonal": Example(
        optim.fisher_diagonal,
        lambda: {"model": _model(), "X": _data()[0], "y": _data()[1], "mode": "exact", "n_samples": 1,
                 "batch_size": 1, "max_examples": 6, "n_data": 8, "scale": "fisher_sum", "chunk_size": 4, "seed": 0,
                 "method": "linear"},
        positive=["n_samples", "batch_size", "max_examples", "n_data", "chunk_size"],
        allow={"chunk_size": "none"}),  # None: the method's default chunk
    "icml25.optim.magnitude_importance": Example(optim.magnitude_importance, lambda: {"model": _model()}),
    "icml25.optim.uniform_importance": Example(optim.uniform_importance, lambda: {"model": _model()}),
    "icml25.optim.random_importance": Example(optim.random_importance, lambda: {"model": _model(), "seed": 0}),
    "icml25.optim.compare_importance": Example(optim.compare_importance,
                                               lambda: {"a": _importance(0), "b": _importance(1), "eps": 1e-30},
                                               positive=["eps"]),
    "icml25.optim.average_merge": Example(optim.average_merge,
                                          lambda: {"state_dicts": [_state(0), _state(1)], "weights": [0.5, 0.5]}),
    "icml25.optim.fisher_merge": Example(
        optim.fisher_merge,
        lambda: {"state_dicts": [_state(0), _state(1)], "importances": [_importance(0), _importance(1)],
                 "weights": [0.5, 0.5], "minimal_fisher_weight": 1e-8, "normalize_fisher_weight": False,
                 "exclude_param_names_regex": ("^no-such-parameter$",)},
        nonneg=["minimal_fisher_weight"], allow={"exclude_param_names_regex": "empty"}),
    "icml25.optim.task_arithmetic": Example(
        optim.task_arithmetic, lambda: {"base": _state(0), "finetuned": [_state(1), _state(2)], "alphas": 0.5},
        nonneg=["alphas"]),
    "icml25.optim.ugm_merge": Example(
        optim.ugm_merge,
        lambda: {"base": _state(0), "finetuned": [_state(1), _state(2)],
                 "importances": [_importance(1), _importance(2)], "alphas": 0.5, "prior_precision": 1.0},
        nonneg=["alphas"], positive=["prior_precision"]),
    "icml25.optim.top_fraction_masks": Example(optim.top_fraction_masks,
                                               lambda: {"scores": _importance(), "keep_fraction": 0.5,
                                                        "scope": "global"},
                                               positive=["keep_fraction"]),
    "icml25.optim.obd_prune": Example(optim.obd_prune,
                                      lambda: {"model": _model(), "importance": _importance(), "sparsity": 0.5,
                                               "scope": "global"},
                                      positive=["sparsity"]),
    "icml25.optim.magnitude_prune": Example(optim.magnitude_prune,
                                            lambda: {"model": _model(), "sparsity": 0.5, "scope": "layer"},
                                            positive=["sparsity"]),
    "icml25.optim.random_prune": Example(optim.random_prune,
                                         lambda: {"model": _model(), "sparsity": 0.5, "seed": 0, "scope": "global"},
                                         positive=["sparsity"]),
    "icml25.optim.apply_masks": Example(optim.apply_masks,
                                        lambda: {"model": _model(), "masks": _masks(), "inplace": False}),
    "icml25.optim.fish_mask": Example(optim.fish_mask, lambda: {"importance": _importance(), "keep_fraction": 0.5},
                                      positive=["keep_fraction"]),
    "icml25.optim.random_mask": Example(optim.random_mask, lambda: {"model": _model(), "keep_fraction": 0.5,
                                                                    "seed": 0},
                                        positive=["keep_fraction"]),
    "icml25.optim.masked_finetune": Example(
        optim.masked_finetune,
        lambda: {"model": _model(), "masks": _masks(), "X": _data()[0], "y": _data()[1], "epochs": 1,
                 "batch_size": 4},
        positive=["epochs", "batch_size"]),
    "icml25.optim.EWCPenalty": Example(optim.EWCPenalty, {"lam": 1.0, "mode": "online", "decay": 0.5},
                                       nonneg=["lam", "decay"]),
    "icml25.optim.EWCPenalty.consolidate": Example(lambda **kw: optim.EWCPenalty(1.0).consolidate(**kw),
                                                   lambda: {"importance": _importance(), "model": _model()}),
    "icml25.optim.ewc_loss": Example(
        optim.ewc_loss,
        lambda: {"penalty": optim.EWCPenalty(1.0), "model": _model(),
                 "loss_fn": _torch().nn.functional.cross_entropy}),
}

EXAMPLES.update({
    "icml25.optim.CallableEll.step": Example(
        lambda **kw: optim.CallableEll(lambda u: 1.0 + u, n_nodes=8, vectorized=True).step(**kw),
        lambda: {"s": np.array([0.5, 1.0])}, allow={"s": ("empty", "ndim")}),
    "icml25.optim.CoshSum.random": Example(optim.CoshSum.random, {"d": 3, "seed": 0}, positive=("d",)),
    "icml25.optim.LogBarrier.random": Example(optim.LogBarrier.random, {"d": 3, "seed": 0}, positive=("d",)),
})
