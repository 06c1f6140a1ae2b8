"""Reasoning: modular arithmetic, multi-hop knowledge composition and GSM-∞ (three ICML 2025 papers).

``modular_arithmetic`` and ``grokking_multihop`` train small transformers (``torch`` extra);
``gsm_infinity`` generates and scores problems and needs no torch.  Names are imported on first
use, so ``import icml25.reasoning`` never pulls in torch.  ``grokking_multihop.evaluate`` stays in
its module (``evaluate`` here is GSM-∞'s).
"""

import importlib
from typing import Any

_EXPORTS = {
    "icml25.reasoning.modular_arithmetic": (
        "LWESampler", "ModularSumSampler", "ModularTransformer", "NormRegularizedAngularLoss", "recover_binary_secret",
    ),
    "icml25.reasoning.grokking_multihop": (
        "CompositionSplits", "History", "KnowledgeGraph", "TinyGPT", "assert_no_leakage",
        "augment_with_synthetic_entities", "bridge_free_accuracy", "geonames_kg", "leakage_counts",
        "make_composition_splits", "random_kg", "steps_to_accuracy", "train_facts",
    ),
    "icml25.reasoning.gsm_infinity": (
        "OpenAICompatibleClient", "OracleModel", "RAGModel", "evaluate", "generate_realistic", "generate_symbolic",
        "make_benchmark",
    ),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    if name in _MODULE_OF:
        return getattr(importlib.import_module(_MODULE_OF[name]), name)
    raise AttributeError(f"module 'icml25.reasoning' has no attribute {name!r}")
