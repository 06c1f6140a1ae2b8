"""Materials: crystal structures and graph representations of them, with Rep-CodeGen's constraint checkers,
sandboxed evaluation of generated code and evolutionary loop (:mod:`icml25.materials.rep_codegen`).

The names are imported lazily; ASE (the ``materials`` extra) is needed for the structure bank and the EMT
data, the ``openai`` package for :class:`OpenAICompatibleClient`, PyTorch for :class:`CrystalGNN`.

>>> from icml25.materials import Crystal, compose, REFERENCE_GENES, local_representation, PermutationInvariance
>>> cu = Crystal([[0.0, 1.8, 1.8], [1.8, 0.0, 1.8], [1.8, 1.8, 0.0]], [[0.0, 0.0, 0.0]], [29])
>>> represent = local_representation(compose(REFERENCE_GENES["cgcnn"]))
>>> represent([cu])[0].n_edges
12
>>> PermutationInvariance().check(represent, [cu], rng=0).passed
True
"""

from importlib import import_module

_EXPORTS = {
    "Crystal": "icml25.materials.rep_codegen.crystal",
    "Graph": "icml25.materials.rep_codegen.graph",
    "graph_distance": "icml25.materials.rep_codegen.graph",
    "graphs_equivalent": "icml25.materials.rep_codegen.graph",
    "readout": "icml25.materials.rep_codegen.graph",
    "CheckResult": "icml25.materials.rep_codegen.constraints",
    "Constraint": "icml25.materials.rep_codegen.constraints",
    "PermutationInvariance": "icml25.materials.rep_codegen.constraints",
    "TranslationInvariance": "icml25.materials.rep_codegen.constraints",
    "RotationInvariance": "icml25.materials.rep_codegen.constraints",
    "PeriodicInvariance": "icml25.materials.rep_codegen.constraints",
    "ReflectionEquivariance": "icml25.materials.rep_codegen.constraints",
    "LipschitzContinuity": "icml25.materials.rep_codegen.constraints",
    "Discriminativeness": "icml25.materials.rep_codegen.constraints",
    "default_constraints": "icml25.materials.rep_codegen.constraints",
    "local_representation": "icml25.materials.rep_codegen.constraints",
    "random_rotation": "icml25.materials.rep_codegen.constraints",
    "random_unimodular": "icml25.materials.rep_codegen.constraints",
    "CUTOFF_RADIUS": "icml25.materials.rep_codegen.blocks",
    "REFERENCE_GENES": "icml25.materials.rep_codegen.blocks",
    "BASE_CODES": "icml25.materials.rep_codegen.blocks",
    "compose": "icml25.materials.rep_codegen.blocks",
    "genes_of": "icml25.materials.rep_codegen.blocks",
    "check_genes": "icml25.materials.rep_codegen.blocks",
    "CandidateError": "icml25.materials.rep_codegen.sandbox",
    "EvalReport": "icml25.materials.rep_codegen.sandbox",
    "Sandbox": "icml25.materials.rep_codegen.sandbox",
    "run_candidate": "icml25.materials.rep_codegen.sandbox",
    "screen_source": "icml25.materials.rep_codegen.sandbox",
    "LLMClient": "icml25.materials.rep_codegen.llm",
    "LLMError": "icml25.materials.rep_codegen.llm",
    "OpenAICompatibleClient": "icml25.materials.rep_codegen.llm",
    "ScriptedClient": "icml25.materials.rep_codegen.llm",
    "extract_code": "icml25.materials.rep_codegen.llm",
    "random_genes": "icml25.materials.rep_codegen.llm",
    "mutate": "icml25.materials.rep_codegen.llm",
    "crossover": "icml25.materials.rep_codegen.llm",
    "Candidate": "icml25.materials.rep_codegen.evolve",
    "History": "icml25.materials.rep_codegen.evolve",
    "RepCodeGen": "icml25.materials.rep_codegen.evolve",
    "random_search": "icml25.materials.rep_codegen.evolve",
    "success_rate": "icml25.materials.rep_codegen.evolve",
    "chiral_structure": "icml25.materials.rep_codegen.data",
    "structure_bank": "icml25.materials.rep_codegen.data",
    "emt_dataset": "icml25.materials.rep_codegen.data",
    "FakeOpenAIServer": "icml25.materials.rep_codegen.fake_server",
    "CrystalGNN": "icml25.materials.rep_codegen.predict",
    "fit_property": "icml25.materials.rep_codegen.predict",
    "amd": "icml25.materials.rep_codegen.predict",
    "fit_kernel_ridge": "icml25.materials.rep_codegen.predict",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
