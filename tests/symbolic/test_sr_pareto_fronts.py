"""Unit tests of icml25.symbolic.sr_pareto_fronts (APO fronts for symbolic regression)."""

from __future__ import annotations

import itertools
import json
import pickle

import numpy as np
import pytest
from scipy.optimize import minimize

from icml25.data.feynman import FEYNMAN_FORMULAS, make_feynman
from icml25.symbolic import (
    OPERATORS,
    SCIPY_METHODS,
    APOFront,
    Expression,
    FrontRow,
    apo_front,
    compare_optimizers,
    complete_lengths,
    decode_karva,
    enumerate_expressions,
    enumerate_structures,
    fit_constants,
    gp_symbolic_regression,
    hypervolume,
    parse_expression,
    read_front,
    score_against_front,
)
from icml25.symbolic.sr_pareto_fronts import __main__ as entry
from icml25.symbolic.sr_pareto_fronts import front as front_module
from icml25.symbolic.sr_pareto_fronts.fitting import check_n_jobs, prepare_data
from icml25.symbolic.sr_pareto_fronts.front import grammar_keys


@pytest.fixture(scope="module")
def product_data():
    X = np.random.default_rng(1).uniform(1, 5, size=(120, 2))
    return X, 2.5 * X[:, 0] * X[:, 1]


@pytest.fixture(scope="module")
def product_front(product_data):
    X, y = product_data
    return apo_front(X, y, head_length=2, standardize=False, seed=11284)


# --------------------------------------------------------------------------------------------------- grammar


def test_karva_decoding_is_breadth_first_and_sorts_symmetric_children():
    assert decode_karva(["Sub", "Mul", "R", "R", "R"]) == "Sub(Mul(R,R),R)"
    assert decode_karva(["Sub", "R", "Mul", "R", "R"]) == "Sub(R,Mul(R,R))"
    assert decode_karva(["Add", "R", "Mul", "R", "R"]) == "Add(Mul(R,R),R)"  # children sorted by string
    assert decode_karva(["R", "Pow", "Pow"]) == "R"  # unused symbols ignored


def test_karva_decoding_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown symbols"):
        decode_karva(["Sin", "R", "R"])
    with pytest.raises(ValueError, match="too short"):
        decode_karva(["Add", "R"])
    with pytest.raises(ValueError, match="unknown operators"):
        enumerate_structures(2, operators=("Add", "Exp"))
    with pytest.raises(ValueError, match="head_length"):
        enumerate_structures(0)
    with pytest.raises(ValueError, match="n_features"):
        enumerate_expressions(0, 2)


def test_structure_counts_match_the_paper():
    assert [len(enumerate_structures(h)) for h in (1, 2, 3, 4)] == [6, 31, 151, 976]
    assert len(enumerate_structures(2, operators=("Add",))) == 3  # R, Add(R,R), Add(Add(R,R),R)


def test_expression_counts_match_the_paper():
    small = enumerate_expressions(3, 2)
    assert len(small) == 1579 and sum(e.n_constants > 0 for e in small) == 856
    large = enumerate_expressions(3, 3)
    assert len(large) == 26254 and sum(e.n_constants > 0 for e in large) == 16621


def test_head_one_single_feature_by_hand():
    found = {e.string for e in enumerate_expressions(1, 1)}
    by_hand = {"x0", "c0"} | {f"{op}({a},{b})" for op in OPERATORS
                              for a, b in (("x0", "x0"), ("x0", "c0"), ("c0", "x0"))}
    assert found == by_hand  # Op(c, c) folds into c0


def test_complete_lengths_hold_every_small_tree():
    from icml25.symbolic.sr_pareto_fronts.grammar import fold_and_number

    assert complete_lengths(2) == (1, 3) and complete_lengths(3) == (1, 3, 5) and complete_lengths(4) == (1, 3, 5)
    leaves = [("x", 0), ("x", 1), ("c", float("nan"))]
    one = [(op, a, b) for op in OPERATORS for a in leaves for b in leaves]
    two = [(op, t, leaf) for op in OPERATORS for t in one for leaf in leaves]
    two += [(op, leaf, t) for op in OPERATORS for t in one for leaf in leaves]
    keys = {fold_and_number(t)[0].commutative_key() for t in leaves + one + two}  # every tree of length <= 5
    assert keys <= grammar_keys(2, 3)
    assert Expression("Sub(x0,Mul(x0,x0))").commutative_key() not in grammar_keys(1, 2)  # head 2 misses it


def test_expression_semantics():
    e = Expression("Pow(x0,c0)")
    assert e.length == 3 and e.n_constants == 1 and e.n_features == 1
    np.testing.assert_allclose(e.predict([[-2.0], [-8.0]], [2.0]), [4.0, 64.0])  # |a|^b
    np.testing.assert_allclose(Expression("Pow(x0,c0)").predict([[-8.0]], [1 / 3]), [2.0])
    assert np.isinf(Expression("Div(x0,x1)").predict([[1.0, 0.0]])[0])  # unprotected division
    np.testing.assert_allclose(Expression("c0").predict(np.zeros((3, 2)), [1.5]), [1.5] * 3)  # broadcast
    folded = Expression("Add(Mul(c0,c1),x0)")
    assert folded.string == "Add(c0,x0)" and folded.length == 3
    with pytest.raises(ValueError, match="2-d"):
        e.predict([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="constants"):
        e.predict([[1.0]], [1.0, 2.0])
    with pytest.raises(ValueError, match="features"):
        Expression("Add(x0,x3)").predict(np.ones((2, 2)))


def test_expression_spellings_pickling_and_sympy():
    e = Expression("Mul(c0,Add(x3,x1))")
    assert e.official_string == "Mul(x[0],Add(xdata[3],xdata[1]))"
    assert Expression(e.official_string) == e and e.structure == "Mul(R,Add(R,R))"
    assert pickle.loads(pickle.dumps(e)) == e
    assert Expression("Add(x0,x1)").commutative_key() == Expression("Add(x1,x0)").commutative_key()
    assert Expression("Sub(x0,x1)").commutative_key() != Expression("Sub(x1,x0)").commutative_key()
    import sympy

    x0 = sympy.Symbol("x0", real=True)
    assert Expression("Pow(x0,c0)").to_sympy() == sympy.Abs(x0) ** sympy.Symbol("c0")
    value = Expression("Div(Pow(x0,c0),x1)").to_sympy([2.0]).subs({x0: -3, sympy.Symbol("x1", real=True): 2})
    assert float(value) == pytest.approx(4.5)


def test_parse_expression_syntaxes():
    e, values = parse_expression("2.5*x0*x1 - x2/x1")
    assert e.string == "Sub(Mul(Mul(c0,x0),x1),Div(x2,x1))" and values.tolist() == [2.5]
    e, values = parse_expression("add(mul(X0, -X1), 0.5*3)")  # gplearn, unary minus, literal folding
    assert e.string == "Add(Mul(x0,Mul(c0,x1)),c1)" and values.tolist() == [-1.0, 1.5]
    e, values = parse_expression("Mul(x[0],Add(xdata[3],xdata[1]))")  # official spelling
    assert e.string == "Mul(c0,Add(x3,x1))" and np.isnan(values[0])
    e, _ = parse_expression("x_0 ** 2")
    assert e.string == "Pow(x0,c0)"
    with pytest.raises(ValueError, match="outside the grammar"):
        parse_expression("sin(x0) + 1")
    with pytest.raises(ValueError, match="cannot parse"):
        parse_expression("Add(x0,")
    with pytest.raises(ValueError, match="two arguments"):
        parse_expression("Add(x0)")
    with pytest.raises(TypeError, match="string"):
        parse_expression(3.0)


# --------------------------------------------------------------------------------------------------- fitting


def test_fit_constants_recovers_a_line_and_follows_the_official_start():
    x = np.linspace(-1, 1, 50)[:, None]
    fit = fit_constants("Add(Mul(c0,x0),c1)", x, 3 * x[:, 0] + 1)
    np.testing.assert_allclose(fit.constants, [3, 1], atol=1e-5)
    assert fit.r2 > 1 - 1e-10 and fit.nit > 0 and not fit.failed
    e, y = Expression("Pow(x0,c0)"), np.abs(x[:, 0]) ** 1.7 + 0.1
    start = 2 * np.random.RandomState(7).rand(1) - 1  # np.random.seed(seed) per expression, as the official code
    expected = minimize(lambda c: np.mean((e.predict(x, c) - y) ** 2), start, method="Nelder-Mead").x
    np.testing.assert_allclose(fit_constants(e, x, y, method="nelder-mead", seed=7).constants, expected)
    assert fit_constants(e, x, y, seed=3).constants.tolist() == fit_constants(e, x, y, seed=3).constants.tolist()


def test_fit_constants_bad_input():
    x, y = np.linspace(0, 1, 10)[:, None], np.linspace(0, 2, 10)
    with pytest.raises(ValueError, match="method must be one of 'BFGS'"):
        fit_constants("Mul(c0,x0)", x, y, method="adam")
    with pytest.raises(ValueError, match="n_restarts"):
        fit_constants("Mul(c0,x0)", x, y, n_restarts=0)
    with pytest.raises(ValueError, match="x0 must hold 1"):
        fit_constants("Mul(c0,x0)", x, y, x0=[1.0, 2.0])
    with pytest.raises(TypeError, match="Expression or a string"):
        fit_constants(3, x, y)


@pytest.mark.parametrize(
    ("X", "y", "match"),
    [
        (np.ones(5), np.arange(5.0), "X must be a 2-d"),
        (np.ones((5, 1)), np.ones((5, 1)), "y must be a 1-d"),
        (np.ones((5, 1)), np.arange(4.0), "same length"),
        (np.ones((5, 0)), np.arange(5.0), "at least one feature"),
        (np.ones((2, 1)), np.arange(2.0), "at least 3 entries"),
        (np.array([[1.0], [np.nan], [2.0]]), np.arange(3.0), "finite"),
        (np.ones((5, 1)), np.ones(5), "constant"),
    ],
)
def test_prepare_data_rejects_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        prepare_data(X, y)


def test_standardisation_is_the_official_one():
    X = np.column_stack([np.arange(10.0), np.full(10, 3.0)])
    data = prepare_data(X, 5 * np.arange(10.0) + 2)
    np.testing.assert_allclose(data.XT[0].mean(), 0, atol=1e-12)
    np.testing.assert_allclose(data.XT[0].std(), 1)
    assert np.all(data.XT[1] == 0)  # a constant feature becomes zeros, as StandardScaler
    assert data.y_std == pytest.approx(5 * np.arange(10.0).std())


# ------------------------------------------------------------------------------------------------------ fronts


def test_known_formula_is_found_at_length_five(product_front):
    assert product_front.r2_at(5) >= 0.999999 and product_front.r2_at(3) < product_front.r2_at(5) - 1e-3
    best = product_front.best_per_length()
    assert [r.length for r in best] == [1, 3, 5]
    front = product_front.pareto_front()
    assert all(a.r2 < b.r2 for a, b in zip(front, front[1:], strict=False))
    assert product_front.metadata["n_expressions"] == 643 and product_front.n_failed > 0  # e.g. Div(x0,Sub(x1,x1))
    r2 = [r.r2 for r in product_front.rows]
    n_ok = len(r2) - product_front.n_failed
    assert r2[:n_ok] == sorted(r2[:n_ok], reverse=True) and r2[n_ok:] == [None] * product_front.n_failed


def test_parallel_search_equals_serial_and_reports_progress():
    X = np.random.default_rng(0).normal(size=(60, 2))
    y = X[:, 0] - 2 * X[:, 1] ** 2
    calls = []
    serial = apo_front(X, y, head_length=1, seed=5)
    parallel = apo_front(X, y, head_length=1, seed=5, n_jobs=2, progress=lambda d, t: calls.append((d, t)))
    assert serial.rows == parallel.rows
    assert calls[-1] == (serial.metadata["n_expressions"],) * 2 and len(calls) > 1


def test_n_jobs_values():
    assert check_n_jobs(1) == 1 and check_n_jobs(2) == 2 and check_n_jobs(-1) >= 1
    for bad in (0, -2):
        with pytest.raises(ValueError, match="n_jobs"):
            check_n_jobs(bad)
    for bad in (1.5, True):
        with pytest.raises(TypeError, match="n_jobs"):
            check_n_jobs(bad)


def test_heavy_search_needs_a_limit(monkeypatch):
    monkeypatch.setattr(front_module, "HEAVY_FILLS", 10)
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30.0)
    with pytest.raises(ValueError, match="max_expressions"):
        apo_front(X, y, head_length=1)
    with pytest.warns(UserWarning, match="candidate expressions"):
        limited = apo_front(X, y, head_length=1, max_expressions=12)
    assert len(limited.rows) == 12
    with pytest.raises(ValueError, match="max_expressions"):
        apo_front(X, y, head_length=1, max_expressions=0, force=True)
    with pytest.raises(ValueError, match="n_jobs"):
        apo_front(X, y, head_length=1, n_jobs=0)
    with pytest.raises(ValueError, match="method must be one of"):
        compare_optimizers(X, y, methods=("BFGS", "sgd"), head_length=1)


def test_compare_optimizers_runs_every_method():
    X = np.random.default_rng(2).uniform(1, 2, size=(40, 1))
    fronts = compare_optimizers(X, 2.5 * X[:, 0], head_length=1, standardize=False)
    assert list(fronts) == list(SCIPY_METHODS)
    for front in fronts.values():  # every optimiser fits Mul(x0,c0) exactly
        assert front.r2_at(3) == pytest.approx(1.0, abs=1e-6) and front.r2_at(1) < 0.9


def test_hypervolume_by_hand():
    assert hypervolume([1, 3], [0.5, 0.8], max_length=5) == pytest.approx(2 * 0.5 + 3 * 0.8)
    assert hypervolume([1, 3, 7], [-0.2, 0.8, 0.9], max_length=5) == pytest.approx(3 * 0.8)
    assert hypervolume([3, 5], [0.8, 0.6], max_length=5) == pytest.approx(3 * 0.8)  # dominated point adds nothing


def test_csv_round_trip_gives_the_same_front(product_front, tmp_path):
    for which in ("best", "front", "table"):
        for style in ("icml25", "official"):
            back = read_front(product_front.to_csv(tmp_path / f"{which}_{style}.csv", which=which, style=style))
            assert back.pareto_front() == product_front.pareto_front()
            assert back.best_per_length() == product_front.best_per_length()
    assert read_front(tmp_path / "table_icml25.csv").rows == product_front.rows
    assert product_front.columns("front")["EquationLength"] == [r.length for r in product_front.pareto_front()]
    with pytest.raises(ValueError, match="which"):
        product_front.to_csv(tmp_path / "x.csv", which="all")


def test_read_official_summary_file(tmp_path):
    text = (
        "EquationLength,EquationStructure,EquationLambda,EquationParameters,NumericalIterations,MSE,R2\n"
        '1,xdata[2],"lambda x,xdata:xdata[2]",,,0.71,0.64\n'
        '7,"Sub(Mul(xdata[1],x[0]),Mul(xdata[3],x[1]))","lambda x,xdata:...",[ 0.5307404  -0.55039348],6.0,0.39,0.80\n'
        '3,"Mul(xdata[2],x[0])","lambda x,xdata:Mul(xdata[2],x[0])",[0.82338343],2.0,0.64,0.67\n'
    )
    path = tmp_path / "official.csv"
    path.write_text(text)
    front = read_front(path)
    assert [r.length for r in front.pareto_front()] == [1, 3, 7]
    assert front.pareto_front()[2].parameters == (0.5307404, -0.55039348)
    assert front.pareto_front()[2].structure == "Sub(Mul(x1,c0),Mul(x3,c1))"
    path.write_text(text.replace("\n3,", "\n5,"))
    with pytest.raises(ValueError, match="EquationLength 5"):
        read_front(path)
    path.write_text("Length,R2\n1,0.5\n")
    with pytest.raises(ValueError, match="lacks the columns"):
        read_front(path)


# ----------------------------------------------------------------------------------------------------- scoring


def test_scoring_expressions_against_the_front(product_front, product_data):
    X, y = product_data
    card = score_against_front(
        product_front,
        ["x0*x1", "2*x0*x1", "Sub(x0,Mul(x1,x1))", "x0*x1*x1*x0*x1", (Expression("Mul(c0,x0)"), [2.0])],
        X, y, seed=1,
    )
    rows = {r.expression: r for r in card.rows}
    assert rows["Mul(Mul(c0,x0),x1)"].r2 == pytest.approx(1.0) and rows["Mul(Mul(c0,x0),x1)"].gap >= -1e-9
    assert rows["Sub(x0,Mul(x1,x1))"].in_grammar is False  # head 2 does not enumerate it
    assert card.outside_above_front() == []
    assert rows["Mul(Mul(Mul(Mul(x0,x1),x1),x0),x1)"].apo_r2 is None  # longer than the front
    assert all(r.gap >= -1e-6 for r in card.compared())
    summary = card.summary()
    assert summary["n_expressions"] == 5 and summary["n_outside_grammar"] >= 1 and summary["n_exceedances"] == 0
    assert summary["hypervolume"] <= summary["apo_hypervolume"] + 1e-9
    json.dumps(summary)
    fixed = score_against_front(product_front, [(Expression("Mul(Mul(c0,x0),x1)"), [2.5])], X, y, refit=False)
    assert fixed.rows[0].r2 == pytest.approx(1.0)
    with pytest.raises(ValueError, match="refit=False"):
        score_against_front(product_front, ["Mul(c0,x0)"], X, y, refit=False)
    with pytest.raises(TypeError, match="an expression must be"):
        score_against_front(product_front, [3.0], X, y)
    with pytest.raises(TypeError, match="APOFront"):
        score_against_front({}, ["x0"], X, y)
    with pytest.raises(ValueError, match="features"):
        score_against_front(product_front, ["x5"], X, y)


def test_front_scored_against_itself_has_no_gap(product_front, product_data):
    X, y = product_data
    card = product_front.score([r.structure for r in product_front.best_per_length()], X, y, n_restarts=1,
                               seed=product_front.seed)
    assert [r.gap for r in card.rows] == pytest.approx([0.0] * len(card.rows), abs=1e-9)


def test_an_expression_outside_the_head_two_grammar_can_beat_its_front():
    X = np.random.default_rng(5).uniform(1, 5, size=(100, 2))
    y = X[:, 0] - X[:, 1] * X[:, 1]  # Sub(x0, Mul(x1, x1)) has its second operator in the tail at head 2
    front = apo_front(X, y, head_length=2, standardize=False)
    card = front.score(["x0 - x1*x1"], X, y)
    assert card.rows[0].r2 == pytest.approx(1.0) and front.r2_at(5) < 0.999
    assert [r.expression for r in card.outside_above_front()] == ["Sub(x0,Mul(x1,x1))"]
    assert card.exceedances() == []  # inside the grammar nothing beats the front


def test_front_without_grammar_metadata_compares_everything(product_front, product_data):
    X, y = product_data
    bare = APOFront([FrontRow(r.length, r.structure, r.parameters, r.nit, r.mse, r.r2)
                     for r in product_front.best_per_length()], standardize=False)
    card = bare.score(["Sub(x0,Mul(x1,x1))"], X, y)
    assert card.rows[0].in_grammar is None and len(card.compared()) == 1


# ---------------------------------------------------------------------------------------------------- baseline


def test_gp_baseline_is_seeded_and_respects_the_length_limit():
    X = np.random.default_rng(3).normal(size=(80, 2))
    y = X[:, 0] * X[:, 1] + X[:, 0]
    first = gp_symbolic_regression(X, y, population=30, generations=3, max_length=7, seed=4)
    again = gp_symbolic_regression(X, y, population=30, generations=3, max_length=7, seed=4)
    assert [(e.string, c.tolist()) for e, c in first] == [(e.string, c.tolist()) for e, c in again]
    assert all(e.length <= 7 and c.size == e.n_constants for e, c in first)
    best = max(score_against_front(apo_front(X, y, head_length=1), first, X, y).rows, key=lambda r: r.r2 or -1)
    assert best.r2 > 0.3
    with pytest.raises(ValueError, match="population"):
        gp_symbolic_regression(X, y, population=0)
    with pytest.raises(ValueError, match="p_crossover"):
        gp_symbolic_regression(X, y, p_crossover=0.9, p_subtree_mutation=0.2)


# ---------------------------------------------------------------------------------------------- entry and data


def test_module_entry_point(tmp_path, capsys):
    X, y = make_feynman("I.12.1", n_samples=60, seed=0)
    np.savetxt(tmp_path / "d.csv", np.column_stack([X, y]), delimiter=",", header="mu,N,F", comments="")
    (tmp_path / "e.txt").write_text("x0*x1\n\n2*x0 + x1\n")
    front_csv = tmp_path / "f.csv"
    assert entry.main(["front", str(tmp_path / "d.csv"), "--head-length", "1", "--no-standardize",
                       "--out", str(front_csv)]) == 0
    assert json.loads(capsys.readouterr().out)["pareto_front"][-1][2] == pytest.approx(1.0)
    assert entry.main(["score", str(front_csv), str(tmp_path / "d.csv"), str(tmp_path / "e.txt"),
                       "--no-standardize", "--out", str(tmp_path / "s.csv")]) == 0
    assert json.loads(capsys.readouterr().out)["n_expressions"] == 2
    assert entry.main(["score", str(front_csv), str(tmp_path / "d.csv"), str(tmp_path / "e.txt"),
                       "--target", "nope"]) == 2
    assert "no column" in capsys.readouterr().err


def test_feynman_generator():
    for name, (_, n_vars, formula) in FEYNMAN_FORMULAS.items():
        X, y = make_feynman(name, n_samples=50, seed=1)
        assert X.shape == (50, n_vars) and np.all((X >= 1) & (X <= 5))
        np.testing.assert_allclose(y, formula(X))
    X, y = make_feynman("I.25.13", n_samples=500, noise=0.1, seed=2)
    assert 0 < np.std(y - X[:, 0] / X[:, 1]) < 0.2 * np.std(y)
    with pytest.raises(ValueError, match="name must be one of"):
        make_feynman("I.99.9")
    with pytest.raises(ValueError, match="n_samples"):
        make_feynman("I.12.1", n_samples=0)


def test_structures_are_distinct_and_closed_under_decoding():
    structures = enumerate_structures(3)
    assert len(set(structures)) == len(structures)
    assert all(decode_karva(list(p) + ["R"] * 4) in structures
               for p in itertools.islice(itertools.product((*OPERATORS, "R"), repeat=3), 50))


def test_hypervolume_and_front_queries_validate_their_arguments(product_front):
    """issue 19: NaN R^2, bad lengths and a string length were accepted silently or failed deep in zip()."""
    assert hypervolume([1, 3], [0.5, None], 4) == pytest.approx(2.0)
    with pytest.raises(ValueError, match=r"r2\[0\] must be a finite real number"):
        hypervolume([1], [float("nan")], 3)
    with pytest.raises(ValueError, match="lengths and r2 must have the same length"):
        hypervolume([1, 2], [0.5], 3)
    with pytest.raises(TypeError, match="lengths must be a sequence"):
        hypervolume(None, [0.5], 3)
    with pytest.raises(ValueError, match="max_length"):
        hypervolume([1], [0.5], 0)
    with pytest.raises(TypeError, match="length must be an integer"):
        product_front.r2_at("abc")
    with pytest.raises(ValueError, match="max_length"):
        product_front.hypervolume(-1)


def test_expression_entry_points_name_the_bad_argument(product_data):
    """issue 19: evaluate raised IndexError on too few rows/constants; parse errors did not name the argument."""
    X, y = product_data
    e = Expression("Mul(x0,c0)")
    assert e.evaluate(np.ones((1, 3)), np.array([2.0])).tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="XT must have at least 1 rows"):
        e.evaluate(np.ones((0, 3)), np.array([2.0]))
    with pytest.raises(ValueError, match="constants must hold the 1 constants"):
        e.evaluate(np.ones((1, 3)), np.array([]))
    with pytest.raises(ValueError, match="XT must be a 2-d array"):
        e.evaluate(np.ones((1, 1, 3)), np.array([2.0]))
    with pytest.raises(ValueError, match="constants must contain only finite values"):
        e.predict(np.ones((3, 1)), [float("nan")])
    with pytest.raises(ValueError, match="text: 'no' in 'no-such' is outside the grammar"):
        Expression("no-such")
    with pytest.raises(ValueError, match="expression: cannot parse"):
        fit_constants("Mul(", X, y)
    with pytest.raises(ValueError, match="expressions must have at least 1 entries"):
        score_against_front(APOFront([FrontRow(1, "x0", (), None, 1.0, 0.5)]), [], X, y)
    with pytest.raises(ValueError, match="symbols must hold at least one symbol"):
        decode_karva([])
    with pytest.raises(TypeError, match="operators must be a sequence"):
        enumerate_structures(1, operators=None)
