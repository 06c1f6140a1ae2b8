"""Grammar induction by MDL compression, and disambiguation (DIGGED, Sec. 3.2-3.3).

Bottom-up: repeatedly mine frequent connected subgraphs (our exhaustive miner in place of the
paper's Subdue), turn the candidate that lowers the description length the most into a rule,
and contract its occurrences into the nonterminal.  A graph's derivation is its contractions in
reverse.  Disambiguation then enumerates the derivations of every training graph and removes a
cheapest set of rules that leaves each graph exactly one derivation; graphs that lose theirs are
induced again.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from icml25.graphs.dag_grammar.grammar import (
    ANY,
    IN,
    NONTERMINAL,
    OUT,
    START,
    DagGrammar,
    EdNCERule,
    _graph_bits,
    as_labeled_dag,
    canonical_form,
    is_isomorphic,
    port_label,
    uncompressed_bits,
)
from icml25.utils.validation import check_bool, check_scalar

_PORTS_GUESS = 4  # port labels assumed by the MDL scores during induction


@dataclass
class _Occurrence:
    """One occurrence of a candidate subgraph in the current graph of one data graph."""

    key: tuple  # (lhs, canonical key of the induced subgraph)
    order: tuple  # vertices in canonical order: order[i] becomes rhs vertex i
    links: tuple  # ((x, direction, pattern), ...) for the outside neighbours x
    n_inside_edges: int
    n_inside_port_edges: int  # inside edges that join the old nonterminal
    gain_bits: float  # data bits saved by contracting it


@dataclass
class _State:
    """The partly compressed graph of one data graph."""

    graph: nx.DiGraph
    nt: int | None = None
    steps: list[int] = field(default_factory=list)  # rule ids in contraction order
    done: bool = False
    occurrences: dict | None = None


@dataclass
class _Draft:
    """A rule under construction; ``ports[d]`` maps a connection pattern to its port number."""

    lhs: str
    rhs: nx.DiGraph
    ports: dict = field(default_factory=lambda: {IN: {}, OUT: {}})

    def rule(self) -> EdNCERule:
        embedding = {
            (ANY, port_label(k), q, i, d, d)
            for d, table in self.ports.items()
            for pattern, k in table.items()
            for i, q in pattern
        }
        return EdNCERule(self.lhs, self.rhs.copy(), frozenset(embedding))


class DagGrammarInducer:
    """Learn an unambiguous linear edNCE grammar from labelled DAGs (DIGGED, Sec. 3.2-3.3).

    Parameters
    ----------
    min_motif, max_motif : sizes (vertices, the nonterminal included) of the mined subgraphs.
    n_candidates : the most frequent candidates (frequency x (size - 1)) scored by MDL per step.
    disambiguate : run the disambiguation passes after induction.
    timeout : seconds of derivation search per graph.
    max_passes : disambiguation passes; graphs that lose their derivation are induced again,
        except in the last pass where each gets a rule deriving it whole.
    max_enumerate : derivations listed per graph when choosing rules to remove.
    allow_disconnected : accept weakly disconnected DAGs.
    node_label, edge_label : attribute names of the labels in the input graphs.

    Attributes
    ----------
    grammar_ : the :class:`DagGrammar`; its ``encode`` finds each graph's derivation by search
        (nothing about the training graphs is stored in it).
    sequences_ : one derivation (list of rule ids, in canonical order) per input graph: what
        ``grammar_.encode`` returns for it when the graph has exactly one derivation.
    n_derivations_ : derivations per graph under the final grammar (``None`` without
        ``disambiguate``); ``timed_out_`` flags searches that hit the timeout.
    history_ : estimated description length (bits) before induction, after each contraction
        step, and after the remaining graphs became ``<S>`` rules.
    n_removed_ : rules removed by disambiguation; ``n_redone_`` graphs induced again.
    description_length_ : final grammar + derivation bits; ``uncompressed_bits_`` the data's.

    The algorithm is deterministic: candidates are ordered by canonical keys.
    """

    def __init__(
        self,
        *,
        min_motif: int = 2,
        max_motif: int = 4,
        n_candidates: int = 100,
        disambiguate: bool = True,
        timeout: float = 10.0,
        max_passes: int = 3,
        max_enumerate: int = 50,
        allow_disconnected: bool = False,
        node_label: str = "label",
        edge_label: str = "label",
    ):
        self.min_motif = min_motif
        self.max_motif = max_motif
        self.n_candidates = n_candidates
        self.disambiguate = disambiguate
        self.timeout = timeout
        self.max_passes = max_passes
        self.max_enumerate = max_enumerate
        self.allow_disconnected = allow_disconnected
        self.node_label = node_label
        self.edge_label = edge_label
        self._check_params()

    def _check_params(self) -> None:
        check_scalar(self.min_motif, "min_motif", "int", min=2)
        check_scalar(self.max_motif, "max_motif", "int", min=self.min_motif)
        for name in ("n_candidates", "max_passes", "max_enumerate"):
            check_scalar(getattr(self, name), name, "int", min=1)
        check_scalar(self.timeout, "timeout", "real", min=0.0, inclusive="neither", allow_inf=True)
        check_bool(self.disambiguate, "disambiguate")
        check_bool(self.allow_disconnected, "allow_disconnected")

    def fit(self, graphs: Sequence[nx.DiGraph]) -> DagGrammarInducer:
        """Induce the grammar from ``graphs`` (a non-empty list of labelled DAGs)."""
        self._check_params()
        if isinstance(graphs, (nx.Graph, str, bytes)) or not isinstance(graphs, Sequence):
            raise TypeError(f"graphs must be a list of networkx.DiGraph, got {type(graphs).__name__}")
        if len(graphs) == 0:
            raise ValueError("graphs must be a non-empty list of networkx.DiGraph, got an empty list")
        self._graphs = [
            as_labeled_dag(g, index=i, node_label=self.node_label, edge_label=self.edge_label,
                           allow_disconnected=self.allow_disconnected)
            for i, g in enumerate(graphs)
        ]
        n_terminal = len({d["label"] for g in self._graphs for _, d in g.nodes(data=True)})
        n_final = len({d["label"] for g in self._graphs for _, _, d in g.edges(data=True)})
        self._sizes = (n_terminal, max(n_final, 1), _PORTS_GUESS)
        self._drafts: list[_Draft] = []
        self._draft_ids: dict[tuple, int] = {}
        self._removed: set[int] = set()
        self._banned: set[tuple] = set()
        self.history_: list[float] = []
        states = [_State(g.copy()) for g in self._graphs]
        self._state_index = {id(s): g for g, s in enumerate(states)}
        self._compress(states, record=True)
        sequences = {i: s.steps[::-1] for i, s in enumerate(states)}
        self.n_removed_ = self.n_redone_ = 0
        self.n_derivations_ = self.timed_out_ = None
        if self.disambiguate:
            sequences = self._disambiguate(sequences)
        self._finalise(sequences)
        return self

    # -- mining -------------------------------------------------------------------------------

    def _occurrences(self, state: _State) -> dict[tuple, _Occurrence]:
        graph, nt = state.graph, state.nt
        undirected = {v: set(graph.pred[v]) | set(graph.succ[v]) for v in graph}
        starts = [frozenset([nt])] if nt is not None else [frozenset([v]) for v in graph]
        seen = set(starts)
        frontier = list(starts)
        while frontier:
            grown = []
            for s in frontier:
                if len(s) == self.max_motif:
                    continue
                for u in sorted(set().union(*(undirected[v] for v in s)) - s):
                    t = s | {u}
                    if t not in seen:
                        seen.add(t)
                        grown.append(t)
            frontier = grown
        below = {v: nx.descendants(graph, v) for v in graph}
        n, m = graph.number_of_nodes(), graph.number_of_edges()
        found: dict[tuple, _Occurrence] = {}
        for s in sorted(seen, key=lambda s: (len(s), sorted(s))):
            if len(s) < self.min_motif:
                continue
            after = {w for v in s for w in graph.succ[v]} - s
            if any(below[w] & s for w in after):
                continue  # not convex: contracting it would create a cycle
            ckey, order = canonical_form(graph, s)
            lhs = START if len(s) == n else NONTERMINAL
            key = (lhs, ckey)
            if key in found or key in self._banned:
                continue
            pos = {v: i for i, v in enumerate(order)}
            links = []
            for x in sorted({w for v in s for w in undirected[v]} - s):
                if x in after:
                    pattern = [(pos[v], graph.edges[v, x]["label"]) for v in graph.pred[x] if v in s]
                    direction = OUT
                else:
                    pattern = [(pos[v], graph.edges[x, v]["label"]) for v in graph.succ[x] if v in s]
                    direction = IN
                links.append((x, direction, tuple(sorted(pattern, key=repr))))
            inside = sum(1 for v in s for w in graph.succ[v] if w in s)
            boundary = sum(len(p) for _, _, p in links)
            inside_ports = 0 if nt is None else sum(1 for w in undirected[nt] if w in s)
            before = self._bits(n, m, 0 if nt is None else len(undirected[nt]))
            rest = 0.0 if lhs == START else self._bits(n - len(s) + 1, m - inside - boundary + len(links), len(links))
            found[key] = _Occurrence(key, order, tuple(links), inside, inside_ports, before - rest)
        return found

    def _bits(self, n_vertices: int, n_edges: int, n_port_edges: int) -> float:
        n_terminal, n_final, n_ports = self._sizes
        return _graph_bits(n_vertices, n_edges, n_terminal + 1, n_final, n_port_edges=n_port_edges, n_ports=n_ports)

    def _instruction_bits(self, size: int) -> float:
        n_terminal, n_final, n_ports = self._sizes
        label_bits = math.log2(n_terminal + 1) + math.log2(n_ports) + math.log2(max(n_final, n_ports))
        return label_bits + math.log2(max(size, 2)) + 2

    def _score(self, key: tuple, occs: list[_Occurrence]) -> float:
        """Description length saved by turning ``key`` into a rule and contracting ``occs``."""
        size = len(occs[0].order)
        rid = self._draft_ids.get(key)
        known = self._drafts[rid].ports if rid is not None else {IN: {}, OUT: {}}
        new_patterns = {(d, p) for o in occs for _, d, p in o.links if p not in known[d]}
        cost = sum(len(p) for _, p in new_patterns) * self._instruction_bits(size)
        if rid is None:
            cost += 1 + self._bits(size, occs[0].n_inside_edges, occs[0].n_inside_port_edges)
        n_same = self._count_rules(key[0]) + (rid is None)
        cost += len(occs) * math.log2(n_same)  # each use chooses among the rules with this lhs
        return sum(o.gain_bits for o in occs) - cost

    def _count_rules(self, lhs: str) -> int:
        return sum(1 for rid, d in enumerate(self._drafts) if d.lhs == lhs and rid not in self._removed)

    def _compress(self, states: list[_State], *, record: bool = False) -> None:
        """Contract the best candidate until none lowers the description length, then finish."""
        index: dict[tuple, dict[int, _Occurrence]] = {}

        def refresh(g: int) -> None:
            state = states[g]
            for key in state.occurrences or ():
                index[key].pop(g, None)
                if not index[key]:
                    del index[key]
            state.occurrences = {} if state.done else self._occurrences(state)
            for key, occ in state.occurrences.items():
                index.setdefault(key, {})[g] = occ

        for g in range(len(states)):
            refresh(g)
        if record:
            self.history_.append(self._estimate(states))
        while index:
            ranked = sorted(index, key=lambda k: (-len(index[k]) * (len(k[1][0]) - 1), k))[: self.n_candidates]
            scores = [(self._score(k, [index[k][g] for g in sorted(index[k])]), k) for k in ranked]
            best, key = min(scores, key=lambda t: (-t[0], t[1]))
            if best <= 0:
                break
            hits = sorted(index[key])
            self._contract_all(key, [(states[g], index[key][g]) for g in hits])
            for g in hits:
                refresh(g)
            if record:
                self.history_.append(self._estimate(states))
        for state in states:
            if not state.done:
                self._finish(state)
        if record:
            self.history_.append(self._estimate(states))

    def _contract_all(self, key: tuple, pairs: list[tuple[_State, _Occurrence]]) -> None:
        rid = self._draft_ids.get(key)
        if rid is None:
            state, occ = pairs[0]
            rhs = nx.DiGraph()
            pos = {v: i for i, v in enumerate(occ.order)}
            rhs.add_nodes_from((i, {"label": state.graph.nodes[v]["label"]}) for i, v in enumerate(occ.order))
            rhs.add_edges_from(
                (pos[u], pos[v], {"label": d["label"]})
                for u, v, d in state.graph.subgraph(occ.order).edges(data=True)
            )
            rid = len(self._drafts)
            self._drafts.append(_Draft(key[0], rhs))
            self._draft_ids[key] = rid
        draft = self._drafts[rid]
        counts = Counter((d, p) for _, occ in pairs for _, d, p in occ.links if p not in draft.ports[d])
        for (d, p), _ in sorted(counts.items(), key=lambda t: (-t[1], repr(t[0]))):
            draft.ports[d][p] = len(draft.ports[d])
        for state, occ in pairs:
            graph = state.graph
            new = max(graph.nodes) + 1
            graph.add_node(new, label=key[0])
            for x, d, p in occ.links:
                label = port_label(draft.ports[d][p])
                if d == IN:
                    graph.add_edge(x, new, label=label)
                else:
                    graph.add_edge(new, x, label=label)
            graph.remove_nodes_from(occ.order)
            state.steps.append(rid)
            state.nt = None if key[0] == START else new
            state.done = key[0] == START

    def _finish(self, state: _State) -> None:
        """Contract the whole remaining graph into one ``<S>`` rule (always possible)."""
        key = (START, canonical_form(state.graph)[0])
        if key in self._banned:
            original = self._graphs[self._index_of(state)]
            state.graph, state.nt, state.steps = original.copy(), None, []
            key = (START, canonical_form(state.graph)[0])
            self._banned.discard(key)
        occ = self._whole(state, key)
        self._contract_all(key, [(state, occ)])

    def _whole(self, state: _State, key: tuple) -> _Occurrence:
        order = canonical_form(state.graph)[1]
        inside = state.graph.number_of_edges()
        return _Occurrence(key, order, (), inside, 0, 0.0)

    def _index_of(self, state: _State) -> int:
        return self._state_index[id(state)]

    def _estimate(self, states: list[_State]) -> float:
        data = sum(self._bits(s.graph.number_of_nodes(), s.graph.number_of_edges(),
                              0 if s.nt is None else s.graph.degree(s.nt)) for s in states if not s.done)
        per_lhs = {lhs: math.log2(max(self._count_rules(lhs), 1)) for lhs in (START, NONTERMINAL)}
        steps = sum(per_lhs[self._drafts[rid].lhs] for s in states for rid in s.steps)
        return data + self._grammar_bits() + steps

    def _grammar_bits(self) -> float:
        total = 0.0
        for rid, draft in enumerate(self._drafts):
            if rid in self._removed:
                continue
            size = draft.rhs.number_of_nodes()
            n_instr = sum(len(p) for table in draft.ports.values() for p in table)
            nt = next((i for i in range(size) if draft.rhs.nodes[i]["label"] == NONTERMINAL), None)
            port_edges = 0 if nt is None else draft.rhs.degree(nt)
            total += 1 + self._bits(size, draft.rhs.number_of_edges(), port_edges)
            total += n_instr * self._instruction_bits(size)
        return total

    # -- disambiguation -----------------------------------------------------------------------

    def _grammar(self) -> tuple[DagGrammar, list[int]]:
        active = [rid for rid in range(len(self._drafts)) if rid not in self._removed]
        return DagGrammar([self._drafts[rid].rule() for rid in active]), active

    def _disambiguate(self, sequences: dict[int, list[int]]) -> dict[int, list[int]]:
        order = sorted(range(len(self._graphs)), key=lambda g: (self._graphs[g].number_of_nodes(), g))
        for p in range(self.max_passes + 1):
            grammar, active = self._grammar()
            counts, timed_out, requeue = {}, {}, set()
            for g in order:
                if g in requeue:
                    continue
                found = grammar.derivations(self._graphs[g], timeout=self.timeout, max_count=self.max_enumerate)
                counts[g], timed_out[g] = found.count, found.timed_out
                if found.count <= 1 or p == self.max_passes:
                    continue
                derivs = sorted({tuple(active[j] for j in s) for s in found}, key=lambda s: (len(s), s))
                users: dict[int, set[int]] = {}
                for h, seq in sequences.items():
                    if h not in requeue:
                        for rid in seq:
                            users.setdefault(rid, set()).add(h)
                choice = _cheapest_removal(derivs, users, g)
                if choice is None:
                    # every derivation uses the same rules (in different numbers): no removal keeps
                    # one of them, so drop the rule least used elsewhere and induce the graph again
                    shared = sorted(set().union(*map(set, derivs)))
                    removal = (min(shared, key=lambda r: (len(users.get(r, set()) - {g}), r)),)
                    self._remove(removal)
                    requeue |= {h for rid in removal for h in users.get(rid, ())} | {g}
                    continue
                keep, removal = choice
                sequences[g] = list(keep)
                self._remove(removal)
                requeue |= {h for rid in removal for h in users.get(rid, ())} - {g}
                grammar, active = self._grammar()
                found = grammar.derivations(self._graphs[g], timeout=self.timeout, max_count=1)
                counts[g], timed_out[g] = found.count, found.timed_out
            if p == self.max_passes or not requeue:
                break
            self.n_redone_ += len(requeue)
            redo = sorted(requeue)
            states = [_State(self._graphs[g].copy()) for g in redo]
            self._state_index = {id(s): g for s, g in zip(states, redo, strict=True)}
            if p < self.max_passes - 1:
                self._compress(states)
            else:
                for state in states:
                    key = (START, canonical_form(state.graph)[0])
                    self._banned.discard(key)
                    self._contract_all(key, [(state, self._whole(state, key))])
            for g, state in zip(redo, states, strict=True):
                sequences[g] = state.steps[::-1]
        self.n_derivations_ = [counts.get(g, 0) for g in range(len(self._graphs))]
        self.timed_out_ = [timed_out.get(g, False) for g in range(len(self._graphs))]
        return sequences

    def _remove(self, removal: Sequence[int]) -> None:
        """Drop rules; their candidate keys may not become rules again."""
        self._removed |= set(removal)
        self.n_removed_ += len(removal)
        for key in [key for key, rid in self._draft_ids.items() if rid in removal]:
            del self._draft_ids[key]
            self._banned.add(key)

    def _finalise(self, sequences: dict[int, list[int]]) -> None:
        grammar, active = self._grammar()
        new_id = {rid: j for j, rid in enumerate(active)}
        self.sequences_ = [[new_id[rid] for rid in sequences[g]] for g in range(len(self._graphs))]
        for g, seq in enumerate(self.sequences_):
            derived = grammar.derive(seq)
            if not is_isomorphic(derived, self._graphs[g]):
                raise RuntimeError(f"internal error: the derivation of graph {g} does not reproduce it")
            self.sequences_[g] = grammar._canonical_order(self._graphs[g], seq)
        self.grammar_ = grammar
        self.description_length_ = grammar.description_length(self.sequences_)
        self.uncompressed_bits_ = uncompressed_bits(self._graphs)


def _cheapest_removal(derivs: list[tuple], users: dict[int, set[int]], g: int) -> tuple | None:
    """Pick the derivation of graph ``g`` to keep and a cheapest rule set that kills the others.

    A rule's cost is the number of other graphs whose derivation uses it (they must be induced
    again).  Exact over removal sets of up to three rules, greedy beyond.  ``None`` when every
    candidate keep shares all its rules with another derivation.
    """
    best = None
    for keep in derivs:
        kept = set(keep)
        others = [set(d) - kept for d in derivs if d != keep]
        if any(not o for o in others):
            continue
        pool = sorted(set().union(*others))
        cost = {rid: len(users.get(rid, set()) - {g}) for rid in pool}
        removal = None
        for size in range(1, min(3, len(pool)) + 1):
            hits = [c for c in itertools.combinations(pool, size) if all(o & set(c) for o in others)]
            if hits:
                removal = min(hits, key=lambda c: (sum(cost[r] for r in c), c))
                break
        if removal is None:
            removal, left = [], list(others)
            while left:
                rid = max(pool, key=lambda r: (sum(r in o for o in left) / (1 + cost[r]), -r))
                removal.append(rid)
                left = [o for o in left if rid not in o]
            removal = tuple(sorted(removal))
        option = (sum(cost[r] for r in removal), len(removal), keep, removal)
        if best is None or option < best:
            best = option
    return None if best is None else (best[2], best[3])


def induce_grammar(
    graphs: Sequence[nx.DiGraph],
    *,
    node_label: str = "label",
    edge_label: str = "label",
    min_motif: int = 2,
    max_motif: int = 4,
    n_candidates: int = 100,
    disambiguate: bool = True,
    timeout: float = 10.0,
    allow_disconnected: bool = False,
) -> tuple[DagGrammar, list[list[int]]]:
    """Induce a grammar from ``graphs``; returns it and one derivation per graph (Sec. 3.2-3.3)."""
    inducer = DagGrammarInducer(
        node_label=node_label, edge_label=edge_label, min_motif=min_motif, max_motif=max_motif,
        n_candidates=n_candidates, disambiguate=disambiguate, timeout=timeout, allow_disconnected=allow_disconnected,
    ).fit(graphs)
    return inducer.grammar_, inducer.sequences_
