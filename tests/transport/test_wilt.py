"""WILT: the WL labeling tree, its distances (exact WWL / WLOA special cases), distillation, data."""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import networkx as nx
import numpy as np
import ot
import pytest
import scipy.sparse as sp
import torch

from icml25.data.molecules import (
    MOTIFS,
    VALENCE,
    load_tu_directory,
    make_molecule_like,
    make_social_like,
    motif_present,
)
from icml25.transport import WLLabelingTree, distill, rmse_without_outliers

DEPTH = 4


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """distill works on tiny tensors: a second intra-op thread only adds contention on a shared box."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _random_graphs(n: int, seed: int, edge_labels: bool = False) -> list[nx.Graph]:
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(n):
        g = nx.gnp_random_graph(int(rng.integers(2, 9)), 0.35, seed=int(rng.integers(10**6)))
        nx.set_node_attributes(g, {u: "abc"[int(rng.integers(3))] for u in g}, "label")
        if edge_labels:
            nx.set_edge_attributes(g, {e: "xy"[int(rng.integers(2))] for e in g.edges}, "label")
        graphs.append(g)
    return graphs


def _nx_colour_sequences(graph: nx.Graph, depth: int, edge_labels: bool = False) -> list[list]:
    """Independent WL colours from networkx: the initial label, then depth - 1 refinements."""
    hashes = nx.weisfeiler_lehman_subgraph_hashes(
        graph, node_attr="label", edge_attr="label" if edge_labels else None, iterations=depth - 1
    )
    return [[graph.nodes[u]["label"], *hashes[u]] for u in graph]


# ---------------------------------------------------------------- exact special cases (claim 5)
@pytest.mark.parametrize("edge_labels", [False, True])
def test_wwl_weights_equal_pot_emd_with_hamming_cost(edge_labels):
    graphs = _random_graphs(20, seed=1, edge_labels=edge_labels)
    tree = WLLabelingTree(depth=DEPTH, normalization="size").fit(graphs).set_weights("wwl")
    assert tree.use_edge_labels_ is edge_labels
    d = tree.pairwise(graphs)
    seqs = [np.array(_nx_colour_sequences(g, DEPTH, edge_labels), dtype=object) for g in graphs]
    for i in range(20):
        for j in range(20):
            cost = (seqs[i][:, None, :] != seqs[j][None, :, :]).mean(axis=2)
            a, b = np.full(len(seqs[i]), 1 / len(seqs[i])), np.full(len(seqs[j]), 1 / len(seqs[j]))
            assert d[i, j] == pytest.approx(ot.emd2(a, b, cost), abs=1e-6)


def test_wloa_weights_equal_optimal_assignment_kernel_distance():
    graphs = _random_graphs(20, seed=2)
    tree = WLLabelingTree(depth=DEPTH, normalization="dummy").fit(graphs).set_weights("wloa")
    d = tree.pairwise(graphs)

    def hist(seqs: list[list], n: int, tag: str) -> Counter:
        padded = seqs + [[(tag, t) for t in range(DEPTH)]] * (n - len(seqs))
        return Counter((t, c) for seq in padded for t, c in enumerate(seq))

    def k(x: Counter, y: Counter) -> int:
        return sum(min(v, y[key]) for key, v in x.items())

    seqs = [_nx_colour_sequences(g, DEPTH) for g in graphs]
    for i in range(20):
        for j in range(20):
            n = max(len(seqs[i]), len(seqs[j]))
            a, b = hist(seqs[i], n, "dummy-i"), hist(seqs[j], n, "dummy-j")
            assert d[i, j] == pytest.approx(0.5 * (k(a, a) + k(b, b)) - k(a, b), abs=1e-6)


# ---------------------------------------------------------------- the tree and the measures
def test_tree_layers_match_networkx_wl_partition():
    graphs = _random_graphs(15, seed=3)
    tree = WLLabelingTree(depth=DEPTH).fit(graphs)
    seqs = [s for g in graphs for s in _nx_colour_sequences(g, DEPTH)]
    for t in range(1, DEPTH + 1):
        assert np.sum(tree.layer_ == t) == len({s[t - 1] for s in seqs})
    assert tree.n_nodes_ == 1 + sum(len({s[t] for s in seqs}) for t in range(DEPTH))
    assert tree.parent_[0] == -1 and np.all(tree.layer_[tree.parent_[1:]] == tree.layer_[1:] - 1)


def test_hand_computed_tree_and_distance():
    g1 = nx.Graph([("u", "v")])
    nx.set_node_attributes(g1, {"u": "A", "v": "B"}, "label")
    g2 = nx.Graph()
    g2.add_node(0, label="A")
    tree = WLLabelingTree(depth=2).fit([g1, g2])
    # root, A, B, then (A|B), (B|A), (A|-)
    assert tree.n_nodes_ == 6
    assert tree.parent_.tolist() == [-1, 0, 0, 1, 2, 1]
    mu = tree.transform([g1, g2]).toarray()
    assert mu.tolist() == [[2, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 1]]
    assert tree.distance(mu[0], mu[1])[0] == pytest.approx(5.0)
    tree.set_weights(np.array([0.0, 1, 2, 3, 4, 5]))
    assert tree.pairwise([g1, g2])[0, 1] == pytest.approx(2 + 3 + 4 + 5)
    size = WLLabelingTree(depth=2, normalization="size").fit([g1, g2])
    assert size.transform([g1, g2]).toarray()[0].tolist() == [1, 0.5, 0.5, 0.5, 0.5, 0]


def test_measures_are_consistent_on_the_tree():
    graphs, _, _ = make_molecule_like(30, seed=4)
    for normalization, total in (("dummy", None), ("size", 1.0)):
        tree = WLLabelingTree(depth=DEPTH, normalization=normalization).fit(graphs)
        mu = tree.transform(graphs).toarray()
        n = np.array([g.number_of_nodes() for g in graphs], dtype=float)
        expected = n if total is None else np.ones(len(graphs))
        for t in range(DEPTH + 1):
            np.testing.assert_allclose(mu[:, tree.layer_ == t].sum(axis=1), expected)
        children = np.zeros_like(mu)
        np.add.at(children.T, tree.parent_[1:], mu[:, 1:].T)
        inner = tree.layer_ < DEPTH
        np.testing.assert_allclose(children[:, inner], mu[:, inner])


def test_distance_is_a_permutation_invariant_pseudometric():
    graphs, _, _ = make_molecule_like(12, seed=5)
    shuffled = nx.relabel_nodes(graphs[0], {u: f"v{(7 * u) % 101}" for u in graphs[0]})
    tree = WLLabelingTree(depth=3).fit(graphs)
    rng = np.random.default_rng(0)
    tree.set_weights(rng.random(tree.n_nodes_))
    d = tree.pairwise(graphs)
    assert np.allclose(d, d.T) and np.allclose(np.diag(d), 0) and np.all(d >= 0)
    assert np.all(d[:, :, None] <= d[:, None, :] + d.T[None, :, :] + 1e-9)
    assert tree.pairwise([shuffled], [graphs[0]])[0, 0] == pytest.approx(0.0, abs=1e-12)
    mu = tree.transform(graphs)
    i, j = rng.integers(12, size=(2, 30))
    np.testing.assert_allclose(tree.distance(mu[i], mu[j]), d[i, j], atol=1e-12)
    np.testing.assert_allclose(tree.pairwise(mu[:4], mu[4:]), d[:4, 4:], atol=1e-12)


def test_unfolding_tree_occurrences_and_top_colors():
    g = nx.Graph([(0, 1), (1, 2), (1, 3), (3, 4)])
    nx.set_node_attributes(g, {0: "O", 1: "N", 2: "O", 3: "C", 4: "C"}, "label")
    tree = WLLabelingTree(depth=3).fit([g])
    colors = tree.vertex_colors(g)
    nitro = int(colors[1, 1])  # the colour of N after one refinement: N with {O, O, C}
    unfolded = tree.unfolding_tree(nitro)
    assert unfolded.nodes[0]["label"] == "N"
    assert sorted(unfolded.nodes[c]["label"] for c in unfolded.successors(0)) == ["C", "O", "O"]
    assert tree.initial_label(nitro) == "N"
    deep = tree.unfolding_tree(int(colors[4, 2]))  # C at the end: C - C - {N, ...}
    assert deep.number_of_nodes() == 1 + 1 + 2 and nx.is_arborescence(deep)
    assert tree.occurrences(nitro, g) == {0, 1, 2, 3}
    assert tree.occurrences(int(colors[0, 0]), g) == {0, 2}
    w = np.zeros(tree.n_nodes_)
    w[nitro] = 5.0
    w[int(colors[0, 0])] = 1.0
    assert tree.set_weights(w).top_colors([g], k=2).tolist() == [nitro, int(colors[0, 0])]


def test_edge_labels_refine_and_pyg_style_input_is_accepted():
    single = nx.Graph([(0, 1)])
    double = nx.Graph([(0, 1)])
    for g, bond in ((single, 1), (double, 2)):
        nx.set_node_attributes(g, "C", "label")
        nx.set_edge_attributes(g, bond, "label")
    assert WLLabelingTree(depth=2).fit([single, double]).pairwise([single, double])[0, 1] > 0
    plain = WLLabelingTree(depth=2, use_edge_labels=False).fit([single, double])
    assert plain.pairwise([single, double])[0, 1] == 0
    data = SimpleNamespace(x=np.eye(2)[[0, 1, 1]], edge_index=np.array([[0, 1, 1, 2], [1, 0, 2, 1]]))
    path = nx.path_graph(3)
    nx.set_node_attributes(path, {0: 0, 1: 1, 2: 1}, "label")
    tree = WLLabelingTree(depth=3).fit([data, path])
    assert tree.pairwise([data], [path])[0, 0] == 0


def test_missing_labels_and_unseen_colours():
    bare = nx.path_graph(3)
    tree = WLLabelingTree(depth=2).fit([bare])
    assert tree.initial_label(1) is None and tree.n_nodes_ == 1 + 1 + 2
    with pytest.raises(ValueError, match="no 'label' attribute"):
        WLLabelingTree(strict=True).fit([bare])
    with pytest.raises(ValueError, match=r"1 WL colours in 1 of 2 graphs were not seen"):
        tree.transform([bare, nx.star_graph(3)])
    lenient = WLLabelingTree(depth=2, handle_unseen="ignore").fit([bare])
    mu = lenient.transform([nx.star_graph(3)]).toarray()[0]
    assert mu.tolist() == [4, 4, 3, 0]  # three path ends; the hub's new colour is dropped
    assert (tree.vertex_colors(nx.star_graph(3))[:, 1] == -1).sum() == 1


# ---------------------------------------------------------------- the vectorised refinement
def _reference_wilt(fit_graphs: list, other_graphs: list, depth: int, edge_labels: bool):
    """The WILT by its definition, vertex by vertex (layer by layer, graph by graph): a new node for every
    key (label, then (colour, sorted (neighbour colour, edge label) pairs)) in order of first vertex.
    Returns (parents, layers, keys, colours of fit_graphs + other_graphs)."""
    tables: list[dict] = [{} for _ in range(depth)]
    parents, layers, keys, edge_ids = [-1], [0], [None], {}

    def prepare(g: nx.Graph, grow: bool) -> tuple[list, list]:
        index = {u: i for i, u in enumerate(g.nodes)}
        adj: list[list] = [[] for _ in index]
        for u, x, data in g.edges(data=True):
            e = 0
            if edge_labels:
                e = edge_ids.setdefault(data["label"], len(edge_ids)) if grow else edge_ids.get(data["label"], -2)
            adj[index[u]].append((index[x], e))
            if u != x:
                adj[index[x]].append((index[u], e))
        return [data.get("label") for _, data in g.nodes(data=True)], adj

    def color(prepared: list, grow: bool) -> list[np.ndarray]:
        colors = [np.full((len(labels), depth), -1) for labels, _ in prepared]
        for t in range(depth):
            for c, (labels, adj) in zip(colors, prepared, strict=True):
                for u, label in enumerate(labels):
                    parent = 0 if t == 0 else int(c[u, t - 1])
                    if parent < 0:
                        continue
                    key = label if t == 0 else (parent, tuple(sorted((int(c[x, t - 1]), e) for x, e in adj[u])))
                    if key not in tables[t] and grow:
                        tables[t][key] = len(parents)
                        parents.append(parent), layers.append(t + 1), keys.append(key)
                    c[u, t] = tables[t].get(key, -1)
        return colors

    color([prepare(g, True) for g in fit_graphs], True)
    return parents, layers, keys, color([prepare(g, False) for g in fit_graphs + other_graphs], False)


def _with_loops_and_isolated(graphs: list[nx.Graph]) -> list[nx.Graph]:
    for i, g in enumerate(graphs):
        if i % 3 == 0:
            g.add_edge(0, 0, label="x")
        if i % 4 == 1:
            g.add_node(100, label="a")
    return graphs


@pytest.mark.parametrize(("name", "edge_labels"), [("random", False), ("random", True), ("molecules", False),
                                                  ("social", False)])
def test_vectorised_refinement_equals_the_vertex_by_vertex_definition(name, edge_labels):
    if name == "random":
        graphs = _with_loops_and_isolated(_random_graphs(40, seed=11, edge_labels=True))
    elif name == "molecules":
        graphs = make_molecule_like(40, seed=12)[0]
    else:
        graphs = make_social_like(30, seed=13)[0]
    fit, other = graphs[: len(graphs) // 2], graphs[len(graphs) // 2 :]
    for depth in (1, 2, DEPTH):
        parents, layers, keys, colors = _reference_wilt(fit, other, depth, edge_labels)
        for normalization in ("dummy", "size"):
            tree = WLLabelingTree(depth, normalization, use_edge_labels=edge_labels, handle_unseen="ignore").fit(fit)
            assert tree.parent_.tolist() == parents and tree.layer_.tolist() == layers
            assert [tree._key(v) for v in range(tree.n_nodes_)] == keys
            for g, c in zip(fit + other, colors, strict=True):
                np.testing.assert_array_equal(tree.vertex_colors(g), c)
            expected = np.zeros((len(graphs), tree.n_nodes_))
            for i, c in enumerate(colors):
                expected[i, 0] = len(c)
                np.add.at(expected[i], c[c >= 0], 1.0)
                expected[i] *= 1.0 / len(c) if normalization == "size" else 1.0  # transform scales by 1 / n
            np.testing.assert_array_equal(tree.transform(fit + other).toarray(), expected)
            refit = WLLabelingTree(depth, normalization, use_edge_labels=edge_labels).fit_transform(fit)
            np.testing.assert_array_equal(refit.toarray(), expected[: len(fit)])


# ---------------------------------------------------------------- distillation and the fit metric
def test_distill_recovers_distances_generated_by_tree_weights():
    graphs, _, _ = make_molecule_like(40, seed=6)
    tree = WLLabelingTree(depth=3).fit(graphs)
    mu = tree.transform(graphs)
    rng = np.random.default_rng(0)
    truth = rng.random(tree.n_nodes_) * (rng.random(tree.n_nodes_) < 0.2)
    target = tree.set_weights(truth).pairwise(mu)
    w = distill(tree, mu, target, epochs=200, lr=0.05, seed=0)
    fitted = tree.set_weights(w).pairwise(mu)
    iu = np.triu_indices(40, 1)
    assert np.all(w >= 0)
    assert np.abs(fitted[iu] - target[iu]).mean() < 0.05 * target[iu].mean()
    assert rmse_without_outliers(fitted[iu], target[iu])[0] < 0.02
    before = tree.set_weights("ones").pairwise(mu)[iu]
    assert rmse_without_outliers(before, target[iu])[0] > 0.05


def test_distill_is_deterministic_l1_sparsifies_and_fills_unseen():
    graphs, _, _ = make_molecule_like(30, seed=7)
    tree = WLLabelingTree(depth=3).fit(graphs)
    mu = tree.transform(graphs)
    target = tree.set_weights("wloa").pairwise(mu)
    train = np.arange(20)
    w0 = distill(tree, mu[train], target[:20, :20], epochs=100, lr=0.05, seed=3)
    np.testing.assert_array_equal(w0, distill(tree, mu[train], target[:20, :20], epochs=100, lr=0.05, seed=3))
    w1 = distill(tree, mu[train], target[:20, :20], epochs=100, lr=0.05, seed=3, l1=1.0)
    assert np.mean(w1 == 0) > np.mean(w0 == 0) + 0.2
    unseen = np.asarray((mu[train] > 0).sum(axis=0)).ravel() == 0
    assert unseen.any() and np.all(w0[unseen] == 0)
    kept = distill(tree, mu[train], target[:20, :20], epochs=5, seed=3, fill_unseen=None)
    assert np.all(kept[unseen] == 1)
    flat = distill(tree, mu, np.full((30, 30), 2.0), epochs=2)
    assert np.all(flat >= 0) and np.all(np.isfinite(flat))


def test_rmse_without_outliers():
    x = np.linspace(0.1, 1, 100)
    assert rmse_without_outliers(x, 3 * x) == pytest.approx((0.0, 1.0), abs=1e-12)
    y = 2 * x
    y[10] = 50.0  # one outlier among 100 pairs is dropped
    rmse, c = rmse_without_outliers(x, y)
    assert rmse == pytest.approx(0.0, abs=1e-12) and c == pytest.approx(1.0)
    assert rmse_without_outliers(x, y, outlier_frac=0.0)[0] > 0.05
    rmse, c = rmse_without_outliers(np.array([1.0, 2.0]), np.array([2.0, 1.0]), outlier_frac=0)
    assert c == pytest.approx(0.8) and rmse == pytest.approx(np.sqrt(((1 - 0.4) ** 2 + (0.5 - 0.8) ** 2) / 2))


# ---------------------------------------------------------------- bad input
def test_bad_tree_input():
    g = nx.path_graph(3)
    with pytest.raises(ValueError, match="depth must be an integer >= 1"):
        WLLabelingTree(depth=0).fit([g])
    with pytest.raises(ValueError, match="normalization must be"):
        WLLabelingTree(normalization="l2").fit([g])
    with pytest.raises(ValueError, match="handle_unseen must be"):
        WLLabelingTree(handle_unseen="skip").fit([g])
    with pytest.raises(ValueError, match="directed graphs are not supported"):
        WLLabelingTree().fit([nx.DiGraph([(0, 1)])])
    with pytest.raises(ValueError, match="multigraphs"):
        WLLabelingTree().fit([nx.MultiGraph([(0, 1)])])
    with pytest.raises(ValueError, match="at least one vertex"):
        WLLabelingTree().fit([g, nx.Graph()])
    with pytest.raises(ValueError, match="at least one graph"):
        WLLabelingTree().fit([])
    with pytest.raises(TypeError, match="sequence"):
        WLLabelingTree().fit(g)
    with pytest.raises(TypeError, match="networkx.Graph"):
        WLLabelingTree().fit([np.zeros(3)])
    mixed = nx.path_graph(3)
    mixed.edges[0, 1]["label"] = 1
    with pytest.raises(ValueError, match="some edges carry a 'label'"):
        WLLabelingTree().fit([mixed])
    with pytest.raises(ValueError, match="has no 'label' attribute but edge labels are used"):
        WLLabelingTree(use_edge_labels=True).fit([g])
    with pytest.raises(ValueError, match="not fitted"):
        WLLabelingTree().transform([g])
    tree = WLLabelingTree(depth=2).fit([g])
    with pytest.raises(ValueError, match="only with normalization='size'"):
        tree.set_weights("wwl")
    with pytest.raises(ValueError, match="shape"):
        tree.set_weights(np.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        tree.set_weights(-np.ones(tree.n_nodes_))
    with pytest.raises(ValueError, match="'ones', 'wwl', 'wloa'"):
        tree.set_weights("uniform")
    with pytest.raises(ValueError, match="columns"):
        tree.distance(np.ones((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="same shape"):
        tree.distance(np.ones((2, tree.n_nodes_)), np.ones((3, tree.n_nodes_)))
    with pytest.raises(ValueError, match=r"node \(a WILT node id; 0 is the root\) must be an integer in"):
        tree.unfolding_tree(0)
    with pytest.raises(ValueError, match="min_frequency"):
        tree.top_colors([g], min_frequency=2)


def test_bad_distill_and_rmse_input():
    graphs = _random_graphs(5, seed=8)
    tree = WLLabelingTree(depth=2).fit(graphs)
    mu = tree.transform(graphs)
    good = tree.pairwise(mu)
    cases = [
        (dict(target_dist=good[:4]), "square"),
        (dict(target_dist=-good), "non-negative"),
        (dict(target_dist=np.where(good > 0, np.nan, 0)), "finite"),
        (dict(target_dist=good, l1=-1.0), "l1 must be"),
        (dict(target_dist=good, lr=0.0), "lr must be"),
        (dict(target_dist=good, epochs=0), "epochs must be"),
        (dict(target_dist=good, pairs=np.array([[0, 9]])), "index rows"),
        (dict(target_dist=good, pairs=np.array([0, 1])), "shape"),
        (dict(target_dist=good, fill_unseen=-1.0), "fill_unseen"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            distill(tree, mu, **kwargs)
    with pytest.raises(ValueError, match="not fitted"):
        distill(WLLabelingTree(), mu, good)
    with pytest.raises(ValueError, match="all zero"):
        rmse_without_outliers(np.zeros(5), np.ones(5))
    with pytest.raises(ValueError, match="same length"):
        rmse_without_outliers(np.ones(5), np.ones(4))
    with pytest.raises(ValueError, match="x must contain only finite values"):
        rmse_without_outliers(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(ValueError, match="non-negative distances"):
        rmse_without_outliers(np.array([1.0, -1.0]), np.ones(2))
    with pytest.raises(TypeError, match="epochs must be an integer"):
        distill(tree, mu, good, epochs=2.0)
    with pytest.raises(TypeError, match="integer array"):
        distill(tree, mu, good, pairs=np.array([[0.0, 1.0]]))


# ---------------------------------------------------------------- data
def test_molecule_like_generator():
    graphs, y, info = make_molecule_like(60, seed=9)
    again, y2, _ = make_molecule_like(60, seed=9)
    assert np.array_equal(y, y2)
    assert all(nx.utils.graphs_equal(a, b) for a, b in zip(graphs, again, strict=True))
    assert np.bincount(y).tolist() == [30, 30]
    for g, label, planted in zip(graphs, y, info["motif_nodes"], strict=True):
        assert 10 <= g.number_of_nodes() <= 30 and nx.is_connected(g)
        assert all(g.degree(u) <= VALENCE[g.nodes[u]["label"]] for u in g)
        assert motif_present(g, "nitro") == bool(label)
        assert not motif_present(g, "chloro_ring") and not motif_present(g, "disulfide")
        if label:
            (name, nodes), = planted
            assert name == "nitro" and sorted(g.nodes[u]["label"] for u in nodes) == ["N", "O", "O"]
    graphs, y, info = make_molecule_like(30, task="multiclass", seed=1)
    assert all(motif_present(g, MOTIFS[c]) for g, c in zip(graphs, y, strict=True))
    graphs, y, info = make_molecule_like(30, task="regression", noise=0.0, seed=1)
    np.testing.assert_allclose(y, info["motif_counts"] @ np.array([1.0, 0.5, -0.75]))
    with pytest.raises(ValueError, match="motif must be one of"):
        make_molecule_like(5, motif="benzene")
    with pytest.raises(ValueError, match="task must be"):
        make_molecule_like(5, task="ranking")
    with pytest.raises(ValueError, match="n_vertices"):
        make_molecule_like(5, n_vertices=(3, 5))
    with pytest.raises(ValueError, match="n_graphs"):
        make_molecule_like(0)


def test_social_like_and_tu_reader(tmp_path):
    graphs, y = make_social_like(6, seed=0)
    assert y.tolist() == [0, 1] * 3 and all(set(dict(g.nodes(data="label")).values()) == {0} for g in graphs)
    (tmp_path / "TOY_A.txt").write_text("1, 2\n2, 1\n2, 3\n3, 2\n4, 5\n5, 4\n")
    (tmp_path / "TOY_graph_indicator.txt").write_text("1\n1\n1\n2\n2\n")
    (tmp_path / "TOY_graph_labels.txt").write_text("0\n1\n")
    (tmp_path / "TOY_node_labels.txt").write_text("3\n1\n3\n2\n2\n")
    (tmp_path / "TOY_edge_labels.txt").write_text("0\n0\n1\n1\n0\n0\n")
    graphs, y = load_tu_directory(tmp_path)
    assert y.tolist() == [0, 1] and [g.number_of_nodes() for g in graphs] == [3, 2]
    assert graphs[0].edges[1, 2]["label"] == 1 and graphs[0].nodes[0]["label"] == 3
    assert WLLabelingTree(depth=2).fit(graphs).use_edge_labels_
    (tmp_path / "TOY_node_labels.txt").write_text("3\n1\n")
    with pytest.raises(ValueError, match="expected 5"):
        load_tu_directory(tmp_path, "TOY")
    with pytest.raises(FileNotFoundError, match="missing TU file"):
        load_tu_directory(tmp_path, "OTHER")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        load_tu_directory(tmp_path / "nowhere")
    assert sp.issparse(WLLabelingTree(depth=1).fit(graphs).transform(graphs))
