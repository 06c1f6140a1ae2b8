"""Valid calls of ``icml25.graphs`` (DIGGED's unambiguous DAG grammars)."""

import functools

import networkx as nx

from api_examples._core import Example, Exempt
from icml25 import graphs
from icml25.graphs import dag_grammar as dg

_ATTR = "any attribute name (a missing one is an absent label)"
_LABEL = "any hashable label"


def _dag(labels, edges):
    g = nx.DiGraph()
    for i, lab in enumerate(labels):
        g.add_node(i, label=lab)
    g.add_edges_from(edges, label=None)
    return g


def _chain():
    return _dag("abc", [(0, 1), (1, 2)])


def _diamond():
    return _dag("abcd", [(0, 1), (0, 2), (1, 3), (2, 3)])


def _rhs(labels, edges):
    return _dag(labels, edges)


def _rules():
    """S -> a -<0>-> N ;  N -> b -<0>-> N ;  N -> c: derives a b^k c."""
    start = _rhs(["a", dg.NONTERMINAL], [])
    start.add_edge(0, 1, label=dg.port_label(0))
    grow = _rhs(["b", dg.NONTERMINAL], [])
    grow.add_edge(0, 1, label=dg.port_label(0))
    link = {(dg.ANY, dg.port_label(0), None, 0, "in", "in")}
    return [graphs.EdNCERule(dg.START, start), graphs.EdNCERule(dg.NONTERMINAL, grow, link),
            graphs.EdNCERule(dg.NONTERMINAL, _rhs(["c"], []), link)]


@functools.cache
def _grammar():
    return graphs.DagGrammar(_rules())


def _host():
    host = _dag(["x", dg.NONTERMINAL], [])
    host.add_edge(0, 1, label=dg.port_label(0))
    return host


def _leaf_rule():
    return graphs.EdNCERule(dg.NONTERMINAL, _rhs(["c"], []), {(dg.ANY, dg.port_label(0), None, 0, "in", "in")})


def _always(graph, nonterminal):
    return True


@functools.cache
def _asia_rows():
    return dg.sample_asia(40, seed=0)


def _bn_graphs():
    return dg.make_bn_like(2, seed=0)


def _enas_graphs():
    return dg.make_enas_like(3, seed=0, n_hidden=3)


EXAMPLES = {
    "icml25.graphs.DagGrammar": Example(graphs.DagGrammar, lambda: {"rules": _rules(), "require_cover": True}),
    "icml25.graphs.DagGrammar.derive": Example(lambda **kw: _grammar().derive(**kw), {"seq": [0, 1, 2]}),
    "icml25.graphs.DagGrammar.decode": Example(lambda **kw: _grammar().decode(**kw), {"seq": [0, 1, 1, 2]}),
    "icml25.graphs.DagGrammar.is_valid": Example(lambda **kw: _grammar().is_valid(**kw), {"seq": [0, 2]},
                                                 allow={"seq": "empty"}),
    "icml25.graphs.DagGrammar.allowed_next_rules": Example(lambda **kw: _grammar().allowed_next_rules(**kw),
                                                           {"prefix": [0], "feasible": _always},
                                                           allow={"prefix": "empty"}),
    "icml25.graphs.DagGrammar.sample": Example(lambda **kw: _grammar().sample(**kw),
                                               {"n": 2, "seed": 0, "max_len": 4, "feasible": _always},
                                               positive=["max_len"]),
    "icml25.graphs.DagGrammar.derivations": Example(lambda **kw: _grammar().derivations(**kw),
                                                    lambda: {"graph": _chain(), "timeout": 5.0, "max_count": 3},
                                                    positive=["max_count"], nonneg=["timeout"]),
    "icml25.graphs.DagGrammar.encode": Example(lambda **kw: _grammar().encode(**kw),
                                               lambda: {"graph": _chain(), "timeout": 5.0}, nonneg=["timeout"]),
    "icml25.graphs.DagGrammar.sequence_bits": Example(lambda **kw: _grammar().sequence_bits(**kw),
                                                      {"seq": [0, 1, 2]}, allow={"seq": "empty"}),
    "icml25.graphs.DagGrammar.description_length": Example(lambda **kw: _grammar().description_length(**kw),
                                                           {"sequences": [[0, 1, 2], [0, 2]]},
                                                           allow={"sequences": "empty"}),
    "icml25.graphs.DagGrammarInducer": Example(
        graphs.DagGrammarInducer,
        {"min_motif": 2, "max_motif": 3, "n_candidates": 10, "disambiguate": True, "timeout": 2.0, "max_passes": 2,
         "max_enumerate": 5, "allow_disconnected": False, "node_label": "label", "edge_label": "label"},
        positive=["min_motif", "max_motif", "n_candidates", "timeout", "max_passes", "max_enumerate"],
        skip={"node_label": _ATTR, "edge_label": _ATTR}),
    "icml25.graphs.DagGrammarInducer.fit": Example(lambda **kw: graphs.DagGrammarInducer(timeout=2.0).fit(**kw),
                                                   lambda: {"graphs": [_chain(), _chain()]}),
    "icml25.graphs.EdNCERule": Example(
        graphs.EdNCERule, lambda: {"lhs": dg.NONTERMINAL, "rhs": _rhs(["c"], []),
                                   "embedding": frozenset({(dg.ANY, dg.port_label(0), None, 0, "in", "in")})}),
    "icml25.graphs.EdNCERule.instructions_for": Example(lambda **kw: _leaf_rule().instructions_for(**kw),
                                                        {"mu": "x", "p": "<0>", "d": "in"},
                                                        skip={"mu": _LABEL, "p": _LABEL}),
    "icml25.graphs.EdNCERule.covers": Example(lambda **kw: _leaf_rule().covers(**kw),
                                              lambda: {"graph": _host(), "node": 1}),
    "icml25.graphs.EdNCERule.apply": Example(lambda **kw: _leaf_rule().apply(**kw),
                                             lambda: {"graph": _host(), "node": 1, "require_cover": True}),
    "icml25.graphs.count_topological_orders": Example(graphs.count_topological_orders,
                                                      lambda: {"graph": _diamond(), "max_vertices": 10},
                                                      positive=["max_vertices"]),
    "icml25.graphs.decode": Example(graphs.decode, lambda: {"grammar": _grammar(), "seq": [0, 1, 2]}),
    "icml25.graphs.encode": Example(graphs.encode, lambda: {"grammar": _grammar(), "graph": _chain(),
                                                            "timeout": 5.0}, nonneg=["timeout"]),
    "icml25.graphs.induce_grammar": Example(
        graphs.induce_grammar,
        lambda: {"graphs": [_chain(), _chain()], "node_label": "label", "edge_label": "label", "min_motif": 2,
                 "max_motif": 3, "n_candidates": 10, "disambiguate": True, "timeout": 2.0,
                 "allow_disconnected": False},
        positive=["min_motif", "max_motif", "n_candidates", "timeout"],
        skip={"node_label": _ATTR, "edge_label": _ATTR}),
    "icml25.graphs.node_string": Example(graphs.node_string,
                                         lambda: {"graph": _diamond(), "order": "random", "seed": 0,
                                                  "node_label": "label"},
                                         skip={"node_label": "an attribute name every vertex carries"}),
    "icml25.graphs.dag_grammar.Derivations": Exempt("record"),
    "icml25.graphs.dag_grammar.as_labeled_dag": Example(
        dg.as_labeled_dag, lambda: {"graph": _diamond(), "index": 0, "node_label": "label", "edge_label": "label",
                                    "allow_disconnected": False},
        skip={"node_label": "an attribute name every vertex carries", "edge_label": _ATTR}),
    "icml25.graphs.dag_grammar.bic_score": Example(dg.bic_score, lambda: {"graph": _bn_graphs()[0],
                                                                          "data": _asia_rows().copy()}),
    "icml25.graphs.dag_grammar.bn_property": Example(dg.bn_property, lambda: {"graphs": _bn_graphs(),
                                                                              "data": _asia_rows().copy()}),
    "icml25.graphs.dag_grammar.canonical_form": Example(dg.canonical_form,
                                                        lambda: {"graph": _diamond(), "nodes": [0, 1, 2],
                                                                 "max_orderings": 100},
                                                        positive=["max_orderings"], allow={"nodes": "empty"}),
    "icml25.graphs.dag_grammar.enas_feasible": Example(dg.enas_feasible,
                                                       lambda: {"graph": _enas_graphs()[0], "nonterminal": 2}),
    "icml25.graphs.dag_grammar.enas_property": Example(dg.enas_property,
                                                       lambda: {"graphs": _enas_graphs(), "seed": 0, "noise": 0.01},
                                                       nonneg=["noise"]),
    "icml25.graphs.dag_grammar.generation_metrics": Example(
        dg.generation_metrics, lambda: {"generated": [*_enas_graphs()[:2], None], "training": _enas_graphs(),
                                        "is_valid": dg.is_valid_enas}),
    "icml25.graphs.dag_grammar.graph_bits": Example(
        dg.graph_bits, {"n_vertices": 4, "n_edges": 3, "n_vertex_labels": 2, "n_edge_labels": 1, "n_port_edges": 1,
                        "n_ports": 2},
        positive=["n_vertex_labels", "n_edge_labels", "n_ports"]),
    "icml25.graphs.dag_grammar.graph_from_node_string": Example(dg.graph_from_node_string,
                                                                lambda: {"tokens": dg.node_string(_diamond())}),
    "icml25.graphs.dag_grammar.graph_hash": Example(dg.graph_hash, lambda: {"graph": _diamond()}),
    "icml25.graphs.dag_grammar.is_isomorphic": Example(dg.is_isomorphic, lambda: {"g": _diamond(), "h": _chain()}),
    "icml25.graphs.dag_grammar.is_valid_enas": Example(dg.is_valid_enas, lambda: {"graph": _enas_graphs()[0]}),
    "icml25.graphs.dag_grammar.make_bn_like": Example(dg.make_bn_like, {"n": 2, "seed": 0, "p_edge": 0.3,
                                                                        "connected": True},
                                                      positive=["n", "p_edge"]),
    "icml25.graphs.dag_grammar.make_enas_like": Example(dg.make_enas_like, {"n": 2, "seed": 0, "n_hidden": 3,
                                                                            "p_skip": 0.3},
                                                        positive=["n", "n_hidden"], nonneg=["p_skip"]),
    "icml25.graphs.dag_grammar.port_label": Example(dg.port_label, {"k": 1}),
    "icml25.graphs.dag_grammar.rule_bits": Example(
        dg.rule_bits, lambda: {"rule": _leaf_rule(), "n_terminal_labels": 3, "n_edge_labels": 1, "n_ports": 1},
        positive=["n_terminal_labels", "n_edge_labels", "n_ports"]),
    "icml25.graphs.dag_grammar.sample_asia": Example(dg.sample_asia, {"n_rows": 5, "seed": 0}, positive=["n_rows"]),
    "icml25.graphs.dag_grammar.topological_order": Example(dg.topological_order,
                                                           lambda: {"graph": _diamond(), "order": "bfs", "seed": 0}),
    "icml25.graphs.dag_grammar.uncompressed_bits": Example(dg.uncompressed_bits,
                                                           lambda: {"graphs": [_chain(), _diamond()]}),
}
