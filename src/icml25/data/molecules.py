"""Seeded molecule-like graphs with planted motifs, social-like graphs, and a TU-format reader.

The real graph benchmarks (Mutagenicity, ENZYMES, ...) cannot be bundled or downloaded here, so
``make_molecule_like`` draws labelled graphs over the atoms C, N, O, S, H, Cl with valence-like
degree caps and plants known motifs at known positions; the prediction target depends only on
the motifs, which makes "which subgraph does a model look at?" checkable against ground truth.
Graphs are ``networkx.Graph`` objects with the node attribute ``label``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import networkx as nx
import numpy as np

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import check_choice, check_scalar, check_sequence

ATOMS = ("C", "N", "O", "S", "H", "Cl")
VALENCE = {"C": 4, "N": 3, "O": 2, "S": 2, "H": 1, "Cl": 1}
_BACKGROUND_P = np.array([0.60, 0.10, 0.12, 0.05, 0.08, 0.05])
MOTIFS = ("nitro", "chloro_ring", "disulfide")
MOTIF_SIZES = {"nitro": 3, "chloro_ring": 7, "disulfide": 3}
_REGRESSION_COEF = np.array([1.0, 0.5, -0.75])


def motif_present(graph: nx.Graph, motif: str) -> bool:
    """Whether ``graph`` contains ``motif``.

    ``nitro``: an N bonded to at least two O; ``chloro_ring``: a Cl bonded to a C that lies on a
    6-cycle of C atoms; ``disulfide``: an S bonded to an S.
    """
    check_choice(motif, "motif", MOTIFS)
    label = nx.get_node_attributes(graph, "label")
    if motif == "nitro":
        return any(label[u] == "N" and sum(label[x] == "O" for x in graph[u]) >= 2 for u in graph)
    if motif == "disulfide":
        return any(label[u] == "S" and label[x] == "S" for u, x in graph.edges)
    anchors = {x for u in graph if label[u] == "Cl" for x in graph[u] if label[x] == "C"}
    if not anchors:
        return False
    carbon = graph.subgraph([u for u in graph if label[u] == "C"])
    return any(len(cycle) == 6 and anchors.intersection(cycle) for cycle in nx.simple_cycles(carbon, length_bound=6))


def _check_range(pair: tuple[int, int], name: str, least: int) -> tuple[int, int]:
    """A ``(lo, hi)`` pair of integers with ``least <= lo <= hi``."""
    items = check_sequence(pair, name, item=lambda v, n: check_scalar(v, n, "int"))
    if len(items) != 2 or not least <= items[0] <= items[1]:
        raise ValueError(f"{name} must be a pair (lo, hi) of integers with {least} <= lo <= hi, got {pair!r}")
    return items[0], items[1]


def _free(graph: nx.Graph, u: int) -> bool:
    return graph.degree(u) < VALENCE[graph.nodes[u]["label"]]


def _attach_point(graph: nx.Graph, rng: np.random.Generator, carbon_only: bool = False) -> int | None:
    options = [u for u in graph if _free(graph, u) and (graph.nodes[u]["label"] == "C" or not carbon_only)]
    if not options:
        return None
    return int(options[rng.integers(len(options))])


def _background(n: int, ring_prob: float, rng: np.random.Generator) -> nx.Graph:
    """A random molecule-like graph with ``n`` vertices (fewer if every valence is used up)."""
    graph = nx.Graph()
    if n >= 6 and rng.random() < ring_prob:
        nx.add_cycle(graph, range(6))
        nx.set_node_attributes(graph, "C", "label")
    else:
        graph.add_node(0, label="C")
    while graph.number_of_nodes() < n:
        atom = ATOMS[rng.choice(len(ATOMS), p=_BACKGROUND_P)]
        anchor = _attach_point(graph, rng)
        if anchor is None:
            break
        new = graph.number_of_nodes()
        graph.add_node(new, label=atom)
        graph.add_edge(anchor, new)
    if rng.random() < 0.3:
        heavy = [u for u in graph if VALENCE[graph.nodes[u]["label"]] > 1 and _free(graph, u)]
        pairs = [(u, x) for i, u in enumerate(heavy) for x in heavy[i + 1 :]]
        lengths = dict(nx.all_pairs_shortest_path_length(graph, cutoff=3))
        far = [(u, x) for u, x in pairs if x not in lengths[u]]
        if far:
            u, x = far[rng.integers(len(far))]
            graph.add_edge(u, x)
    return graph


def _plant(graph: nx.Graph, motif: str, rng: np.random.Generator) -> tuple[int, ...] | None:
    """Attach one copy of ``motif`` to a free carbon of ``graph``; return its vertices."""
    anchor = _attach_point(graph, rng, carbon_only=True)
    if anchor is None:
        return None
    start = graph.number_of_nodes()
    if motif == "nitro":
        labels, edges = ["N", "O", "O"], [(0, 1), (0, 2)]
    elif motif == "disulfide":
        labels, edges = ["S", "S", "C"], [(0, 1), (1, 2)]
    else:
        labels = ["C"] * 6 + ["Cl"]
        edges = [(i, (i + 1) % 6) for i in range(6)] + [(3, 6)]
    for i, atom in enumerate(labels):
        graph.add_node(start + i, label=atom)
    graph.add_edges_from((start + a, start + b) for a, b in edges)
    graph.add_edge(anchor, start)
    return tuple(range(start, start + len(labels)))


def make_molecule_like(
    n_graphs: int,
    task: Literal["binary", "multiclass", "regression"] = "binary",
    motif: str = "nitro",
    *,
    n_vertices: tuple[int, int] = (10, 30),
    ring_prob: float = 0.5,
    noise: float = 0.1,
    seed: Seed = 0,
) -> tuple[list[nx.Graph], np.ndarray, dict[str, Any]]:
    """Seeded molecule-like graphs whose target is decided by planted motifs.

    Tasks: ``binary`` -- half of the graphs carry one ``motif`` (label 1), the others carry none
    of the three motifs; ``multiclass`` -- every graph carries exactly one motif and its label is
    the motif's index in ``MOTIFS``; ``regression`` -- every graph carries 0-2 copies of each motif
    and the target is ``counts @ (1.0, 0.5, -0.75) + noise * N(0, 1)``.  Backgrounds are random
    trees over the atoms (degree capped by ``VALENCE``), optionally grown from a 6-ring of C, with
    one extra ring closure 30% of the time; backgrounds that contain a motif by chance are redrawn.

    Returns ``(graphs, y, info)``; ``info`` holds ``motif_nodes`` (per graph, a list of
    ``(motif, vertices)``), ``motif_counts`` (n_graphs x 3) and ``motifs``.
    """
    n_graphs = check_scalar(n_graphs, "n_graphs", "int", min=1)
    check_choice(task, "task", ("binary", "multiclass", "regression"))
    check_choice(motif, "motif", MOTIFS)
    lo, hi = _check_range(n_vertices, "n_vertices", 10)
    ring_prob = check_scalar(ring_prob, "ring_prob", "real", min=0.0, max=1.0)
    noise = check_scalar(noise, "noise", "real", min=0.0)
    rng = as_generator(seed)
    graphs: list[nx.Graph] = []
    counts = np.zeros((n_graphs, len(MOTIFS)), dtype=int)
    planted_all: list[list[tuple[str, tuple[int, ...]]]] = []
    for g in range(n_graphs):
        if task == "binary":
            wanted = [motif] if g % 2 == 1 else []
        elif task == "multiclass":
            wanted = [MOTIFS[g % len(MOTIFS)]]
        else:
            wanted = [m for m in MOTIFS for _ in range(int(rng.integers(3)))]
        while True:
            n = int(rng.integers(lo, hi + 1))
            graph = _background(max(n - sum(MOTIF_SIZES[m] for m in wanted), 3), ring_prob, rng)
            if any(motif_present(graph, m) for m in MOTIFS):
                continue
            planted = [(m, _plant(graph, m, rng)) for m in wanted]
            if all(nodes is not None for _, nodes in planted) and all(
                motif_present(graph, m) == (m in wanted) for m in MOTIFS
            ):
                break
        graphs.append(graph)
        planted_all.append(planted)
        for m, _ in planted:
            counts[g, MOTIFS.index(m)] += 1
    order = rng.permutation(n_graphs)
    graphs = [graphs[i] for i in order]
    counts = counts[order]
    planted_all = [planted_all[i] for i in order]
    if task == "binary":
        y = counts[:, MOTIFS.index(motif)].astype(int)
    elif task == "multiclass":
        y = counts.argmax(axis=1)
    else:
        y = counts @ _REGRESSION_COEF + noise * rng.standard_normal(n_graphs)
    info = {"motif_nodes": planted_all, "motif_counts": counts, "motifs": MOTIFS}
    return graphs, y, info


def make_social_like(
    n_graphs: int, *, n_vertices: tuple[int, int] = (20, 40), seed: Seed = 0
) -> tuple[list[nx.Graph], np.ndarray]:
    """Unlabelled social-like graphs: Barabasi-Albert (m=2, class 0) vs Watts-Strogatz (k=4, p=0.1, class 1).

    Every vertex carries the constant label 0, as in the IMDB/COLLAB benchmarks.
    """
    n_graphs = check_scalar(n_graphs, "n_graphs", "int", min=1)
    lo, hi = _check_range(n_vertices, "n_vertices", 5)
    rng = as_generator(seed)
    graphs, y = [], np.arange(n_graphs) % 2
    for label in y:
        n = int(rng.integers(lo, hi + 1))
        sub_seed = int(rng.integers(2**31))
        if label == 0:
            graph = nx.barabasi_albert_graph(n, 2, seed=sub_seed)
        else:
            graph = nx.watts_strogatz_graph(n, 4, 0.1, seed=sub_seed)
        nx.set_node_attributes(graph, 0, "label")
        graphs.append(graph)
    return graphs, y


def _read_column(path: Path) -> np.ndarray:
    try:
        return np.loadtxt(path, dtype=np.int64, delimiter=",", ndmin=1)
    except ValueError as exc:
        raise ValueError(f"{path.name}: expected one integer per line ({exc})") from None


def load_tu_directory(path: str | Path, name: str | None = None) -> tuple[list[nx.Graph], np.ndarray]:
    """Read a dataset in the TU format from a local folder (never downloads).

    Files ``<name>_A.txt`` (edges ``i, j``, 1-based global vertex ids), ``<name>_graph_indicator.txt``
    and ``<name>_graph_labels.txt`` are required; ``<name>_node_labels.txt`` and
    ``<name>_edge_labels.txt`` are used when present.  ``name`` defaults to the single ``*_A.txt``
    prefix in the folder.  Returns ``(graphs, y)`` with node (and edge) attribute ``label``.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a directory")
    if name is None:
        prefixes = sorted(p.name[: -len("_A.txt")] for p in folder.glob("*_A.txt"))
        if len(prefixes) != 1:
            raise ValueError(f"expected exactly one *_A.txt file in {folder}, found {prefixes}; pass name=")
        name = prefixes[0]
    files = {part: folder / f"{name}_{part}.txt" for part in ("A", "graph_indicator", "graph_labels")}
    for file in files.values():
        if not file.is_file():
            raise FileNotFoundError(f"missing TU file {file}")
    indicator = _read_column(files["graph_indicator"])
    y = _read_column(files["graph_labels"])
    try:
        edges = np.loadtxt(files["A"], dtype=np.int64, delimiter=",", ndmin=2)
    except ValueError as exc:
        raise ValueError(f"{files['A'].name}: expected lines 'i, j' ({exc})") from None
    n_vertices = indicator.size
    if edges.size and (edges.shape[1] != 2 or edges.min() < 1 or edges.max() > n_vertices):
        raise ValueError(f"{files['A'].name}: edges must be pairs of vertex ids in 1..{n_vertices}")
    if indicator.min() < 1 or indicator.max() != y.size:
        raise ValueError(f"graph indicator must take values 1..{y.size} (one per graph label)")
    node_file = folder / f"{name}_node_labels.txt"
    node_labels = _read_column(node_file) if node_file.is_file() else np.zeros(n_vertices, dtype=int)
    if node_labels.size != n_vertices:
        raise ValueError(f"{node_file.name} has {node_labels.size} lines, expected {n_vertices}")
    edge_file = folder / f"{name}_edge_labels.txt"
    edge_labels = _read_column(edge_file) if edge_file.is_file() else None
    if edge_labels is not None and edge_labels.size != len(edges):
        raise ValueError(f"{edge_file.name} has {edge_labels.size} lines, expected {len(edges)}")
    graphs = [nx.Graph() for _ in range(y.size)]
    for v, (g, lab) in enumerate(zip(indicator - 1, node_labels, strict=True)):
        graphs[g].add_node(v, label=int(lab))
    for k, (i, j) in enumerate(edges - 1):
        if indicator[i] != indicator[j]:
            raise ValueError(f"edge {k + 1} joins vertices of different graphs")
        attrs = {} if edge_labels is None else {"label": int(edge_labels[k])}
        graphs[indicator[i] - 1].add_edge(int(i), int(j), **attrs)
    return graphs, y


__all__ = [
    "ATOMS",
    "MOTIFS",
    "VALENCE",
    "load_tu_directory",
    "make_molecule_like",
    "make_social_like",
    "motif_present",
]
