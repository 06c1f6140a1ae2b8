"""DIGGED (Sun, Foo, Liu, Matusik & Chen, ICML 2025): directed graph grammars for sequence-based learning.

A DAG has many topological orders, so node-by-node sequences of it are not unique.  DIGGED
learns from a set of labelled DAGs a *linear edNCE graph grammar*: every rule rewrites the one
nonterminal vertex, so a derivation is a plain sequence of rule ids.  The grammar is induced
bottom-up by minimum-description-length compression (mine frequent subgraphs, turn the best into a
rule with its connection instructions, contract its occurrences), then disambiguated so that each
training DAG has exactly one derivation.  ``encode`` maps a DAG to its rule sequence and
``decode`` back; sampling rules generates new DAGs.

Example
-------
>>> from icml25.graphs.dag_grammar import induce_grammar, encode, decode, is_isomorphic, make_enas_like
>>> graphs = make_enas_like(30, seed=0)                    # input -> 6 ops -> output, random skips
>>> grammar, sequences = induce_grammar(graphs)           # one derivation per graph
>>> seq = encode(grammar, graphs[0])                      # a list of rule ids
>>> is_isomorphic(decode(grammar, seq), graphs[0])        # lossless
True
>>> new = [decode(grammar, s) for s in grammar.sample(5, seed=0) if grammar.is_valid(s)]
"""

from icml25.graphs.dag_grammar.baselines import (
    count_topological_orders,
    generation_metrics,
    graph_from_node_string,
    node_string,
    topological_order,
)
from icml25.graphs.dag_grammar.data import (
    ASIA_EDGES,
    BN_NODES,
    ENAS_OPS,
    bic_score,
    bn_property,
    enas_feasible,
    enas_property,
    is_valid_enas,
    make_bn_like,
    make_enas_like,
    sample_asia,
)
from icml25.graphs.dag_grammar.grammar import (
    ANY,
    NONTERMINAL,
    START,
    AmbiguousError,
    DagGrammar,
    Derivations,
    EdNCERule,
    GrammarError,
    InvalidSequenceError,
    NotInLanguageError,
    as_labeled_dag,
    canonical_form,
    decode,
    encode,
    graph_bits,
    graph_hash,
    is_isomorphic,
    port_label,
    rule_bits,
    uncompressed_bits,
)
from icml25.graphs.dag_grammar.induction import DagGrammarInducer, induce_grammar

__all__ = [
    "ANY",
    "ASIA_EDGES",
    "BN_NODES",
    "ENAS_OPS",
    "NONTERMINAL",
    "START",
    "AmbiguousError",
    "DagGrammar",
    "DagGrammarInducer",
    "Derivations",
    "EdNCERule",
    "GrammarError",
    "InvalidSequenceError",
    "NotInLanguageError",
    "as_labeled_dag",
    "bic_score",
    "bn_property",
    "canonical_form",
    "count_topological_orders",
    "decode",
    "encode",
    "enas_feasible",
    "enas_property",
    "generation_metrics",
    "graph_bits",
    "graph_from_node_string",
    "graph_hash",
    "induce_grammar",
    "is_isomorphic",
    "is_valid_enas",
    "make_bn_like",
    "make_enas_like",
    "node_string",
    "port_label",
    "rule_bits",
    "sample_asia",
    "topological_order",
    "uncompressed_bits",
]
