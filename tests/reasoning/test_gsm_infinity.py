"""Unit tests of icml25.reasoning.gsm_infinity: generators, solver, scoring, models, harness, analysis, CLI."""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from icml25.reasoning.gsm_infinity import (
    BM25,
    CallableModel,
    GenerationError,
    ModelRequestError,
    OpenAICompatibleClient,
    OracleModel,
    Problem,
    RAGModel,
    RandomGuessModel,
    Results,
    SigmoidModel,
    SolverError,
    auc,
    check,
    count_tokens,
    evaluate,
    extract_integer,
    extract_variables,
    first_op_below,
    fit_exponential,
    fit_sigmoid,
    generate_realistic,
    generate_symbolic,
    log2_slope,
    make_benchmark,
    pass_at_k,
    read_jsonl,
    score,
    serve_chat_model,
    solve_realistic,
    solve_symbolic,
    write_jsonl,
)
from icml25.reasoning.gsm_infinity.cli import run as cli_run


# ---------------------------------------------------------------- symbolic generator
@pytest.mark.parametrize("op", [1, 2, 7, 40])
def test_symbolic_op_exact_and_solver_agrees(op):
    for seed in range(5):
        p = generate_symbolic(op, seed=seed)
        assert p.op == op and len(p.statements) == op and len(p.necessary) == op
        assert solve_symbolic(p.equations, int(p.query)) == (p.answer, op)
        assert p.answer and p.solution.endswith("ANSWER: " + ", ".join(p.answer))


def test_symbolic_deterministic_byte_identical():
    a = json.dumps(generate_symbolic(12, n_noise=50, seed=3).to_json(), sort_keys=True)
    b = json.dumps(generate_symbolic(12, n_noise=50, seed=3).to_json(), sort_keys=True)
    c = json.dumps(generate_symbolic(12, n_noise=50, seed=4).to_json(), sort_keys=True)
    assert a == b and a != c


def test_symbolic_noise_keeps_answer_and_is_underivable():
    base = generate_symbolic(10, seed=7)
    for target in (400, 1500):
        p = generate_symbolic(10, target_tokens=target, seed=7)
        assert p.answer == base.answer and p.query == base.query
        assert abs(p.length_tokens - target) <= 0.05 * target
        names, derivable = solve_symbolic(p.equations, int(p.query))
        assert derivable == 10  # no noise variable is derivable
        noise_targets = {e["target"] for i, e in enumerate(p.equations) if i not in p.necessary}
        core_targets = {p.equations[i]["target"] for i in p.necessary}
        assert noise_targets and not noise_targets & core_targets


def test_symbolic_custom_tokenizer_controls_length():
    chars = len
    p = generate_symbolic(5, target_tokens=3000, tokenizer=chars, seed=1)
    assert abs(len(p.prompt) - 3000) <= 150 and p.length_tokens == len(p.prompt)


def _official_symbolic_stats(op, seeds):
    """The official algorithm re-implemented from its description (sizes and root values only)."""
    sizes, roots = [], []
    for seed in seeds:
        rng = random.Random(10_000 + seed)
        values = [rng.randint(0, 10)]
        for i in range(1, op):
            values.append(values[rng.randrange(i)] + rng.choice((0, 1, -1)))
        roots.append(values[0])
        sizes.append(values.count(rng.choice(values)))
    return sizes, roots


def test_symbolic_statistics_match_the_official_algorithm():
    op, seeds = 10, range(400)
    ours = [generate_symbolic(op, seed=s) for s in seeds]
    sizes = [len(p.answer) for p in ours]
    roots = [p.equations[[e["op"] for e in p.equations].index("const")]["const"] for p in ours]
    ref_sizes, ref_roots = _official_symbolic_stats(op, seeds)
    assert abs(np.mean(sizes) - np.mean(ref_sizes)) < 0.35
    assert set(roots) <= set(range(11)) and abs(np.mean(roots) - 5) < 0.6 and abs(np.mean(ref_roots) - 5) < 0.6
    hist, ref = Counter(min(s, 5) for s in sizes), Counter(min(s, 5) for s in ref_sizes)
    assert sum(abs(hist[k] - ref[k]) for k in range(1, 6)) / len(seeds) < 0.2


def test_symbolic_bad_input():
    with pytest.raises(ValueError, match="op must be an integer >= 1"):
        generate_symbolic(0, seed=0)
    with pytest.raises(TypeError, match="op must be an integer"):
        generate_symbolic(2.5, seed=0)
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        generate_symbolic(3, seed=-1)
    with pytest.raises(ValueError, match="use at least"):
        generate_symbolic(30, target_tokens=50, seed=0)
    with pytest.raises(ValueError, match="not both"):
        generate_symbolic(3, n_noise=2, target_tokens=500, seed=0)
    with pytest.raises(ValueError, match="name pool"):
        generate_symbolic(10, n_noise=10**6, seed=0)


# ---------------------------------------------------------------- realistic generator
@pytest.mark.parametrize("difficulty", ["medium", "hard"])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_realistic_op_exact_and_solver_agrees(difficulty, mode):
    for op in (2, 5, 11, 20):
        for seed in range(3):
            stats = {}
            p = generate_realistic(op, difficulty=difficulty, mode=mode, seed=seed, stats=stats)
            assert p.op == op and stats["attempts"] >= 1
            assert solve_realistic(p.equations, p.query, mode) == (p.answer, op)
            assert p.solution.endswith(f"Answer: {p.answer}.")
            used = {a for e in p.equations for a in e["args"]} | {p.query}
            used |= {e["target"] for e in p.equations if e["op"] == "given"}
            assert any(k.startswith("A") for k in used)  # every core needs an implicit aggregate


def test_realistic_hard_uses_products_and_reverse_hides_a_constant():
    p = generate_realistic(8, difficulty="hard", seed=2)
    graph_keys = [a for e in p.equations for a in e["args"]] + [p.query]
    assert any(k.startswith("A02") for k in graph_keys)
    r = generate_realistic(8, difficulty="medium", mode="reverse", seed=5)
    assert r.query.startswith("I") and all(e["target"] != r.query for e in r.equations)
    assert sum(e["op"] == "given" for e in r.equations) == 1


@pytest.mark.parametrize("template", ["zoo", "school", "movie"])
def test_realistic_noise_keeps_answer_and_hangs_off_the_core(template):
    base = generate_realistic(9, difficulty="hard", template=template, seed=11)
    p = generate_realistic(9, difficulty="hard", template=template, target_tokens=2500, seed=11)
    assert p.answer == base.answer and abs(p.length_tokens - 2500) <= 125
    core = {p.equations[i]["target"] for i in p.necessary}
    noise = [e for i, e in enumerate(p.equations) if i not in p.necessary]
    assert noise and all(e["target"] not in core for e in noise)
    assert any(a in core for e in noise for a in e["args"])  # spider: noise reads core parameters
    assert len(p.necessary) / len(p.statements) < len(base.necessary) / len(base.statements)
    check(p)


def test_make_benchmark_deterministic_and_checked():
    a = make_benchmark("hard", [3, 6], 2, lengths=[0, 700], seed=4, mode="reverse", template="movie")
    b = make_benchmark("hard", [3, 6], 2, lengths=[0, 700], seed=4, mode="reverse", template="movie")
    assert [p.to_json() for p in a] == [p.to_json() for p in b] and len({p.id for p in a}) == 8
    assert [p.answer for p in a[:4]] == [p.answer for p in a[4:]]  # same cores at every length
    with pytest.raises(ValueError, match="per_op must be an integer >= 1"):
        make_benchmark("medium", [3], 0)
    with pytest.raises(ValueError, match="ops must have at least 1 entries"):
        make_benchmark("medium", [], 1)
    with pytest.raises(TypeError, match=r"ops\[1\] must be an integer"):
        make_benchmark("medium", [3, "4"], 1)
    with pytest.raises(ValueError, match="only the forward"):
        make_benchmark("symbolic", [3], 1, mode="reverse")


def test_realistic_deterministic():
    kwargs = dict(difficulty="hard", mode="reverse", template="movie", n_noise=30, seed=9)
    assert generate_realistic(10, **kwargs).to_json() == generate_realistic(10, **kwargs).to_json()


def test_realistic_bad_input():
    with pytest.raises(ValueError, match="op must be an integer >= 2"):
        generate_realistic(1, seed=0)
    with pytest.raises(ValueError, match="difficulty must be one of"):
        generate_realistic(5, difficulty="easy", seed=0)
    with pytest.raises(ValueError, match="template must be one of"):
        generate_realistic(5, template="farm", seed=0)
    with pytest.raises(ValueError, match="use at least"):
        generate_realistic(10, target_tokens=20, seed=0)
    with pytest.raises(GenerationError, match="acceptance rate"):
        generate_realistic(80, difficulty="medium", seed=0, max_attempts=3)


# ---------------------------------------------------------------- solver
def test_solver_known_answers():
    eqs = [{"target": "I01|Z|fox", "op": "const", "args": [], "const": 3},
           {"target": "I01|Z|owl", "op": "add", "args": ["I01|Z|fox"], "const": 2},
           {"target": "I12|fox|eggs", "op": "mul", "args": ["I01|Z|owl"], "const": 2},
           {"target": "I12|owl|eggs", "op": "const", "args": [], "const": 1}]
    assert solve_realistic(eqs, "A01|Z") == (8, 1 + 2 + 2)  # fox, owl, the 2-term sum
    assert solve_realistic(eqs, "A02|Z|eggs") == (3 * 10 + 5 * 1, 1 + 2 + 2 + 1 + 4)
    rev = [eqs[1], eqs[2], eqs[3], {"target": "A01|Z", "op": "given", "args": [], "const": 8}]
    assert solve_realistic(rev, "I01|Z|fox", "reverse") == (3, 1 + 2 + 2)  # hidden fox counts 1
    sym = [{"target": "V000001", "op": "const", "args": [], "const": 4},
           {"target": "V000002", "op": "sub", "args": ["V000001"], "const": 1},
           {"target": "V000003", "op": "copy", "args": ["V000001"], "const": None},
           {"target": "V000005", "op": "add", "args": ["V000004"], "const": 1}]
    assert solve_symbolic(sym, 4) == (["V000001", "V000003"], 3)
    loop = [{"target": "V000007", "op": "copy", "args": ["V000008"], "const": None},
            {"target": "V000008", "op": "add", "args": ["V000007"], "const": 1}]
    assert solve_symbolic(sym + loop, 5) == ([], 3)  # a cycle is never derivable


def test_solver_rejects_undetermined_systems():
    with pytest.raises(SolverError, match="never defined"):
        solve_realistic([{"target": "I01|Z|a", "op": "copy", "args": ["I01|Z|b"], "const": None}], "I01|Z|a")
    cyc = [{"target": "I01|Z|a", "op": "copy", "args": ["I01|Z|b"], "const": None},
           {"target": "I01|Z|b", "op": "copy", "args": ["I01|Z|a"], "const": None}]
    with pytest.raises(SolverError, match="cyclic"):
        solve_realistic(cyc, "I01|Z|a")
    nonlinear = [{"target": "I12|a|c", "op": "copy", "args": ["I01|Z|a"], "const": None},
                 {"target": "A02|Z|c", "op": "given", "args": [], "const": 9}]
    with pytest.raises(SolverError, match="nonlinear"):
        solve_realistic(nonlinear, "I01|Z|a", "reverse")
    with pytest.raises(SolverError, match="unknown parameter key"):
        solve_realistic([{"target": "X|y", "op": "const", "args": [], "const": 1}], "I01|Z|a")
    with pytest.raises(SolverError, match="query must be a parameter key"):
        solve_realistic([{"target": "I01|Z|a", "op": "const", "args": [], "const": 1}], "X|y")


# ---------------------------------------------------------------- scoring
def test_extract_integer_priorities_and_bad_replies():
    assert extract_integer("x is 4. Answer: 12. Later Answer: 15.") == 15
    assert extract_integer("so \\boxed{1,024}") == 1024
    assert extract_integer("The final answer: 7") == 7
    assert extract_integer("first it is 3, then it is 9") == 9
    assert extract_integer("<think>Answer: 1</think> Answer: 2") == 2
    assert extract_integer(None) is None and extract_integer("") is None and extract_integer("Answer: none") is None
    assert extract_integer(b"Answer: 5\xff") == 5 and extract_integer("Answer: 2.5") is None
    assert extract_integer("blah " * 100_000 + "Answer: 6") == 6


def test_extract_variables_and_symbolic_score():
    assert extract_variables("V000001 maybe. ANSWER: V000003, V000002") == ["V000002", "V000003"]
    assert extract_variables("ANSWER: None") == [] and extract_variables("no idea") is None
    assert extract_variables(None) is None
    p = generate_symbolic(4, seed=0)
    assert score(p, p.solution) and not score(p, "ANSWER: None") and not score(p, None)
    assert not score(p, "ANSWER: " + ", ".join(p.answer + ["V999999"]))
    assert not score(p, p.solution, extractor=lambda text: 1 / 0)  # a broken extractor is a wrong answer


# ---------------------------------------------------------------- models and harness
@pytest.fixture(scope="module")
def problems():
    return make_benchmark("symbolic", [2, 6], 3, seed=1) + make_benchmark("medium", [3, 8], 3, seed=1)


def test_callable_model_and_harness(problems):
    oracle = OracleModel(problems)
    solutions = {p.prompt: p.solution for p in problems}
    res = evaluate(lambda prompt: solutions[prompt], problems, workers=2)
    assert all(all(r["correct"]) for r in res.records) and [r["id"] for r in res.records] == [p.id for p in problems]
    assert res.records == evaluate(oracle, problems, workers=1).records
    wrapped = CallableModel(lambda messages, temperature: solutions[messages[-1]["content"]], messages=True)
    assert evaluate(wrapped, problems, n_samples=2).pass_at_k([1, 2]) == {1: 1.0, 2: 1.0}


def test_harness_counts_failures_as_wrong(problems):
    def broken(prompt):
        raise RuntimeError("boom")

    res = evaluate(broken, problems)
    assert not any(r["correct"][0] for r in res.records) and "boom" in res.records[0]["error"]
    assert not any(r["correct"][0] for r in evaluate(lambda p: None, problems).records)

    class Weird:
        def generate(self, messages, *, max_tokens, temperature, n):
            return "not a list"

    assert "list" in evaluate(Weird(), problems[:1]).records[0]["error"]
    with pytest.raises(ValueError, match="n_samples"):
        evaluate(broken, problems, n_samples=0)
    with pytest.raises(TypeError, match="Problem"):
        evaluate(broken, [{"id": 1}])


def test_openai_client_matches_callable_model_through_stub_server(problems):
    oracle = OracleModel(problems)
    with serve_chat_model(oracle) as server:
        client = OpenAICompatibleClient(server.base_url, "stub", backoff=0.0)
        via_http = evaluate(client, problems, workers=3)
    direct = evaluate(CallableModel(lambda prompt: oracle.generate([{"role": "user", "content": prompt}])[0]),
                      problems)
    assert [r["correct"] for r in via_http.records] == [r["correct"] for r in direct.records]
    assert all(r["correct"] == [True] for r in via_http.records)


def test_openai_client_faults():
    p = generate_symbolic(3, seed=0)
    oracle = OracleModel([p])
    with serve_chat_model(oracle, faults=["500", "429"]) as server:
        client = OpenAICompatibleClient(server.base_url, "stub", backoff=0.0, max_retries=2)
        assert client.generate(p.messages, n=2) == [p.solution, p.solution] and server.requests == 3
    with serve_chat_model(oracle, faults=["malformed", "no_choices", "500", "500"]) as server:
        client = OpenAICompatibleClient(server.base_url, "stub", backoff=0.0, max_retries=1)
        res = evaluate(client, [p, p, p], workers=1)
        assert [r["correct"] for r in res.records] == [[False], [False], [False]]
        assert "malformed" in res.records[0]["error"] and "after 2 attempts" in res.records[2]["error"]
    with serve_chat_model(oracle, faults=["400"]) as server:
        client = OpenAICompatibleClient(server.base_url, "stub", backoff=0.0)
        with pytest.raises(ModelRequestError, match="HTTP 400"):
            evaluate(client, [p])
    with serve_chat_model(oracle, faults=["slow", "slow"], slow_seconds=0.6) as server:
        client = OpenAICompatibleClient(server.base_url, "stub", timeout=0.2, backoff=0.0, max_retries=1)
        record = evaluate(client, [p]).records[0]
        assert record["correct"] == [False] and "after 2 attempts" in record["error"]
    with pytest.raises(ValueError, match="base_url"):
        OpenAICompatibleClient("localhost:8000", "m")
    with pytest.raises(ValueError, match=r"faults\[0\] must be one of"):
        serve_chat_model(oracle, faults=["boom"]).__enter__()


def test_solver_oracle_scores_one(problems):
    assert all(r["correct"] == [True] for r in evaluate(OracleModel(problems, solver=True), problems).records)
    other = generate_symbolic(5, seed=99)
    assert evaluate(OracleModel(problems), [other]).records[0]["correct"] == [False]  # unknown prompt


def test_python_dash_m(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "m.jsonl"
    done = subprocess.run([sys.executable, "-m", "icml25.reasoning.gsm_infinity", "generate", "--ops", "2,3",
                           "--per-op", "2", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(read_jsonl(out)) == 4


def test_bm25_and_rag():
    bm = BM25(["the cat sat", "dogs bark loudly", "a cat and a cat"])
    assert bm.top("cat", 2) == [2, 0] and bm.scores("unicorn").tolist() == [0.0, 0.0, 0.0]
    small = make_benchmark("symbolic", [3], 5, seed=2)
    assert evaluate(RAGModel(small), small).accuracy_by_op() == {3: 1.0}
    with pytest.raises(ValueError, match="k must be"):
        RAGModel(small, k=0)


def test_random_and_sigmoid_models(problems):
    assert evaluate(RandomGuessModel(problems), problems).accuracy_by_op()[6] < 1.0
    model = SigmoidModel(problems, op50=4, k=50.0)
    acc = evaluate(model, problems).accuracy_by_op()
    assert acc[2] == 1.0 and acc[6] == 0.0 and acc[3] == 1.0 and acc[8] == 0.0


# ---------------------------------------------------------------- analysis
def test_sigmoid_fit_recovers_parameters():
    ops = np.arange(1, 31)
    acc = 1 / (1 + np.exp(0.5 * (ops - 12)))
    fit = fit_sigmoid(ops, acc)
    assert abs(fit.params["op50"] - 12) < 1e-4 and abs(fit.params["k"] - 0.5) < 1e-4 and fit.r2 > 0.9999
    assert fit_exponential(ops, acc).r2 < fit.r2
    shifted = 0.1 + 0.8 * acc
    bounded = fit_sigmoid(ops, shifted, bounded=True)
    assert abs(bounded.params["floor"] - 0.1) < 1e-3 and abs(bounded.params["ceiling"] - 0.9) < 1e-3
    assert abs(bounded.params["op50"] - 12) < 1e-2 and bounded.r2 > fit_sigmoid(ops, shifted).r2
    with pytest.raises(ValueError, match="at least 3"):
        fit_sigmoid([1, 2], [1, 0])


def test_auc_first_below_and_pass_at_k():
    assert auc([2, 4, 6], [1.0, 0.5, 0.0]) == pytest.approx(3.0)
    assert auc([6, 2, 4], [0.0, 1.0, 0.5]) == pytest.approx(3.0)
    assert first_op_below([1, 2, 3], [0.9, 0.4, 0.05], 0.5) == 2 and first_op_below([1, 2], [1, 1], 0.5) is None
    assert pass_at_k(10, 0, 3) == 0.0 and pass_at_k(10, 10, 1) == 1.0 and pass_at_k(5, 1, 1) == pytest.approx(0.2)
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)
    with pytest.raises(ValueError, match=r"c must be an integer in \[0, 3\]"):
        pass_at_k(3, 4, 1)
    with pytest.raises(TypeError, match="k must be an integer"):
        pass_at_k(3, 1, 1.0)
    with pytest.raises(ValueError, match="ops and acc must have the same length"):
        auc([1, 2], [1.0])
    with pytest.raises(ValueError, match="acc must contain only finite values"):
        auc([1, 2], [1.0, float("nan")])
    slope, _, r2 = log2_slope([1, 2, 4, 8], [1.0, 2.0, 3.0, 4.0])
    assert slope == pytest.approx(1.0) and r2 == pytest.approx(1.0)


def test_pass_at_k_estimator_matches_analytic():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, 300)
    n, ks = 16, [1, 2, 4]
    c = rng.binomial(n, p)
    for k in ks:
        estimate = np.mean([pass_at_k(n, int(ci), k) for ci in c])
        assert abs(estimate - np.mean(1 - (1 - p) ** k)) < 0.03


# ---------------------------------------------------------------- JSONL and CLI
def test_jsonl_roundtrip_and_validation(tmp_path, problems):
    path = write_jsonl(problems, tmp_path / "bench.jsonl")
    assert [p.to_json() for p in read_jsonl(path)] == [p.to_json() for p in problems]
    record = problems[0].to_json()
    for change, message in ((lambda r: r.pop("answer"), "lacks"), (lambda r: r.update(op="3"), "'op' must be int"),
                            (lambda r: r.update(subset="easy"), "subset"), (lambda r: r.update(extra=1), "unknown")):
        bad = json.loads(json.dumps(record))
        change(bad)
        with pytest.raises(ValueError, match=message):
            Problem.from_json(bad)
    (tmp_path / "bad.jsonl").write_text(json.dumps(record) + "\n{oops\n")
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_jsonl(tmp_path / "bad.jsonl")


def test_jsonl_write_is_atomic(tmp_path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(TypeError):
        write_jsonl([{"ok": 1}, {"bad": object()}], target)
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_cli_generate_and_validate(tmp_path, capsys):
    out = tmp_path / "b.jsonl"
    assert cli_run(["generate", "--subset", "hard", "--ops", "3-5", "--per-op", "2", "--lengths", "0,600",
                    "--mode", "reverse", "--template", "school", "--out", str(out)]) == 0
    loaded = read_jsonl(out)
    assert len(loaded) == 12 and {p.op for p in loaded} == {3, 4, 5}
    assert cli_run(["validate", str(out)]) == 0 and "agrees on all" in capsys.readouterr().out
    assert cli_run(["generate", "--ops", "0", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert not (tmp_path / "x.jsonl").exists() and "op must be" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_run(["generate", "--ops", "a,b", "--out", str(out)])


def test_results_jsonl_and_summary(tmp_path, problems):
    res = evaluate(OracleModel(problems), problems)
    back = Results.from_jsonl(res.to_jsonl(tmp_path / "res.jsonl"))
    assert back.records == res.records
    assert {row["accuracy"] for row in back.summary()} == {1.0}
    assert math.isclose(back.auc(subset="medium"), 5 * 1.0 + 5 * 1.0)


def test_count_tokens():
    assert count_tokens("assign V000001 = V000002 + 1.") == 7


def test_seed_may_be_a_generator():
    a = generate_symbolic(4, seed=np.random.default_rng(7))
    b = generate_symbolic(4, seed=np.random.default_rng(7))
    assert isinstance(a.seed, int) and a.seed >= 0 and a.to_json() == b.to_json()
    assert generate_symbolic(4, seed=a.seed).to_json() == a.to_json()  # the drawn seed is recorded
    with pytest.raises(TypeError, match="seed must be an int"):
        generate_realistic(5, seed=1.5)


# ---------------------------------------------------------------- bad input names the argument


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda p: BM25(["a b"], k1=-1.0), ValueError, "k1"),
    (lambda p: BM25(["a b"]).top("a", 0), ValueError, "k must be"),
    (lambda p: BM25(["a b"]).scores(None), TypeError, "query"),
    (lambda p: CallableModel(lambda s: "x").generate([{"role": "user", "content": "q"}], n=0), ValueError, "n must"),
    (lambda p: OracleModel([p]).generate("q"), TypeError, "messages"),
    (lambda p: OracleModel([p]).answer(p, -1), ValueError, "sample"),
    (lambda p: RAGModel([p]).retrieve("q"), TypeError, "problem"),
    (lambda p: SigmoidModel(["q"]), TypeError, r"problems\[0\]"),
    (lambda p: Results([]).pass_at_k([]), ValueError, "ks"),
    (lambda p: log2_slope([1, 2, 4], [0.1, 0.2]), ValueError, "ks and values"),
    (lambda p: fit_sigmoid([1, 2, 3], [1.0, 0.5, 0.1], bounded="no"), TypeError, "bounded"),
    (lambda p: score(p, "Answer: 1", extractor=3), TypeError, "extractor"),
    (lambda p: check("p"), TypeError, "problem"),
    (lambda p: solve_symbolic([], 1), ValueError, "equations"),
    (lambda p: solve_symbolic("abc", 1), TypeError, "equations"),
    (lambda p: evaluate(OracleModel([p]), []), ValueError, "problems"),
    (lambda p: write_jsonl("abc", "unused.jsonl"), TypeError, "records"),
    (lambda p: OpenAICompatibleClient("http://127.0.0.1:9/v1", "m", extra_body="x"), TypeError, "extra_body"),
    (lambda p: OpenAICompatibleClient("http://127.0.0.1:9/v1", "m").generate([], max_tokens=8), ValueError,
     "messages"),
])
def test_bad_input_raises_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call(generate_symbolic(3, seed=0))
