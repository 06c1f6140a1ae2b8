"""Valid calls of ``icml25.dynamics`` (the interventional state-space model of neural data)."""

from functools import cache

import numpy as np

from api_examples._core import Example
from icml25 import dynamics as dy

_K, _T, _D, _N, _M = 2, 4, 2, 3, 2
_NAN = {"nan": "nan"}


def _torch():
    import torch

    return torch


def _tensor(*shape, seed=0):
    torch = _torch()
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _u():
    u = np.zeros((_K, _T, _M))
    u[:, 1, 0] = 1.0
    return u


def _y():
    return np.random.default_rng(0).normal(size=(_K, _T, _N))


@cache
def _issm() -> dy.ISSM:
    return dy.ISSM(D=_D, N=_N, M=_M, hidden=4, layers=1, rnn_hidden=4, seed=0)


@cache
def _lds() -> dy.InterventionalLDS:
    return dy.InterventionalLDS(D=_D, M=_M, seed=0)


def _latents():
    x = np.random.default_rng(0).normal(size=(20, 2))
    return {"x_true": x, "x_hat": x[:, ::-1] * 2.0 + 0.1 * np.random.default_rng(1).normal(size=(20, 2))}



EXAMPLES = {
    "icml25.dynamics.ISSM": Example(dy.ISSM, {"D": _D, "N": _N, "M": _M, "hidden": 4, "layers": 1,
                                              "rnn_hidden": 4, "seed": 0},
                                    positive=("D", "N", "M", "dt", "hidden", "layers", "rnn_hidden", "B_sparsity"),
                                    nonneg=("B_tol",)),
    "icml25.dynamics.ISSM.posterior": Example(lambda **kw: _issm().posterior(**kw),
                                              lambda: {"y": _tensor(_K, _T, _N), "u": _tensor(_K, _T, _M, seed=1)},
                                              allow={"y": "nan"}, paired=[("y", "u")]),
    "icml25.dynamics.ISSM.log_likelihood": Example(lambda **kw: _issm().log_likelihood(**kw),
                                                   lambda: {"y": _tensor(_K, _T, _N),
                                                            "x": _tensor(_K, _T, _D, seed=1)},
                                                   allow={"y": "nan", "x": "nan"}, paired=[("y", "x")]),
    "icml25.dynamics.ISSM.loss": Example(lambda **kw: _issm().loss(**kw),
                                         lambda: {"y": _tensor(_K, _T, _N), "u": _tensor(_K, _T, _M, seed=1),
                                                  "seed": 0},
                                         paired=[("y", "u")], nonneg=("entropy_weight",)),
    "icml25.dynamics.ISSM.fit": Example(
        lambda **kw: dy.ISSM(D=_D, N=_N, M=_M, hidden=4, layers=1, rnn_hidden=4, seed=0).fit(**kw),
        lambda: {"y": _y(), "u": _u(), "n_iter": 2}, positive=("n_iter", "lr"), nonneg=("entropy_weight",),
        paired=[("y", "u")], skip={"callback": "default None; a given callback is called"}),
    "icml25.dynamics.ISSM.infer_latents": Example(lambda **kw: _issm().infer_latents(**kw),
                                                  lambda: {"y": _y(), "u": _u()}, paired=[("y", "u")]),
    "icml25.dynamics.ISSM.reconstruct": Example(lambda **kw: _issm().reconstruct(**kw),
                                                lambda: {"y": _y(), "u": _u()}, paired=[("y", "u")]),
    "icml25.dynamics.ISSM.predict": Example(lambda **kw: _issm().predict(**kw),
                                            lambda: {"u": _u(), "x0": np.zeros((_K, _D))}, paired=[("u", "x0")]),
    "icml25.dynamics.ISSM.flow": Example(lambda **kw: _issm().flow(**kw), lambda: {"x": np.ones((3, _D))},
                                         allow={"x": ("nan", "ndim")}),  # (..., D): any batch shape
    "icml25.dynamics.InterventionalLDS": Example(dy.InterventionalLDS, {"D": _D, "M": _M, "seed": 0},
                                                 positive=("D", "M", "dt", "B_sparsity"), nonneg=("B_tol",)),
    "icml25.dynamics.InterventionalLDS.flow": Example(lambda **kw: _lds().flow(**kw),
                                                      lambda: {"x": _tensor(3, _D)}, allow={"x": ("nan", "ndim")}),
    "icml25.dynamics.InterventionalLDS.stimulated": Example(lambda **kw: _lds().stimulated(**kw),
                                                            lambda: {"u": _tensor(3, _M)}, allow={"u": "ndim"}),
    "icml25.dynamics.InterventionalLDS.intervene": Example(lambda **kw: _lds().intervene(**kw),
                                                           lambda: {"x": _tensor(3, _D), "u": _tensor(3, _M, seed=1)},
                                                           allow={"x": "nan"}, paired=[("x", "u")]),
    "icml25.dynamics.InterventionalLDS.mean": Example(lambda **kw: _lds().mean(**kw),
                                                      lambda: {"x_prev": _tensor(3, _D),
                                                               "u": _tensor(3, _M, seed=1)},
                                                      allow={"x_prev": "nan"}, paired=[("x_prev", "u")]),
    "icml25.dynamics.InterventionalLDS.log_prob": Example(lambda **kw: _lds().log_prob(**kw),
                                                          lambda: {"x": _tensor(_K, _T, _D),
                                                                   "u": _tensor(_K, _T, _M, seed=1)},
                                                          allow={"x": "nan"}, paired=[("x", "u")]),
    "icml25.dynamics.InterventionalLDS.sample": Example(lambda **kw: _lds().sample(**kw),
                                                        lambda: {"T": _T, "u": _u(), "x0": np.zeros((_K, _D)),
                                                                 "seed": 0},
                                                        positive=("T",), paired=[("u", "x0")]),
    "icml25.dynamics.LSTMRecognition": Example(dy.LSTMRecognition, {"D": _D, "N": _N, "M": _M, "hidden": 4,
                                                                    "seed": 0},
                                               positive=("D", "N", "M", "hidden")),
    "icml25.dynamics.LSTMRecognition.forward": Example(
        lambda **kw: dy.LSTMRecognition(_D, _N, _M, hidden=4, seed=0)(**kw),
        lambda: {"y": _tensor(_K, _T, _N), "u": _tensor(_K, _T, _M, seed=1)},
        allow={"y": "nan", "u": "nan"}, paired=[("y", "u")]),
    "icml25.dynamics.LinearEmission": Example(dy.LinearEmission, {"D": _D, "N": _N, "seed": 0},
                                              positive=("D", "N")),
    "icml25.dynamics.LinearEmission.forward": Example(lambda **kw: dy.LinearEmission(_D, _N, seed=0)(**kw),
                                                      lambda: {"x": _tensor(3, _D)}, allow={"x": ("nan", "ndim")}),
    "icml25.dynamics.MLPEmission": Example(dy.MLPEmission, {"D": _D, "N": _N, "hidden": 4, "layers": 1, "seed": 0},
                                           positive=("D", "N", "hidden", "layers")),
    "icml25.dynamics.MLPEmission.forward": Example(lambda **kw: dy.MLPEmission(_D, _N, 4, 1, seed=0)(**kw),
                                                   lambda: {"x": _tensor(3, _D)}, allow={"x": ("nan", "ndim")}),
    "icml25.dynamics.align_latents": Example(dy.align_latents, _latents, paired=[("x_true", "x_hat")]),
    "icml25.dynamics.aligned_r2": Example(dy.aligned_r2, _latents, paired=[("x_true", "x_hat")]),
    "icml25.dynamics.eigen_error": Example(dy.eigen_error, lambda: {"M_hat": np.eye(2) * 0.9,
                                                                    "M_true": np.diag([0.8, 0.95])}),
}
