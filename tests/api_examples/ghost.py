"""Valid calls of the GHOST names (``icml25.federated.ghost``: one-shot federated graph learning)."""

import functools

from api_examples._core import Example
from icml25.data.graphs import make_csbm, random_node_masks
from icml25.federated import FitIns
from icml25.federated.ghost import (
    GCN,
    GcnClient,
    GCNConv,
    GhostClient,
    GhostStrategy,
    ProxyGenerator,
    feature_alignment_loss,
    fgw_loss,
    gcn_accuracy,
    normalized_adjacency,
    proxy_graph,
    run_ghost,
    split_graph,
    topology_consistency,
    train_gcn,
)

P = "icml25.federated.ghost."
_DEVICE = {"device": "a torch device spec"}


def _torch():
    import torch

    return torch


@functools.cache
def _graph():
    return random_node_masks(make_csbm(24, n_classes=3, n_features=4, avg_degree=4, seed=0), seed=0)


def _edges():
    return _torch().as_tensor(_graph().edge_index)


def _adj():  # dense: the layers take a sparse or a dense (n, n) adjacency, and dense tensors can be mutated
    return normalized_adjacency(_graph().edge_index, 24).to_dense()


def _x():
    return _torch().as_tensor(_graph().x)


def _gcn():
    from icml25.utils.random import seeded

    with seeded(0):
        return GCN(4, 3, hidden=8)


def _generator():
    from icml25.utils.random import seeded

    with seeded(0):
        return ProxyGenerator(4, 3, noise_dim=4)


def _strategy():
    return GhostStrategy(4, 3, hidden=8, proxy_steps=1, server_steps=1, noise_dim=4)


@functools.cache
def _ghost_client():
    return GhostClient(_graph(), gen_epochs=1, noise_dim=4)


@functools.cache
def _upload():
    return _ghost_client().fit(FitIns({}, {}))


def _gcn_ins():
    from icml25.federated.torch_clients import module_to_arrays

    return FitIns(module_to_arrays(_gcn()), {"round": 1})


def _arrays():
    from icml25.federated.torch_clients import module_to_arrays

    return module_to_arrays(_strategy().make_model())


EXAMPLES = {
    P + "normalized_adjacency": Example(normalized_adjacency, lambda: {"edge_index": _graph().edge_index,
                                                                       "n_nodes": 24}, positive=["n_nodes"],
                                        skip=_DEVICE),
    P + "GCNConv": Example(GCNConv, {"in_dim": 4, "out_dim": 3, "seed": 0}, positive=["in_dim", "out_dim"]),
    P + "GCNConv.forward": Example(lambda **kw: GCNConv(4, 3).forward(**kw), lambda: {"x": _x(), "adj": _adj()},
                                   paired=[("x", "adj")],
                                   allow={"x": "nan", "adj": "nan"}),  # a forward pass propagates NaN as torch does
    P + "GCN": Example(GCN, {"in_dim": 4, "out_dim": 3, "hidden": 8, "seed": 0},
                       positive=["in_dim", "out_dim", "hidden"],
                       nonneg=["dropout"]),
    P + "GCN.forward": Example(lambda **kw: _gcn().eval().forward(**kw), lambda: {"x": _x(), "adj": _adj()},
                               paired=[("x", "adj")],
                               allow={"x": "nan", "adj": "nan"}),  # a forward pass propagates NaN as torch does
    P + "ProxyGenerator": Example(ProxyGenerator, {"n_features": 4, "n_classes": 3, "noise_dim": 4, "seed": 0},
                                  positive=["n_features", "n_classes", "noise_dim"], nonneg=["dropout"]),
    P + "ProxyGenerator.forward": Example(lambda **kw: _generator().eval().forward(**kw),
                                          lambda: {"z": _torch().zeros(5, 4), "y": _torch().tensor([0, 1, 2, 0, 1])},
                                          paired=[("z", "y")], allow={"z": "nan"}),  # a forward pass: NaN propagates
    P + "ProxyGenerator.sample": Example(lambda **kw: _generator().eval().sample(**kw),
                                         lambda: {"y": _torch().tensor([0, 1, 2, 0, 1])},
                                         allow={"y": "empty"}),  # no label, no sample
    P + "feature_alignment_loss": Example(feature_alignment_loss,
                                          lambda: {"x_hat": _torch().ones(5, 4), "x": _torch().ones(5, 4) * 0.5},
                                          paired=[("x_hat", "x")], nonneg=["lambda_d"]),
    P + "fgw_loss": Example(fgw_loss, lambda: {"adj1": _torch().eye(4), "adj2": _torch().eye(3),
                                               "x1": _torch().ones(4, 2), "x2": _torch().zeros(3, 2)},
                            paired=[("adj1", "x1"), ("adj2", "x2")], nonneg=["alpha"]),
    P + "topology_consistency": Example(topology_consistency, lambda: {"model": _gcn(), "x": _x(), "adj": _adj(),
                                                                       "edge_index": _edges()},
                                        paired=[("x", "adj")]),
    P + "proxy_graph": Example(proxy_graph, lambda: {"generator": _generator().eval(),
                                                     "y": _torch().tensor([0, 1, 2, 0, 1, 2])}, positive=["k"]),
    P + "train_gcn": Example(train_gcn, lambda: {"model": _gcn(), "graph": _graph(), "epochs": 1},
                             positive=["lr"], nonneg=["epochs", "weight_decay"]),
    P + "gcn_accuracy": Example(gcn_accuracy, lambda: {"model": _gcn(), "graph": _graph(),
                                                       "mask": _graph().test_mask.copy()},
                                allow={"mask": "none"}),  # None: every node
    P + "GhostClient": Example(GhostClient, lambda: {"graph": _graph(), "gen_epochs": 2, "noise_dim": 4},
                               positive=["lr", "k", "noise_dim"],
                               nonneg=["gen_epochs", "weight_decay", "lambda_d", "lambda_f", "fgw_alpha", "dropout"],
                               skip=_DEVICE),
    P + "GhostClient.fit": Example(lambda **kw: _ghost_client().fit(**kw), lambda: {"ins": FitIns({}, {})},
                                   allow={"ins": "none"}),  # the instruction is ignored: the server sends nothing
    P + "GcnClient": Example(GcnClient, lambda: {"graph": _graph(), "epochs": 1, "hidden": 8},
                             positive=["lr", "hidden"], nonneg=["epochs", "weight_decay", "dropout"]),
    P + "GcnClient.fit": Example(lambda **kw: GcnClient(_graph(), epochs=1, hidden=8).fit(**kw),
                                 lambda: {"ins": _gcn_ins()}),
    P + "GhostStrategy": Example(GhostStrategy, {"n_features": 4, "n_classes": 3, "hidden": 8, "noise_dim": 4},
                                 positive=["n_features", "n_classes", "hidden", "proxy_steps", "server_steps", "lr",
                                           "k", "noise_dim"],
                                 nonneg=["dropout", "weight_decay", "lambda_r", "gen_dropout"], skip=_DEVICE),
    P + "GhostStrategy.configure_fit": Example(lambda **kw: _strategy().configure_fit(**kw),
                                               lambda: {"server_round": 1, "arrays": _arrays(), "clients": [0, 1]},
                                               positive=["server_round"],
                                               allow={"clients": "empty"}),  # no client sampled: no instruction
    P + "GhostStrategy.validate_fit": Example(lambda **kw: _strategy().validate_fit(**kw),
                                              lambda: {"server_round": 1, "arrays": _arrays(), "res": _upload()},
                                              positive=["server_round"]),
    P + "GhostStrategy.integrate": Example(lambda **kw: _strategy().integrate(**kw),
                                           lambda: {"uploads": [(0, _upload().arrays)]}),
    P + "GhostStrategy.aggregate_fit": Example(lambda **kw: _strategy().aggregate_fit(**kw),
                                               lambda: {"server_round": 1, "arrays": _arrays(),
                                                        "results": [(0, _upload())], "failures": []},
                                               positive=["server_round"],
                                               allow={"failures": "empty"}),  # no client failed
    P + "GhostStrategy.evaluate": Example(lambda **kw: _strategy().evaluate(**kw),
                                          lambda: {"server_round": 1, "arrays": _arrays()}, positive=["server_round"]),
    P + "split_graph": Example(split_graph, lambda: {"graph": _graph(), "n_clients": 2, "alpha": 1.0,
                                                     "min_nodes": 3},
                               positive=["n_clients", "alpha"], nonneg=["min_nodes"]),
    P + "run_ghost": Example(run_ghost, lambda: {"graph": _graph(), "n_clients": 2, "alpha": 1.0, "gen_epochs": 1,
                                                 "client_kwargs": {"noise_dim": 4}, "noise_dim": 4, "hidden": 8,
                                                 "proxy_steps": 1, "server_steps": 1},
                             positive=["n_clients", "alpha", "noise_dim", "hidden", "proxy_steps", "server_steps"],
                             nonneg=["gen_epochs"], timeout=20.0),
}
