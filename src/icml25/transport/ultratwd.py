"""UltraTWD: Optimizing Ultrametric Trees for Tree-Wasserstein Distance (Yu et al., ICML 2025).

Fit an ultrametric tree to a cost matrix ``D`` once (closed form from the minimum spanning
tree, iterative projection, or gradient descent), then compute 1-Wasserstein distances under
the tree metric in time linear in the tree size, for one pair, a batch, or all pairs.

Example
-------
>>> import numpy as np
>>> from scipy.spatial.distance import cdist
>>> from icml25.transport import UltraTWD, ultratwd
>>> points = np.random.default_rng(0).normal(size=(50, 3))
>>> model = UltraTWD(method="gd").fit(cdist(points, points))
>>> a, b = np.full(50, 1 / 50), np.eye(50)[0]
>>> d = model.distance(a, b)                   # tree-Wasserstein distance, a float
>>> d == ultratwd(a, b, model.tree_)           # the POT-style function on the learned tree
True
>>> model.pairwise(np.random.default_rng(1).dirichlet(np.ones(50), size=5)).shape
(5, 5)

Tree convention (shared with :mod:`icml25.transport.tree_wasserstein`): nodes ``0..n-1``
are the leaves (the support points), internal nodes follow, ``parent[root] = -1`` and
``edge_weight[v]`` is the length of the edge from ``v`` to ``parent[v]``.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Literal

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import cophenet, is_valid_linkage, linkage
from scipy.spatial.distance import squareform

from icml25.transport.tree_wasserstein import subtree_masses, tree_wasserstein, tree_wasserstein_pairwise
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_choice,
    check_instance,
    check_is_fitted,
    check_scalar,
)

Method = Literal["mst", "ip", "gd"]
Optimizer = Literal["adam", "sgd"]
Init = Literal["mst", "data"]
IP_WARN_N = 1000


def check_cost_matrix(D: np.ndarray, name: str = "D", *, tol: float = 1e-8) -> np.ndarray:
    """Validate a ground-cost matrix: square, finite, symmetric (to ``tol``), >= 0, zero diagonal.

    Returns it as a float64 array, symmetrised exactly.
    """
    D = check_array(D, name, ndim=2, dtype=float)
    if D.shape[0] != D.shape[1] or D.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {D.shape}")
    if np.any(D < 0):
        raise ValueError(f"{name} must be non-negative, got min {D.min():g}")
    if np.any(np.diag(D) != 0):
        raise ValueError(f"{name} must have a zero diagonal, got max |diag| {np.abs(np.diag(D)).max():g}")
    asymmetry = float(np.max(np.abs(D - D.T)))
    if asymmetry > tol * max(1.0, float(D.max())):
        raise ValueError(f"{name} must be symmetric (to {tol:g}), got max |{name} - {name}.T| = {asymmetry:g}")
    return (D + D.T) / 2


def is_ultrametric(U: np.ndarray, atol: float = 1e-9) -> bool:
    """Whether ``U`` is an ultrametric: a valid cost matrix with ``U_ij <= max(U_ik, U_kj)``."""
    U = check_cost_matrix(U, "U")
    atol = check_scalar(atol, "atol", "real", min=0.0)
    for k in range(U.shape[0]):
        bound = np.maximum(U[:, k, None], U[None, k, :]) + atol  # max(U_ik, U_kj) for all i, j
        if np.any(bound < U):
            return False
    return True


def subdominant_ultrametric(D: np.ndarray) -> np.ndarray:
    """The largest ultrametric below ``D``: minimax path distances in a minimum spanning tree.

    ``MST(D)_ij`` is the largest edge on the MST path from ``i`` to ``j``, computed as the
    cophenetic distances of single linkage in ``O(n^2)``.
    """
    D = check_cost_matrix(D)
    if D.shape[0] < 2:
        return np.zeros_like(D)
    return squareform(cophenet(linkage(squareform(D, checks=False), method="single")))


class WeightedTree:
    """A rooted tree with non-negative edge weights whose first ``n_leaves`` nodes are the support.

    ``parent[root] = -1``; ``edge_weight[v]`` is the length of the edge ``v -> parent[v]``
    (the root's entry, finite like the others, is ignored and stored as 0).
    """

    def __init__(self, parent: np.ndarray, edge_weight: np.ndarray, n_leaves: int) -> None:
        parent = check_array(parent, "parent", ndim=1, dtype=None, min_len=1)
        if not np.issubdtype(parent.dtype, np.integer):
            raise TypeError(f"parent must be an integer array with parent[root] = -1, got dtype {parent.dtype}")
        n_leaves = check_scalar(n_leaves, "n_leaves", "int", min=1, max=parent.size)
        weight = check_array(edge_weight, "edge_weight", dtype=float, shape=parent.shape, copy=True)
        weight[parent < 0] = 0.0  # the root's entry is ignored
        if np.any(weight < 0):
            raise ValueError(f"edge_weight must be non-negative, got min {weight.min():g}")
        subtree_masses(parent, np.zeros(parent.size))  # validates the structure: one root, no cycle
        self.parent = parent.astype(np.intp)
        self.edge_weight = weight
        self.n_leaves = int(n_leaves)

    @property
    def n_nodes(self) -> int:
        """Number of nodes, leaves included."""
        return int(self.parent.size)

    @cached_property
    def leaf_matrix(self) -> sparse.csr_matrix:
        """Sparse 0/1 matrix ``B`` (n_nodes x n_leaves): ``B[v, i] = 1`` iff leaf ``i`` is below ``v``."""
        rows, cols = [], []
        for leaf in range(self.n_leaves):
            v = leaf
            while v >= 0:
                rows.append(v)
                cols.append(leaf)
                v = self.parent[v]
        data = np.ones(len(rows))
        return sparse.csr_matrix((data, (rows, cols)), shape=(self.n_nodes, self.n_leaves))

    def leaf_distances(self) -> np.ndarray:
        """Path lengths between all pairs of leaves (the tree metric restricted to the support)."""
        B = self.leaf_matrix
        G = (B.T @ sparse.diags(self.edge_weight) @ B).toarray()
        r = np.diag(G)
        out = np.maximum(r[:, None] + r[None, :] - 2 * G, 0.0)
        np.fill_diagonal(out, 0.0)
        return out

    @cached_property
    def depth(self) -> np.ndarray:
        """Number of edges from each node to the root."""
        depth = np.full(self.n_nodes, -1)
        depth[self.parent < 0] = 0
        while np.any(depth < 0):
            todo = np.flatnonzero(depth < 0)
            known = depth[self.parent[todo]] >= 0
            depth[todo[known]] = depth[self.parent[todo[known]]] + 1
        return depth

    def children(self) -> list[list[int]]:
        """The children of every node."""
        out: list[list[int]] = [[] for _ in range(self.n_nodes)]
        for v, p in enumerate(self.parent):
            if p >= 0:
                out[p].append(v)
        return out

    def pad(self, masses: np.ndarray) -> np.ndarray:
        """Measures on the leaves, ``(n_leaves,)`` or rows ``(m, n_leaves)`` with m >= 1, as columns on all nodes."""
        masses = np.atleast_2d(check_array(masses, "masses", ndim=(1, 2), dtype=float))
        if masses.shape[0] == 0 or masses.shape[1] != self.n_leaves:
            raise ValueError(f"masses must have shape ({self.n_leaves},) or (m, {self.n_leaves}) with m >= 1, "
                             f"got shape {np.shape(masses)}")
        out = np.zeros((self.n_nodes, masses.shape[0]))
        out[: self.n_leaves] = masses.T
        return out


class UltrametricTree(WeightedTree):
    """An ultrametric tree (dendrogram): leaves at height 0, ``edge_weight[v] = height[parent] - height[v]``.

    Leaf distances are ``2 * height(LCA(i, j))``.  Build it from an ultrametric matrix with
    :meth:`from_ultrametric` or from a SciPy linkage matrix with :meth:`from_linkage`.
    """

    def __init__(self, parent: np.ndarray, height: np.ndarray, n_leaves: int) -> None:
        super().__init__(parent, np.zeros(np.shape(parent)), n_leaves)  # validates parent, n_leaves
        parent = self.parent
        height = check_array(height, "height", dtype=float, shape=parent.shape)
        if np.any(height[:n_leaves] != 0):
            raise ValueError("height must be 0 on the leaves (the first n_leaves nodes), "
                             f"got max {np.abs(height[:n_leaves]).max():g}")
        if np.any((parent >= 0) & (parent < n_leaves)):
            raise ValueError("parent must not give children to the leaves (the first n_leaves nodes), "
                             "got a leaf that cannot have children")
        weight = np.where(parent >= 0, height[np.maximum(parent, 0)] - height, 0.0)
        if np.any(weight < 0):
            raise ValueError("height must not decrease towards the root (a node cannot be higher than its parent "
                             "in an ultrametric tree)")
        self.edge_weight = weight
        self.height = height

    @classmethod
    def from_linkage(cls, Z: np.ndarray) -> UltrametricTree:
        """The tree of a SciPy linkage matrix (merge distance = 2 x node height).

        Merges at equal height are fused into one multi-way node.  Inversions (a merge lower
        than one of its parts, e.g. centroid linkage) are rejected.
        """
        Z = check_array(Z, "Z", dtype=float)
        if Z.ndim != 2 or Z.shape[1] != 4:
            raise ValueError(f"Z must be a linkage matrix of shape (n - 1, 4), got shape {Z.shape}")
        if Z.shape[0] == 0:
            return cls(np.array([-1]), np.zeros(1), 1)
        n = Z.shape[0] + 1
        ids = Z[:, :2]
        formed_before = ids < (n + np.arange(n - 1))[:, None]
        if (not is_valid_linkage(Z) or np.any(Z[:, 2] < 0) or not np.all(formed_before)
                or np.unique(ids).size != ids.size):
            raise ValueError("Z must be a valid SciPy linkage matrix (see scipy.cluster.hierarchy.linkage), "
                             "got one that is not")
        parent = np.full(2 * n - 1, -1)
        height = np.zeros(2 * n - 1)
        for r, (c1, c2, dist, _) in enumerate(Z):
            parent[[int(c1), int(c2)]] = n + r
            height[n + r] = dist / 2
        if np.any(height[parent[:-1]] < height[:-1]):
            raise ValueError("Z must have monotone merge distances, got inversions")
        for v in range(2 * n - 2, n - 1, -1):  # top-down, so a fused node's parent is final
            if parent[v] >= 0 and height[parent[v]] == height[v]:
                parent[parent == v] = parent[v]
                parent[v] = -2
        keep = np.flatnonzero(parent != -2)
        relabel = np.full(2 * n - 1, -1)
        relabel[keep] = np.arange(keep.size)
        new_parent = np.where(parent[keep] >= 0, relabel[np.maximum(parent[keep], 0)], -1)
        return cls(new_parent, height[keep], n)

    @classmethod
    def from_ultrametric(cls, U: np.ndarray, atol: float = 1e-9) -> UltrametricTree:
        """The dendrogram of an ultrametric matrix ``U`` (single linkage on ``U``, ties fused)."""
        U = check_cost_matrix(U, "U")
        if not is_ultrametric(U, atol=atol):
            raise ValueError("U must be an ultrametric (U_ij <= max(U_ik, U_kj)), got one that is not an ultrametric")
        if U.shape[0] == 1:
            return cls.from_linkage(np.zeros((0, 4)))
        return cls.from_linkage(linkage(squareform(U, checks=False), method="single"))

    def _bottom_up(self) -> np.ndarray:
        """Nodes by increasing height, a child before its parent on ties (zero-length edges)."""
        return np.lexsort((-self.depth, self.height))

    def leaf_distances(self) -> np.ndarray:
        """The ultrametric ``U_ij = 2 height(LCA(i, j))``, exact."""
        U = np.zeros((self.n_leaves, self.n_leaves))
        leaves: list[list[int]] = [[v] if v < self.n_leaves else [] for v in range(self.n_nodes)]
        kids = self.children()
        for v in self._bottom_up():
            groups = [leaves[c] for c in kids[v]]
            for g, first in enumerate(groups):
                for second in groups[g + 1 :]:
                    U[np.ix_(first, second)] = 2 * self.height[v]
                    U[np.ix_(second, first)] = 2 * self.height[v]
                leaves[v].extend(first)
        return U

    def to_linkage(self) -> np.ndarray:
        """A SciPy linkage matrix (for ``scipy.cluster.hierarchy.dendrogram``); ties become chains."""
        n = self.n_leaves
        cluster = np.arange(self.n_nodes)
        size = np.zeros(2 * n - 1)
        size[:n] = 1
        rows, next_id = [], n
        kids = self.children()
        for v in self._bottom_up():
            if not kids[v]:
                continue
            current = cluster[kids[v][0]]
            for c in kids[v][1:]:
                other = cluster[c]
                size[next_id] = size[current] + size[other]
                rows.append([current, other, 2 * self.height[v], size[next_id]])
                current, next_id = next_id, next_id + 1
            cluster[v] = current
        return np.array(rows, dtype=float).reshape(-1, 4)


# ---------------------------------------------------------------------------------------------
# Fitting the ultrametric (paper Algorithms 1-3)


def _mst_routing(X: np.ndarray, T: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's MST of the complete graph ``X`` and, for every pair, the MST edge that sets its
    subdominant ultrametric value (the largest edge on the path = the Kruskal merge joining them).

    Edges of equal weight in ``X`` (an ultrametric is full of them) are ordered by ``T`` (the
    data), so the tree and the routing do not depend on how the points are numbered: edges are
    compared by the pair ``(X_e, T_e)``.  ``T=None`` compares by ``X`` alone.
    Returns the edge endpoints ``(p, q)`` and the ``n x n`` edge-index matrix (diagonal -1).
    """
    n = X.shape[0]
    T = np.zeros_like(X) if T is None else T
    in_tree = np.zeros(n, dtype=bool)
    in_tree[0] = True
    best, best_t, best_from = X[0].copy(), T[0].copy(), np.zeros(n, dtype=np.intp)
    p, q = np.empty(n - 1, dtype=np.intp), np.empty(n - 1, dtype=np.intp)
    for e in range(n - 1):
        cand = np.where(in_tree, np.inf, best)
        ties = np.flatnonzero(cand == cand.min())
        v = int(ties[np.argmin(best_t[ties])])
        p[e], q[e], in_tree[v] = best_from[v], v, True
        closer = ~in_tree & ((X[v] < best) | ((X[v] == best) & (T[v] < best_t)))
        best[closer], best_t[closer], best_from[closer] = X[v, closer], T[v, closer], v
    order = np.lexsort((T[p, q], X[p, q]))
    p, q = p[order], q[order]
    members = {v: [v] for v in range(n)}
    root = np.arange(n)
    E = np.full((n, n), -1, dtype=np.intp)
    for e in range(n - 1):
        ra, rb = root[p[e]], root[q[e]]
        A, B = members.pop(ra), members.pop(rb)
        E[np.ix_(A, B)] = e
        E[np.ix_(B, A)] = e
        root[B] = ra
        members[ra] = A + B
    return p, q, E


def _triplet_sweep(M: np.ndarray) -> np.ndarray:
    """One Gauss-Seidel sweep of projections onto the triplet sets of paper Algorithm 2.

    For each triplet ``i < j < k`` (lexicographic order) the two largest of
    ``(M_ij, M_ik, M_jk)`` are replaced by their mean, in place.
    """
    n = M.shape[0]
    rows = M.tolist()
    for i in range(n):
        ri = rows[i]
        for j in range(i + 1, n):
            rj = rows[j]
            x = ri[j]
            for k in range(j + 1, n):
                y, z = ri[k], rj[k]
                if x <= y and x <= z:  # x smallest: y, z are the two largest
                    y = z = 0.5 * (y + z)
                elif y <= z:  # y smallest
                    x = z = 0.5 * (x + z)
                else:  # z smallest
                    x = y = 0.5 * (x + y)
                ri[k], rj[k] = y, z
            ri[j] = x
    out = np.triu(np.array(rows), 1)
    return out + out.T


def _fit_mst(D: np.ndarray) -> np.ndarray:
    S = subdominant_ultrametric(D)
    delta = float(np.max(D - S))
    U = S + delta / 2
    np.fill_diagonal(U, 0.0)
    return U


def _canonical_order(D: np.ndarray) -> np.ndarray:
    """An ordering of the points that depends on ``D`` only, not on how the points are numbered.

    Points are sorted by the sum of their sorted row, then by the sorted row itself (points whose
    rows hold the same multiset of distances keep their relative order).
    """
    rows = np.sort(D, axis=1)
    return np.lexsort((*rows.T[::-1], rows.sum(axis=1)))


def _fit_ip(D: np.ndarray, n_iter: int) -> np.ndarray:
    """UltraTWD-IP; the triplet sweep visits the points in :func:`_canonical_order`."""
    if D.shape[0] > IP_WARN_N:
        warnings.warn(f"UltraTWD-IP costs O(n^3) per sweep; n = {D.shape[0]} will be slow", stacklevel=4)
    order = _canonical_order(D)
    D = D[np.ix_(order, order)]
    M = D.copy()
    for t in range(1, n_iter + 1):
        M = D / (t + 1) + t / (t + 1) * M  # movement step
        M = _triplet_sweep(M)  # projection step
    inverse = np.argsort(order)
    return subdominant_ultrametric(M)[np.ix_(inverse, inverse)]


def _loss_and_grad(X: np.ndarray, T: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``L(X) = mean_{i<j} (MST(X)_ij - T_ij)^2``, ``U = MST(X)`` and ``dL/dX`` (symmetric).

    ``MST(X)_ij = X_e`` for the MST edge ``e`` that joins ``i`` and ``j`` in Kruskal's order, so
    ``dL/dX_e`` sums ``2 (X_e - T_ij) / N`` over the pairs routed to ``e`` and is 0 off the MST.
    Ties in ``X`` are broken by ``T`` (see :func:`_mst_routing`), which picks a subgradient that
    does not depend on the numbering of the points.
    """
    iu = np.triu_indices(X.shape[0], 1)
    p, q, E = _mst_routing(X, T)
    U = X[p, q][E]
    np.fill_diagonal(U, 0.0)
    residual = (U - T)[iu]
    grad_edge = np.bincount(E[iu], weights=2 * residual / residual.size, minlength=p.size)
    G = np.zeros_like(X)
    G[p, q] = G[q, p] = grad_edge
    return float(np.mean(residual**2)), U, G


def _fit_gd(
    D: np.ndarray, n_iter: int, lr: float, optimizer: Optimizer, init: Init
) -> tuple[np.ndarray, list[float]]:
    """Gradient descent on ``mean_{i<j} (MST(X)_ij - D_ij)^2`` with ``D`` scaled to max 1.

    Returns the ultrametric of lowest loss and the running best loss per iteration.
    """
    scale = float(D.max())
    T = D / scale
    X = _fit_mst(T) if init == "mst" else T.copy()
    m, v = np.zeros_like(X), np.zeros_like(X)
    best_U, best_loss, history = X, np.inf, []
    for t in range(n_iter + 1):
        loss, U, G = _loss_and_grad(X, T)
        if loss < best_loss:
            best_U, best_loss = U, loss
        history.append(best_loss)
        if t == n_iter:
            break
        if optimizer == "adam":
            b1, b2 = 0.9, 0.999
            m = b1 * m + (1 - b1) * G
            v = b2 * v + (1 - b2) * G**2
            step = (m / (1 - b1 ** (t + 1))) / (np.sqrt(v / (1 - b2 ** (t + 1))) + 1e-12)
        else:
            step = G
        X = np.maximum(X - lr * step, 0.0)
        np.fill_diagonal(X, 0.0)
    return best_U * scale, history


def fit_ultrametric(
    D: np.ndarray,
    method: Method = "gd",
    *,
    n_iter: int | None = None,
    lr: float = 0.02,
    optimizer: Optimizer = "adam",
    init: Init = "mst",
) -> UltrametricTree:
    """Fit an ultrametric tree to the cost matrix ``D`` (UltraTWD-MST, -IP or -GD).

    ``method``:
      * ``"mst"`` -- UltraTWD-MST (Algorithm 1, Eq. 12): ``MST(D) + delta/2`` with
        ``delta = ||MST(D) - D||_inf``, the closest ultrametric in the max norm, error ``delta/2``.
      * ``"ip"`` -- UltraTWD-IP (Algorithm 2): ``n_iter`` sweeps (default 1) of movement +
        triplet projections, then the subdominant ultrametric of the result.  The sweep visits
        the points in an order computed from ``D`` alone.
      * ``"gd"`` -- UltraTWD-GD (Algorithm 3): ``n_iter`` steps (default 8) of gradient descent on
        ``||MST(X) - D||_F^2`` (mean over pairs, ``D`` scaled to max 1) through the MST projection,
        starting at the UltraTWD-MST solution (``init="mst"``, the default; a reconstruction, see
        the docs page) or at ``X = D`` (``init="data"``); the iterate of lowest loss is kept.
        ``optimizer="adam"`` (the default; a reconstruction) or ``"sgd"`` (plain gradient steps),
        learning rate ``lr``.  Equal entries of the iterate are ordered by ``D`` when the MST
        subgradient is taken.

    Every method gives the same tree up to the numbering of the leaves when the points are
    renumbered (``D[perm][:, perm]``), for ``D`` without repeated distances.
    """
    return _fit(D, method, n_iter=n_iter, lr=lr, optimizer=optimizer, init=init)[0]


def _check_options(method: Method, n_iter: int | None, lr: float, optimizer: Optimizer, init: Init
                   ) -> tuple[int | None, float]:
    """Validate the fit options; returns ``n_iter`` and ``lr`` as Python numbers."""
    check_choice(method, "method", ("mst", "ip", "gd"))
    if n_iter is not None:
        n_iter = check_scalar(n_iter, "n_iter", "int", min=0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    check_choice(optimizer, "optimizer", ("adam", "sgd"))
    check_choice(init, "init", ("mst", "data"))
    return n_iter, lr


def _fit(
    D: np.ndarray, method: Method, *, n_iter: int | None, lr: float, optimizer: Optimizer, init: Init
) -> tuple[UltrametricTree, list[float]]:
    """:func:`fit_ultrametric`, also returning the GD loss history (empty for other methods)."""
    D = check_cost_matrix(D)
    n_iter, lr = _check_options(method, n_iter, lr, optimizer, init)
    history: list[float] = []
    if D.shape[0] < 2 or D.max() == 0:
        U = np.zeros_like(D)
    elif method == "mst":
        U = _fit_mst(D)
    elif method == "ip":
        U = _fit_ip(D, 1 if n_iter is None else n_iter)
    else:
        U, history = _fit_gd(D, 8 if n_iter is None else n_iter, lr, optimizer, init)
    return UltrametricTree.from_ultrametric(U), history


# ---------------------------------------------------------------------------------------------
# Tree-Wasserstein distances on a fitted tree, via icml25.transport.tree_wasserstein


def _check_histograms(name: str, x: np.ndarray, n: int, normalize: bool) -> np.ndarray:
    x = check_array(x, name, ndim=(1, 2), dtype=float)
    if x.shape[-1] != n or x.shape[0] == 0:
        raise ValueError(f"{name} must have shape ({n},) or (m, {n}) (one histogram per row), got shape {x.shape}")
    if np.any(x < 0):
        raise ValueError(f"{name} must be non-negative, got min {x.min():g}")
    mass = x.sum(axis=-1, keepdims=True)
    if np.any(mass <= 0):
        raise ValueError(f"{name} must have positive total mass (an all-zero histogram has no distance), "
                         f"got min mass {mass.min():g}")
    return x / mass if normalize else x


def _check_masses(a: np.ndarray, b: np.ndarray) -> None:
    ma, mb = a.sum(axis=-1), b.sum(axis=-1)
    ref = ma.flat[0]
    if not (np.allclose(ma, ref, rtol=1e-9, atol=1e-12) and np.allclose(mb, ref, rtol=1e-9, atol=1e-12)):
        raise ValueError("the histograms must have the same total mass (pass normalize=True to rescale to 1), "
                         f"got masses from {min(ma.min(), mb.min()):g} to {max(ma.max(), mb.max()):g}")


def _check_tree_arg(tree: WeightedTree) -> None:
    check_instance(tree, "tree", WeightedTree, "a WeightedTree (e.g. from fit_ultrametric)")


def ultratwd(
    a: np.ndarray, b: np.ndarray, tree: WeightedTree, *, normalize: bool = False
) -> float | np.ndarray:
    """Tree-Wasserstein distance ``sum_v w_v |a(leaves(v)) - b(leaves(v))|`` on ``tree``.

    ``a`` and ``b`` are histograms on the tree's leaves, shape ``(n,)`` (returns a float) or
    ``(m, n)`` (returns the ``m`` row-wise distances; a 1-D side is broadcast).  All must have the
    same total mass unless ``normalize=True``, which rescales each histogram to mass 1.
    Cost ``O(n_nodes)`` per pair.
    """
    _check_tree_arg(tree)
    normalize = check_bool(normalize, "normalize")
    a = _check_histograms("a", a, tree.n_leaves, normalize)
    b = _check_histograms("b", b, tree.n_leaves, normalize)
    _check_masses(a, b)
    if a.ndim == 1 and b.ndim == 1:
        return tree_wasserstein(tree.pad(a)[:, 0], tree.pad(b)[:, 0], tree.parent, tree.edge_weight)
    if a.ndim == b.ndim == 2 and a.shape[0] != b.shape[0]:
        raise ValueError(f"a and b must have the same number of rows, got {a.shape[0]} and {b.shape[0]}")
    a, b = np.broadcast_arrays(np.atleast_2d(a), np.atleast_2d(b))
    flow = subtree_masses(tree.parent, tree.pad(a) - tree.pad(b))
    return tree.edge_weight @ np.abs(flow)


def ultratwd_pairwise(
    A: np.ndarray, tree: WeightedTree, B: np.ndarray | None = None, *, normalize: bool = False
) -> np.ndarray:
    """All tree-Wasserstein distances between the rows of ``A`` (m_a, n) and of ``B`` (m_b, n).

    ``B=None`` means ``B = A``.  One linear pass per histogram plus a weighted-L1 ``cdist``,
    ``O(n_nodes (m_a + m_b) + n_nodes m_a m_b)``.
    """
    _check_tree_arg(tree)
    normalize = check_bool(normalize, "normalize")
    A = np.atleast_2d(_check_histograms("A", A, tree.n_leaves, normalize))
    if B is None:
        _check_masses(A, A)
        return tree_wasserstein_pairwise(tree.pad(A), tree.parent, tree.edge_weight)
    B = np.atleast_2d(_check_histograms("B", B, tree.n_leaves, normalize))
    _check_masses(A, B)
    return tree_wasserstein_pairwise(tree.pad(A), tree.parent, tree.edge_weight, tree.pad(B))


class UltraTWD:
    """Learn an ultrametric tree from a cost matrix once, then reuse it for many distances.

    Parameters are those of :func:`fit_ultrametric`.  After :meth:`fit`, ``tree_`` is the
    :class:`UltrametricTree`, ``n_support_`` the number of support points,
    ``fit_error_`` the fit of the tree metric to ``D`` (``{"max": ||D_T - D||_inf,
    "rel_fro": ||D_T - D||_F / ||D||_F}``, the max-norm and Frobenius objectives) and
    ``loss_history_`` the best loss so far per GD iteration (empty for ``mst`` / ``ip``).
    """

    def __init__(
        self,
        method: Method = "gd",
        *,
        n_iter: int | None = None,
        lr: float = 0.02,
        optimizer: Optimizer = "adam",
        init: Init = "mst",
    ) -> None:
        self.method = method
        self.n_iter = n_iter
        self.lr = lr
        self.optimizer = optimizer
        self.init = init
        _check_options(method, n_iter, lr, optimizer, init)

    def fit(self, D: np.ndarray) -> UltraTWD:
        """Fit the tree to the ``n x n`` ground-cost matrix ``D``."""
        D = check_cost_matrix(D)
        self.tree_, self.loss_history_ = _fit(
            D, self.method, n_iter=self.n_iter, lr=self.lr, optimizer=self.optimizer, init=self.init
        )
        self.n_support_ = D.shape[0]
        self.fit_error_ = tree_fit_error(self.tree_, D)
        return self

    def _fitted(self) -> UltrametricTree:
        check_is_fitted(self, "tree_")
        return self.tree_

    def distance(self, a: np.ndarray, b: np.ndarray, *, normalize: bool = False) -> float | np.ndarray:
        """:func:`ultratwd` on the learned tree."""
        return ultratwd(a, b, self._fitted(), normalize=normalize)

    def pairwise(
        self, A: np.ndarray, B: np.ndarray | None = None, *, normalize: bool = False
    ) -> np.ndarray:
        """:func:`ultratwd_pairwise` on the learned tree."""
        return ultratwd_pairwise(A, self._fitted(), B, normalize=normalize)


def tree_fit_error(tree: WeightedTree, D: np.ndarray) -> dict[str, float]:
    """How well the tree metric fits ``D``: max-norm error and relative Frobenius error."""
    _check_tree_arg(tree)
    D = check_cost_matrix(D)
    if D.shape[0] != tree.n_leaves:
        raise ValueError(f"D must have one row per leaf of the tree ({tree.n_leaves} leaves), got {D.shape[0]} rows")
    diff = tree.leaf_distances() - D
    norm = float(np.linalg.norm(D))
    return {"max": float(np.abs(diff).max()), "rel_fro": float(np.linalg.norm(diff) / norm) if norm else 0.0}
