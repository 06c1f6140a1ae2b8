"""The tree-Wasserstein distance, shared by every tree-based method in ``icml25.transport``.

For a rooted tree with an edge from each non-root node ``v`` to ``parent[v]`` of length
``weights[v]``, the 1-Wasserstein distance between two measures ``a`` and ``b`` on the nodes
with the tree metric has the closed form (Evans & Matsen 2012; Le et al. 2019)

    TW(a, b) = sum_v weights[v] * | a(subtree(v)) - b(subtree(v)) |,

computed here in time linear in the number of nodes.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from icml25.utils.validation import check_array


def _check_tree(parent: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parent = check_array(parent, "parent", ndim=1, dtype=None, min_len=1)
    if not np.issubdtype(parent.dtype, np.integer):
        raise TypeError(f"parent must be an integer array (parent[root] = -1), got dtype {parent.dtype}")
    weights = check_array(weights, "weights", dtype=float, shape=parent.shape)
    if np.any(weights < 0):
        raise ValueError(f"weights must be non-negative, got min {weights.min():g}")
    n = parent.size
    roots = np.flatnonzero(parent < 0)
    if roots.size != 1 or np.any(parent >= n):
        raise ValueError(f"parent must describe one rooted tree (exactly one entry -1, others in [0, {n})), "
                         f"got {np.array2string(parent, threshold=12)}")
    depth = np.full(n, -1)
    depth[roots[0]] = 0
    order = [int(roots[0])]
    children: list[list[int]] = [[] for _ in range(n)]
    for v, p in enumerate(parent):
        if p >= 0:
            children[p].append(v)
    for v in order:
        for c in children[v]:
            depth[c] = depth[v] + 1
            order.append(c)
    if len(order) != n:
        raise ValueError("parent must describe one rooted tree, got a cycle or a node unreachable from the root")
    return parent, weights, np.asarray(order[::-1])


def subtree_masses(parent: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Mass of every subtree: ``out[v] = sum of masses over the subtree rooted at v``.

    ``masses`` has shape ``(n_nodes,)`` or ``(n_nodes, n_measures)``.
    """
    parent, _, bottom_up = _check_tree(parent, np.zeros(np.shape(parent)))
    out = check_array(masses, "masses", ndim=(1, 2), dtype=float, copy=True)
    if out.shape[0] != parent.size:
        raise ValueError(f"masses must have {parent.size} rows (one per node), got {out.shape[0]}")
    for v in bottom_up:
        if parent[v] >= 0:
            out[parent[v]] += out[v]
    return out


def _check_measure(name: str, x: np.ndarray, n: int) -> np.ndarray:
    x = check_array(x, name, ndim=(1, 2), dtype=float)
    if x.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) or ({n}, k), got shape {x.shape}")
    if np.any(x < 0):
        raise ValueError(f"{name} must be non-negative, got min {x.min():g}")
    return x


def tree_wasserstein(a: np.ndarray, b: np.ndarray, parent: np.ndarray, weights: np.ndarray) -> float:
    """Tree-Wasserstein distance between measures ``a`` and ``b`` of equal total mass on the nodes."""
    parent, weights, _ = _check_tree(parent, weights)
    a = _check_measure("a", a, parent.size)
    b = _check_measure("b", b, parent.size)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError("a and b must be 1-D; use tree_wasserstein_pairwise for many measures")
    if not np.isclose(a.sum(), b.sum(), rtol=1e-9, atol=1e-12):
        raise ValueError(f"a and b must have equal total mass, got {a.sum()} and {b.sum()}")
    diff = subtree_masses(parent, a - b)
    return float(np.sum(weights * np.abs(diff)))


def tree_wasserstein_pairwise(
    A: np.ndarray, parent: np.ndarray, weights: np.ndarray, B: np.ndarray | None = None
) -> np.ndarray:
    """All pairwise tree-Wasserstein distances between the columns of ``A`` (and ``B``).

    ``A`` has shape ``(n_nodes, n_a)``; the result has shape ``(n_a, n_b)``.  It is a weighted
    L1 distance between subtree-mass embeddings, so it costs one linear pass per measure plus
    one ``cdist``.
    """
    parent, weights, _ = _check_tree(parent, weights)
    A = _check_measure("A", A, parent.size)
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D (n_nodes, n_measures), got shape {A.shape}")
    emb_a = (subtree_masses(parent, A) * weights[:, None]).T
    if B is None:
        emb_b = emb_a
    else:
        B = _check_measure("B", B, parent.size)
        if B.ndim != 2:
            raise ValueError(f"B must be 2-D (n_nodes, n_measures), got shape {B.shape}")
        emb_b = (subtree_masses(parent, B) * weights[:, None]).T
    return cdist(emb_a, emb_b, metric="cityblock")
