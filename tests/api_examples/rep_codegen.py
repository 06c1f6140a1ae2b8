"""Valid calls of ``icml25.materials`` (Rep-CodeGen: crystals, graphs, checkers, sandbox, agents, loop)."""

from functools import cache

import numpy as np
import torch

from api_examples._core import Example, Exempt
from icml25 import materials as m

_SOURCE = {"source": "free text: any code is screened and evaluated, a rejection is a CandidateError"}


@cache
def _cu():
    return m.Crystal([[0.0, 1.8, 1.8], [1.8, 0.0, 1.8], [1.8, 1.8, 0.0]], [[0.0, 0.0, 0.0]], [29])


@cache
def _nacl():
    return m.Crystal(np.eye(3) * 3.0, [[0, 0, 0], [0.5, 0.5, 0.5]], [11, 17])


@cache
def _code():
    return m.compose(m.REFERENCE_GENES["cgcnn"])


@cache
def _rep():
    return m.local_representation(_code())


def _graph():
    return _rep()([_nacl()])[0]


def _genes():
    return {"neighbours": "radius", "cutoff": "smooth", "features": ["rbf", "triple"]}


def _msgs():
    return [{"role": "user", "content": f"```python\n{_code()}```"}]


def _sandboxed(**kw):
    with m.Sandbox(_code(), timeout=20.0) as box:
        return box.represent(**kw)


def _fake_complete(**kw):
    with m.FakeOpenAIServer(["```python\ndef represent(a, b, c):\n    pass\n```"]) as server:
        return m.OpenAICompatibleClient(server.url, "fake", api_key="x", retries=0, timeout=5.0).complete(**kw)


@cache
def _history():
    return m.RepCodeGen([m.ScriptedClient(0)], [m.TranslationInvariance()], [_cu()], population=1,
                        generations=0).run()


@cache
def _loop():
    return m.RepCodeGen([m.ScriptedClient(0)], [m.TranslationInvariance()], [_cu()], population=1, generations=1)


def _gnn_inputs():
    return {"nodes": torch.randn(3, 2, generator=torch.Generator().manual_seed(0)),
            "edge_index": torch.tensor([[0, 1, 2], [1, 2, 0]]), "edges": torch.ones(3, 4),
            "batch": torch.tensor([0, 0, 1]), "n_graphs": 2}


@cache
def _gnn():
    return m.CrystalGNN(2, 4, hidden=8, layers=1, seed=0)


def _check(constraint):
    return Example(lambda **kw: constraint.check(**kw), lambda: {"represent": _rep(), "bank": [_cu()], "rng": 0})



EXAMPLES = {
    "icml25.materials.Crystal": Example(m.Crystal, lambda: {"lattice": np.eye(3) * 4.0, "frac_coords": [[0.0, 0, 0]],
                                                             "numbers": [3]}),
    "icml25.materials.Crystal.from_ase": Example(
        lambda **kw: m.Crystal.from_ase(**kw), lambda: {"atoms": _cu().to_ase()},
        skip={"atoms": "any object: anything but a periodic ase.Atoms is a TypeError or ValueError"}),
    "icml25.materials.Crystal.permute": Example(lambda **kw: _nacl().permute(**kw),
                                                lambda: {"order": np.array([1, 0])}),
    "icml25.materials.Crystal.translate": Example(lambda **kw: _nacl().translate(**kw),
                                                  lambda: {"shift": np.array([0.1, 0.2, 0.3])}),
    "icml25.materials.Crystal.rotate": Example(lambda **kw: _nacl().rotate(**kw), lambda: {"rotation": np.eye(3)}),
    "icml25.materials.Crystal.change_basis": Example(lambda **kw: _nacl().change_basis(**kw),
                                                     lambda: {"matrix": np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1]])}),
    "icml25.materials.Crystal.supercell": Example(lambda **kw: _nacl().supercell(**kw),
                                                  lambda: {"reps": np.array([2, 1, 1])}),
    "icml25.materials.Crystal.perturb": Example(lambda **kw: _nacl().perturb(**kw), {"sigma": 0.05, "seed": 0}),
    "icml25.materials.Crystal.displace": Example(lambda **kw: _nacl().displace(**kw),
                                                 lambda: {"delta": np.full((2, 3), 0.01)}),
    "icml25.materials.Graph": Example(m.Graph, lambda: {"node_feats": np.ones((2, 1)),
                                                         "edge_index": np.array([[0, 1], [1, 0]]),
                                                         "edge_feats": np.ones((2, 3)),
                                                         "edge_pseudo": np.ones((2, 1))}),
    "icml25.materials.graph_distance": Example(m.graph_distance, lambda: {"g1": _graph(), "g2": _graph()},
                                               positive=("repeat",)),
    "icml25.materials.graphs_equivalent": Example(m.graphs_equivalent, lambda: {"g1": _graph(), "g2": _graph()},
                                                  positive=("repeat",)),
    "icml25.materials.readout": Example(m.readout, lambda: {"g": _graph()}),
    "icml25.materials.CheckResult": Exempt("record"),
    "icml25.materials.EvalReport": Exempt("record"),
    "icml25.materials.Candidate": Exempt("record"),
    "icml25.materials.History": Exempt("record"),
    "icml25.materials.Constraint": Example(m.Constraint, {"trials": 2, "atol": 1e-6}, positive=("trials",)),
    "icml25.materials.Constraint.check": Exempt("abstract"),
    "icml25.materials.PermutationInvariance": Example(m.PermutationInvariance, {"trials": 1}, positive=("trials",)),
    "icml25.materials.PermutationInvariance.check": _check(m.PermutationInvariance(1)),
    "icml25.materials.TranslationInvariance": Example(m.TranslationInvariance, {"trials": 1}, positive=("trials",)),
    "icml25.materials.RotationInvariance": Example(m.RotationInvariance, {"trials": 1}, positive=("trials",)),
    "icml25.materials.PeriodicInvariance": Example(m.PeriodicInvariance, {"trials": 1}, positive=("trials",)),
    "icml25.materials.PeriodicInvariance.check": _check(m.PeriodicInvariance(1)),
    "icml25.materials.ReflectionEquivariance": Example(m.ReflectionEquivariance, lambda: {"chiral": [_nacl()]},
                                                       positive=("trials", "distinct")),
    "icml25.materials.ReflectionEquivariance.check": _check(m.ReflectionEquivariance(1, chiral=[_nacl()])),
    "icml25.materials.LipschitzContinuity": Example(m.LipschitzContinuity, {"trials": 1},
                                                    positive=("trials", "lipschitz", "path_points", "refine_points",
                                                              "step", "segments")),
    "icml25.materials.LipschitzContinuity.check": _check(m.LipschitzContinuity(1, path_points=4, refinements=1)),
    "icml25.materials.Discriminativeness": Example(m.Discriminativeness, {"distinct": 1e-3}, positive=("distinct",)),
    "icml25.materials.Discriminativeness.check": Example(
        lambda **kw: m.Discriminativeness().check(**kw), lambda: {"represent": _rep(), "bank": [_cu(), _nacl()]}),
    "icml25.materials.default_constraints": Example(m.default_constraints),
    "icml25.materials.local_representation": Example(m.local_representation, lambda: {"source": _code()}, skip=_SOURCE),
    "icml25.materials.random_rotation": Example(m.random_rotation, {"rng": 0}, allow={"rng": "none"}),
    "icml25.materials.random_unimodular": Example(m.random_unimodular, {"rng": 0}, allow={"rng": "none"}),
    "icml25.materials.compose": Example(m.compose, lambda: {"genes": _genes()}, positive=("cutoff",)),
    "icml25.materials.check_genes": Example(m.check_genes, lambda: {"genes": _genes()},
                                            skip={"name": "a label used in messages"}),
    "icml25.materials.genes_of": Example(m.genes_of, lambda: {"source": _code()},
                                         skip={"source": "free text: code without a genes header gives None"}),
    "icml25.materials.Sandbox": Example(m.Sandbox, lambda: {"source": _code()}, skip=_SOURCE, positive=("timeout",)),
    "icml25.materials.Sandbox.represent": Example(_sandboxed, lambda: {"crystals": [_cu()]}, timeout=30.0),
    "icml25.materials.screen_source": Example(m.screen_source, lambda: {"source": _code()}, skip=_SOURCE),
    "icml25.materials.run_candidate": Example(m.run_candidate, lambda: {"source": _code(), "bank": [_cu()],
                                                                         "constraints": [m.TranslationInvariance(1)]},
                                              skip=_SOURCE, positive=("timeout",), timeout=30.0),
    "icml25.materials.LLMClient": Exempt("abstract"),
    "icml25.materials.LLMClient.complete": Exempt("abstract"),
    "icml25.materials.OpenAICompatibleClient": Example(
        m.OpenAICompatibleClient, {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"},
        skip={"model": "any model name the endpoint serves", "api_key": "any key string"},
        positive=("timeout",)),
    "icml25.materials.OpenAICompatibleClient.complete": Example(_fake_complete, lambda: {"messages": _msgs()},
                                                                timeout=30.0),
    "icml25.materials.ScriptedClient": Example(m.ScriptedClient, {"seed": 0}),
    "icml25.materials.ScriptedClient.complete": Example(lambda **kw: m.ScriptedClient(0).complete(**kw),
                                                        lambda: {"messages": _msgs()}),
    "icml25.materials.extract_code": Example(m.extract_code,
                                             {"reply": "```python\ndef represent(a, b, c):\n    pass\n```"}),
    "icml25.materials.random_genes": Example(m.random_genes, {"rng": 0}, allow={"rng": "none"}),
    "icml25.materials.mutate": Example(m.mutate, lambda: {"genes": _genes(), "rng": 0}, allow={"rng": "none"}),
    "icml25.materials.crossover": Example(m.crossover, lambda: {"a": _genes(), "b": _genes(), "rng": 0},
                                          allow={"rng": "none"}),
    "icml25.materials.RepCodeGen": Example(m.RepCodeGen, lambda: {"clients": [m.ScriptedClient(0)]},
                                           positive=("population", "keep", "timeout")),
    "icml25.materials.RepCodeGen.evaluate": Example(lambda **kw: _loop().evaluate(**kw), lambda: {"source": _code()},
                                                    skip=_SOURCE, timeout=30.0),
    "icml25.materials.RepCodeGen.messages": Example(lambda **kw: _loop().messages(**kw),
                                                    lambda: {"parents": _history().candidates[:1], "stage": "evolve"}),
    "icml25.materials.random_search": Example(m.random_search, lambda: {"n_candidates": 1,
                                                                         "constraints": [m.TranslationInvariance(1)],
                                                                         "bank": [_cu()]},
                                              positive=("n_candidates", "timeout"), timeout=30.0),
    "icml25.materials.success_rate": Example(m.success_rate, lambda: {"histories": [_history()], "n_constraints": 1},
                                             positive=("n_constraints",)),
    "icml25.materials.chiral_structure": Example(m.chiral_structure),
    "icml25.materials.structure_bank": Example(m.structure_bank, {"seed": 0}),
    "icml25.materials.emt_dataset": Example(m.emt_dataset, {"n": 3, "seed": 0}, positive=("n",)),
    "icml25.materials.FakeOpenAIServer": Example(m.FakeOpenAIServer, {"replies": ["hello", None]}),
    "icml25.materials.CrystalGNN": Example(m.CrystalGNN, {"node_dim": 2, "edge_dim": 4, "hidden": 8, "seed": 0},
                                           positive=("node_dim", "edge_dim", "hidden", "layers")),
    "icml25.materials.CrystalGNN.forward": Example(lambda **kw: _gnn()(**kw), _gnn_inputs,
                                                   allow={"nodes": "nan", "edges": "nan"}, positive=("n_graphs",)),
    "icml25.materials.fit_property": Example(
        m.fit_property, lambda: {"train_graphs": [_graph()] * 3, "y_train": np.array([0.0, 1.0, 2.0]),
                                 "test_graphs": [_graph()], "y_test": np.array([1.0]), "hidden": 4, "layers": 1,
                                 "epochs": 1},
        paired=[("train_graphs", "y_train"), ("test_graphs", "y_test")],
        positive=("hidden", "layers", "epochs", "batch_size", "lr")),
    "icml25.materials.amd": Example(m.amd, lambda: {"crystal": _nacl(), "k": 4}, positive=("k",)),
    "icml25.materials.fit_kernel_ridge": Example(
        m.fit_kernel_ridge, lambda: {"x_train": np.arange(12.0).reshape(6, 2), "y_train": np.arange(6.0),
                                     "x_test": np.ones((2, 2)), "y_test": np.ones(2)},
        paired=[("x_train", "y_train"), ("x_test", "y_test")]),
}
