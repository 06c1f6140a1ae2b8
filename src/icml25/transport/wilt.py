"""WILTing Trees (Negishi, Gärtner & Welke, ICML 2025): MPNN distances as OT on the WL labeling tree.

One rooted tree for a whole graph dataset -- the Weisfeiler-Leman Labeling Tree (WILT) -- has a
node per WL colour; the parent of a colour at iteration t is the colour of the same vertex at
iteration t-1.  A graph is the measure "how many of its vertices carry each colour", and the
distance between two graphs is optimal transport on the tree, ``sum_v w_v |mu_G(v) - mu_H(v)|``
(linear time).  Fixed weights give the Wasserstein-WL and WL optimal-assignment distances
exactly; ``distill`` learns the weights so that the distance matches a trained MPNN's embedding
distances, and the largest weights name the colours (subgraphs) the MPNN looks at.

Example
-------
>>> import numpy as np
>>> from scipy.spatial.distance import cdist
>>> from icml25.data.molecules import make_molecule_like
>>> from icml25.transport.wilt import WLLabelingTree, distill, rmse_without_outliers
>>> graphs, y, _ = make_molecule_like(40, seed=0)
>>> tree = WLLabelingTree(depth=3).fit(graphs)          # 'dummy' normalisation: raw counts
>>> mu = tree.transform(graphs)                          # sparse (40, tree.n_nodes_)
>>> d_wloa = tree.set_weights("wloa").pairwise(mu)       # WL optimal-assignment distance
>>> target = cdist(y[:, None], y[:, None]) + 0.1 * d_wloa  # any (n, n) distances to distil
>>> w = distill(tree, mu, target, epochs=5, seed=0)      # learned edge weights, w >= 0
>>> rmse, coeff = rmse_without_outliers(tree.set_weights(w).pairwise(mu)[np.triu_indices(40, 1)],
...                                     target[np.triu_indices(40, 1)])
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import networkx as nx
import numpy as np
import scipy.sparse as sp

from icml25.transport.tree_wasserstein import tree_wasserstein_pairwise
from icml25.utils.random import Seed, torch_generator
from icml25.utils.validation import (
    check_array,
    check_bool,
    check_choice,
    check_consistent_length,
    check_is_fitted,
    check_scalar,
)

_NO_LABEL = None  # the constant label given to vertices without a 'label' attribute (strict=False)


def _as_networkx(graph: Any, name: str = "graph") -> nx.Graph:
    """An undirected ``nx.Graph``; PyTorch-Geometric-style objects (``x``, ``edge_index``) are converted."""
    if isinstance(graph, nx.Graph):
        if graph.is_directed():
            raise ValueError(
                "directed graphs are not supported: WL refinement here is undirected "
                "(convert with graph.to_undirected())"
            )
        if graph.is_multigraph():
            raise ValueError("multigraphs are not supported; convert with nx.Graph(graph)")
        return graph
    if hasattr(graph, "edge_index") and hasattr(graph, "x"):
        x = np.asarray(graph.x.detach().cpu() if hasattr(graph.x, "detach") else graph.x)
        edge_index = np.asarray(
            graph.edge_index.detach().cpu() if hasattr(graph.edge_index, "detach") else graph.edge_index
        )
        labels = x.argmax(axis=1) if x.ndim == 2 and x.shape[1] > 1 else x.reshape(-1)
        out = nx.Graph()
        out.add_nodes_from((i, {"label": int(lab)}) for i, lab in enumerate(labels))
        edge_attr = getattr(graph, "edge_attr", None)
        if edge_attr is not None:
            ea = np.asarray(edge_attr.detach().cpu() if hasattr(edge_attr, "detach") else edge_attr)
            edge_labels = ea.argmax(axis=1) if ea.ndim == 2 and ea.shape[1] > 1 else ea.reshape(-1)
            out.add_edges_from(
                (int(i), int(j), {"label": int(e)})
                for (i, j), e in zip(edge_index.T, edge_labels, strict=True)
            )
        else:
            out.add_edges_from((int(i), int(j)) for i, j in edge_index.T)
        return out
    raise TypeError(
        f"{name} must be a networkx.Graph (or an object with x and edge_index), "
        f"got {type(graph).__name__}"
    )


class WLLabelingTree:
    """The Weisfeiler-Leman Labeling Tree of a graph dataset (paper Sec. 4, Def. 4.1).

    Parameters
    ----------
    depth : number of WILT layers below the root, D >= 1.  Layer 1 holds the initial labels,
        layer t the colours after t-1 WL iterations (paper default D = 4 for 3 MPNN layers).
    normalization : ``'dummy'`` keeps raw colour counts (root mass = number of vertices; the root's
        weight then charges ``|n_G - n_H|`` as if the smaller graph were padded with dummy vertices)
        or ``'size'`` divides by the number of vertices (probability measures).
    use_edge_labels : refine with the edge attribute ``label``; ``None`` uses it when every edge
        of the fitted graphs has one.
    handle_unseen : ``'error'`` (default) raises when ``transform`` meets a colour that was not seen
        by ``fit``; ``'ignore'`` drops the mass of such vertices at that layer and below, so the
        distance is only approximate.
    strict : if True, a vertex without the attribute ``label`` raises; otherwise it gets the
        constant label ``None``.

    Attributes (after ``fit``): ``parent_`` (parent of every WILT node, ``-1`` at the root 0),
    ``layer_`` (layer of every node), ``n_nodes_``, ``weights_`` (edge weight above every node,
    ones after ``fit``), ``use_edge_labels_`` (the resolved choice).
    """

    def __init__(
        self,
        depth: int = 4,
        normalization: Literal["size", "dummy"] = "dummy",
        use_edge_labels: bool | None = None,
        handle_unseen: Literal["error", "ignore"] = "error",
        strict: bool = False,
    ) -> None:
        self.depth = depth
        self.normalization = normalization
        self.use_edge_labels = use_edge_labels
        self.handle_unseen = handle_unseen
        self.strict = strict
        self._check_params()

    # ------------------------------------------------------------------ building the tree
    def _check_params(self) -> None:
        check_scalar(self.depth, "depth", "int", min=1)
        check_choice(self.normalization, "normalization", ("size", "dummy"))
        if self.use_edge_labels is not None:
            check_bool(self.use_edge_labels, "use_edge_labels")
        check_choice(self.handle_unseen, "handle_unseen", ("error", "ignore"))
        check_bool(self.strict, "strict")

    def _check_fitted(self) -> None:
        check_is_fitted(self, "parent_")

    @staticmethod
    def _as_list(graphs: Any, name: str = "graphs") -> list[nx.Graph]:
        if isinstance(graphs, nx.Graph) or not isinstance(graphs, Sequence) or isinstance(graphs, str):
            raise TypeError(f"{name} must be a sequence (list) of graphs, got {type(graphs).__name__}")
        if len(graphs) == 0:
            raise ValueError(f"{name} must contain at least one graph, got none")
        return [_as_networkx(g, f"{name}[{i}]") for i, g in enumerate(graphs)]

    def _prepare(self, graph: nx.Graph, grow: bool) -> tuple[list[Hashable], list[tuple[int, int, int]]]:
        """Vertex labels and edges ``(vertex index, vertex index, edge-label id)`` of one graph."""
        if graph.number_of_nodes() == 0:
            raise ValueError("graphs must have at least one vertex (got an empty graph)")
        index = {u: i for i, u in enumerate(graph.nodes)}
        labels: list[Hashable] = []
        for u, data in graph.nodes(data=True):
            if "label" not in data and self.strict:
                raise ValueError(f"vertex {u!r} has no 'label' attribute (strict=True)")
            label = data.get("label", _NO_LABEL)
            if not isinstance(label, Hashable):
                raise TypeError(f"vertex labels must be hashable, got {type(label).__name__} at {u!r}")
            labels.append(label)
        if not self.use_edge_labels_:
            return labels, [(index[u], index[x], 0) for u, x in graph.edges()]
        edges = []
        for u, x, data in graph.edges(data=True):
            if "label" not in data:
                raise ValueError(f"edge ({u!r}, {x!r}) has no 'label' attribute but edge labels are used")
            edge = self._edge_ids.get(data["label"], -2)
            if edge == -2 and grow:
                edge = self._edge_ids[data["label"]] = len(self._edge_ids)
            edges.append((index[u], index[x], edge))
        return labels, edges

    def _add_nodes(self, t: int, keys: list, parents: np.ndarray) -> np.ndarray:
        """New WILT nodes at layer t + 1 for ``keys`` (in this order) below ``parents``; their ids."""
        ids = np.arange(len(self._parent), len(self._parent) + len(keys), dtype=np.int64)
        self._parent.extend(parents.tolist())
        self._layer.extend([t + 1] * len(keys))
        self._keys.extend(keys)
        self._tables[t].update(zip(keys, ids.tolist(), strict=True))
        return ids

    def _key(self, node: int) -> Any:
        """The key of a WILT node: its vertex label at layer 1, else ``(parent, ((neighbour colour, edge
        label id), ...))`` with the pairs sorted (stored as the bytes of that int64 row)."""
        key = self._keys[node]
        if self._layer[node] <= 1:
            return key
        row = np.frombuffer(key, dtype=np.int64).tolist()
        d = (len(row) - 1) // 2
        return row[0], tuple(zip(row[1 : 1 + d], row[1 + d :], strict=True))

    def _color(self, prepared: list, grow: bool) -> tuple[np.ndarray, np.ndarray, int]:
        """WL colours (WILT node ids, -1 if unseen) of every vertex at layers 1..D, layer by layer.

        Returns the colours of all graphs' vertices stacked, ``(n_vertices, depth)``, the number of
        vertices of every graph, and the number of distinct unseen colours.  A vertex's key at layer
        t + 1 is its colour at layer t with the sorted ``(neighbour colour, edge label)`` pairs; the keys
        of all vertices are compared at once (one ``np.unique`` per vertex degree) and new WILT nodes
        are numbered in the order in which their first vertex comes (graph by graph), so the tree is
        the same as refining vertex by vertex.
        """
        sizes = np.array([len(labels) for labels, _ in prepared], dtype=np.int64)
        n_edges = np.array([len(edges) for _, edges in prepared], dtype=np.int64)
        n = int(sizes.sum())
        edges = np.array([e for _, es in prepared for e in es], dtype=np.int64).reshape(-1, 3)
        shift = np.repeat(np.cumsum(sizes) - sizes, n_edges)
        a, b, label = edges[:, 0] + shift, edges[:, 1] + shift, edges[:, 2]
        loop = a == b  # a self-loop is one neighbour, as in an adjacency list
        src = np.concatenate([a, b[~loop]])
        dst = np.concatenate([b, a[~loop]])
        label = np.concatenate([label, label[~loop]])
        degree = np.bincount(src, minlength=n)
        start = np.cumsum(degree) - degree
        labels = [lab for vertex_labels, _ in prepared for lab in vertex_labels]
        table = self._tables[0]
        new = [lab for lab in dict.fromkeys(labels) if lab not in table]
        if grow and new:
            self._add_nodes(0, new, np.zeros(len(new), dtype=np.int64))
        colors = np.full((n, self.depth), -1, dtype=np.int64)
        colors[:, 0] = [table.get(lab, -1) for lab in labels]
        n_unseen = 0 if grow else len(new)
        for t in range(1, self.depth):
            prev = colors[:, t - 1]
            order = np.lexsort((label, prev[dst], src))
            nbr, nbr_label = prev[dst][order], label[order]
            groups, firsts, keys = [], [], []
            for d in np.unique(degree[prev >= 0]):
                members = np.flatnonzero((degree == d) & (prev >= 0))
                slots = start[members, None] + np.arange(d)
                rows = np.column_stack([prev[members], nbr[slots], nbr_label[slots]])
                unique, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
                groups.append((members, inverse.reshape(-1)))
                firsts.append(members[first])
                keys.extend(row.tobytes() for row in unique)
            if not groups:
                break
            first = np.concatenate(firsts)
            ids = np.array([self._tables[t].get(key, -1) for key in keys], dtype=np.int64)
            missing = np.flatnonzero(ids < 0)
            if grow and missing.size:
                missing = missing[np.argsort(first[missing], kind="stable")]  # in order of first vertex
                ids[missing] = self._add_nodes(t, [keys[i] for i in missing], colors[first[missing], t - 1])
            elif not grow:
                n_unseen += missing.size
            bounds = np.cumsum([0, *(f.size for f in firsts)])
            for (members, inverse), lo in zip(groups, bounds[:-1], strict=True):
                colors[members, t] = ids[lo + inverse]
        return colors, sizes, int(n_unseen)

    def _fit(self, graphs: Sequence[nx.Graph]) -> tuple[np.ndarray, np.ndarray]:
        """Build the tree; return the colours of the graphs' vertices and the graphs' sizes."""
        self._check_params()
        graphs = self._as_list(graphs)
        flags = {"label" in data for g in graphs for *_, data in g.edges(data=True)}
        if self.use_edge_labels is None:
            if flags == {True, False}:
                raise ValueError(
                    "some edges carry a 'label' and others do not; pass use_edge_labels=False "
                    "to ignore edge labels"
                )
            self.use_edge_labels_ = flags == {True}
        else:
            self.use_edge_labels_ = bool(self.use_edge_labels)
        self._edge_ids: dict[Hashable, int] = {}
        self._parent, self._layer, self._keys = [-1], [0], [None]
        self._tables: list[dict] = [{} for _ in range(self.depth)]
        colors, sizes, _ = self._color([self._prepare(g, grow=True) for g in graphs], grow=True)
        self.parent_ = np.asarray(self._parent, dtype=np.int64)
        self.layer_ = np.asarray(self._layer, dtype=np.int64)
        self.n_nodes_ = int(self.parent_.size)
        self.weights_ = np.ones(self.n_nodes_)
        return colors, sizes

    def fit(self, graphs: Sequence[nx.Graph]) -> WLLabelingTree:
        """Build the tree from ``graphs`` (node attribute ``label``; labels of the task are not used)."""
        self._fit(graphs)
        return self

    # ------------------------------------------------------------------ graphs -> measures
    def vertex_colors(self, graph: nx.Graph) -> np.ndarray:
        """WILT node of every vertex at layers 1..D: int array ``(n_vertices, depth)``, -1 where unseen.

        Rows follow ``graph.nodes`` order.  Never raises for unseen colours.
        """
        self._check_fitted()
        colors, _, _ = self._color([self._prepare(_as_networkx(graph), grow=False)], grow=False)
        return colors

    def transform(self, graphs: Sequence[nx.Graph]) -> sp.csr_matrix:
        """The measures mu_G on the tree as a sparse matrix ``(n_graphs, n_nodes_)`` (paper Eq. 3).

        ``mu_G(v)`` is the number of vertices of G whose colour at layer(v) is v; the root holds
        the number of vertices.  Divided by the number of vertices under ``normalization='size'``.
        """
        return self._transform(graphs, "graphs")

    def _transform(self, graphs: Sequence[nx.Graph], name: str) -> sp.csr_matrix:
        self._check_fitted()
        graphs = self._as_list(graphs, name)
        colors, sizes, n_unseen = self._color([self._prepare(g, grow=False) for g in graphs], grow=False)
        if n_unseen and self.handle_unseen == "error":
            bad = np.count_nonzero(np.logical_or.reduceat((colors < 0).any(axis=1), np.cumsum(sizes) - sizes))
            raise ValueError(
                f"{n_unseen} WL colours in {bad} of {len(graphs)} graphs were not seen by fit; "
                "fit the tree on all graphs (it uses no targets) or pass "
                "handle_unseen='ignore' to drop their mass (approximate distances)"
            )
        return self._measures(colors, sizes)

    def _measures(self, colors: np.ndarray, sizes: np.ndarray) -> sp.csr_matrix:
        """Colour counts per graph (and the vertex count at the root), scaled by ``normalization``."""
        graph_of = np.broadcast_to(np.repeat(np.arange(sizes.size), sizes)[:, None], colors.shape)
        seen = colors >= 0
        M = sp.csr_matrix(
            (np.concatenate([sizes, np.ones(np.count_nonzero(seen), dtype=np.int64)]).astype(float),
             (np.concatenate([np.arange(sizes.size), graph_of[seen]]),
              np.concatenate([np.zeros(sizes.size, dtype=np.int64), colors[seen]]))),
            shape=(sizes.size, self.n_nodes_),
        )
        M.sum_duplicates()
        if self.normalization == "size":
            M.data *= np.repeat(1.0 / sizes, np.diff(M.indptr))
        return M

    def fit_transform(self, graphs: Sequence[nx.Graph]) -> sp.csr_matrix:
        """``fit(graphs).transform(graphs)``, refining the graphs once."""
        colors, sizes = self._fit(graphs)
        return self._measures(colors, sizes)

    # ------------------------------------------------------------------ weights and distances
    def set_weights(self, weights: Literal["ones", "wwl", "wloa"] | np.ndarray) -> WLLabelingTree:
        """Set the edge weights: an array ``(n_nodes_,)`` of non-negative numbers, or a named choice.

        ``'wwl'``: 1/(2D) on every edge -- with ``normalization='size'`` the distance equals the
        Wasserstein-WL distance with normalised Hamming ground cost (paper Thm. 4.3).  ``'wloa'``:
        D/2 at the root and 1/2 elsewhere -- with ``normalization='dummy'`` it equals the distance
        induced by the WL optimal-assignment kernel (paper Thm. 4.4).  ``'ones'``: all ones.
        """
        self._check_fitted()
        if isinstance(weights, str):
            check_choice(weights, "weights", ("ones", "wwl", "wloa"))
            if weights == "ones":
                w = np.ones(self.n_nodes_)
            elif weights == "wwl":
                if self.normalization != "size":
                    raise ValueError("'wwl' weights reproduce WWL only with normalization='size'")
                w = np.full(self.n_nodes_, 1.0 / (2 * self.depth))
            else:
                if self.normalization != "dummy":
                    raise ValueError("'wloa' weights reproduce WLOA only with normalization='dummy'")
                w = np.full(self.n_nodes_, 0.5)
                w[0] = self.depth / 2
        else:
            w = check_array(weights, "weights", dtype=float, shape=(self.n_nodes_,), copy=True)
            if np.any(w < 0):
                raise ValueError(f"weights must be non-negative, got min {w.min():g}")
        self.weights_ = w
        return self

    def _as_measures(self, X: Any, name: str) -> sp.csr_matrix:
        if sp.issparse(X) or isinstance(X, np.ndarray):
            if X.ndim not in (1, 2) or X.shape[0] == 0:
                raise ValueError(f"{name} must be one measure (n_nodes_,) or rows (n_graphs, n_nodes_) with at "
                                 f"least one row, got shape {X.shape}")
            if not sp.issparse(X):
                X = check_array(X, name, dtype=float)
            M = sp.csr_matrix(X, dtype=float)
            if M.shape[1] != self.n_nodes_:
                raise ValueError(f"{name} must have {self.n_nodes_} columns (one per WILT node), got shape {M.shape}")
            check_array(M.data, name)
            if np.any(M.data < 0):
                raise ValueError(f"{name} must be non-negative, got min {M.data.min():g}")
            return M
        return self._transform(X, name)

    def distance(self, mu_a: Any, mu_b: Any) -> np.ndarray:
        """Row-wise d_WILT: ``|mu_a[i] - mu_b[i]| @ weights_`` (paper Eq. 4), for sparse or dense rows."""
        self._check_fitted()
        a = self._as_measures(mu_a, "mu_a")
        b = self._as_measures(mu_b, "mu_b")
        if a.shape != b.shape:
            raise ValueError(f"mu_a and mu_b must have the same shape, got {a.shape} and {b.shape}")
        return np.asarray(abs(a - b) @ self.weights_).ravel()

    def pairwise(self, X: Any, Y: Any = None) -> np.ndarray:
        """All distances between the graphs (or measure rows) ``X`` and ``Y`` (default ``X``).

        Computed with the shared ``tree_wasserstein_pairwise``: the mass sitting at each WILT node
        is its count minus its children's counts, and its subtree masses are the measures mu.
        Dense in (n_nodes_, n_graphs); for very large sets use ``distance`` on chosen pairs.
        """
        self._check_fitted()
        child_to_parent = sp.csr_matrix(
            (np.ones(self.n_nodes_ - 1), (np.arange(1, self.n_nodes_), self.parent_[1:])),
            shape=(self.n_nodes_, self.n_nodes_),
        )

        def node_masses(M: sp.csr_matrix) -> np.ndarray:
            return np.maximum((M - M @ child_to_parent).toarray(), 0.0).T

        A = node_masses(self._as_measures(X, "X"))
        B = None if Y is None else node_masses(self._as_measures(Y, "Y"))
        return tree_wasserstein_pairwise(A, self.parent_, self.weights_, B)

    # ------------------------------------------------------------------ interpretation
    def _check_node(self, node: int) -> int:
        self._check_fitted()
        return check_scalar(node, "node (a WILT node id; 0 is the root)", "int", min=1, max=self.n_nodes_ - 1)

    def initial_label(self, node: int) -> Hashable:
        """The vertex label of a colour (the label of its layer-1 ancestor)."""
        node = self._check_node(node)
        while self.layer_[node] > 1:
            node = int(self.parent_[node])
        return self._key(node)

    def unfolding_tree(self, node: int) -> nx.DiGraph:
        """The unfolding tree that colour ``node`` stands for (depth layer(node) - 1), rooted at 0.

        Tree vertices carry ``label`` (the vertex label) and ``color`` (the WILT node at that depth);
        edges carry ``label`` when edge labels are used.
        """
        node = self._check_node(node)
        tree = nx.DiGraph()
        stack: list[tuple[int, int | None, int]] = [(node, None, 0)]
        while stack:
            color, parent, edge = stack.pop()
            idx = tree.number_of_nodes()
            tree.add_node(idx, label=self.initial_label(color), color=color)
            if parent is not None:
                attrs = {"label": self._edge_label_of(edge)} if self.use_edge_labels_ else {}
                tree.add_edge(parent, idx, **attrs)
            if self.layer_[color] >= 2:
                stack.extend((nbr, idx, e) for nbr, e in reversed(self._key(color)[1]))
        return tree

    def _edge_label_of(self, edge_id: int) -> Hashable:
        return next(label for label, i in self._edge_ids.items() if i == edge_id)

    def occurrences(self, node: int, graph: nx.Graph) -> set:
        """Vertices of ``graph`` covered by colour ``node``: those within layer(node) - 1 hops of a
        vertex that carries it (the subgraph its unfolding tree describes)."""
        node = self._check_node(node)
        graph = _as_networkx(graph)
        colors = self.vertex_colors(graph)
        names = list(graph.nodes)
        hops = int(self.layer_[node]) - 1
        found: set = set()
        for i in np.flatnonzero(colors[:, self.layer_[node] - 1] == node):
            found.update(nx.single_source_shortest_path_length(graph, names[i], cutoff=hops))
        return found

    def top_colors(self, mu: Any, k: int = 5, min_frequency: float = 0.01) -> np.ndarray:
        """The ``k`` non-root WILT nodes of largest weight among those present in at least
        ``min_frequency`` of the graphs of ``mu`` (the paper's interpretation step)."""
        M = self._as_measures(mu, "mu")
        k = check_scalar(k, "k", "int", min=0)
        min_frequency = check_scalar(min_frequency, "min_frequency", "real", min=0.0, max=1.0)
        present = np.asarray((M > 0).sum(axis=0)).ravel() / M.shape[0]
        candidates = np.flatnonzero(present >= min_frequency)
        candidates = candidates[candidates != 0]
        order = np.lexsort((candidates, -self.weights_[candidates]))
        return candidates[order][:k]


def distill(
    tree: WLLabelingTree,
    mu: Any,
    target_dist: np.ndarray,
    *,
    l1: float = 0.0,
    lr: float = 0.01,
    batch_size: int = 256,
    epochs: int = 10,
    pairs: np.ndarray | None = None,
    fill_unseen: float | None = 0.0,
    seed: Seed = 0,
) -> np.ndarray:
    """Learn WILT edge weights so that d_WILT fits ``target_dist`` (paper Algorithm 1; needs torch).

    Minimises ``mean (d_WILT(i, j) - target_dist[i, j])^2 + l1 * sum_v |w_v|`` over mini-batches
    of the graph pairs (all unordered pairs of rows of ``mu`` unless ``pairs`` (P, 2) is given)
    with Adam, starting from w = 1 and projecting onto w >= 0 after every step.  Returns the
    weights (``tree.set_weights(w)`` uses them).

    ``fill_unseen`` (a choice of this implementation, not the paper's): the weight given to WILT
    nodes on which all graphs of the training pairs agree (e.g. colours that occur only in other
    graphs) -- no gradient reaches them, so the data say nothing about them.  ``None`` keeps the
    initial 1, as the official code does.
    """
    import torch

    if not isinstance(tree, WLLabelingTree):
        raise TypeError(f"tree must be a fitted WLLabelingTree, got {type(tree).__name__}")
    tree._check_fitted()
    M = tree._as_measures(mu, "mu")
    n = M.shape[0]
    target = check_array(target_dist, "target_dist", dtype=float)
    if target.shape != (n, n):
        raise ValueError(f"target_dist must be a square ({n}, {n}) matrix matching mu's rows, got shape {target.shape}")
    if np.any(target < 0):
        raise ValueError(f"target_dist must be non-negative, got min {target.min():g}")
    l1 = check_scalar(l1, "l1", "real", min=0.0)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    if fill_unseen is not None:
        fill_unseen = check_scalar(fill_unseen, "fill_unseen", "real", min=0.0)
    if pairs is None:
        pairs = np.column_stack(np.triu_indices(n, 1))
    pairs = check_array(pairs, "pairs", dtype=None, shape=(None, 2), min_len=1)
    if not np.issubdtype(pairs.dtype, np.integer):
        raise TypeError(f"pairs must be an integer array of shape (P, 2), got dtype {pairs.dtype}")
    if pairs.min() < 0 or pairs.max() >= n:
        raise ValueError(f"pairs must index rows of mu, i.e. lie in [0, {n}), got [{pairs.min()}, {pairs.max()}]")

    used = np.unique(pairs)
    sub = M[used]
    active = np.flatnonzero(
        np.asarray(sub.max(axis=0).toarray()).ravel() != np.asarray(sub.min(axis=0).toarray()).ravel()
    )
    weights = np.ones(tree.n_nodes_) if fill_unseen is None else np.full(tree.n_nodes_, fill_unseen)
    if active.size == 0:
        return weights
    X = M[:, active].tocsr()
    y = torch.tensor(target[pairs[:, 0], pairs[:, 1]], dtype=torch.float32)
    w = torch.ones(active.size, dtype=torch.float32, requires_grad=True)
    optimizer = torch.optim.Adam([w], lr=lr)
    generator = torch_generator(seed)
    chunk = batch_size * 64  # |mu_i - mu_j| is built for 64 mini-batches at a time (sparse, one row per pair)
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=generator).numpy()
        for c0 in range(0, len(order), chunk):
            ids = order[c0 : c0 + chunk]
            diff = abs(X[pairs[ids, 0]] - X[pairs[ids, 1]]).tocsr()
            cols = torch.from_numpy(diff.indices.astype(np.int64))
            vals = torch.from_numpy(diff.data.astype(np.float32))
            for s in range(0, ids.size, batch_size):
                e = min(s + batch_size, ids.size)
                a, b = diff.indptr[s], diff.indptr[e]
                rows = torch.from_numpy(np.repeat(np.arange(e - s), np.diff(diff.indptr[s : e + 1])))
                pred = torch.zeros(e - s, dtype=torch.float32).index_add(0, rows, vals[a:b] * w[cols[a:b]])
                loss = torch.mean((pred - y[ids[s:e]]) ** 2) + l1 * w.abs().sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                with torch.no_grad():
                    w.clamp_(min=0.0)
    weights[active] = w.detach().numpy().astype(float)
    return weights


def rmse_without_outliers(x: np.ndarray, y: np.ndarray, outlier_frac: float = 0.01) -> tuple[float, float]:
    """Scale-free fit of distances ``y`` (e.g. d_MPNN) by ``x`` (e.g. d_WILT), as in the official code.

    Both are divided by their maxima, ``c = sum(xy) / sum(x^2)`` is fitted, the ``outlier_frac``
    pairs with the largest ``|y - c x|`` are dropped, both are renormalised on the kept pairs and
    ``c`` refitted.  Returns ``(rmse, c)`` with ``rmse = sqrt(mean (y - c x)^2)``; lower is better.
    """
    x = check_array(x, "x", ndim=1, dtype=float, min_len=2)
    y = check_array(y, "y", ndim=1, dtype=float, min_len=2)
    check_consistent_length(x, y, names=("x", "y"))
    if np.any(x < 0) or np.any(y < 0):
        raise ValueError(f"x and y must be non-negative distances, got min {min(x.min(), y.min()):g}")
    outlier_frac = check_scalar(outlier_frac, "outlier_frac", "real", min=0.0, max=1.0, inclusive="left")
    if x.max() == 0 or y.max() == 0:
        raise ValueError("x and y must not be all zero (their maxima are used for normalisation), got all zeros")
    x, y = x / x.max(), y / y.max()
    c = np.sum(x * y) / np.sum(x**2)
    n_drop = int(x.size * outlier_frac)
    keep = np.argsort(np.abs(y - c * x), kind="stable")[: x.size - n_drop]
    x, y = x[keep], y[keep]
    if x.max() == 0 or y.max() == 0:
        raise ValueError("all remaining distances are zero after dropping outliers")
    x, y = x / x.max(), y / y.max()
    c = np.sum(x * y) / np.sum(x**2)
    return float(np.sqrt(np.mean((y - c * x) ** 2))), float(c)


__all__ = ["WLLabelingTree", "distill", "rmse_without_outliers"]
