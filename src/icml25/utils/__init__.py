"""The ground floor every field stands on: argument validation, explicit randomness, small nn helpers.

``icml25.utils.validation`` states each argument rule once (scikit-learn's model);
``icml25.utils.random`` makes randomness explicit (``seed: int | numpy.random.Generator | None``);
``icml25.utils.nn`` holds the small PyTorch helpers several papers share (needs the ``torch`` extra).
"""

from icml25.utils.random import Seed, as_generator, check_seed, init_rng, int_seed, seeded, spawn, torch_generator
from icml25.utils.validation import (
    NotFittedError,
    check_array,
    check_bool,
    check_callable,
    check_choice,
    check_consistent_length,
    check_instance,
    check_is_fitted,
    check_probability_vector,
    check_scalar,
    check_sequence,
    check_tensor,
    named_errors,
)

__all__ = [
    "NotFittedError",
    "Seed",
    "as_generator",
    "check_array",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_consistent_length",
    "check_instance",
    "check_is_fitted",
    "check_probability_vector",
    "check_scalar",
    "check_seed",
    "check_sequence",
    "check_tensor",
    "named_errors",
    "int_seed",
    "init_rng",
    "seeded",
    "spawn",
    "torch_generator",
]
