"""The plain-PyTorch MPNNs (GIN, GCN) that WILT distils."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import torch

from icml25.data.molecules import make_molecule_like
from icml25.transport.wilt_mpnn import MPNN, embed_graphs, graphs_to_tensors, predict_graphs, train_mpnn

LABELS = ("C", "Cl", "H", "N", "O", "S")


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """Tiny tensors: a second intra-op thread only adds contention on a shared CI box."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _labelled(edges: list[tuple[int, int]], labels: dict[int, str]) -> nx.Graph:
    g = nx.Graph(edges)
    g.add_nodes_from(labels)
    nx.set_node_attributes(g, labels, "label")
    return g


def test_graphs_to_tensors_batches_disjoint_graphs():
    a = _labelled([(0, 1)], {0: "C", 1: "O"})
    b = _labelled([], {5: "N"})
    x, edge_index, batch, num = graphs_to_tensors([a, b], LABELS)
    assert num == 2 and batch.tolist() == [0, 0, 1]
    assert x.argmax(dim=1).tolist() == [0, 4, 3] and x.sum().item() == 3
    assert sorted(map(tuple, edge_index.T.tolist())) == [(0, 1), (1, 0)]


@pytest.mark.parametrize("conv", ["gin", "gcn"])
@pytest.mark.parametrize("pooling", ["sum", "mean"])
def test_embedding_is_permutation_invariant_and_matches_hand_gcn(conv, pooling):
    graphs, _, _ = make_molecule_like(4, seed=0)
    torch.manual_seed(0)
    model = MPNN(LABELS, 2, hidden=8, layers=2, conv=conv, pooling=pooling).double()
    g = graphs[0]
    shuffled = nx.Graph()  # the same graph, vertices renamed and inserted in reverse order
    shuffled.add_nodes_from((f"v{u}", g.nodes[u]) for u in reversed(list(g.nodes)))
    shuffled.add_edges_from((f"v{u}", f"v{x}") for u, x in g.edges)
    emb = embed_graphs(model, [g, shuffled, graphs[1]])
    assert emb.shape == (3, 8)
    np.testing.assert_allclose(emb[0], emb[1], atol=1e-10)
    assert predict_graphs(model, graphs).shape == (4, 2)
    if conv == "gcn":  # one layer by hand: relu(D^-1/2 (A + I) D^-1/2 X W + b), pooled
        single = MPNN(LABELS, 1, hidden=4, layers=1, conv="gcn", pooling=pooling).double()
        x, edge_index, batch, num = graphs_to_tensors([g], LABELS, torch.float64)
        a = nx.to_numpy_array(g, nodelist=list(g.nodes)) + np.eye(g.number_of_nodes())
        norm = np.diag(a.sum(axis=1) ** -0.5)
        weight, bias = (p.detach().numpy() for p in single.layers[0].parameters())
        h = np.maximum(norm @ a @ norm @ x.numpy() @ weight.T + bias, 0)
        expected = h.sum(axis=0) if pooling == "sum" else h.mean(axis=0)
        np.testing.assert_allclose(single.embed(x, edge_index, batch, num).detach().numpy()[0], expected)


def test_training_learns_the_planted_motif_and_is_deterministic():
    graphs, y, _ = make_molecule_like(160, seed=1)
    model = train_mpnn(graphs[:120], y[:120], epochs=25, val=(graphs[120:140], y[120:140]), seed=0)
    again = train_mpnn(graphs[:120], y[:120], epochs=25, val=(graphs[120:140], y[120:140]), seed=0)
    untrained = train_mpnn(graphs[:120], y[:120], epochs=0, seed=0)
    test_acc = np.mean(predict_graphs(model, graphs[140:]).argmax(axis=1) == y[140:])
    assert test_acc >= 0.85
    assert np.mean(predict_graphs(untrained, graphs[140:]).argmax(axis=1) == y[140:]) < test_acc
    np.testing.assert_array_equal(embed_graphs(model, graphs[140:]), embed_graphs(again, graphs[140:]))
    assert model.node_labels == LABELS


def test_regression_training_reduces_error():
    graphs, y, _ = make_molecule_like(80, task="regression", seed=2)
    before = train_mpnn(graphs, y, task="regression", epochs=0, seed=0)
    after = train_mpnn(graphs, y, task="regression", epochs=15, lr=3e-3, seed=0)
    mse = [np.mean((predict_graphs(m, graphs)[:, 0] - y) ** 2) for m in (before, after)]
    assert mse[1] < 0.5 * mse[0]


def test_bad_mpnn_input():
    graphs, y, _ = make_molecule_like(6, seed=3)
    with pytest.raises(ValueError, match="conv must be"):
        MPNN(LABELS, 2, conv="gat")
    with pytest.raises(ValueError, match="pooling must be"):
        MPNN(LABELS, 2, pooling="max")
    with pytest.raises(ValueError, match="distinct labels"):
        MPNN(("C", "C"), 2)
    with pytest.raises(ValueError, match="hidden must be"):
        MPNN(LABELS, 2, hidden=0)
    with pytest.raises(ValueError, match="one target per graph"):
        train_mpnn(graphs, y[:3])
    with pytest.raises(ValueError, match="non-negative integer classes"):
        train_mpnn(graphs, y - 1.5)
    with pytest.raises(ValueError, match="epochs must be"):
        train_mpnn(graphs, y, epochs=-1)
    with pytest.raises(ValueError, match="lr must be"):
        train_mpnn(graphs, y, lr=0)
    model = train_mpnn(graphs, y, epochs=0, node_labels=("C", "N", "O"))
    with pytest.raises(ValueError, match="not one of the model's node_labels"):
        embed_graphs(model, graphs)
    with pytest.raises(ValueError, match="at least one vertex"):
        graphs_to_tensors([nx.Graph()], LABELS)
    with pytest.raises(TypeError, match="undirected"):
        graphs_to_tensors([nx.DiGraph([(0, 1)])], LABELS)
