"""Valid calls of ``icml25.operators`` (Fourier neural operators and the Bregman FNO)."""

import functools

from api_examples._core import Example, Exempt
from icml25 import operators


def _torch():
    import torch

    return torch


def _t(*shape, seed=0):
    torch = _torch()
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


_FNO = {"in_channels": 1, "out_channels": 1, "hidden_channels": 4, "n_modes": (2,), "n_layers": 2,
        "lifting_channels": 4, "projection_channels": 4, "zero_init": False, "seed": 0}
_SIZES = ["in_channels", "out_channels", "hidden_channels", "n_layers", "lifting_channels", "projection_channels"]


@functools.cache
def _fno():
    return operators.FNO(**_FNO)


@functools.cache
def _block():
    return operators.FNOBlock(4, (2,), seed=0)


@functools.cache
def _conv():
    return operators.SpectralConv(2, 3, (2,), seed=0)


def _fit_kwargs():
    return {"model": operators.FNO(1, 1, hidden_channels=4, n_modes=(2,), n_layers=1, lifting_channels=None,
                                   projection_channels=4, seed=0),
            "x_train": _t(4, 1, 8, seed=0), "y_train": _t(4, 1, 8, seed=1), "x_test": _t(2, 1, 8, seed=2),
            "y_test": _t(2, 1, 8, seed=3), "epochs": 1, "lr": 1e-3, "batch_size": 2, "seed": 0, "normalize": True}


EXAMPLES = {
    "icml25.operators.ActivationPair": Exempt("record"),
    "icml25.operators.get_activation_pair": Example(
        operators.get_activation_pair, {"name": "softplus", "version": "bregman", "beta": 10.0, "threshold": 20.0},
        positive=["beta", "threshold"]),
    "icml25.operators.SpectralConv": Example(
        operators.SpectralConv, {"in_channels": 2, "out_channels": 3, "n_modes": (2,), "init_std": "auto",
                                 "fft_norm": "forward", "seed": 0},
        positive=["in_channels", "out_channels"]),
    "icml25.operators.SpectralConv.forward": Example(lambda **kw: _conv()(**kw),
                                                     lambda: {"x": _t(2, 2, 8), "output_shape": (16,)},
                                                     allow={"x": "nan"}),  # NaN propagates, as in torch
    "icml25.operators.FNOBlock": Example(operators.FNOBlock, {"channels": 4, "n_modes": (2,), "zero_init": False,
                                                              "fft_norm": "forward", "seed": 0},
                                         positive=["channels"]),
    "icml25.operators.FNOBlock.forward": Example(lambda **kw: _block()(**kw), lambda: {"v": _t(2, 4, 8)},
                                                 allow={"v": "nan"}),
    # lifting_channels=None: a single 1x1 linear lifting (documented)
    "icml25.operators.FNO": Example(operators.FNO, {**_FNO, "architecture": "standard", "activation": "relu"},
                                    positive=_SIZES, allow={"lifting_channels": "none"}),
    "icml25.operators.BregmanFNO": Example(operators.BregmanFNO, _FNO, positive=_SIZES,
                                           allow={"lifting_channels": "none"}),
    # FNO rejects non-finite inputs itself
    "icml25.operators.FNO.forward": Example(lambda **kw: _fno()(**kw), lambda: {"x": _t(2, 1, 8)}),
    "icml25.operators.FNO.lift": Example(lambda **kw: _fno().lift(**kw), lambda: {"x": _t(2, 1, 8)}),
    "icml25.operators.FNO.hidden": Example(lambda **kw: _fno().hidden(**kw), lambda: {"x": _t(2, 1, 8)}),
    "icml25.operators.relative_l2": Example(operators.relative_l2,
                                            lambda: {"pred": _t(3, 1, 8, seed=0), "target": _t(3, 1, 8, seed=1),
                                                     "reduce": True},
                                            paired=[("pred", "target")]),
    "icml25.operators.fit_operator": Example(operators.fit_operator, _fit_kwargs,
                                             positive=["lr", "batch_size"], nonneg=["epochs"],
                                             paired=[("x_train", "y_train"), ("x_test", "y_test")]),
}
