"""edNCE rules, the linear DAG grammar, derivation and derivation search (DIGGED, Sec. 3.1-3.3).

A graph is a ``networkx.DiGraph`` whose vertices carry a ``label`` attribute and whose edges carry
a ``label`` attribute (``None`` when the data has a single edge type).  Labels written ``<...>``
are reserved for the grammar: the start symbol ``<S>``, the working nonterminal ``<N>``, the
wildcard ``<*>`` and the port labels ``<0>, <1>, ...`` of the edges that join the nonterminal to
its neighbours.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from networkx.algorithms.isomorphism import DiGraphMatcher

from icml25.utils.random import Seed, as_generator
from icml25.utils.validation import (
    check_bool,
    check_callable,
    check_choice,
    check_instance,
    check_scalar,
    check_sequence,
)

START = "<S>"
NONTERMINAL = "<N>"
ANY = "<*>"
IN, OUT = "in", "out"
NONTERMINALS = (START, NONTERMINAL)
Feasible = Callable[[nx.DiGraph, "int | None"], bool]


def port_label(k: int) -> str:
    """The ``k``-th port label (``k`` an integer >= 0), the edge label that joins a nonterminal to a neighbour."""
    return f"<{check_scalar(k, 'k', 'int', min=0)}>"


def is_reserved(label: object) -> bool:
    """Whether ``label`` is a grammar label (a string written ``<...>``)."""
    return isinstance(label, str) and len(label) >= 2 and label[0] == "<" and label[-1] == ">"


class GrammarError(ValueError):
    """Base class of the grammar's errors."""


class NotInLanguageError(GrammarError):
    """The grammar cannot derive the graph."""


class AmbiguousError(GrammarError):
    """The graph has more than one derivation; ``count`` is how many were found."""

    def __init__(self, message: str, count: int):
        super().__init__(message)
        self.count = count


class InvalidSequenceError(GrammarError):
    """A rule sequence is not a derivation; ``position`` is the index of the failing step."""

    def __init__(self, message: str, position: int):
        super().__init__(message)
        self.position = position


# --------------------------------------------------------------------------------------------
# Input graphs
# --------------------------------------------------------------------------------------------


def as_labeled_dag(
    graph: nx.DiGraph,
    *,
    index: int | None = None,
    node_label: str = "label",
    edge_label: str = "label",
    allow_disconnected: bool = False,
) -> nx.DiGraph:
    """A validated copy of ``graph`` with vertices ``0..n-1`` and ``label`` attributes.

    Raises ``TypeError`` for an undirected or multi-graph, ``ValueError`` for an empty graph, a
    cycle, a missing or reserved label, or (unless ``allow_disconnected``) a weakly disconnected
    graph.  ``index`` names the graph in the messages.
    """
    if index is not None:
        index = check_scalar(index, "index", "int", min=0)
    check_bool(allow_disconnected, "allow_disconnected")
    where = "graph" if index is None else f"graph {index}"
    if isinstance(graph, (nx.MultiGraph, nx.MultiDiGraph)):
        raise TypeError(f"{where} is a multigraph; the grammar takes a networkx.DiGraph")
    if not isinstance(graph, nx.DiGraph):
        if isinstance(graph, nx.Graph):
            raise TypeError(f"{where} is undirected; the grammar is for directed acyclic graphs (networkx.DiGraph)")
        raise TypeError(f"{where} must be a networkx.DiGraph, got {type(graph).__name__}")
    if graph.number_of_nodes() == 0:
        raise ValueError(f"{where} has no vertices")
    if not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        raise ValueError(f"{where} has a cycle {cycle}; the grammar is for directed acyclic graphs")
    position = {v: i for i, v in enumerate(graph.nodes)}
    out = nx.DiGraph()
    for v, i in position.items():
        data = graph.nodes[v]
        if node_label not in data:
            raise ValueError(f"{where}: vertex {v!r} has no {node_label!r} attribute (every vertex needs a label)")
        label = data[node_label]
        _check_label(label, f"{where}: vertex {v!r}")
        out.add_node(i, label=label)
    for u, v, data in graph.edges(data=True):
        label = data.get(edge_label)
        _check_label(label, f"{where}: edge {u!r}->{v!r}")
        out.add_edge(position[u], position[v], label=label)
    if not allow_disconnected and not nx.is_weakly_connected(out):
        raise ValueError(f"{where} is not weakly connected; pass allow_disconnected=True to accept it")
    return out


def _check_label(label: object, where: str) -> None:
    if not isinstance(label, Hashable):
        raise TypeError(f"{where}: labels must be hashable, got {type(label).__name__}")
    if is_reserved(label):
        raise ValueError(f"{where}: label {label!r} is reserved for the grammar (labels written <...>)")


def label_match(a: dict, b: dict) -> bool:
    """Node/edge matcher for ``networkx`` isomorphism: equal ``label`` attributes."""
    return a.get("label") == b.get("label")


def is_isomorphic(g: nx.DiGraph, h: nx.DiGraph) -> bool:
    """Labelled isomorphism (vertex and edge labels must match)."""
    check_instance(g, "g", nx.Graph, "a networkx graph")
    check_instance(h, "h", nx.Graph, "a networkx graph")
    return nx.is_isomorphic(g, h, node_match=label_match, edge_match=label_match)


def graph_hash(graph: nx.DiGraph) -> str:
    """Weisfeiler-Lehman hash of a labelled digraph (equal for isomorphic graphs; a bucket key)."""
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    tagged = nx.DiGraph()
    tagged.add_nodes_from((v, {"t": repr(d.get("label"))}) for v, d in graph.nodes(data=True))
    tagged.add_edges_from((u, v, {"t": repr(d.get("label"))}) for u, v, d in graph.edges(data=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # networkx 3.5 notes that directed hashes changed
        return nx.weisfeiler_lehman_graph_hash(tagged, node_attr="t", edge_attr="t", iterations=3)


# --------------------------------------------------------------------------------------------
# Canonical forms
# --------------------------------------------------------------------------------------------


def canonical_form(graph: nx.DiGraph, nodes: Iterable | None = None, *, max_orderings: int = 5040) -> tuple:
    """A canonical key of the labelled subgraph induced by ``nodes`` and the vertex order behind it.

    Colour refinement (1-WL on labels and directed, labelled edges) orders the vertices; ties
    are broken by trying every ordering inside the tied cells and keeping the smallest edge
    list.  Returns ``(key, order)``: isomorphic labelled graphs get equal keys, and ``order[i]``
    is the vertex placed at position ``i``.  When the tied cells allow more than
    ``max_orderings`` orderings, one fixed ordering is used: the key still identifies the
    graph exactly, but isomorphic graphs may then get different keys.
    """
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    check_scalar(max_orderings, "max_orderings", "int", min=1)
    if nodes is None:
        nodes = list(graph.nodes)
    else:
        nodes = check_sequence(nodes, "nodes")
        missing = [v for v in nodes if v not in graph]
        if missing:
            raise ValueError(f"nodes must be vertices of graph, got {missing[:3]!r} not in it")
    inside = set(nodes)
    name = {v: repr(graph.nodes[v].get("label")) for v in nodes}
    preds = {v: [(u, repr(d.get("label"))) for u, _, d in graph.in_edges(v, data=True) if u in inside] for v in nodes}
    succs = {v: [(w, repr(d.get("label"))) for _, w, d in graph.out_edges(v, data=True) if w in inside] for v in nodes}
    color = _ranks({v: name[v] for v in nodes})
    while True:
        signature = {
            v: (
                color[v],
                tuple(sorted((color[u], e) for u, e in preds[v])),
                tuple(sorted((color[w], e) for w, e in succs[v])),
            )
            for v in nodes
        }
        refined = _ranks(signature)
        if len(set(refined.values())) == len(set(color.values())):
            break
        color = refined
    cells: dict[int, list] = {}
    for v in sorted(nodes, key=lambda v: (color[v], repr(v))):
        cells.setdefault(color[v], []).append(v)
    groups = [cells[c] for c in sorted(cells)]
    if math.prod(math.factorial(len(g)) for g in groups) > max_orderings:
        choices = [[tuple(g)] for g in groups]
    else:
        choices = [list(itertools.permutations(g)) for g in groups]
    best = None
    for parts in itertools.product(*choices):
        order = tuple(v for part in parts for v in part)
        pos = {v: i for i, v in enumerate(order)}
        edges = tuple(sorted((pos[u], pos[w], e) for u in order for w, e in succs[u]))
        if best is None or edges < best[0]:
            best = (edges, order)
    edges, order = best
    return (tuple(name[v] for v in order), edges), order


def _ranks(signature: dict) -> dict:
    values = sorted(set(signature.values()))
    rank = {s: i for i, s in enumerate(values)}
    return {v: rank[s] for v, s in signature.items()}


# --------------------------------------------------------------------------------------------
# edNCE rules
# --------------------------------------------------------------------------------------------


def _check_vertex(graph: object, node: object) -> None:
    check_instance(graph, "graph", nx.DiGraph, "a networkx.DiGraph")
    if node not in graph:
        raise ValueError(f"node must be a vertex of graph, got {node!r}")


class _NotCoveredError(Exception):
    """A neighbour of the rewritten vertex has no matching connection instruction."""


@dataclass(eq=False)
class EdNCERule:
    """A production ``lhs -> (rhs, embedding)`` of a linear edNCE grammar (paper Sec. 3.1).

    ``rhs`` is a labelled DAG on vertices ``0..k-1`` with at most one nonterminal vertex (label
    ``<N>``) and at least one terminal vertex.  ``embedding`` is the connection relation: a tuple
    ``(mu, p, q, i, d, d2)`` says "for every neighbour x of the rewritten vertex with label
    ``mu`` (or any label when ``mu`` is ``<*>``), joined to it by an edge labelled ``p`` in
    direction ``d`` (``'in'``: x -> vertex, ``'out'``: vertex -> x), add an edge labelled ``q``
    between x and rhs vertex ``i`` in direction ``d2``".
    """

    lhs: str
    rhs: nx.DiGraph
    embedding: frozenset = frozenset()
    nonterminal: int | None = field(init=False)
    terminal_counts: Counter = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.lhs not in NONTERMINALS:
            raise ValueError(f"lhs must be {START!r} or {NONTERMINAL!r}, got {self.lhs!r}")
        if not isinstance(self.rhs, nx.DiGraph) or isinstance(self.rhs, nx.MultiDiGraph):
            raise TypeError("rhs must be a networkx.DiGraph")
        k = self.rhs.number_of_nodes()
        if sorted(self.rhs.nodes) != list(range(k)):
            raise ValueError(f"rhs vertices must be 0..{k - 1}, got {sorted(self.rhs.nodes, key=repr)}")
        if not nx.is_directed_acyclic_graph(self.rhs):
            raise ValueError("rhs must be acyclic")
        labels = [self.rhs.nodes[i].get("label") for i in range(k)]
        if START in labels:
            raise ValueError(f"rhs may not contain the start symbol {START!r}")
        nts = [i for i, lab in enumerate(labels) if lab == NONTERMINAL]
        if len(nts) > 1:
            raise ValueError(f"a linear grammar allows at most one nonterminal in rhs, got {len(nts)}")
        if len(nts) == k:
            raise ValueError("rhs must contain at least one terminal vertex")
        for u, v, data in self.rhs.edges(data=True):
            if "label" not in data:
                self.rhs.edges[u, v]["label"] = None
        self.nonterminal = nts[0] if nts else None
        self.terminal_counts = Counter(lab for lab in labels if lab != NONTERMINAL)
        if isinstance(self.embedding, (str, bytes)) or not isinstance(self.embedding, Iterable) or not all(
                isinstance(t, (tuple, list)) for t in self.embedding):
            raise TypeError(f"embedding must be a set of 6-tuples (mu, p, q, i, d, d2), got {self.embedding!r}")
        embedding = frozenset(tuple(t) for t in self.embedding)
        index: dict[tuple, list] = {}
        for t in embedding:
            if len(t) != 6:
                raise ValueError(f"embedding instructions are 6-tuples (mu, p, q, i, d, d2), got {t!r}")
            mu, p, q, i, d, d2 = t
            if not isinstance(i, (int, np.integer)) or not 0 <= i < k:
                raise ValueError(f"embedding instruction {t!r}: i must be an rhs vertex in 0..{k - 1}")
            if d not in (IN, OUT) or d2 not in (IN, OUT):
                raise ValueError(f"embedding instruction {t!r}: directions must be 'in' or 'out'")
            index.setdefault((p, d), []).append((mu, q, int(i), d2))
        self.embedding = embedding
        self._index = {key: sorted(v, key=repr) for key, v in index.items()}

    @property
    def n_terminals(self) -> int:
        """Number of terminal vertices the rule adds."""
        return self.rhs.number_of_nodes() - (self.nonterminal is not None)

    def instructions_for(self, mu: object, p: object, d: str) -> list[tuple]:
        """``(q, i, d2)`` for the instructions that fire on a neighbour ``(label mu, edge p, direction d)``."""
        check_choice(d, "d", (IN, OUT))
        return [(q, i, d2) for m, q, i, d2 in self._index.get((p, d), ()) if m in (ANY, mu)]

    def covers(self, graph: nx.DiGraph, node: Hashable) -> bool:
        """Whether every neighbour of ``node`` has at least one matching instruction."""
        _check_vertex(graph, node)
        return all(found for _, found in self._connections(graph, node))

    def apply(self, graph: nx.DiGraph, node: Hashable, *, require_cover: bool = False) -> nx.DiGraph:
        """Rewrite vertex ``node`` (label ``lhs``) of ``graph``; returns a new graph (Sec. 3.1).

        Adds a fresh copy of ``rhs``, the edges the embedding prescribes for each neighbour of
        ``node``, and deletes ``node``.  New vertices get the next free integer ids.  With
        ``require_cover`` a neighbour without a matching instruction raises ``ValueError``.
        """
        _check_vertex(graph, node)
        check_bool(require_cover, "require_cover")
        if graph.nodes[node].get("label") != self.lhs:
            label = graph.nodes[node].get("label")
            raise ValueError(f"vertex {node!r} has label {label!r}, the rule rewrites {self.lhs!r}")
        out = graph.copy()
        try:
            self._rewrite(out, node, require_cover)
        except _NotCoveredError as exc:
            raise ValueError(str(exc)) from None
        return out

    def _connections(self, graph: nx.DiGraph, node: Hashable) -> list[tuple]:
        found = []
        for x in graph.predecessors(node):
            fire = self.instructions_for(graph.nodes[x]["label"], graph.edges[x, node]["label"], IN)
            found.append((x, [(x, *c) for c in fire]))
        for x in graph.successors(node):
            fire = self.instructions_for(graph.nodes[x]["label"], graph.edges[node, x]["label"], OUT)
            found.append((x, [(x, *c) for c in fire]))
        return found

    def _rewrite(self, graph: nx.DiGraph, node: Hashable, require_cover: bool) -> int | None:
        """Apply in place; return the id of the new nonterminal vertex (or ``None``)."""
        additions = []
        for x, found in self._connections(graph, node):
            if require_cover and not found:
                raise _NotCoveredError(f"neighbour {x!r} of the nonterminal has no matching connection instruction")
            additions.extend(found)
        start = 1 + max((v for v in graph.nodes if isinstance(v, (int, np.integer))), default=-1)
        for i in range(self.rhs.number_of_nodes()):
            graph.add_node(start + i, label=self.rhs.nodes[i]["label"])
        for a, b, data in self.rhs.edges(data=True):
            graph.add_edge(start + a, start + b, label=data["label"])
        for x, q, i, d2 in additions:
            a, b = (x, start + i) if d2 == IN else (start + i, x)
            if graph.has_edge(a, b) and graph.edges[a, b]["label"] != q:
                raise ValueError(f"instructions add two edges with different labels between {a!r} and {b!r}")
            graph.add_edge(a, b, label=q)
        graph.remove_node(node)
        return None if self.nonterminal is None else start + self.nonterminal

    def __repr__(self) -> str:
        labels = [self.rhs.nodes[i]["label"] for i in range(self.rhs.number_of_nodes())]
        edges, instructions = self.rhs.number_of_edges(), len(self.embedding)
        return f"EdNCERule({self.lhs} -> {labels}, {edges} edges, {instructions} instructions)"


# --------------------------------------------------------------------------------------------
# The grammar
# --------------------------------------------------------------------------------------------


class Derivations(list):
    """Derivations (lists of rule ids) found by :meth:`DagGrammar.derivations`.

    ``count`` is the number of derivations (exact unless ``timed_out``, when it is a lower
    bound); the list holds at most ``max_count`` of them.
    """

    def __init__(self, sequences: Iterable[list[int]], count: int, timed_out: bool):
        super().__init__(sequences)
        self.count = count
        self.timed_out = timed_out


class DagGrammar:
    """A linear edNCE grammar over labelled DAGs: each derivation is a sequence of rule ids.

    A derivation starts from one ``<S>`` vertex; the first rule has lhs ``<S>`` and every next
    rule rewrites the unique ``<N>`` vertex; it ends when no nonterminal is left.  With
    ``require_cover`` (ours, default) a rule applies only when its embedding has an instruction
    for every neighbour of the nonterminal, so no connection is silently dropped; the same
    condition is the mask of :meth:`allowed_next_rules`.
    """

    def __init__(self, rules: Sequence[EdNCERule], *, require_cover: bool = True):
        rules = check_sequence(rules, "rules", min_len=1)
        for r, rule in enumerate(rules):
            if not isinstance(rule, EdNCERule):
                raise TypeError(f"rules[{r}] must be an EdNCERule, got {type(rule).__name__}")
        self.rules = rules
        self.require_cover = check_bool(require_cover, "require_cover")
        self._by_lhs = {lhs: [r for r, rule in enumerate(rules) if rule.lhs == lhs] for lhs in NONTERMINALS}
        self._keeps_direction = all(t[4] == t[5] for rule in rules for t in rule.embedding)

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        n_start, n_rest = len(self._by_lhs[START]), len(self._by_lhs[NONTERMINAL])
        return f"DagGrammar({len(self.rules)} rules: {n_start} from {START}, {n_rest} from {NONTERMINAL})"

    # -- derivation ---------------------------------------------------------------------------

    def _run(self, seq: Sequence[int], name: str = "seq") -> tuple[nx.DiGraph, int | None]:
        seq = check_sequence(seq, name)
        graph = nx.DiGraph()
        graph.add_node(0, label=START)
        nt: int | None = 0
        for position, rid in enumerate(seq):
            if nt is None:
                raise InvalidSequenceError(f"{name}[{position}]: the graph is already complete", position)
            if isinstance(rid, bool) or not isinstance(rid, (int, np.integer)) or not 0 <= rid < len(self.rules):
                raise InvalidSequenceError(
                    f"{name}[{position}]: rule id {rid!r} is not in 0..{len(self.rules) - 1}", position)
            rule = self.rules[rid]
            current = graph.nodes[nt]["label"]
            if rule.lhs != current:
                raise InvalidSequenceError(
                    f"{name}[{position}]: rule {rid} rewrites {rule.lhs}, the current nonterminal is {current}",
                    position)
            try:
                nt = rule._rewrite(graph, nt, self.require_cover)
            except _NotCoveredError as exc:
                raise InvalidSequenceError(f"{name}[{position}]: rule {rid} does not apply: {exc}", position) from None
        return graph, nt

    def derive(self, seq: Sequence[int]) -> nx.DiGraph:
        """The DAG derived by the rule sequence ``seq`` (vertices renumbered ``0..n-1``).

        Raises :class:`InvalidSequenceError` (with the failing ``position``) for a rule id out
        of range, a rule whose lhs is not the current nonterminal, a rule that does not apply,
        steps after the graph is complete, a sequence that ends with a nonterminal, or a cyclic
        result.
        """
        graph, nt = self._run(seq)
        if nt is not None:
            left = graph.nodes[nt]["label"]
            raise InvalidSequenceError(f"seq ends with the nonterminal {left} left", len(seq))
        if not nx.is_directed_acyclic_graph(graph):
            raise InvalidSequenceError("seq derives a graph with a cycle", max(len(seq) - 1, 0))
        return nx.convert_node_labels_to_integers(graph, ordering="sorted")

    def decode(self, seq: Sequence[int]) -> nx.DiGraph:
        """Alias of :meth:`derive`."""
        return self.derive(seq)

    def is_valid(self, seq: Sequence[int]) -> bool:
        """Whether ``seq`` is a complete derivation of a DAG."""
        try:
            self.derive(seq)
        except InvalidSequenceError:
            return False
        return True

    def _allowed(self, graph: nx.DiGraph, nt: int) -> list[int]:
        candidates = self._by_lhs[graph.nodes[nt]["label"]]
        if not self.require_cover:
            return list(candidates)
        return [r for r in candidates if self.rules[r].covers(graph, nt)]

    def allowed_next_rules(self, prefix: Sequence[int] = (), feasible: Feasible | None = None) -> list[int]:
        """Rule ids that may follow ``prefix`` (the mask for constrained generation).

        A rule is allowed when its lhs is the current nonterminal (``<S>`` for an empty prefix)
        and, with ``require_cover``, its embedding covers every neighbour of that nonterminal.
        ``feasible(graph, nonterminal)`` (optional, a domain check like the paper's interactive
        validity mask) must also accept the graph the rule produces; ``nonterminal`` is the id
        of its nonterminal vertex or ``None`` when the graph is complete.  A complete prefix
        allows nothing; an invalid prefix raises :class:`InvalidSequenceError`.
        """
        if feasible is not None:
            check_callable(feasible, "feasible")
        graph, nt = self._run(prefix, "prefix")
        return [] if nt is None else [rid for rid, _, _ in self._options(graph, nt, feasible)]

    def _options(self, graph: nx.DiGraph, nt: int, feasible: Feasible | None) -> list[tuple]:
        """``(rule id, next graph, next nonterminal)`` for the allowed rules (graphs only with ``feasible``)."""
        out = []
        for rid in self._allowed(graph, nt):
            if feasible is None:
                out.append((rid, None, None))
                continue
            child = graph.copy()
            child_nt = self.rules[rid]._rewrite(child, nt, self.require_cover)
            if feasible(child, child_nt):
                out.append((rid, child, child_nt))
        return out

    def sample(self, n: int, seed: Seed = None, max_len: int = 50,
               feasible: Feasible | None = None) -> list[list[int]]:
        """``n`` random rule sequences: each step picks uniformly among :meth:`allowed_next_rules`.

        A sequence stops when the graph is complete, when no rule is allowed (a dead end) or at
        ``max_len`` steps; the last two are not valid derivations (see :meth:`is_valid`).
        """
        n = check_scalar(n, "n", "int", min=0)
        max_len = check_scalar(max_len, "max_len", "int", min=1)
        if feasible is not None:
            check_callable(feasible, "feasible")
        rng = as_generator(seed)
        out = []
        for _ in range(n):
            graph = nx.DiGraph()
            graph.add_node(0, label=START)
            nt: int | None = 0
            seq: list[int] = []
            while nt is not None and len(seq) < max_len:
                options = self._options(graph, nt, feasible)
                if not options:
                    break
                rid, child, child_nt = options[int(rng.integers(len(options)))]
                if child is None:
                    nt = self.rules[rid]._rewrite(graph, nt, self.require_cover)
                else:
                    graph, nt = child, child_nt
                seq.append(rid)
            out.append(seq)
        return out

    # -- derivation search --------------------------------------------------------------------

    def derivations(self, graph: nx.DiGraph, *, timeout: float = 10.0, max_count: int = 10) -> Derivations:
        """All derivations of ``graph`` (up to ``max_count`` listed; ``.count`` counts them all).

        Derivations that apply the same rules the same number of times, in a different order of
        independent steps, are one derivation, listed in its canonical (lexicographically
        smallest) order; the list is sorted.  Depth-first search from ``<S>`` over the allowed
        rules, memoised on the canonical form of the intermediate graph.  A partial graph is
        pruned when its terminal part cannot be completed to ``graph``: too many vertices of a
        label, or no label-preserving induced embedding into ``graph`` in which finished vertices
        keep their degree.  Stops after ``timeout`` seconds and sets ``timed_out``.
        """
        max_count = check_scalar(max_count, "max_count", "int", min=1)
        timeout = check_scalar(timeout, "timeout", "real", min=0.0, allow_inf=True)
        target = as_labeled_dag(graph, allow_disconnected=True)
        return _Search(self, target, timeout, max_count).run()

    def encode(self, graph: nx.DiGraph, *, timeout: float = 10.0) -> list[int]:
        """The unique derivation of ``graph``, in canonical order (see :meth:`derivations`).

        Found by the grammar's own derivation search (nothing is memorised).  Raises
        :class:`NotInLanguageError` when the grammar cannot derive ``graph`` (including a vertex
        label the grammar does not know, or no derivation found within ``timeout``) and
        :class:`AmbiguousError` when it has several.  A cyclic or undirected graph raises
        ``ValueError`` / ``TypeError``.  When the search times out after finding exactly one
        derivation, that one is returned (others may exist).
        """
        timeout = check_scalar(timeout, "timeout", "real", min=0.0, allow_inf=True)
        target = as_labeled_dag(graph, allow_disconnected=True)
        labels = {lab for rule in self.rules for lab in rule.terminal_counts}
        unknown = {target.nodes[v]["label"] for v in target} - labels
        if unknown:
            raise NotInLanguageError(f"vertex labels {sorted(map(repr, unknown))} do not occur in any rule")
        found = _Search(self, target, timeout, 2).run()
        if found.count == 0:
            extra = f" within the {timeout} s timeout" if found.timed_out else ""
            raise NotInLanguageError(f"the grammar has no derivation of this graph{extra}")
        if found.count > 1:
            raise AmbiguousError(f"the graph has {found.count} derivations", found.count)
        return list(found[0])

    def _canonical_order(self, graph: nx.DiGraph, seq: Sequence[int], timeout: float = math.inf) -> list[int]:
        """The canonical order of the derivation ``seq`` of ``graph`` (the same rules, reordered)."""
        found = _Search(self, as_labeled_dag(graph, allow_disconnected=True), timeout, 1, Counter(seq)).run()
        return list(found[0]) if found else list(seq)

    # -- description length -------------------------------------------------------------------

    def alphabet_sizes(self) -> tuple[int, int, int]:
        """(terminal vertex labels, final edge labels, port labels) used by the rules."""
        terminal = {lab for rule in self.rules for lab in rule.terminal_counts}
        final, ports = set(), set()
        for rule in self.rules:
            for a, b, d in rule.rhs.edges(data=True):
                (ports if rule.nonterminal in (a, b) else final).add(d["label"])
            for _, p, q, i, _, _ in rule.embedding:
                ports.add(p)
                (ports if i == rule.nonterminal else final).add(q)
        return max(len(terminal), 1), max(len(final), 1), max(len(ports), 1)

    def grammar_bits(self) -> float:
        """Bits to write the rules: lhs, rhs vertices and edges, and instructions (MDL, Sec. 3.2)."""
        sizes = self.alphabet_sizes()
        return sum(rule_bits(rule, *sizes) for rule in self.rules)

    def sequence_bits(self, seq: Sequence[int]) -> float:
        """Bits to write a derivation: each step chooses among the rules with the right lhs."""
        seq = self._check_ids(seq, "seq")
        return sum(math.log2(max(len(self._by_lhs[self.rules[r].lhs]), 1)) for r in seq)

    def description_length(self, sequences: Sequence[Sequence[int]]) -> float:
        """Grammar bits plus the bits of the derivations ``sequences`` of the data (MDL)."""
        sequences = check_sequence(sequences, "sequences")
        sequences = [self._check_ids(s, f"sequences[{i}]") for i, s in enumerate(sequences)]
        return self.grammar_bits() + sum(self.sequence_bits(s) for s in sequences)

    def _check_ids(self, seq: object, name: str) -> list[int]:
        """``seq`` as a list of rule ids in ``0..len(rules)-1``."""
        n = len(self.rules)
        return check_sequence(seq, name, item=lambda r, where: check_scalar(r, where, "int", min=0, max=n - 1))


def graph_bits(n_vertices: int, n_edges: int, n_vertex_labels: int, n_edge_labels: int, *,
               n_port_edges: int = 0, n_ports: int = 1) -> float:
    """Bits of a labelled graph: a label per vertex, two endpoints and a label per edge.

    ``n_port_edges`` of the ``n_edges`` join the nonterminal and take their label from the
    ``n_ports`` port labels; the others from the ``n_edge_labels`` final labels (the decoder
    knows which endpoint is the nonterminal, so the two alphabets are separate).  Counts are
    integers >= 0 (``n_port_edges <= n_edges``), alphabet sizes integers >= 1.
    """
    n_vertices = check_scalar(n_vertices, "n_vertices", "int", min=0)
    n_edges = check_scalar(n_edges, "n_edges", "int", min=0)
    n_port_edges = check_scalar(n_port_edges, "n_port_edges", "int", min=0, max=n_edges)
    for name, value in (("n_vertex_labels", n_vertex_labels), ("n_edge_labels", n_edge_labels),
                        ("n_ports", n_ports)):
        check_scalar(value, name, "int", min=1)
    return _graph_bits(n_vertices, n_edges, n_vertex_labels, n_edge_labels, n_port_edges=n_port_edges,
                       n_ports=n_ports)


def _graph_bits(n_vertices: int, n_edges: int, n_vertex_labels: int, n_edge_labels: int, *,
                n_port_edges: int = 0, n_ports: int = 1) -> float:
    endpoint = 2 * math.log2(max(n_vertices, 2))
    final = n_edges - n_port_edges
    return (n_vertices * math.log2(max(n_vertex_labels, 1)) + n_edges * endpoint
            + final * math.log2(max(n_edge_labels, 1)) + n_port_edges * math.log2(max(n_ports, 1)))


def rule_bits(rule: EdNCERule, n_terminal_labels: int, n_edge_labels: int, n_ports: int) -> float:
    """Bits of one rule (Sec. 3.2's MDL): 1 bit of lhs, the rhs graph, and its instructions.

    An rhs vertex label is a terminal label or ``<N>``; an instruction writes mu (a terminal
    label or the wildcard), p (a port), q (a port when i is the nonterminal, else a final
    label), i (an rhs vertex) and the two directions.  Alphabet sizes are integers >= 1.
    """
    check_instance(rule, "rule", EdNCERule, "an EdNCERule")
    for name, value in (("n_terminal_labels", n_terminal_labels), ("n_edge_labels", n_edge_labels),
                        ("n_ports", n_ports)):
        check_scalar(value, name, "int", min=1)
    k = rule.rhs.number_of_nodes()
    nt = rule.nonterminal
    port_edges = sum(1 for a, b in rule.rhs.edges if nt in (a, b))
    bits = 1 + _graph_bits(k, rule.rhs.number_of_edges(), n_terminal_labels + 1, n_edge_labels,
                          n_port_edges=port_edges, n_ports=n_ports)
    fixed = math.log2(n_terminal_labels + 1) + math.log2(n_ports) + math.log2(max(k, 2)) + 2
    for t in rule.embedding:
        bits += fixed + math.log2(n_ports if t[3] == nt else max(n_edge_labels, 1))
    return bits


def uncompressed_bits(graphs: Sequence[nx.DiGraph]) -> float:
    """Bits of the graphs written out plainly, with the data's own label alphabets (the MDL baseline)."""
    graphs = check_sequence(graphs, "graphs", min_len=1)
    graphs = [as_labeled_dag(g, index=i, allow_disconnected=True) for i, g in enumerate(graphs)]
    n_vertex = len({d["label"] for g in graphs for _, d in g.nodes(data=True)})
    n_edge = max(len({d["label"] for g in graphs for _, _, d in g.edges(data=True)}), 1)
    return sum(_graph_bits(g.number_of_nodes(), g.number_of_edges(), n_vertex, n_edge) for g in graphs)


def encode(grammar: DagGrammar, graph: nx.DiGraph, *, timeout: float = 10.0) -> list[int]:
    """The unique rule sequence of ``graph`` under ``grammar`` (see :meth:`DagGrammar.encode`)."""
    check_instance(grammar, "grammar", DagGrammar, "a DagGrammar")
    return grammar.encode(graph, timeout=timeout)


def decode(grammar: DagGrammar, seq: Sequence[int]) -> nx.DiGraph:
    """The DAG derived by ``seq`` (see :meth:`DagGrammar.derive`)."""
    check_instance(grammar, "grammar", DagGrammar, "a DagGrammar")
    return grammar.derive(seq)


class _Search:
    """Memoised depth-first enumeration of the derivations of one target graph.

    Two derivations of the target that apply the same rules the same number of times differ only
    in the order in which they attach independent pieces; they count as one derivation, written
    in its lexicographically smallest order (the canonical order).  With ``budget`` (rule id ->
    uses) only derivations applying exactly that multiset of rules are searched.
    """

    def __init__(self, grammar: DagGrammar, target: nx.DiGraph, timeout: float, max_count: int,
                 budget: Counter | None = None):
        self.grammar = grammar
        self.target = target
        self.max_count = max_count
        self.deadline = time.perf_counter() + float(timeout)
        self.timed_out = False
        self.labels = Counter(target.nodes[v]["label"] for v in target)
        self.n = target.number_of_nodes()
        self.m = target.number_of_edges()
        self.budget = budget
        for v in target:
            target.nodes[v]["deg"] = (target.in_degree(v), target.out_degree(v))
        self.memo: dict[tuple, dict[tuple, tuple]] = {}

    def run(self) -> Derivations:
        graph = nx.DiGraph()
        graph.add_node(0, label=START)
        left = None if self.budget is None else tuple(sorted(self.budget.items()))
        classes = self._visit(graph, 0, left)
        seqs = sorted(classes.values())[: self.max_count]
        return Derivations([list(s) for s in seqs], len(classes), self.timed_out)

    def _visit(self, graph: nx.DiGraph, nt: int | None, left: tuple | None) -> dict[tuple, tuple]:
        """Rule multiset (sorted ids) -> canonical order, for the completions of ``graph`` into the target."""
        if nt is None:
            return {(): ()} if not left and is_isomorphic(graph, self.target) else {}
        key = (canonical_form(graph)[0], left)
        if key in self.memo:
            return self.memo[key]
        classes: dict[tuple, tuple] = {}
        have = Counter(graph.nodes[v]["label"] for v in graph if v != nt)
        uses = None if left is None else dict(left)
        for rid in self.grammar._allowed(graph, nt):
            if time.perf_counter() > self.deadline:
                self.timed_out = True
                break
            if uses is not None and not uses.get(rid):
                continue
            rule = self.grammar.rules[rid]
            if any(have[lab] + c > self.labels[lab] for lab, c in rule.terminal_counts.items()):
                continue
            child = graph.copy()
            child_nt = rule._rewrite(child, nt, self.grammar.require_cover)
            if not self._fits(child, child_nt):
                continue
            child_left = None
            if uses is not None:
                child_left = tuple(sorted((r, c - (r == rid)) for r, c in uses.items() if c - (r == rid) > 0))
            for rules, seq in self._visit(child, child_nt, child_left).items():
                merged, order = tuple(sorted((rid, *rules))), (rid, *seq)
                if merged not in classes or order < classes[merged]:
                    classes[merged] = order
        if not self.timed_out:
            self.memo[key] = classes
        return classes

    def _fits(self, graph: nx.DiGraph, nt: int | None) -> bool:
        """Whether the terminal part of ``graph`` can still grow into the target."""
        if nt is None:
            return graph.number_of_nodes() == self.n
        part = graph.subgraph(v for v in graph if v != nt)
        if part.number_of_edges() > self.m:
            return False
        before, after = set(graph.predecessors(nt)), set(graph.successors(nt))
        pattern = nx.DiGraph()
        for v in part:
            if self.grammar._keeps_direction:
                grow = (v in after, v in before)  # (may gain in-edges, may gain out-edges)
            else:
                grow = (v in before or v in after,) * 2
            pattern.add_node(v, label=graph.nodes[v]["label"], deg=(part.in_degree(v), part.out_degree(v)), grow=grow)
        pattern.add_edges_from(part.edges(data=True))
        matcher = DiGraphMatcher(self.target, pattern, node_match=_degree_match, edge_match=label_match)
        return matcher.subgraph_is_isomorphic()


def _degree_match(t: dict, p: dict) -> bool:
    if t["label"] != p["label"]:
        return False
    (t_in, t_out), (p_in, p_out), (grow_in, grow_out) = t["deg"], p["deg"], p["grow"]
    return (p_in <= t_in if grow_in else p_in == t_in) and (p_out <= t_out if grow_out else p_out == t_out)
