"""Valid calls of ``icml25.symbolic`` (absolute Pareto-optimal fronts for symbolic regression)."""

import functools
import os
import tempfile

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import symbolic as sy
from icml25.symbolic import sr_pareto_fronts as sr

_TMP = tempfile.mkdtemp(prefix="icml25-symbolic-")
_PATH = {"path": "a filesystem path: any name is a valid file name"}
# Expression.evaluate is the optimisers' unchecked-values fast path: NaN in the data or the constants propagates
_PROPAGATES = {"XT": "nan", "constants": "nan"}


def _data():
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 5, size=(30, 2))
    return {"X": X, "y": 2.5 * X[:, 0] * X[:, 1] + 0.1 * X[:, 0]}


@functools.cache
def _front():
    return sy.apo_front(**_data(), head_length=1, standardize=False, seed=0)


@functools.cache
def _card():
    return _front().score(["x0*x1"], **_data())


@functools.cache
def _front_csv():
    return str(_front().to_csv(os.path.join(_TMP, "front.csv")))


EXAMPLES = {
    # records the library builds
    "icml25.symbolic.APOFront": Exempt("record"),
    "icml25.symbolic.FitResult": Exempt("record"),
    "icml25.symbolic.FrontRow": Exempt("record"),
    "icml25.symbolic.Scorecard": Exempt("record"),
    "icml25.symbolic.ScoredExpression": Exempt("record"),
    "icml25.symbolic.sr_pareto_fronts.Data": Exempt("record"),
    # grammar
    "icml25.symbolic.Expression": Example(sy.Expression, {"text": "Mul(x0,c0)"}),
    "icml25.symbolic.Expression.evaluate": Example(
        lambda **kw: sy.Expression("Mul(x0,c0)").evaluate(**kw),
        lambda: {"XT": np.array([[1.0, 2.0, 3.0]]), "constants": np.array([2.0])}, allow=_PROPAGATES),
    "icml25.symbolic.Expression.predict": Example(
        lambda **kw: sy.Expression("Mul(x0,c0)").predict(**kw),
        lambda: {"X": np.array([[1.0], [2.0], [3.0]]), "constants": np.array([2.0])}, allow={"X": "nan"}),
    "icml25.symbolic.Expression.to_sympy": Example(lambda **kw: sy.Expression("Mul(x0,c0)").to_sympy(**kw),
                                                   {"constants": [2.0]}),
    "icml25.symbolic.parse_expression": Example(sy.parse_expression, {"text": "2.5*x0*x1 + 0.1"}),
    "icml25.symbolic.decode_karva": Example(sy.decode_karva, {"symbols": ["Mul", "R", "R"]}),
    "icml25.symbolic.complete_lengths": Example(sy.complete_lengths, {"head_length": 2}, positive=["head_length"]),
    "icml25.symbolic.enumerate_structures": Example(sy.enumerate_structures, {"head_length": 1},
                                                    positive=["head_length"]),
    "icml25.symbolic.enumerate_expressions": Example(sy.enumerate_expressions, {"n_features": 2, "head_length": 1},
                                                     positive=["n_features", "head_length"]),
    "icml25.symbolic.sr_pareto_fronts.count_fills": Example(sr.count_fills, {"head_length": 2, "n_features": 2},
                                                            positive=["head_length", "n_features"]),
    # fitting
    "icml25.symbolic.sr_pareto_fronts.prepare_data": Example(sr.prepare_data, _data, paired=[("X", "y")]),
    "icml25.symbolic.fit_constants": Example(sy.fit_constants, lambda: {"expression": "Mul(Mul(x0,x1),c0)",
                                                                        **_data(), "seed": 0, "n_restarts": 1},
                                             paired=[("X", "y")], positive=["n_restarts"]),
    "icml25.symbolic.apo_front": Example(sy.apo_front, lambda: {**_data(), "head_length": 1, "seed": 0,
                                                                "n_jobs": 1, "max_expressions": 50},
                                         paired=[("X", "y")], positive=["head_length", "max_expressions"],
                                         allow={"n_jobs": "neg"}),
    "icml25.symbolic.compare_optimizers": Example(sy.compare_optimizers,
                                                  lambda: {**_data(), "methods": ("BFGS",), "head_length": 1},
                                                  paired=[("X", "y")]),
    "icml25.symbolic.gp_symbolic_regression": Example(
        sy.gp_symbolic_regression, lambda: {**_data(), "population": 8, "generations": 2, "max_length": 5,
                                            "seed": 0, "tournament_size": 3},
        paired=[("X", "y")], positive=["population", "generations", "max_length", "tournament_size"],
        nonneg=["p_crossover", "p_subtree_mutation", "p_point_mutation", "parsimony"]),
    # fronts
    "icml25.symbolic.hypervolume": Example(sy.hypervolume, {"lengths": [1, 3, 5], "r2": [0.2, 0.8, 1.0],
                                                            "max_length": 7},
                                           paired=[("lengths", "r2")], positive=["max_length"]),
    "icml25.symbolic.APOFront.r2_at": Example(lambda **kw: _front().r2_at(**kw), {"length": 3}, positive=["length"]),
    "icml25.symbolic.APOFront.hypervolume": Example(lambda **kw: _front().hypervolume(**kw), {"max_length": 5},
                                                    positive=["max_length"]),
    "icml25.symbolic.APOFront.columns": Example(lambda **kw: _front().columns(**kw), {"which": "best"}),
    "icml25.symbolic.APOFront.to_csv": Example(lambda **kw: _front().to_csv(**kw),
                                               {"path": os.path.join(_TMP, "out.csv"), "which": "best"}, skip=_PATH),
    "icml25.symbolic.APOFront.score": Example(lambda **kw: _front().score(**kw),
                                              lambda: {"expressions": ["x0*x1"], **_data()}, paired=[("X", "y")]),
    "icml25.symbolic.score_against_front": Example(
        sy.score_against_front, lambda: {"front": _front(), "expressions": ["x0*x1", "2.4*x0*x1 + 0.1"], **_data(),
                                         "n_restarts": 1, "seed": 0, "tolerance": 1e-6},
        paired=[("X", "y")], positive=["n_restarts"], nonneg=["tolerance"], allow={"n_jobs": "neg"}),
    "icml25.symbolic.Scorecard.to_csv": Example(lambda **kw: _card().to_csv(**kw),
                                                {"path": os.path.join(_TMP, "card.csv")}, skip=_PATH),
    "icml25.symbolic.read_front": Example(sy.read_front, lambda: {"path": _front_csv()},
                                          skip={"path": "a file path; a missing file raises FileNotFoundError, "
                                                        "the standard exception for it"}),
}

EXAMPLES.update({
    "icml25.symbolic.Expression.from_tree": Example(sy.Expression.from_tree,
                                                    {"tree": ("Mul", ("x", 0), ("c", 0))}),
})
