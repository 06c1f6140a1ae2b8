"""Interpretability: what trained models share and what they compute.

``model_independence``: exact and robust tests of whether two models were trained independently
(Zhu et al., ICML 2025).  Requires the ``torch`` extra.

``matryoshka_sae``: BatchTopK / TopK / ReLU sparse autoencoders and Matryoshka SAEs (nested-prefix losses
against feature absorption), the exact synthetic feature-hierarchy benchmark and its metrics (Bussmann et al.,
ICML 2025).  Requires the ``torch`` extra; its names are imported on first use.
"""

import importlib
from typing import Any

from icml25.interpretability.model_independence import (
    GLUMLP,
    BlockTest,
    IndependenceTest,
    PermTestResult,
    RMSNorm,
    TinyGLU,
    distill_glu,
    fisher_combine,
    generalized_match_test,
    localize,
    match_rows,
    match_test,
    perm_test,
    permute_hidden,
    phi_cosine,
    phi_h,
    phi_jsd,
    phi_l2,
    phi_u,
    prune_hidden,
    reinit_block,
    rotate_residual,
    spearman_pvalue,
    weight_match_test,
)

__all__ = [
    "BlockTest",
    "GLUMLP",
    "IndependenceTest",
    "PermTestResult",
    "RMSNorm",
    "TinyGLU",
    "distill_glu",
    "fisher_combine",
    "generalized_match_test",
    "localize",
    "match_rows",
    "match_test",
    "perm_test",
    "permute_hidden",
    "phi_cosine",
    "phi_h",
    "phi_jsd",
    "phi_l2",
    "phi_u",
    "prune_hidden",
    "reinit_block",
    "rotate_residual",
    "spearman_pvalue",
    "weight_match_test",
]

_MATRYOSHKA = (
    "BatchTopKSAE",
    "HierarchicalFeatures",
    "MatryoshkaSAE",
    "TrainHistory",
    "absorption_rate",
    "evaluate_sae",
    "fvu",
    "geometric_median",
    "l0",
    "load_sae",
    "match_latents_cosine",
    "match_latents_f1",
    "train_sae",
)
__all__ += list(_MATRYOSHKA)


def __getattr__(name: str) -> Any:
    if name in _MATRYOSHKA:
        return getattr(importlib.import_module("icml25.interpretability.matryoshka_sae"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
