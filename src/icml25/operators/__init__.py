"""Neural operators for PDE solution maps (needs the ``torch`` extra)."""

from icml25.operators.bregman_operator import (
    ACTIVATIONS,
    ARCHITECTURES,
    FNO,
    ActivationPair,
    BregmanFNO,
    FNOBlock,
    SpectralConv,
    fit_operator,
    get_activation_pair,
    relative_l2,
)

__all__ = [
    "ACTIVATIONS",
    "ARCHITECTURES",
    "FNO",
    "ActivationPair",
    "BregmanFNO",
    "FNOBlock",
    "SpectralConv",
    "fit_operator",
    "get_activation_pair",
    "relative_l2",
]
