"""Fong & Motani, "Pareto-Optimal Fronts for Benchmarking Symbolic Regression Algorithms" (ICML 2025).

The absolute Pareto-optimal (APO) front of a dataset: every expression tree over {+, -, *, /, |a|^b} up to a
Karva head length is enumerated, its constants are fitted with a SciPy optimiser, and the best training R^2 of
every expression length (node count) is kept.  Any SR method's expressions can then be scored against it.

Example
-------
>>> import numpy as np
>>> from icml25.symbolic import apo_front, read_front
>>> rng = np.random.default_rng(0)
>>> X = rng.uniform(1, 5, size=(200, 2)); y = 2.5 * X[:, 0] * X[:, 1]
>>> front = apo_front(X, y, head_length=2, standardize=False, n_jobs=2)   # 643 expressions, BFGS
>>> best = [(r.length, r.structure, r.r2) for r in front.pareto_front()]  # ... (5, 'Mul(Mul(x1,x0),c0)', 1.0)
>>> card = front.score(["x0*x1", "2.4*x0*x1 + 0.1", "add(mul(X0, X1), X1)"], X, y)  # any SR output
>>> gaps = card.per_length()                                              # APO R^2 - method R^2 per length
>>> same = read_front(front.to_csv("front.csv")).pareto_front() == front.pareto_front()

Run as a module for the same without code: ``python -m icml25.symbolic.sr_pareto_fronts front data.csv
--head-length 2 --out front.csv`` then ``python -m icml25.symbolic.sr_pareto_fronts score front.csv data.csv
expressions.txt`` (the target is the last CSV column unless ``--target NAME``).
"""

from icml25.symbolic.sr_pareto_fronts.baselines import gp_symbolic_regression
from icml25.symbolic.sr_pareto_fronts.fitting import SCIPY_METHODS, Data, FitResult, fit_constants, prepare_data
from icml25.symbolic.sr_pareto_fronts.front import (
    COLUMNS,
    APOFront,
    FrontRow,
    Scorecard,
    ScoredExpression,
    apo_front,
    compare_optimizers,
    hypervolume,
    read_front,
    score_against_front,
)
from icml25.symbolic.sr_pareto_fronts.grammar import (
    OPERATORS,
    Expression,
    complete_lengths,
    count_fills,
    decode_karva,
    enumerate_expressions,
    enumerate_structures,
    parse_expression,
)

__all__ = [
    "COLUMNS",
    "OPERATORS",
    "SCIPY_METHODS",
    "APOFront",
    "Data",
    "Expression",
    "FitResult",
    "FrontRow",
    "ScoredExpression",
    "Scorecard",
    "apo_front",
    "compare_optimizers",
    "complete_lengths",
    "count_fills",
    "decode_karva",
    "enumerate_expressions",
    "enumerate_structures",
    "fit_constants",
    "gp_symbolic_regression",
    "hypervolume",
    "parse_expression",
    "prepare_data",
    "read_front",
    "score_against_front",
]
