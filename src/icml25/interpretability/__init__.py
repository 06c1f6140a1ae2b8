"""Interpretability: what trained models share and what they compute.

``model_independence``: exact and robust tests of whether two models were trained independently
(Zhu et al., ICML 2025).  Requires the ``torch`` extra.
"""

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
