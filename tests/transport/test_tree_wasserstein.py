"""The shared tree-Wasserstein routine against exact OT with the tree metric."""

from __future__ import annotations

import networkx as nx
import numpy as np
import ot
import pytest

from icml25.transport import subtree_masses, tree_wasserstein, tree_wasserstein_pairwise


def random_tree(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    parent = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, n)])
    weights = rng.uniform(0.1, 2.0, size=n)
    weights[0] = 0.0
    return parent, weights


def tree_metric(parent: np.ndarray, weights: np.ndarray) -> np.ndarray:
    g = nx.Graph()
    g.add_weighted_edges_from((v, p, weights[v]) for v, p in enumerate(parent) if p >= 0)
    lengths = dict(nx.all_pairs_dijkstra_path_length(g))
    n = parent.size
    return np.array([[lengths[i][j] for j in range(n)] for i in range(n)])


@pytest.mark.parametrize("seed", range(5))
def test_equals_exact_ot_on_tree_metric(seed):
    rng = np.random.default_rng(seed)
    parent, weights = random_tree(12, rng)
    A = rng.dirichlet(np.ones(12), size=4).T
    D = tree_wasserstein_pairwise(A, parent, weights)
    M = tree_metric(parent, weights)
    for i in range(4):
        for j in range(4):
            assert D[i, j] == pytest.approx(ot.emd2(A[:, i], A[:, j], M), abs=1e-9)
    assert tree_wasserstein(A[:, 0], A[:, 1], parent, weights) == pytest.approx(D[0, 1])


def test_subtree_masses_on_path():
    parent = np.array([-1, 0, 1])
    assert np.allclose(subtree_masses(parent, np.array([1.0, 2.0, 3.0])), [6.0, 5.0, 3.0])


@pytest.mark.parametrize("parent, weights, match", [
    (np.array([-1, 0, 5]), np.ones(3), "one rooted tree"),
    (np.array([-1, -1, 0]), np.ones(3), "one rooted tree"),
    (np.array([-1, 2, 1]), np.ones(3), "cycle"),
    (np.array([-1, 0, 1]), np.array([1.0, -1.0, 1.0]), "non-negative"),
    (np.array([-1, 0, 1]), np.ones(2), "shape"),
])
def test_bad_trees(parent, weights, match):
    with pytest.raises(ValueError, match=match):
        tree_wasserstein(np.ones(parent.size), np.ones(parent.size), parent, weights)


def test_float_parent_is_a_type_error():
    with pytest.raises(TypeError, match="integer"):
        tree_wasserstein(np.ones(2), np.ones(2), np.array([-1.0, 0.0]), np.ones(2))


def test_bad_measures():
    parent, weights = np.array([-1, 0, 0]), np.ones(3)
    with pytest.raises(ValueError, match="equal total mass"):
        tree_wasserstein(np.array([1.0, 0, 0]), np.array([0, 0.5, 0]), parent, weights)
    with pytest.raises(ValueError, match="non-negative"):
        tree_wasserstein(np.array([1.0, -1, 1]), np.array([0, 0, 1.0]), parent, weights)
    with pytest.raises(ValueError, match="shape"):
        tree_wasserstein(np.ones(2), np.ones(2), parent, weights)
    with pytest.raises(ValueError, match="2-D|2-d"):
        tree_wasserstein_pairwise(np.ones(3), parent, weights)
