"""Valid calls of ``icml25.transport`` (tree-Wasserstein distances, UltraTWD, WILT)."""

from functools import cache

import networkx as nx
import numpy as np
from scipy.spatial.distance import cdist

from api_examples._core import Example
from icml25 import transport as tp

_PARENT = np.array([2, 2, -1])  # two leaves under a root


def _cost(n: int = 5) -> np.ndarray:
    points = np.random.default_rng(0).normal(size=(n, 2))
    return cdist(points, points)


@cache
def _tree() -> tp.UltrametricTree:
    return tp.fit_ultrametric(_cost(), "mst")


@cache
def _model() -> tp.UltraTWD:
    return tp.UltraTWD("mst").fit(_cost())


def _graphs() -> list:
    graphs = []
    for n in (3, 4, 5):
        g = nx.path_graph(n)
        nx.set_node_attributes(g, {v: "C" if v % 2 else "O" for v in g}, "label")
        graphs.append(g)
    return graphs


@cache
def _wilt() -> tp.WLLabelingTree:
    return tp.WLLabelingTree(depth=2).fit(_graphs())


def _hist(n: int = 5) -> np.ndarray:
    return np.full(n, 1.0 / n)


def _onehot(i: int = 0, n: int = 5) -> np.ndarray:
    return np.eye(n)[i]


EXAMPLES = {
    "icml25.transport.subtree_masses": Example(tp.subtree_masses, lambda: {"parent": _PARENT.copy(),
                                                                          "masses": np.array([0.5, 0.5, 0.0])}),
    "icml25.transport.tree_wasserstein": Example(tp.tree_wasserstein, lambda: {
        "a": np.array([1.0, 0.0, 0.0]), "b": np.array([0.0, 1.0, 0.0]), "parent": _PARENT.copy(),
        "weights": np.array([1.0, 2.0, 0.0])}),
    "icml25.transport.tree_wasserstein_pairwise": Example(tp.tree_wasserstein_pairwise, lambda: {
        "A": np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), "parent": _PARENT.copy(),
        "weights": np.array([1.0, 2.0, 0.0]), "B": np.array([[0.5], [0.5], [0.0]])}),
    "icml25.transport.UltraTWD": Example(tp.UltraTWD, {"method": "gd", "n_iter": 2}, positive=("lr",)),
    "icml25.transport.UltraTWD.fit": Example(lambda **kw: tp.UltraTWD("gd", n_iter=2).fit(**kw),
                                             lambda: {"D": _cost()}),
    "icml25.transport.UltraTWD.distance": Example(lambda **kw: _model().distance(**kw),
                                                  lambda: {"a": _hist(), "b": _onehot()},
                                                  allow={"a": "ndim", "b": "ndim"}),  # (1, n): a batch of one
    "icml25.transport.UltraTWD.pairwise": Example(lambda **kw: _model().pairwise(**kw),
                                                  lambda: {"A": np.stack([_hist(), _onehot()]),
                                                           "B": np.stack([_onehot(1)])}),
    "icml25.transport.UltrametricTree": Example(tp.UltrametricTree, lambda: {
        "parent": _PARENT.copy(), "height": np.array([0.0, 0.0, 1.0]), "n_leaves": 2}, positive=("n_leaves",)),
    "icml25.transport.UltrametricTree.pad": Example(lambda **kw: _tree().pad(**kw),
                                                    lambda: {"masses": np.stack([_hist(), _onehot()])}),
    "icml25.transport.WeightedTree": Example(tp.WeightedTree, lambda: {
        "parent": _PARENT.copy(), "edge_weight": np.array([1.0, 2.0, 0.0]), "n_leaves": 2}, positive=("n_leaves",)),
    "icml25.transport.average_linkage_tree": Example(tp.average_linkage_tree, lambda: {"D": _cost()}),
    "icml25.transport.single_linkage_tree": Example(tp.single_linkage_tree, lambda: {"D": _cost()}),
    "icml25.transport.subdominant_ultrametric": Example(tp.subdominant_ultrametric, lambda: {"D": _cost()}),
    "icml25.transport.is_ultrametric": Example(tp.is_ultrametric, lambda: {"U": _cost()}, nonneg=("atol",)),
    "icml25.transport.fit_ultrametric": Example(tp.fit_ultrametric, lambda: {"D": _cost(), "n_iter": 2},
                                                positive=("lr",)),
    "icml25.transport.tree_fit_error": Example(tp.tree_fit_error, lambda: {"tree": _tree(), "D": _cost()}),
    "icml25.transport.ultratwd": Example(tp.ultratwd, lambda: {"a": _hist(), "b": _onehot(), "tree": _tree()},
                                         allow={"a": "ndim", "b": "ndim"}),  # (1, n): a batch of one histogram
    "icml25.transport.ultratwd_pairwise": Example(tp.ultratwd_pairwise, lambda: {
        "A": np.stack([_hist(), _onehot()]), "tree": _tree(), "B": np.stack([_onehot(1)])}),
    "icml25.transport.quadtree": Example(tp.quadtree, lambda: {
        "points": np.random.default_rng(0).uniform(size=(6, 2)), "max_depth": 3, "n_dims": 2, "seed": 0},
        positive=("max_depth", "n_dims")),
    "icml25.transport.cluster_tree": Example(tp.cluster_tree, lambda: {
        "points": np.random.default_rng(0).uniform(size=(6, 2)), "k": 2, "max_depth": 2, "seed": 0},
        positive=("k", "max_depth")),
    "icml25.transport.WLLabelingTree": Example(tp.WLLabelingTree, {"depth": 2}, positive=("depth",)),
    "icml25.transport.WLLabelingTree.fit": Example(lambda **kw: tp.WLLabelingTree(depth=2).fit(**kw),
                                                   lambda: {"graphs": _graphs()}),
    "icml25.transport.WLLabelingTree.fit_transform": Example(
        lambda **kw: tp.WLLabelingTree(depth=2).fit_transform(**kw), lambda: {"graphs": _graphs()}),
    "icml25.transport.WLLabelingTree.transform": Example(lambda **kw: _wilt().transform(**kw),
                                                         lambda: {"graphs": _graphs()}),
    "icml25.transport.WLLabelingTree.vertex_colors": Example(lambda **kw: _wilt().vertex_colors(**kw),
                                                             lambda: {"graph": _graphs()[0]}),
    "icml25.transport.WLLabelingTree.set_weights": Example(
        lambda **kw: tp.WLLabelingTree(depth=2).fit(_graphs()).set_weights(**kw),
        lambda: {"weights": np.ones(_wilt().n_nodes_)}),
    "icml25.transport.WLLabelingTree.distance": Example(lambda **kw: _wilt().distance(**kw), lambda: {
        "mu_a": _wilt().transform(_graphs()[:2]).toarray(), "mu_b": _wilt().transform(_graphs()[1:]).toarray()},
        paired=[("mu_a", "mu_b")]),
    "icml25.transport.WLLabelingTree.pairwise": Example(lambda **kw: _wilt().pairwise(**kw), lambda: {
        "X": _wilt().transform(_graphs()).toarray(), "Y": _wilt().transform(_graphs()[:1]).toarray()}),
    "icml25.transport.WLLabelingTree.initial_label": Example(lambda **kw: _wilt().initial_label(**kw),
                                                             {"node": 1}, positive=("node",)),
    "icml25.transport.WLLabelingTree.unfolding_tree": Example(lambda **kw: _wilt().unfolding_tree(**kw),
                                                              {"node": 3}, positive=("node",)),
    "icml25.transport.WLLabelingTree.occurrences": Example(lambda **kw: _wilt().occurrences(**kw),
                                                           lambda: {"node": 3, "graph": _graphs()[1]},
                                                           positive=("node",)),
    "icml25.transport.WLLabelingTree.top_colors": Example(lambda **kw: _wilt().top_colors(**kw), lambda: {
        "mu": _wilt().transform(_graphs()).toarray(), "k": 2}, allow={"k": "zero"}, nonneg=("min_frequency",)),
    "icml25.transport.distill": Example(tp.distill, lambda: {
        "tree": _wilt(), "mu": _wilt().transform(_graphs()).toarray(),
        "target_dist": cdist(np.arange(3.0)[:, None], np.arange(3.0)[:, None]), "epochs": 1, "batch_size": 2},
        positive=("lr", "batch_size", "epochs"), nonneg=("l1", "fill_unseen"),
        allow={"fill_unseen": "none"}),  # None keeps the initial weight 1 (documented)
    "icml25.transport.rmse_without_outliers": Example(tp.rmse_without_outliers, lambda: {
        "x": np.array([1.0, 2.0, 3.0]), "y": np.array([1.1, 2.0, 2.9])}, paired=[("x", "y")],
        nonneg=("outlier_frac",)),
}


def _linkage():
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    return linkage(squareform(_cost(), checks=False), "single")


EXAMPLES.update({
    "icml25.transport.UltrametricTree.from_linkage": Example(tp.UltrametricTree.from_linkage,
                                                             lambda: {"Z": _linkage()},
                                                             allow={"Z": "empty"}),  # (0, 4): a one-point tree
    "icml25.transport.UltrametricTree.from_ultrametric": Example(
        tp.UltrametricTree.from_ultrametric, lambda: {"U": _tree().leaf_distances()}, nonneg=("atol",)),
})
