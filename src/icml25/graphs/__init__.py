"""Graph learning: DIGGED's unambiguous DAG grammars (``icml25.graphs.dag_grammar``)."""

from icml25.graphs.dag_grammar import (
    AmbiguousError,
    DagGrammar,
    DagGrammarInducer,
    EdNCERule,
    InvalidSequenceError,
    NotInLanguageError,
    count_topological_orders,
    decode,
    encode,
    induce_grammar,
    node_string,
)

__all__ = [
    "AmbiguousError",
    "DagGrammar",
    "DagGrammarInducer",
    "EdNCERule",
    "InvalidSequenceError",
    "NotInLanguageError",
    "count_topological_orders",
    "decode",
    "encode",
    "induce_grammar",
    "node_string",
]
