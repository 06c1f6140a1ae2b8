"""The baseline SR method: a small, seeded tree genetic programming run over the same grammar.

The paper scores published SR methods against the front; this GP run (this library's own settings) stands in
for them offline.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from icml25.symbolic.sr_pareto_fronts.fitting import check_method, fit_prepared, prepare_data, start_seed
from icml25.symbolic.sr_pareto_fronts.grammar import OPERATORS, Expression, check_operators, fold_and_number
from icml25.utils.random import Seed
from icml25.utils.validation import check_scalar

# Individuals are raw trees: (op, left, right), ("x", i) or ("c", value).


def _size(tree: tuple) -> int:
    return 1 + _size(tree[1]) + _size(tree[2]) if len(tree) == 3 else 1


def _paths(tree: tuple, path: tuple = ()) -> list[tuple]:
    out = [path]
    if len(tree) == 3:
        out += _paths(tree[1], (*path, 1)) + _paths(tree[2], (*path, 2))
    return out


def _get(tree: tuple, path: tuple) -> tuple:
    for step in path:
        tree = tree[step]
    return tree


def _put(tree: tuple, path: tuple, new: tuple) -> tuple:
    if not path:
        return new
    children = list(tree)
    children[path[0]] = _put(tree[path[0]], path[1:], new)
    return tuple(children)


def _terminal(rng: np.random.Generator, n_features: int) -> tuple:
    i = int(rng.integers(n_features + 1))
    return ("x", i) if i < n_features else ("c", float(rng.uniform(-1, 1)))


def _random_tree(rng: np.random.Generator, depth: int, full: bool, n_features: int, ops: tuple[str, ...]) -> tuple:
    if depth == 0 or (not full and rng.random() < 0.3):
        return _terminal(rng, n_features)
    op = ops[int(rng.integers(len(ops)))]
    left = _random_tree(rng, depth - 1, full, n_features, ops)
    return (op, left, _random_tree(rng, depth - 1, full, n_features, ops))


def _raw(tree: tuple, values: np.ndarray) -> tuple:
    """A numbered expression tree back to a raw tree carrying the constants' values."""
    if tree[0] == "c":
        return ("c", float(values[tree[1]]))
    if tree[0] == "x":
        return tree
    return (tree[0], _raw(tree[1], values), _raw(tree[2], values))


def gp_symbolic_regression(
    X: np.ndarray,
    y: np.ndarray,
    population: int = 200,
    generations: int = 20,
    max_length: int = 9,
    seed: Seed = 0,
    operators: Iterable[str] = tuple(OPERATORS),
    standardize: bool = True,
    tournament_size: int = 7,
    p_crossover: float = 0.7,
    p_subtree_mutation: float = 0.15,
    p_point_mutation: float = 0.1,
    parsimony: float = 1e-3,
    method: str = "BFGS",
) -> list[tuple[Expression, np.ndarray]]:
    """A typical SR run to benchmark against the APO front (a tree-GP baseline; its settings are this library's).

    Ramped half-and-half initial trees (depth 1-3) over features and U(-1, 1) constants; fitness = MSE on the
    (standardised) training data + ``parsimony`` x length, after a Lamarckian ``method`` refit of each new
    expression's constants (cached by expression); tournament selection, subtree crossover, subtree and point
    mutation, one elite; offspring longer than ``max_length`` nodes are replaced by their parent.
    Returns the distinct expressions of the final population plus the best expression found at every length
    (a per-length hall of fame), each with its fitted constants, sorted by length.
    """
    for name, value in (("population", population), ("generations", generations), ("max_length", max_length),
                        ("tournament_size", tournament_size)):
        check_scalar(value, name, "int", min=1)
    named = (("p_crossover", p_crossover), ("p_subtree_mutation", p_subtree_mutation),
             ("p_point_mutation", p_point_mutation))
    probabilities = tuple(check_scalar(p, name, "real", min=0.0, max=1.0) for name, p in named)
    if sum(probabilities) > 1:
        raise ValueError("p_crossover + p_subtree_mutation + p_point_mutation must be <= 1, "
                         f"got {sum(probabilities):g}")
    parsimony = check_scalar(parsimony, "parsimony", "real", min=0.0)
    data = prepare_data(X, y, standardize)
    ops, method, seed = check_operators(operators), check_method(method), start_seed(seed)
    rng = np.random.default_rng(seed)
    d = data.n_features
    cache: dict[str, tuple[np.ndarray, float]] = {}
    hall: dict[int, tuple[float, Expression, np.ndarray]] = {}

    def evaluate(tree: tuple) -> tuple[tuple, float]:
        expression, values = fold_and_number(tree)
        if expression.string not in cache:
            known = values.size > 0 and bool(np.all(np.isfinite(values)))  # folding may overflow: then a fresh start
            fit = fit_prepared(expression, data, method, seed, 0 if known else 1, values if known else None)
            cache[expression.string] = (fit.constants, fit.mse if not fit.failed else np.inf)
        constants, mse = cache[expression.string]
        if np.isfinite(mse) and mse < hall.get(expression.length, (np.inf,))[0]:
            hall[expression.length] = (mse, expression, constants)
        return _raw(expression.tree, constants), mse + parsimony * expression.length

    def select(scores: np.ndarray) -> int:
        entrants = rng.integers(len(scores), size=tournament_size)
        return int(entrants[np.argmin(scores[entrants])])

    def vary(parent: tuple, donor: tuple) -> tuple:
        r = rng.random()
        paths = _paths(parent)
        target = paths[int(rng.integers(len(paths)))]
        if r < p_crossover:
            donor_paths = _paths(donor)
            child = _put(parent, target, _get(donor, donor_paths[int(rng.integers(len(donor_paths)))]))
        elif r < p_crossover + p_subtree_mutation:
            child = _put(parent, target, _random_tree(rng, int(rng.integers(3)), False, d, ops))
        elif r < sum(probabilities):
            node = _get(parent, target)
            if len(node) == 3:
                replacement = (ops[int(rng.integers(len(ops)))], node[1], node[2])
            else:
                replacement = _terminal(rng, d)
            child = _put(parent, target, replacement)
        else:
            child = parent
        return child if _size(child) <= max_length else parent

    trees = []
    for i in range(population):
        depth = 1 + i % 3
        for _ in range(10):  # ramped half-and-half within the length limit
            tree = _random_tree(rng, depth, bool(i % 2), d, ops)
            if _size(tree) <= max_length:
                break
        else:
            tree = _terminal(rng, d)
        trees.append(tree)
    evaluated = [evaluate(t) for t in trees]
    for _ in range(generations):
        trees = [t for t, _ in evaluated]
        scores = np.array([s for _, s in evaluated])
        offspring = [trees[int(np.argmin(scores))]]
        while len(offspring) < population:
            offspring.append(vary(trees[select(scores)], trees[select(scores)]))
        evaluated = [evaluate(t) for t in offspring]
    found: dict[str, tuple[Expression, np.ndarray]] = {}
    for tree, _ in evaluated:
        expression, values = fold_and_number(tree)
        found.setdefault(expression.string, (expression, values))
    for _, expression, constants in hall.values():
        found.setdefault(expression.string, (expression, np.asarray(constants, dtype=float)))
    return sorted(found.values(), key=lambda item: (item[0].length, item[0].string))
