"""Attributed graphs for node classification: a NumPy ``GraphData``, the CSBM generator, bundled Cora, helpers.

``GraphData`` follows PyTorch Geometric's ``Data`` layout (``x``, ``edge_index``, ``y``, boolean
``train_mask`` / ``val_mask`` / ``test_mask``) with NumPy arrays, so it needs neither PyG nor torch;
:func:`from_pyg` converts any object with those attributes.  Edges are stored undirected: both
directions, deduplicated, without self loops.

Example
-------
>>> from icml25.data.graphs import make_csbm, dirichlet_node_split, induced_subgraph
>>> g = make_csbm(300, n_classes=3, n_features=16, avg_degree=6, homophily=0.8, seed=0)
>>> parts = dirichlet_node_split(g.y, n_clients=3, alpha=0.5, seed=0)
>>> sub = induced_subgraph(g, parts[0])
>>> sub.num_nodes == len(parts[0]), g.x.shape
(True, (300, 16))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources

import numpy as np

from icml25.data.partition import dirichlet_partition
from icml25.utils.random import as_generator

__all__ = [
    "GraphData", "to_undirected", "from_pyg", "make_csbm", "load_cora", "induced_subgraph",
    "dirichlet_node_split", "random_node_masks", "knn_graph", "edge_homophily",
]


def to_undirected(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Both directions of every edge, deduplicated and sorted, self loops removed (int64 [2, E])."""
    edge_index = np.asarray(edge_index)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {edge_index.shape}")
    if edge_index.size and (edge_index.dtype.kind not in "iu" or edge_index.min() < 0
                            or edge_index.max() >= num_nodes):
        raise ValueError(f"edge_index must hold integer node ids in [0, {num_nodes}), "
                         f"got dtype {edge_index.dtype} and range [{edge_index.min()}, {edge_index.max()}]")
    src, dst = edge_index.astype(np.int64)
    keep = src != dst
    both = np.concatenate([np.stack([src[keep], dst[keep]]), np.stack([dst[keep], src[keep]])], axis=1)
    codes = np.unique(both[0] * num_nodes + both[1])
    return np.stack([codes // num_nodes, codes % num_nodes]).astype(np.int64)


@dataclass(frozen=True)
class GraphData:
    """A node-classification graph (PyG ``Data`` layout, NumPy arrays).

    ``x`` float32 [n, F]; ``edge_index`` int64 [2, E] undirected (both directions, no self loops);
    ``y`` int64 [n] in ``[0, n_classes)``; optional boolean masks [n].  Construction validates
    shapes, NaN features and labels, and symmetrizes / deduplicates the edges.
    """

    x: np.ndarray
    edge_index: np.ndarray
    y: np.ndarray
    n_classes: int
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None

    def __post_init__(self) -> None:
        x = np.asarray(self.x, dtype=np.float32)
        if x.ndim != 2:
            raise ValueError(f"x must be a 2-D array [n_nodes, n_features], got shape {x.shape}")
        if not np.isfinite(x).all():
            raise ValueError("x contains NaN or Inf features")
        y = np.asarray(self.y)
        if y.shape != (x.shape[0],) or y.dtype.kind not in "iu":
            raise ValueError(f"y must be integer labels of shape ({x.shape[0]},), got {y.dtype} {y.shape}")
        if isinstance(self.n_classes, bool) or not isinstance(self.n_classes, (int, np.integer)) \
                or self.n_classes < 1:
            raise ValueError(f"n_classes must be a positive int, got {self.n_classes!r}")
        if y.size and (y.min() < 0 or y.max() >= self.n_classes):
            raise ValueError(f"labels must lie in [0, {self.n_classes}), got range [{y.min()}, {y.max()}]")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y.astype(np.int64))
        object.__setattr__(self, "n_classes", int(self.n_classes))
        object.__setattr__(self, "edge_index", to_undirected(self.edge_index, x.shape[0]))
        for name in ("train_mask", "val_mask", "test_mask"):
            mask = getattr(self, name)
            if mask is not None:
                mask = np.asarray(mask)
                if mask.shape != (x.shape[0],) or mask.dtype != bool:
                    raise ValueError(f"{name} must be a boolean array of shape ({x.shape[0]},), "
                                     f"got {mask.dtype} {mask.shape}")
                object.__setattr__(self, name, mask)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    @property
    def num_edges(self) -> int:
        """Undirected edges (each counted once)."""
        return int(self.edge_index.shape[1] // 2)


def _numpy(value: object) -> np.ndarray | None:
    if value is None:
        return None
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def from_pyg(data: object, n_classes: int | None = None) -> GraphData:
    """A :class:`GraphData` from any object with PyG ``Data`` attributes (``x``, ``edge_index``, ``y``, masks)."""
    for name in ("x", "edge_index", "y"):
        if getattr(data, name, None) is None:
            raise ValueError(f"the graph has no {name!r} attribute; PyG-style Data(x, edge_index, y) is expected")
    y = _numpy(data.y).astype(np.int64)
    return GraphData(_numpy(data.x), _numpy(data.edge_index), y,
                     int(n_classes if n_classes is not None else y.max() + 1),
                     *(_numpy(getattr(data, m, None)) for m in ("train_mask", "val_mask", "test_mask")))


def _sample_pairs(rng: np.random.Generator, rows: np.ndarray, cols: np.ndarray, p: float,
                  same: bool) -> np.ndarray:
    """Each pair (rows x cols, unordered when ``same``) independently with probability ``p`` (approximately:
    a binomial count of pairs drawn with replacement, then deduplicated by :func:`to_undirected`)."""
    n_pairs = rows.size * (rows.size - 1) // 2 if same else rows.size * cols.size
    m = rng.binomial(n_pairs, min(p, 1.0)) if n_pairs else 0
    return np.stack([rng.choice(rows, m), rng.choice(cols, m)])


def make_csbm(n_nodes: int, n_classes: int, n_features: int, avg_degree: float = 8.0, homophily: float = 0.8,
              class_sep: float = 1.5, seed: int | np.random.Generator | None = 0) -> GraphData:
    """Contextual stochastic block model (Deshpande et al. 2018): Gaussian features, SBM edges.

    Labels are uniform over ``n_classes``; class means ``mu_c ~ N(0, class_sep^2 / (2 n_features) I)`` and
    ``x_i = mu_{y_i} + N(0, I)``, so two class means lie ``class_sep`` noise standard deviations apart on
    average.  Edge probabilities ``p_in`` (same class) and ``p_out`` give an expected degree ``avg_degree``
    and an expected edge homophily ``homophily``
    (the fraction of edges joining nodes of the same class).
    """
    for name, value in (("n_nodes", n_nodes), ("n_classes", n_classes), ("n_features", n_features)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if n_classes < 2 or n_nodes < 2 * n_classes:
        raise ValueError(f"need n_classes >= 2 and n_nodes >= 2 * n_classes, got {n_classes} and {n_nodes}")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"homophily must be in [0, 1], got {homophily}")
    if not 0.0 < avg_degree < n_nodes - 1:
        raise ValueError(f"avg_degree must be in (0, n_nodes - 1), got {avg_degree}")
    if not class_sep >= 0:
        raise ValueError(f"class_sep must be >= 0, got {class_sep}")
    rng = as_generator(seed)
    y = rng.integers(0, n_classes, n_nodes)
    means = rng.normal(0.0, class_sep / np.sqrt(2 * n_features), (n_classes, n_features))
    x = (means[y] + rng.normal(0.0, 1.0, (n_nodes, n_features))).astype(np.float32)
    n_same = sum(int(np.sum(y == c)) ** 2 for c in range(n_classes)) / n_nodes   # expected same-class partners
    p_in = homophily * avg_degree / max(n_same - 1, 1)
    p_out = (1 - homophily) * avg_degree / max(n_nodes - n_same, 1)
    blocks = [np.flatnonzero(y == c) for c in range(n_classes)]
    edges = [_sample_pairs(rng, blocks[a], blocks[b], p_in if a == b else p_out, a == b)
             for a in range(n_classes) for b in range(a, n_classes)]
    return GraphData(x, np.concatenate(edges, axis=1), y, n_classes)


def load_cora() -> GraphData:
    """The Cora citation graph bundled with the package (2708 nodes, 1433 binary features, 7 classes,
    5278 undirected edges) with its Planetoid split as masks (Yang, Cohen and Salakhutdinov 2016;
    see ``icml25/data/files/README.md`` for the citation)."""
    with resources.files("icml25.data").joinpath("files/cora_planetoid.npz").open("rb") as fh, \
            np.load(fh, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    n, f = (int(v) for v in arrays["x_shape"])
    x = np.zeros((n, f), dtype=np.float32)
    rows = np.repeat(np.arange(n), np.diff(arrays["x_indptr"]))
    x[rows, arrays["x_indices"]] = arrays["x_data"]
    masks = []
    for key in ("train_idx", "val_idx", "test_idx"):
        mask = np.zeros(n, dtype=bool)
        mask[arrays[key]] = True
        masks.append(mask)
    return GraphData(x, arrays["edge_index"], arrays["y"], int(arrays["y"].max() + 1), *masks)


def induced_subgraph(graph: GraphData, nodes: np.ndarray) -> GraphData:
    """The subgraph on ``nodes`` (relabelled 0..len(nodes)-1 in the given order), keeping edges inside it."""
    nodes = np.asarray(nodes)
    if nodes.ndim != 1 or nodes.dtype.kind not in "iu":
        raise ValueError(f"nodes must be a 1-D integer array, got {nodes.dtype} {nodes.shape}")
    if nodes.size and (nodes.min() < 0 or nodes.max() >= graph.num_nodes):
        raise ValueError(f"nodes must be ids in [0, {graph.num_nodes})")
    if np.unique(nodes).size != nodes.size:
        raise ValueError("nodes contains duplicates")
    new_id = np.full(graph.num_nodes, -1, dtype=np.int64)
    new_id[nodes] = np.arange(nodes.size)
    src, dst = new_id[graph.edge_index]
    keep = (src >= 0) & (dst >= 0)
    masks = [None if m is None else m[nodes] for m in (graph.train_mask, graph.val_mask, graph.test_mask)]
    return GraphData(graph.x[nodes], np.stack([src[keep], dst[keep]]), graph.y[nodes], graph.n_classes, *masks)


def dirichlet_node_split(labels: np.ndarray, n_clients: int, alpha: float, min_nodes: int = 5,
                         max_tries: int = 10000, seed: int | np.random.Generator | None = 0) -> list[np.ndarray]:
    """Label-skewed node split over clients (Dirichlet(alpha) per class, as in OpenFGL / GHOST's code).

    Retries until every client holds at least ``min_nodes`` nodes; raises a ValueError naming ``alpha``
    after ``max_tries`` draws.  Returns one sorted array of node ids per client.
    """
    try:
        return dirichlet_partition(labels, n_clients, alpha, seed=seed, min_size=min_nodes, max_tries=max_tries)
    except ValueError as exc:
        if "draws" not in str(exc):
            raise
        raise ValueError(f"Dirichlet node split impossible at alpha={alpha} with min_nodes={min_nodes} for "
                         f"{n_clients} clients after {max_tries} tries; raise alpha or lower min_nodes") from exc


def random_node_masks(graph: GraphData, fractions: tuple[float, float, float] = (0.2, 0.4, 0.4),
                      seed: int | np.random.Generator | None = 0) -> GraphData:
    """A copy of ``graph`` with random train/val/test masks in the given fractions (GHOST: 20/40/40)."""
    if len(fractions) != 3 or min(fractions) < 0 or not np.isclose(sum(fractions), 1.0):
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    rng = as_generator(seed)
    order = rng.permutation(graph.num_nodes)
    n_train = int(round(fractions[0] * graph.num_nodes))
    n_val = int(round(fractions[1] * graph.num_nodes))
    masks = [np.zeros(graph.num_nodes, dtype=bool) for _ in range(3)]
    for mask, part in zip(masks, np.split(order, [n_train, n_train + n_val]), strict=True):
        mask[part] = True
    return replace(graph, train_mask=masks[0], val_mask=masks[1], test_mask=masks[2])


def knn_graph(x: np.ndarray, k: int = 5) -> np.ndarray:
    """Cosine k-nearest-neighbour graph (GHOST's proxy structure): each row keeps its top ``k`` similarities
    (itself included), then the graph is symmetrized.  Returns an undirected ``edge_index`` without self loops;
    ``k`` is clamped to ``n_nodes``."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-D, got shape {x.shape}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    n = x.shape[0]
    if n <= 1:
        return np.zeros((2, 0), dtype=np.int64)
    k = min(int(k), n)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    sim = unit @ unit.T
    np.fill_diagonal(sim, np.inf)
    top = np.argpartition(-sim, k - 1, axis=1)[:, :k]
    return to_undirected(np.stack([np.repeat(np.arange(n), k), top.ravel()]), n)


def edge_homophily(graph: GraphData) -> float:
    """Fraction of edges whose endpoints share a label (nan for a graph without edges)."""
    if graph.edge_index.shape[1] == 0:
        return float("nan")
    return float(np.mean(graph.y[graph.edge_index[0]] == graph.y[graph.edge_index[1]]))
