"""The output of a representation: a crystal graph, and the node-order-free comparisons the checkers use.

A :class:`Graph` has node features (N, Fn), directed edges ``edge_index`` (2, E) from source to target,
invariant edge features (E, Fe) and optional pseudo-scalar edge features (E, Fp) that must flip sign under
a reflection. Two graphs are compared without reference to node order by matching per-node signatures
(node features, degree, and each incident-edge feature column sorted) with an optimal assignment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar


@dataclass(frozen=True, eq=False)
class Graph:
    """A crystal graph; arrays are validated and stored as float64 (``edge_index`` as int64)."""

    node_feats: np.ndarray
    edge_index: np.ndarray
    edge_feats: np.ndarray
    edge_pseudo: np.ndarray | None = None

    def __post_init__(self) -> None:
        nodes = check_array(self.node_feats, "node_feats", dtype=float, ndim=2, min_len=1)
        index = check_array(self.edge_index, "edge_index", ndim=2)
        if index.shape[0] != 2 or (index.size and index.dtype.kind not in "iu"):
            raise ValueError(f"edge_index must be a (2, E) integer array, got shape {index.shape}, {index.dtype}")
        index = index.astype(np.int64)
        if index.size and (index.min() < 0 or index.max() >= len(nodes)):
            raise ValueError(f"edge_index must hold node indices in [0, {len(nodes)}), "
                             f"got {index.min()}..{index.max()}")
        edges = check_array(self.edge_feats, "edge_feats", dtype=float, ndim=2)
        if edges.shape[0] != index.shape[1]:
            raise ValueError(f"edge_feats must have one row per edge ({index.shape[1]}), got {edges.shape[0]}")
        pseudo = self.edge_pseudo
        if pseudo is None:
            pseudo = np.zeros((index.shape[1], 0))
        pseudo = check_array(pseudo, "edge_pseudo", dtype=float, ndim=2)
        if pseudo.shape[0] != index.shape[1]:
            raise ValueError(f"edge_pseudo must have one row per edge ({index.shape[1]}), got {pseudo.shape[0]}")
        for name, value in (("node_feats", nodes), ("edge_index", index), ("edge_feats", edges),
                            ("edge_pseudo", pseudo)):
            object.__setattr__(self, name, value)

    @property
    def n_nodes(self) -> int:
        return len(self.node_feats)

    @property
    def n_edges(self) -> int:
        return self.edge_index.shape[1]

    def negate_pseudo(self) -> Graph:
        """The graph with its pseudo-scalar features negated (what a reflection must produce)."""
        return Graph(self.node_feats, self.edge_index, self.edge_feats, -self.edge_pseudo)


def _signatures(g: Graph, pseudo: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per-node degree and signature: node features, then each incident-edge column sorted (zero-padded)."""
    feats = np.concatenate([g.edge_feats, g.edge_pseudo], axis=1) if pseudo else g.edge_feats
    src = g.edge_index[0]
    degree = np.bincount(src, minlength=g.n_nodes)
    width = int(degree.max()) if g.n_edges else 0
    cols = np.zeros((g.n_nodes, feats.shape[1], width))
    order = np.argsort(src, kind="stable")
    starts = np.concatenate([[0], np.cumsum(degree)])
    for i in range(g.n_nodes):
        block = feats[order[starts[i]:starts[i + 1]]]
        cols[i, :, :len(block)] = np.sort(block, axis=0).T
    return degree, np.concatenate([g.node_feats, cols.reshape(g.n_nodes, -1)], axis=1)


def graph_distance(g1: Graph, g2: Graph, repeat: int = 1, pseudo: bool = True) -> float:
    """The largest per-node signature difference after the best node matching (``inf`` if not comparable).

    ``repeat = k`` compares ``g1`` with ``k`` disjoint copies of ``g2`` (a supercell against its cell).
    """
    check_instance(g1, "g1", Graph)
    check_instance(g2, "g2", Graph)
    repeat = check_scalar(repeat, "repeat", "int", min=1)
    pseudo = check_bool(pseudo, "pseudo")
    if g1.n_nodes != repeat * g2.n_nodes or g1.n_edges != repeat * g2.n_edges:
        return float("inf")
    if g1.node_feats.shape[1] != g2.node_feats.shape[1] or g1.edge_feats.shape[1] != g2.edge_feats.shape[1] \
            or g1.edge_pseudo.shape[1] != g2.edge_pseudo.shape[1]:
        return float("inf")
    d1, s1 = _signatures(g1, pseudo)
    d2, s2 = _signatures(g2, pseudo)
    d2, s2 = np.tile(d2, repeat), np.tile(s2, (repeat, 1))
    if sorted(d1.tolist()) != sorted(d2.tolist()):
        return float("inf")
    cost = np.abs(s1[:, None, :] - s2[None, :, :]).max(axis=-1, initial=0.0)
    cost[d1[:, None] != d2[None, :]] = 1e300
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].max())


def graphs_equivalent(g1: Graph, g2: Graph, atol: float = 1e-6, repeat: int = 1, pseudo: bool = True) -> bool:
    """Whether two graphs are the same up to node order (see :func:`graph_distance`), to ``atol``."""
    atol = check_scalar(atol, "atol", "real", min=0.0)
    return graph_distance(g1, g2, repeat, pseudo) <= atol


def readout(g: Graph) -> np.ndarray:
    """A fixed-size permutation-invariant vector: mean node features, edge and pseudo feature sums per atom."""
    check_instance(g, "g", Graph)
    n = g.n_nodes
    return np.concatenate([g.node_feats.mean(axis=0), g.edge_feats.sum(axis=0) / n, g.edge_pseudo.sum(axis=0) / n])
