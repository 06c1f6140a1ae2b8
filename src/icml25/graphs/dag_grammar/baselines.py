"""The sequence baselines of DIGGED: D-VAE node strings and the count of topological orders.

A node string lists the vertices of a DAG in a topological order; each token is the vertex label
and the bit vector of edges from the vertices before it (D-VAE's format).  A DAG has as many node
strings as topological orders, which is the ambiguity the grammar removes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import networkx as nx

from icml25.graphs.dag_grammar.grammar import graph_hash, is_isomorphic
from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_callable, check_choice, check_instance, check_scalar, check_sequence

Order = Literal["default", "bfs", "random"]


def topological_order(graph: nx.DiGraph, order: Order = "default",
                      seed: Seed = None) -> list:
    """A topological order of ``graph``'s vertices.

    ``'default'``: the smallest vertex (in the graph's own vertex order) among the ready ones;
    ``'bfs'``: Kahn's algorithm with a first-in first-out queue (breadth-first layers);
    ``'random'``: a uniformly random ready vertex at each step (``seed``).
    """
    check_choice(order, "order", ("default", "bfs", "random"))
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    if not nx.is_directed_acyclic_graph(graph):
        raise ValueError("graph must be a networkx.DiGraph without cycles, got a graph with a cycle")
    rank = {v: i for i, v in enumerate(graph.nodes)}
    if order == "default":
        return list(nx.lexicographical_topological_sort(graph, key=rank.__getitem__))
    rng = as_generator(seed)
    indegree = {v: graph.in_degree(v) for v in graph}
    ready = [v for v in graph if indegree[v] == 0]
    out = []
    while ready:
        v = ready.pop(int(rng.integers(len(ready)))) if order == "random" else ready.pop(0)
        out.append(v)
        for w in sorted(graph.successors(v), key=rank.__getitem__):
            indegree[w] -= 1
            if indegree[w] == 0:
                ready.append(w)
    return out


def node_string(graph: nx.DiGraph, order: Order = "default", seed: Seed = None,
                *, node_label: str = "label") -> list[tuple]:
    """D-VAE node string: ``[(label, (e_0, ..., e_{j-1})), ...]`` along a topological order.

    ``e_i = 1`` when the ``i``-th vertex of the order has an edge to the ``j``-th.
    """
    vertices = topological_order(graph, order, seed)
    tokens = []
    for j, v in enumerate(vertices):
        bits = tuple(int(graph.has_edge(u, v)) for u in vertices[:j])
        tokens.append((graph.nodes[v][node_label], bits))
    return tokens


def graph_from_node_string(tokens: Sequence[tuple]) -> nx.DiGraph:
    """The DAG of a node string (vertices ``0..n-1`` in string order, edges without labels)."""
    tokens = check_sequence(tokens, "tokens", min_len=1)
    graph = nx.DiGraph()
    for j, token in enumerate(tokens):
        if not isinstance(token, (tuple, list)) or len(token) != 2 or not isinstance(token[1], (tuple, list)):
            raise TypeError(f"tokens[{j}] must be a (label, edge bits) pair, got {token!r}")
        label, bits = token
        if len(bits) != j:
            raise ValueError(f"token {j} must have {j} edge bits, got {len(bits)}")
        graph.add_node(j, label=label)
        graph.add_edges_from((i, j) for i, b in enumerate(bits) if b)
    return graph


def count_topological_orders(graph: nx.DiGraph, *, max_vertices: int = 25) -> int:
    """Exact number of topological orders (= distinct node strings up to relabelling), by DP over down-sets.

    ``dp[S]`` counts the orders of the down-set ``S``; only down-sets are visited, so chains and
    sparse DAGs are fast.  Raises ``ValueError`` above ``max_vertices`` vertices.
    """
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    max_vertices = check_scalar(max_vertices, "max_vertices", "int", min=1)
    if not nx.is_directed_acyclic_graph(graph):
        raise ValueError("graph must be a networkx.DiGraph without cycles")
    n = graph.number_of_nodes()
    if n > max_vertices:
        raise ValueError(f"counting orders of {n} > max_vertices={max_vertices} vertices is too expensive")
    index = {v: i for i, v in enumerate(graph.nodes)}
    need = [sum(1 << index[u] for u in graph.predecessors(v)) for v in graph.nodes]
    layer = {0: 1}
    for _ in range(n):
        nxt: dict[int, int] = {}
        for mask, ways in layer.items():
            for i in range(n):
                if not mask >> i & 1 and need[i] & mask == need[i]:
                    nxt[mask | 1 << i] = nxt.get(mask | 1 << i, 0) + ways
        layer = nxt
    return layer.get((1 << n) - 1, 1)


def generation_metrics(generated: Sequence[nx.DiGraph | None], training: Sequence[nx.DiGraph],
                       is_valid=None) -> dict[str, float]:
    """Validity, novelty and uniqueness of generated graphs (the usual DAG-generation metrics).

    ``generated`` holds a graph per sample, ``None`` for a sample that failed to derive.  Valid:
    derived and, when given, ``is_valid(graph)``.  Novel: a valid graph not isomorphic to any
    training graph (fraction of valid ones).  Unique: distinct isomorphism classes among the
    valid graphs divided by their number.
    """
    generated = check_sequence(generated, "generated", min_len=1, item=lambda g, name: g if g is None else
                               check_instance(g, name, nx.DiGraph, "a networkx.DiGraph or None"))
    training = check_sequence(training, "training", min_len=1,
                              item=lambda g, name: check_instance(g, name, nx.DiGraph, "a networkx.DiGraph"))
    if is_valid is not None:
        check_callable(is_valid, "is_valid")
    valid = [g for g in generated if g is not None and (is_valid is None or is_valid(g))]
    buckets: dict[str, list[nx.DiGraph]] = {}
    for g in training:
        buckets.setdefault(graph_hash(g), []).append(g)
    novel = sum(not any(is_isomorphic(g, h) for h in buckets.get(graph_hash(g), ())) for g in valid)
    distinct: dict[str, list[nx.DiGraph]] = {}
    for g in valid:
        same = distinct.setdefault(graph_hash(g), [])
        if not any(is_isomorphic(g, h) for h in same):
            same.append(g)
    n_unique = sum(len(v) for v in distinct.values())
    return {
        "validity": len(valid) / len(generated),
        "novelty": novel / len(valid) if valid else 0.0,
        "uniqueness": n_unique / len(valid) if valid else 0.0,
    }


