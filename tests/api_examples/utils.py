"""Valid calls of ``icml25.utils`` (the shared validation and randomness helpers)."""

import numpy as np

from api_examples._core import Example
from icml25 import utils

_NAME = {"name": "a free-text label used in messages"}


def _torch():
    import torch

    return torch


class _Fitted:
    coef_ = np.zeros(2)


EXAMPLES = {
    "icml25.utils.as_generator": Example(utils.as_generator, {"seed": 0}, skip=_NAME),
    "icml25.utils.check_seed": Example(utils.check_seed, {"seed": 0}, skip=_NAME),
    "icml25.utils.int_seed": Example(utils.int_seed, {"seed": 0}, skip=_NAME),
    "icml25.utils.spawn": Example(utils.spawn, {"seed": 0, "n": 2}, skip=_NAME, allow={"n": "zero"}),
    "icml25.utils.torch_generator": Example(utils.torch_generator, {"seed": 0},
                                            skip={**_NAME, "device": "any torch device spec"}),
    "icml25.utils.seeded": Example(lambda **kw: utils.seeded(**kw).__enter__(), {"seed": 0}, skip=_NAME),
    "icml25.utils.check_array": Example(utils.check_array, {"x": np.ones((2, 3)), "name": "X"}, labels={"x": "X"},
                                        skip={**_NAME, "dtype": "any NumPy dtype spec",
                                              "ndim": "an int or a tuple", "shape": "any shape spec",
                                              "min_len": "any length", "copy": "a flag",
                                              "finite": "a flag"},
                                        allow={"x": ("empty", "ndim")}),
    "icml25.utils.check_bool": Example(utils.check_bool, {"x": True, "name": "flag"},
                                       labels={"x": "flag"}, skip=_NAME),
    "icml25.utils.check_callable": Example(utils.check_callable, {"x": len, "name": "fn"},
                                           labels={"x": "fn"}, skip=_NAME),
    "icml25.utils.check_choice": Example(utils.check_choice, {"x": "a", "name": "mode", "choices": ("a", "b")},
                                         labels={"x": "mode"},
                                         skip={**_NAME, "choices": "any iterable of options"}),
    "icml25.utils.check_consistent_length": Example(
        lambda **kw: utils.check_consistent_length(kw["x"], kw["y"], names=kw["names"]),
        {"x": np.ones(3), "y": np.ones(3), "names": ("x", "y")}, paired=[("x", "y")],
        skip={"x": "any sized object", "y": "any sized object", "names": "labels"}),
    "icml25.utils.check_instance": Example(utils.check_instance, {"x": 1, "name": "n", "types": int},
                                           skip={**_NAME, "types": "a type or tuple of types",
                                                 "rule": "free text", "x": "any object is checked"}),
    "icml25.utils.check_is_fitted": Example(utils.check_is_fitted, {"estimator": _Fitted(), "attributes": "coef_"},
                                            skip={"estimator": "any object", "attributes": "attribute names"}),
    "icml25.utils.check_probability_vector": Example(utils.check_probability_vector,
                                                     {"p": np.array([0.5, 0.5]), "name": "p"},
                                                     skip={**_NAME, "atol": "a tolerance", "ndim": "an int"}),
    "icml25.utils.check_scalar": Example(utils.check_scalar, {"x": 3, "name": "n", "kind": "int", "min": 1},
                                         labels={"x": "n"},
                                         skip={**_NAME, "min": "a bound", "max": "a bound",
                                               "allow_inf": "a flag", "inclusive": "checked choice"}),
    "icml25.utils.check_tensor": Example(lambda **kw: utils.check_tensor(**kw), lambda: {"x": _torch().ones(2, 3),
                                                                                      "name": "h", "ndim": 2},
                                         labels={"x": "h"}, skip={**_NAME, "ndim": "an int or a tuple",
                                                                  "shape": "any shape spec", "floating": "a flag",
                                                                  "finite": "a flag"},
                                         allow={"x": ("empty", "nan")}),
    "icml25.utils.check_sequence": Example(utils.check_sequence, {"x": [1, 2], "name": "xs"}, labels={"x": "xs"},
                                           skip={**_NAME, "min_len": "a length", "item": "an optional checker"},
                                           allow={"x": "empty"}),
}

EXAMPLES.update({
    "icml25.utils.named_errors": Example(lambda **kw: utils.named_errors(kw["label"], kw["validate"], kw["x"]),
                                         {"label": "X", "validate": float, "x": 1.0},
                                         skip={"label": "a free-text label", "x": "whatever validate takes"}),
})

EXAMPLES.update({
    "icml25.utils.init_rng": Example(lambda **kw: utils.init_rng(**kw).__enter__(), {"seed": 0}, skip=_NAME),
})
