"""Baseline trees for tree-Wasserstein distances, all in the :class:`WeightedTree` interface.

* :func:`quadtree` -- randomly shifted quadtree (Indyk & Thaper 2003), edge weight = cell side.
* :func:`cluster_tree` -- recursive k-means tree (Le et al. 2019), edge weight = centroid distance.
* :func:`single_linkage_tree` -- the subdominant ultrametric ``MST(D)`` without UltraTWD's fit.
* :func:`average_linkage_tree` -- the UPGMA dendrogram as an ultrametric tree.

The support points are the leaves ``0..n-1``; use :func:`icml25.transport.ultratwd` on any of them.
"""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.cluster.vq import kmeans2
from scipy.spatial.distance import squareform

from icml25.transport.ultratwd import UltrametricTree, WeightedTree, check_cost_matrix
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_scalar


def _check_points(points: np.ndarray) -> np.ndarray:
    points = check_array(points, "points", ndim=2, dtype=float, min_len=1)
    if points.shape[1] == 0:
        raise ValueError(f"points must have at least 1 coordinate, got shape {points.shape}")
    return points


class _Builder:
    """Accumulates internal nodes above ``n`` leaves, then emits a :class:`WeightedTree`."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.parent = [-1] * n
        self.weight = [0.0] * n

    def node(self, parent: int, weight: float) -> int:
        self.parent.append(parent)
        self.weight.append(weight)
        return len(self.parent) - 1

    def attach(self, leaves: np.ndarray, parent: int, weight: np.ndarray | float) -> None:
        for leaf, w in zip(leaves, np.broadcast_to(weight, leaves.shape), strict=True):
            self.parent[leaf], self.weight[leaf] = parent, float(w)

    def tree(self) -> WeightedTree:
        return WeightedTree(np.array(self.parent), np.array(self.weight), self.n)


def quadtree(
    points: np.ndarray,
    max_depth: int = 6,
    *,
    n_dims: int = 8,
    seed: Seed = None,
) -> WeightedTree:
    """Randomly shifted quadtree: the bounding cube (side ``L``) is split into ``2^d`` cells per level.

    Points in more than ``n_dims`` dimensions are first mapped by a Gaussian random projection
    to ``n_dims`` dimensions (scaled to preserve distances in expectation).  A cell at depth
    ``l`` has an edge of weight ``L / 2^l`` to its parent; a point sits in its deepest cell
    (depth ``max_depth``, or the first depth where it is alone in its cell) and is joined to it by
    one more edge of that cell's weight, so points separated at depth ``l`` are ``~4 L / 2^l`` apart.
    """
    points = _check_points(points)
    max_depth = check_scalar(max_depth, "max_depth", "int", min=1)
    n_dims = check_scalar(n_dims, "n_dims", "int", min=1)
    rng = as_generator(seed)
    if points.shape[1] > n_dims:
        points = points @ rng.normal(size=(points.shape[1], n_dims)) / np.sqrt(n_dims)
    side = max(float(np.ptp(points, axis=0).max()), 1e-12) * 2  # random shift keeps points inside
    origin = points.min(axis=0) - rng.uniform(0, side / 2, size=points.shape[1])
    n = points.shape[0]
    builder = _Builder(n)
    root = builder.node(-1, 0.0)

    def split(members: np.ndarray, node: int, depth: int) -> None:
        cell = side / 2**depth
        if depth == max_depth or members.size == 1:
            builder.attach(members, node, cell)
            return
        child_side = cell / 2
        keys = np.floor((points[members] - origin) / child_side).astype(np.int64)
        _, label = np.unique(keys, axis=0, return_inverse=True)
        for c in range(label.max() + 1):
            split(members[label.ravel() == c], builder.node(node, child_side), depth + 1)

    split(np.arange(n), root, 0)
    return builder.tree()


def cluster_tree(
    points: np.ndarray,
    k: int = 4,
    max_depth: int = 5,
    *,
    seed: Seed = None,
) -> WeightedTree:
    """Recursive k-means tree: each cluster is split by k-means (SciPy ``kmeans2``, k-means++
    start) until ``max_depth`` or fewer than ``k`` distinct points; edge weight = distance between a
    cluster's centroid and its parent's, and a point hangs from its deepest cluster at the
    distance to that centroid.
    """
    points = _check_points(points)
    k = check_scalar(k, "k", "int", min=2)
    max_depth = check_scalar(max_depth, "max_depth", "int", min=1)
    rng = as_generator(seed)
    n = points.shape[0]
    builder = _Builder(n)

    def split(members: np.ndarray, node: int, centre: np.ndarray, depth: int) -> None:
        distinct = np.unique(points[members], axis=0).shape[0]
        if depth == max_depth or distinct < k:
            builder.attach(members, node, np.linalg.norm(points[members] - centre, axis=1))
            return
        _, label = kmeans2(points[members], k, minit="++", seed=rng)
        for c in range(k):
            sub = members[label == c]
            if sub.size:
                child_centre = points[sub].mean(axis=0)
                child = builder.node(node, float(np.linalg.norm(child_centre - centre)))
                split(sub, child, child_centre, depth + 1)

    centre = points.mean(axis=0)
    split(np.arange(n), builder.node(-1, 0.0), centre, 0)
    return builder.tree()


def single_linkage_tree(D: np.ndarray) -> UltrametricTree:
    """The dendrogram of single linkage: the subdominant ultrametric ``MST(D) <= D``, unshifted."""
    D = check_cost_matrix(D)
    if D.shape[0] == 1:
        return UltrametricTree(np.array([-1]), np.zeros(1), 1)
    return UltrametricTree.from_linkage(linkage(squareform(D, checks=False), method="single"))


def average_linkage_tree(D: np.ndarray) -> UltrametricTree:
    """The average-linkage (UPGMA) dendrogram; node height = merge distance / 2."""
    D = check_cost_matrix(D)
    if D.shape[0] == 1:
        return UltrametricTree(np.array([-1]), np.zeros(1), 1)
    return UltrametricTree.from_linkage(linkage(squareform(D, checks=False), method="average"))
