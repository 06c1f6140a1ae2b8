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
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_probability_vector, check_scalar

__all__ = [
    "GraphData", "to_undirected", "from_pyg", "make_csbm", "load_cora", "induced_subgraph",
    "dirichlet_node_split", "random_node_masks", "knn_graph", "edge_homophily",
]


def to_undirected(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Both directions of every edge, deduplicated and sorted, self loops removed (int64 [2, E])."""
    edge_index = check_array(edge_index, "edge_index", shape=(2, None), dtype=None)
    num_nodes = check_scalar(num_nodes, "num_nodes", "int", min=0)
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
        x = check_array(self.x, "x", ndim=2, dtype=np.float32)
        y = check_array(self.y, "y", shape=(x.shape[0],), dtype=None)
        if y.dtype.kind not in "iu":
            raise TypeError(f"y must be integer labels, got dtype {y.dtype}")
        n_classes = check_scalar(self.n_classes, "n_classes", "int", min=1)
        if y.size and (y.min() < 0 or y.max() >= n_classes):
            raise ValueError(f"y must hold labels in [0, {n_classes}), got range [{y.min()}, {y.max()}]")
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", y.astype(np.int64))
        object.__setattr__(self, "n_classes", n_classes)
        object.__setattr__(self, "edge_index", to_undirected(self.edge_index, x.shape[0]))
        for name in ("train_mask", "val_mask", "test_mask"):
            mask = getattr(self, name)
            if mask is not None:
                mask = check_array(mask, name, shape=(x.shape[0],), dtype=None)
                if mask.dtype != bool:
                    raise TypeError(f"{name} must be a boolean array, got dtype {mask.dtype}")
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
              class_sep: float = 1.5, seed: Seed = 0) -> GraphData:
    """Contextual stochastic block model (Deshpande et al. 2018): Gaussian features, SBM edges.

    Labels are uniform over ``n_classes``; class means ``mu_c ~ N(0, class_sep^2 / (2 n_features) I)`` and
    ``x_i = mu_{y_i} + N(0, I)``, so two class means lie ``class_sep`` noise standard deviations apart on
    average.  Edge probabilities ``p_in`` (same class) and ``p_out`` give an expected degree ``avg_degree``
    and an expected edge homophily ``homophily``
    (the fraction of edges joining nodes of the same class).
    """
    n_classes = check_scalar(n_classes, "n_classes", "int", min=2)
    n_nodes = check_scalar(n_nodes, "n_nodes", "int", min=2 * n_classes)
    n_features = check_scalar(n_features, "n_features", "int", min=1)
    homophily = check_scalar(homophily, "homophily", "real", min=0.0, max=1.0)
    avg_degree = check_scalar(avg_degree, "avg_degree", "real", min=0.0, max=n_nodes - 1, inclusive="neither")
    class_sep = check_scalar(class_sep, "class_sep", "real", min=0.0)
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
    nodes = check_array(nodes, "nodes", ndim=1, dtype=None)
    if nodes.dtype.kind not in "iu":
        raise TypeError(f"nodes must be an array of integer node ids, got dtype {nodes.dtype}")
    if nodes.size and (nodes.min() < 0 or nodes.max() >= graph.num_nodes):
        raise ValueError(f"nodes must be ids in [0, {graph.num_nodes}), got range [{nodes.min()}, {nodes.max()}]")
    if np.unique(nodes).size != nodes.size:
        raise ValueError(f"nodes must be distinct ids, got {nodes.size - np.unique(nodes).size} duplicates")
    new_id = np.full(graph.num_nodes, -1, dtype=np.int64)
    new_id[nodes] = np.arange(nodes.size)
    src, dst = new_id[graph.edge_index]
    keep = (src >= 0) & (dst >= 0)
    masks = [None if m is None else m[nodes] for m in (graph.train_mask, graph.val_mask, graph.test_mask)]
    return GraphData(graph.x[nodes], np.stack([src[keep], dst[keep]]), graph.y[nodes], graph.n_classes, *masks)


def dirichlet_node_split(labels: np.ndarray, n_clients: int, alpha: float, min_nodes: int = 5,
                         max_tries: int = 10000, seed: Seed = 0) -> list[np.ndarray]:
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
                      seed: Seed = 0) -> GraphData:
    """A copy of ``graph`` with random train/val/test masks in the given fractions (GHOST: 20/40/40)."""
    fractions = check_array(fractions, "fractions", shape=(3,), dtype=float)
    check_probability_vector(fractions, "fractions", atol=1e-6)
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
    x = check_array(x, "x", ndim=2, dtype=np.float64)
    k = check_scalar(k, "k", "int", min=1)
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
