"""Reasoning tasks learned by small transformers (needs the ``torch`` extra)."""

from icml25.reasoning.modular_arithmetic import (
    LWESampler,
    ModularSumSampler,
    ModularTransformer,
    NormRegularizedAngularLoss,
    recover_binary_secret,
)

__all__ = [
    "LWESampler",
    "ModularSumSampler",
    "ModularTransformer",
    "NormRegularizedAngularLoss",
    "recover_binary_secret",
]

# Grokking in the Wild (icml25.reasoning.grokking_multihop); its `evaluate` stays in the module (GSM-∞ owns the name).
from icml25.reasoning.grokking_multihop import (  # noqa: E402
    CompositionSplits,
    History,
    KnowledgeGraph,
    TinyGPT,
    assert_no_leakage,
    augment_with_synthetic_entities,
    bridge_free_accuracy,
    geonames_kg,
    make_composition_splits,
    random_kg,
    steps_to_accuracy,
    train_facts,
)

__all__ += ["CompositionSplits", "History", "KnowledgeGraph", "TinyGPT", "assert_no_leakage",
            "augment_with_synthetic_entities", "bridge_free_accuracy", "geonames_kg", "make_composition_splits",
            "random_kg", "steps_to_accuracy", "train_facts"]

# GSM-∞ (icml25.reasoning.gsm_infinity) is exported lazily: it needs no torch.
_GSM_INFINITY = ("OpenAICompatibleClient", "OracleModel", "RAGModel", "evaluate", "generate_realistic",
                 "generate_symbolic", "make_benchmark")
__all__ += list(_GSM_INFINITY)


def __getattr__(name: str):
    if name in _GSM_INFINITY:
        from icml25.reasoning import gsm_infinity

        return getattr(gsm_infinity, name)
    raise AttributeError(f"module 'icml25.reasoning' has no attribute {name!r}")
