"""Synthetic DAG data sets of the DIGGED reproduction: ENAS-like architectures and Asia-like Bayesian networks.

The real benchmarks (D-VAE's ENAS and Bayesian-network sets) are download-only, so both are
generated here from seeds, after the D-VAE search spaces, with synthetic target properties.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_array, check_bool, check_instance, check_scalar, check_sequence

ENAS_OPS = ("conv3", "sep3", "conv5", "sep5", "avg3", "max3")
ENAS_OP_VALUE = {"conv3": 0.06, "sep3": 0.05, "conv5": 0.08, "sep5": 0.07, "avg3": 0.01, "max3": 0.02}
BN_NODES = ("A", "S", "T", "L", "B", "E", "X", "D")
# The Asia network (Lauritzen & Spiegelhalter 1988): visit to Asia, smoking, tuberculosis, lung
# cancer, bronchitis, either, X-ray, dyspnoea.
ASIA_EDGES = (("A", "T"), ("S", "L"), ("S", "B"), ("T", "E"), ("L", "E"), ("E", "X"), ("E", "D"), ("B", "D"))
# P(node = 1 | parents), parents in the order of ASIA_EDGES, keyed by the parents' values.
ASIA_CPT = {
    "A": {(): 0.01},
    "S": {(): 0.5},
    "T": {(0,): 0.01, (1,): 0.05},
    "L": {(0,): 0.01, (1,): 0.1},
    "B": {(0,): 0.3, (1,): 0.6},
    "E": {(0, 0): 0.0, (0, 1): 1.0, (1, 0): 1.0, (1, 1): 1.0},
    "X": {(0,): 0.05, (1,): 0.98},
    "D": {(0, 0): 0.1, (0, 1): 0.8, (1, 0): 0.7, (1, 1): 0.9},
}


def make_enas_like(n: int, seed: Seed = 0, *, n_hidden: int = 6,
                   p_skip: float = 0.3) -> list[nx.DiGraph]:
    """``n`` ENAS-like cells: input, ``n_hidden`` op vertices, output (D-VAE's ENAS space).

    Hidden vertex ``i`` always has an edge from vertex ``i-1`` and one from each earlier vertex
    (the input included) with probability ``p_skip``; hidden vertices without successors feed
    the output.  Vertex ``label`` is ``'input'``, ``'output'`` or one of :data:`ENAS_OPS`.
    """
    n = check_scalar(n, "n", "int", min=1)
    n_hidden = check_scalar(n_hidden, "n_hidden", "int", min=1)
    p_skip = check_scalar(p_skip, "p_skip", "real", min=0.0, max=1.0)
    rng = as_generator(seed)
    graphs = []
    for _ in range(n):
        g = nx.DiGraph()
        g.add_node(0, label="input")
        for i in range(1, n_hidden + 1):
            g.add_node(i, label=ENAS_OPS[int(rng.integers(len(ENAS_OPS)))])
            g.add_edge(i - 1, i)
            for j in range(i - 1):
                if rng.random() < p_skip:
                    g.add_edge(j, i)
        out = n_hidden + 1
        g.add_node(out, label="output")
        for i in range(1, n_hidden + 1):
            if g.out_degree(i) == 0:
                g.add_edge(i, out)
        graphs.append(g)
    return graphs


def is_valid_enas(graph: nx.DiGraph) -> bool:
    """D-VAE's validity of a cell: acyclic, one ``input`` (the only source), one ``output`` (the only sink)."""
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    if graph.number_of_nodes() < 2 or not nx.is_directed_acyclic_graph(graph):
        return False
    labels = [graph.nodes[v].get("label") for v in graph]
    if labels.count("input") != 1 or labels.count("output") != 1:
        return False
    sources = [v for v in graph if graph.in_degree(v) == 0]
    sinks = [v for v in graph if graph.out_degree(v) == 0]
    return (len(sources) == 1 and graph.nodes[sources[0]]["label"] == "input"
            and len(sinks) == 1 and graph.nodes[sinks[0]]["label"] == "output")


def enas_feasible(graph: nx.DiGraph, nonterminal: int | None = None) -> bool:
    """Whether a partial derivation can still end as a valid cell (a mask for :meth:`DagGrammar.sample`).

    Complete graphs (``nonterminal`` is ``None``) must pass :func:`is_valid_enas`.  Otherwise at
    most one ``input`` and one ``output`` vertex, and every vertex not adjacent to the
    nonterminal (its edges are final) needs a predecessor unless it is the input and a
    successor unless it is the output.  This mirrors the paper's interactive validity mask.
    """
    if nonterminal is None:
        return is_valid_enas(graph)
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    if nonterminal not in graph:
        raise ValueError(f"nonterminal must be a vertex of graph or None, got {nonterminal!r}")
    labels = [graph.nodes[v]["label"] for v in graph if v != nonterminal]
    if labels.count("input") > 1 or labels.count("output") > 1:
        return False
    open_ = set(graph.pred[nonterminal]) | set(graph.succ[nonterminal]) | {nonterminal}
    for v in graph:
        if v in open_:
            continue
        label = graph.nodes[v]["label"]
        if (label != "input" and graph.in_degree(v) == 0) or (label != "output" and graph.out_degree(v) == 0):
            return False
    return True


def enas_property(graphs: Sequence[nx.DiGraph], seed: Seed = 0,
                  noise: float = 0.01) -> np.ndarray:
    """Synthetic accuracy: sum of op values + 0.05 skips - 0.02 (longest path - 4)^2 + N(0, noise^2).

    Skip edges are the edges beyond a spanning path (``|E| - (|V| - 1)``); the longest path is
    counted in edges.
    """
    noise = check_scalar(noise, "noise", "real", min=0.0)
    graphs = _check_graphs(graphs)
    rng = as_generator(seed)
    values = []
    for g in graphs:
        ops = sum(ENAS_OP_VALUE.get(g.nodes[v]["label"], 0.0) for v in g)
        skips = g.number_of_edges() - (g.number_of_nodes() - 1)
        longest = nx.dag_longest_path_length(g)
        values.append(ops + 0.05 * skips - 0.02 * (longest - 4) ** 2)
    return np.asarray(values) + noise * rng.standard_normal(len(values))


def _check_graphs(graphs: object) -> list[nx.DiGraph]:
    return check_sequence(graphs, "graphs", min_len=1,
                          item=lambda g, name: check_instance(g, name, nx.DiGraph, "a networkx.DiGraph"))


def make_bn_like(n: int, seed: Seed = 0, *, p_edge: float = 0.3,
                 connected: bool = True) -> list[nx.DiGraph]:
    """``n`` random DAGs on the eight Asia variables (labels :data:`BN_NODES`).

    A G(8, ``p_edge``) graph is oriented along a random permutation; with ``connected`` graphs
    that are not weakly connected are drawn again.
    """
    n = check_scalar(n, "n", "int", min=1)
    p_edge = check_scalar(p_edge, "p_edge", "real", min=0.0, max=1.0, inclusive="right")
    connected = check_bool(connected, "connected")
    rng = as_generator(seed)
    graphs = []
    while len(graphs) < n:
        order = rng.permutation(len(BN_NODES))
        g = nx.DiGraph()
        g.add_nodes_from((i, {"label": name}) for i, name in enumerate(BN_NODES))
        for a in range(len(order)):
            for b in range(a + 1, len(order)):
                if rng.random() < p_edge:
                    g.add_edge(int(order[a]), int(order[b]))
        if connected and not nx.is_weakly_connected(g):
            continue
        graphs.append(g)
    return graphs


def sample_asia(n_rows: int = 1000, seed: Seed = 0) -> np.ndarray:
    """``n_rows`` binary samples of the Asia network by ancestral sampling; columns follow :data:`BN_NODES`."""
    n_rows = check_scalar(n_rows, "n_rows", "int", min=1)
    rng = as_generator(seed)
    parents = {v: [a for a, b in ASIA_EDGES if b == v] for v in BN_NODES}
    order = list(nx.topological_sort(nx.DiGraph(ASIA_EDGES)))
    data = np.zeros((n_rows, len(BN_NODES)), dtype=np.int64)
    col = {v: i for i, v in enumerate(BN_NODES)}
    for v in order:
        pa = parents[v]
        p = np.array([ASIA_CPT[v][tuple(int(data[r, col[u]]) for u in pa)] for r in range(n_rows)])
        data[:, col[v]] = rng.random(n_rows) < p
    return data


def bic_score(graph: nx.DiGraph, data: np.ndarray) -> float:
    """BIC of a DAG over the binary Asia variables: log-likelihood - (log N / 2) x #parameters.

    Vertices are matched to the columns of ``data`` by their label (:data:`BN_NODES`).
    """
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    data = check_array(data, "data", shape=(None, len(BN_NODES)), min_len=1)
    col = {v: i for i, v in enumerate(BN_NODES)}
    n_rows = data.shape[0]
    score = 0.0
    for v in graph:
        label = graph.nodes[v]["label"]
        if label not in col:
            raise ValueError(f"vertex label {label!r} is not an Asia variable {BN_NODES}")
        pa = [col[graph.nodes[u]["label"]] for u in graph.predecessors(v)]
        config = data[:, pa] @ (1 << np.arange(len(pa))) if pa else np.zeros(n_rows, dtype=np.int64)
        counts = np.zeros((1 << len(pa), 2))
        np.add.at(counts, (config, data[:, col[label]]), 1)
        totals = counts.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(counts > 0, counts * np.log(counts / totals), 0.0)
        score += float(terms.sum()) - 0.5 * np.log(n_rows) * (1 << len(pa))
    return score


def bn_property(graphs: Sequence[nx.DiGraph], data: np.ndarray) -> np.ndarray:
    """BIC per graph divided by the number of rows (the BN benchmark's target)."""
    graphs = _check_graphs(graphs)
    data = check_array(data, "data", shape=(None, len(BN_NODES)), min_len=1)
    return np.array([bic_score(g, data) / data.shape[0] for g in graphs])
