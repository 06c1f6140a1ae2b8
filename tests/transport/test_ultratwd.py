"""UltraTWD: ultrametric fits, the tree-Wasserstein distance on them, baseline trees and data."""

from __future__ import annotations

import importlib

import networkx as nx
import numpy as np
import ot
import pytest
from scipy.cluster.hierarchy import cophenet, dendrogram, is_valid_linkage, linkage
from scipy.spatial.distance import cdist, squareform

from icml25.data.hierarchical_docs import digit_histograms, hierarchical_cloud, sparse_documents
from icml25.transport import (
    UltrametricTree,
    UltraTWD,
    WeightedTree,
    average_linkage_tree,
    cluster_tree,
    fit_ultrametric,
    is_ultrametric,
    quadtree,
    single_linkage_tree,
    subdominant_ultrametric,
    tree_fit_error,
    ultratwd,
    ultratwd_pairwise,
)
from icml25.transport.ultratwd import _loss_and_grad, _mst_routing, _triplet_sweep, check_cost_matrix
from icml25.utils.validation import NotFittedError

METHODS = ("mst", "ip", "gd")


def euclidean(n: int, seed: int, dim: int = 3) -> np.ndarray:
    points = np.random.default_rng(seed).normal(size=(n, dim))
    return cdist(points, points)


def random_ultrametric(n: int, seed: int) -> np.ndarray:
    """The cophenetic matrix of a random dendrogram with a few tied merge heights."""
    Z = linkage(np.random.default_rng(seed).normal(size=(n, 2)), "average")
    Z[:, 2] = np.round(Z[:, 2], 1)  # rounding keeps monotonicity and creates ties
    return squareform(cophenet(Z))


def minimax_paths(D: np.ndarray) -> np.ndarray:
    """Largest edge on the MST path between every pair (networkx reference)."""
    g = nx.Graph()
    n = D.shape[0]
    g.add_weighted_edges_from((i, j, D[i, j]) for i in range(n) for j in range(i + 1, n))
    mst = nx.minimum_spanning_tree(g)
    out = np.zeros_like(D)
    for i in range(n):
        for j in range(i + 1, n):
            path = nx.shortest_path(mst, i, j)
            out[i, j] = out[j, i] = max(D[a, b] for a, b in zip(path, path[1:], strict=False))
    return out


# ----------------------------------------------------------------------------- cost matrices


@pytest.mark.parametrize("D, match", [
    (np.ones((2, 3)), "square"),
    (np.zeros((0, 0)), "square"),
    (np.array([[0.0, np.nan], [np.nan, 0.0]]), "finite"),
    (np.array([[0.0, np.inf], [np.inf, 0.0]]), "finite"),
    (np.array([[0.0, -1.0], [-1.0, 0.0]]), "non-negative"),
    (np.array([[1.0, 1.0], [1.0, 0.0]]), "zero diagonal"),
    (np.array([[0.0, 1.0], [2.0, 0.0]]), "symmetric"),
])
def test_bad_cost_matrix_is_rejected(D, match):
    with pytest.raises(ValueError, match=match):
        check_cost_matrix(D)
    with pytest.raises(ValueError, match=match):
        fit_ultrametric(D, "mst")


def test_is_ultrametric():
    assert is_ultrametric(random_ultrametric(9, 0))
    assert not is_ultrametric(np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0.0]]))  # 2 > max(1, 1)
    assert is_ultrametric(np.zeros((1, 1)))


# ----------------------------------------------------------------------------- subdominant / MST


@pytest.mark.parametrize("seed", range(3))
def test_subdominant_is_minimax_path_and_largest_ultrametric_below(seed):
    D = euclidean(12, seed)
    S = subdominant_ultrametric(D)
    np.testing.assert_allclose(S, minimax_paths(D), atol=1e-12)
    assert is_ultrametric(S) and np.all(S <= D + 1e-12)
    U = random_ultrametric(10, seed)
    np.testing.assert_array_equal(subdominant_ultrametric(U), U)  # fixed point


@pytest.mark.parametrize("seed", range(3))
def test_mst_routing_gives_the_subdominant_ultrametric(seed):
    D = euclidean(15, seed)
    p, q, E = _mst_routing(D)
    U = D[p, q][E]
    np.fill_diagonal(U, 0.0)
    np.testing.assert_allclose(U, subdominant_ultrametric(D), atol=1e-12)
    assert np.all(E[~np.eye(15, dtype=bool)] >= 0) and np.all(np.diag(E) == -1)


@pytest.mark.parametrize("seed", range(4))
def test_mst_variant_is_max_norm_optimal_with_error_half_delta(seed):
    D = euclidean(20, seed)
    half_delta = np.max(D - subdominant_ultrametric(D)) / 2
    errors = {m: tree_fit_error(fit_ultrametric(D, m), D)["max"] for m in METHODS}
    assert errors["mst"] == pytest.approx(half_delta, abs=1e-9)
    for other in (*errors.values(), tree_fit_error(average_linkage_tree(D), D)["max"],
                  tree_fit_error(single_linkage_tree(D), D)["max"]):
        assert errors["mst"] <= other + 1e-9


# ----------------------------------------------------------------------------- ultrametric trees


@pytest.mark.parametrize("seed", range(3))
def test_tree_of_an_ultrametric_reproduces_it_and_exports_linkage(seed):
    U = random_ultrametric(11, seed)
    tree = UltrametricTree.from_ultrametric(U)
    np.testing.assert_array_equal(tree.leaf_distances(), U)
    np.testing.assert_allclose(WeightedTree.leaf_distances(tree), U, atol=1e-12)  # generic formula
    Z = tree.to_linkage()
    assert Z.shape == (10, 4) and is_valid_linkage(Z)
    np.testing.assert_allclose(squareform(cophenet(Z)), U, atol=1e-12)
    assert len(dendrogram(Z, no_plot=True)["leaves"]) == 11


def test_ties_are_fused_into_one_multiway_node():
    U = np.ones((4, 4)) - np.eye(4)
    tree = UltrametricTree.from_ultrametric(U)
    assert tree.n_nodes == 5 and np.all(tree.parent[:4] == 4)
    np.testing.assert_allclose(tree.edge_weight[:4], 0.5)


def test_duplicate_points_give_zero_height_nodes():
    points = np.array([[0.0], [0.0], [1.0], [3.0]])
    D = cdist(points, points)
    for method in METHODS:
        tree = fit_ultrametric(D, method)
        assert np.all(tree.edge_weight >= 0)
        a, b = np.eye(4)[0], np.eye(4)[1]
        assert ultratwd(a, b, tree) == pytest.approx(tree.leaf_distances()[0, 1])
    assert ultratwd(np.eye(4)[0], np.eye(4)[1], single_linkage_tree(D)) == 0.0


def test_from_linkage_rejects_inversions_and_bad_shapes():
    Z = linkage(np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.9]]), "centroid")
    assert Z[1, 2] < Z[0, 2]  # this configuration inverts
    with pytest.raises(ValueError, match="inversions"):
        UltrametricTree.from_linkage(Z)
    with pytest.raises(ValueError, match=r"\(n - 1, 4\)"):
        UltrametricTree.from_linkage(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="valid SciPy linkage"):
        UltrametricTree.from_linkage(np.array([[0.0, 5.0, 1.0, 2.0]]))


def test_from_ultrametric_rejects_non_ultrametric():
    with pytest.raises(ValueError, match="not an ultrametric"):
        UltrametricTree.from_ultrametric(euclidean(6, 0))


@pytest.mark.parametrize("parent, weight, n_leaves, match", [
    (np.array([-1, 0, 0]), np.array([0.0, 1.0, -1.0]), 2, "non-negative"),
    (np.array([-1, 0, 0]), np.ones(3), 4, "n_leaves"),
    (np.array([-1, -1, 0]), np.ones(3), 2, "one rooted tree"),
    (np.array([1, 2, 1]), np.ones(3), 2, "one rooted tree"),
    (np.array([-1, 0]), np.ones(3), 1, "shape"),
])
def test_bad_weighted_tree_is_rejected(parent, weight, n_leaves, match):
    with pytest.raises(ValueError, match=match):
        WeightedTree(parent, weight, n_leaves)


def test_weighted_tree_types():
    with pytest.raises(TypeError, match="parent must be an integer array"):
        WeightedTree(np.array([0.0, 1.0]), np.ones(2), 1)
    with pytest.raises(TypeError, match="n_leaves must be an integer"):
        WeightedTree(np.array([-1, 0]), np.ones(2), 1.0)
    with pytest.raises(ValueError, match="edge_weight must contain only finite"):
        WeightedTree(np.array([-1, 0]), np.array([0.0, np.nan]), 1)


def test_bad_ultrametric_tree_is_rejected():
    with pytest.raises(ValueError, match="0 on the leaves"):
        UltrametricTree(np.array([2, 2, -1]), np.array([0.0, 0.5, 1.0]), 2)
    with pytest.raises(ValueError, match="higher than its parent"):
        UltrametricTree(np.array([3, 3, 3, 4, -1]), np.array([0, 0, 0, 2.0, 1.0]), 3)
    with pytest.raises(ValueError, match="cannot have children"):
        UltrametricTree(np.array([2, 0, -1]), np.array([0.0, 0.0, 1.0]), 2)
    with pytest.raises(TypeError, match="integer"):
        UltrametricTree(np.array([2.0, 2.0, -1.0]), np.array([0.0, 0.0, 1.0]), 2)


# ----------------------------------------------------------------------------- the three fits


@pytest.mark.parametrize("method", METHODS)
def test_every_fit_is_exact_on_an_ultrametric_cost(method):
    U = random_ultrametric(10, 3)
    tree = fit_ultrametric(U, method)
    np.testing.assert_allclose(tree.leaf_distances(), U, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_fits_are_ultrametric_and_deterministic(method):
    D = euclidean(25, 1)
    first, second = fit_ultrametric(D, method), fit_ultrametric(D, method)
    assert is_ultrametric(first.leaf_distances())
    np.testing.assert_array_equal(first.parent, second.parent)
    np.testing.assert_array_equal(first.edge_weight, second.edge_weight)


FIT_OPTIONS = [{"method": "mst"}, {"method": "ip"}, {"method": "ip", "n_iter": 3}, {"method": "gd"},
               {"method": "gd", "n_iter": 30}, {"method": "gd", "init": "data"},
               {"method": "gd", "optimizer": "sgd"}]


@pytest.mark.parametrize("options", FIT_OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
@pytest.mark.parametrize("seed", [0, 1])
def test_every_fit_is_invariant_to_renumbering_the_points(options, seed):
    """Fitting on D[perm][:, perm] gives the permuted leaf distances (ties broken by the data, not the index)."""
    D = euclidean(30, seed)
    perm = np.random.default_rng(seed + 10).permutation(30)
    U = fit_ultrametric(D, **options).leaf_distances()
    U_perm = fit_ultrametric(D[np.ix_(perm, perm)], **options).leaf_distances()
    np.testing.assert_allclose(U_perm, U[np.ix_(perm, perm)], rtol=0, atol=1e-12 * D.max())


def test_triplet_sweep_equalises_the_two_largest():
    M = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    np.testing.assert_allclose(_triplet_sweep(M), [[0, 1, 2.5], [1, 0, 2.5], [2.5, 2.5, 0]])


def test_ip_and_gd_improve_the_frobenius_fit_over_the_subdominant():
    D = euclidean(40, 2, dim=5)
    single = tree_fit_error(single_linkage_tree(D), D)["rel_fro"]
    mst = tree_fit_error(fit_ultrametric(D, "mst"), D)["rel_fro"]
    assert tree_fit_error(fit_ultrametric(D, "ip", n_iter=3), D)["rel_fro"] < single
    assert tree_fit_error(fit_ultrametric(D, "gd"), D)["rel_fro"] <= mst
    assert tree_fit_error(fit_ultrametric(D, "gd", init="data"), D)["rel_fro"] <= single


def test_gd_gradient_matches_finite_differences():
    D = euclidean(12, 4)
    T = D / D.max()
    X = T + 0.01 * np.random.default_rng(0).uniform(size=T.shape)
    X = np.triu(X, 1) + np.triu(X, 1).T  # symmetric, zero diagonal, distinct entries
    loss, _, G = _loss_and_grad(X, T)
    p, q, _ = _mst_routing(X)
    eps = 1e-7  # small enough that the MST does not change; the loss is quadratic in each X_e

    def shifted(e: int, by: float) -> float:
        Xe = X.copy()
        Xe[p[e], q[e]] += by
        Xe[q[e], p[e]] += by
        return _loss_and_grad(Xe, T)[0]

    for e in range(p.size):
        central = (shifted(e, eps) - shifted(e, -eps)) / (2 * eps)
        assert central == pytest.approx(G[p[e], q[e]], rel=1e-5, abs=1e-10)
    assert np.abs(G).sum() > 0 and loss > 0
    off_mst = np.ones_like(G, dtype=bool)
    off_mst[p, q] = off_mst[q, p] = False
    assert np.all(G[off_mst] == 0)


def test_gd_loss_history_is_non_increasing_and_options_validated():
    D = euclidean(30, 5)
    for optimizer in ("adam", "sgd"):
        model = UltraTWD("gd", n_iter=6, optimizer=optimizer).fit(D)
        h = model.loss_history_
        assert len(h) == 7 and all(b <= a for a, b in zip(h, h[1:], strict=False))
    assert UltraTWD("mst").fit(D).loss_history_ == []
    for kwargs, match in [({"lr": 0.0}, "lr"), ({"lr": -1.0}, "lr"), ({"n_iter": -1}, "n_iter"),
                          ({"optimizer": "rmsprop"}, "optimizer"), ({"init": "random"}, "init")]:
        with pytest.raises(ValueError, match=match):
            fit_ultrametric(D, "gd", **kwargs)
    with pytest.raises(ValueError, match="method"):
        fit_ultrametric(D, "upgma")
    with pytest.raises(TypeError, match="n_iter"):
        fit_ultrametric(D, "ip", n_iter=1.5)


def test_ip_warns_when_large(monkeypatch):
    module = importlib.import_module("icml25.transport.ultratwd")  # the package attribute is the function
    monkeypatch.setattr(module, "IP_WARN_N", 5)
    with pytest.warns(UserWarning, match="O\\(n\\^3\\)"):
        fit_ultrametric(euclidean(6, 0), "ip")


# ----------------------------------------------------------------------------- distances


@pytest.mark.parametrize("method", METHODS)
def test_distance_equals_exact_ot_under_the_tree_metric(method):
    rng = np.random.default_rng(7)
    D = euclidean(15, 7)
    tree = fit_ultrametric(D, method)
    M = tree.leaf_distances()
    for _ in range(5):
        a, b = rng.dirichlet(np.ones(15)), rng.dirichlet(np.ones(15))
        assert ultratwd(a, b, tree) == pytest.approx(ot.emd2(a, b, M), abs=1e-10)


def test_distance_equals_exact_w1_when_the_cost_is_an_ultrametric():
    rng = np.random.default_rng(8)
    U = random_ultrametric(12, 8)
    model = UltraTWD("gd").fit(U)
    A = rng.dirichlet(np.ones(12), size=6)
    exact = np.array([[ot.emd2(a, b, U) for b in A] for a in A])
    np.testing.assert_allclose(model.pairwise(A), exact, atol=1e-10)


def test_batched_and_pairwise_agree_with_single_pairs():
    rng = np.random.default_rng(9)
    tree = fit_ultrametric(euclidean(20, 9), "gd")
    A, B = rng.dirichlet(np.ones(20), size=4), rng.dirichlet(np.ones(20), size=3)
    single = np.array([[ultratwd(a, b, tree) for b in B] for a in A])
    np.testing.assert_allclose(ultratwd_pairwise(A, tree, B), single, atol=1e-12)
    np.testing.assert_allclose(ultratwd(A[:3], B, tree), np.diag(single[:3]), atol=1e-12)
    np.testing.assert_allclose(ultratwd(A, B[0], tree), single[:, 0], atol=1e-12)  # broadcast
    P = ultratwd_pairwise(A, tree)
    assert np.allclose(P, P.T) and np.all(np.diag(P) == 0)
    assert ultratwd(A[0], A[0], tree) == 0.0


def test_tiny_supports():
    one = fit_ultrametric(np.zeros((1, 1)), "gd")
    assert one.n_nodes == 1 and ultratwd(np.ones(1), np.ones(1), one) == 0.0
    two = fit_ultrametric(np.array([[0.0, 3.0], [3.0, 0.0]]), "ip")
    assert ultratwd(np.array([0.7, 0.3]), np.array([0.2, 0.8]), two) == pytest.approx(0.5 * 3.0)


@pytest.mark.parametrize("a, b, match", [
    (np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5]), "shape"),
    (np.array([0.5, 0.5, 0.0, 0.0]), np.array([1.5, -0.5, 0.0, 0.0]), "non-negative"),
    (np.array([np.nan, 1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]), "finite"),
    (np.zeros(4), np.array([1.0, 0.0, 0.0, 0.0]), "positive total mass"),
    (np.array([1.0, 1.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]), "same total mass"),
    (np.ones((2, 4)) / 4, np.ones((3, 4)) / 4, "number of rows"),
])
def test_bad_histograms_are_rejected(a, b, match):
    tree = fit_ultrametric(euclidean(4, 0), "mst")
    with pytest.raises(ValueError, match=match):
        ultratwd(a, b, tree)


def test_normalize_and_tree_type():
    tree = fit_ultrametric(euclidean(4, 0), "mst")
    a, b = np.array([2.0, 2.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0])
    assert ultratwd(a, b, tree, normalize=True) == pytest.approx(ultratwd(a / 4, b, tree))
    with pytest.raises(ValueError, match="same total mass"):
        ultratwd_pairwise(np.array([a, b]), tree)
    with pytest.raises(TypeError, match="WeightedTree"):
        ultratwd(b, b, (np.array([-1]), np.zeros(1)))


def test_estimator_api():
    D = euclidean(10, 3)
    model = UltraTWD("ip")
    with pytest.raises(NotFittedError, match="not fitted"):
        model.distance(np.eye(10)[0], np.eye(10)[1])
    with pytest.raises(NotFittedError, match="not fitted"):
        model.pairwise(np.eye(10)[:2])
    assert model.fit(D) is model and model.n_support_ == 10
    assert set(model.fit_error_) == {"max", "rel_fro"}
    a, b = np.eye(10)[0], np.eye(10)[1]
    expected = model.tree_.leaf_distances()[0, 1]
    assert model.distance(a, b) == ultratwd(a, b, model.tree_) == pytest.approx(expected)
    with pytest.raises(ValueError, match="10 leaves"):
        tree_fit_error(model.tree_, euclidean(5, 0))


# ----------------------------------------------------------------------------- baseline trees


def test_linkage_baselines_match_scipy():
    D = euclidean(14, 11)
    single = single_linkage_tree(D).leaf_distances()
    np.testing.assert_allclose(single, subdominant_ultrametric(D), atol=1e-12)
    upgma = squareform(cophenet(linkage(squareform(D, checks=False), "average")))
    np.testing.assert_allclose(average_linkage_tree(D).leaf_distances(), upgma, atol=1e-12)


def test_quadtree_and_cluster_tree_are_seeded():
    points = np.random.default_rng(12).normal(size=(30, 10))
    for build in (lambda s: quadtree(points, seed=s), lambda s: cluster_tree(points, seed=s)):
        first, second, other = build(3), build(3), build(4)
        np.testing.assert_array_equal(first.parent, second.parent)
        np.testing.assert_array_equal(first.edge_weight, second.edge_weight)
        assert first.n_leaves == 30 and not np.array_equal(first.leaf_distances(), other.leaf_distances())


def test_cluster_tree_separates_far_groups():
    rng = np.random.default_rng(12)
    points = np.vstack([rng.normal(0, 0.1, (15, 10)), rng.normal(10, 0.1, (15, 10))])
    T = cluster_tree(points, k=2, seed=0).leaf_distances()
    assert T[:15, 15:].min() > max(T[:15, :15].max(), T[15:, 15:].max())


def test_quadtree_dominates_the_chebyshev_distance():
    points = np.random.default_rng(13).uniform(size=(40, 2))  # 2-D: no random projection
    T = quadtree(points, max_depth=4, seed=1).leaf_distances()
    off = ~np.eye(40, dtype=bool)
    assert np.all(T[off] > cdist(points, points, "chebyshev")[off])


def test_quadtree_cell_weights_halve_per_level():
    tree = quadtree(np.array([[0.0, 0.0], [1.0, 1.0]]), max_depth=3, seed=0)
    internal = tree.edge_weight[2:][tree.parent[2:] >= 0]
    assert np.all(np.isin(np.round(np.log2(internal / internal.max()), 9), [0, -1, -2, -3]))


@pytest.mark.parametrize("call, match", [
    (lambda: quadtree(np.zeros(5)), "2-d"),
    (lambda: quadtree(np.array([[np.nan, 0.0]])), "finite"),
    (lambda: quadtree(np.zeros((3, 2)), max_depth=0), "max_depth"),
    (lambda: cluster_tree(np.zeros((3, 2)), k=1), "k must"),
    (lambda: cluster_tree(np.zeros((0, 2))), "at least 1 entries"),
    (lambda: quadtree(np.zeros((3, 0))), "at least 1 coordinate"),
])
def test_bad_baseline_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_baseline_input_types():
    with pytest.raises(TypeError, match="max_depth must be an integer"):
        quadtree(np.zeros((3, 2)), max_depth=2.5)
    with pytest.raises(TypeError, match="seed"):
        cluster_tree(np.zeros((3, 2)), seed="0")


# ----------------------------------------------------------------------------- data generators


def test_hierarchical_cloud_and_documents_are_seeded():
    cloud = hierarchical_cloud(60, 8, branching=(3, 2), spreads=(3.0, 1.0), seed=4)
    assert cloud.points.shape == (60, 8) and cloud.labels.shape == (60, 2)
    assert set(cloud.labels[:, 0]) == {0, 1, 2} and set(cloud.labels[:, 1]) == set(range(6))
    assert np.all(cloud.labels[:, 1] // 2 == cloud.labels[:, 0])  # level-2 nested in level 1
    again = hierarchical_cloud(60, 8, branching=(3, 2), spreads=(3.0, 1.0), seed=4)
    np.testing.assert_array_equal(cloud.points, again.points)
    docs = sparse_documents(cloud, 20, words=(5, 8), seed=1)
    np.testing.assert_allclose(docs.histograms.sum(axis=1), 1.0)
    assert np.all((docs.histograms > 0).sum(axis=1) <= 8) and set(docs.labels) <= {0, 1, 2}
    again_docs = sparse_documents(cloud, 20, words=(5, 8), seed=1)
    np.testing.assert_array_equal(docs.histograms, again_docs.histograms)
    with pytest.raises(ValueError, match="words"):
        sparse_documents(cloud, 5, words=(0, 3))
    with pytest.raises(ValueError, match="same length"):
        hierarchical_cloud(10, 2, branching=(2, 2), spreads=(1.0,))


def test_digit_histograms_are_balanced():
    grid, train, test = digit_histograms(30, 20, seed=0)
    assert grid.shape == (64, 2) and train.histograms.shape == (30, 64)
    np.testing.assert_allclose(test.histograms.sum(axis=1), 1.0)
    assert np.all(np.bincount(train.labels) == 3) and np.all(np.bincount(test.labels) == 2)
    with pytest.raises(ValueError, match="multiples of 10"):
        digit_histograms(25, 10)
