"""GSM-∞: the generator's guarantees and the evaluation harness, with stand-in models. Docs: docs/papers/gsm_infinity.md

Zhou, Liu, Chen, Tian & Chen, "GSM-∞: How Do Your LLMs Behave over Infinitely Increasing Context Length and
Reasoning Complexity?" (ICML 2025, arXiv 2502.05252).  The paper's findings are about LLMs (18+ models at
8k-32k tokens), which are out of reach offline.  What makes those measurements valid is checked here, per seed:

1. difficulty: every generated problem has exactly the requested op, the independent solver agrees with the
   generator, and the reference-solution oracle scores 1.0 through the full harness (render -> model ->
   extract -> score); chance floor: the random-guess model;
2. length: token targets {1k, 4k, 8k} are met within 5 %, answers equal the zero-noise answer of the same
   seed, and the share of necessary statements falls as the context grows;
3. retrieval: BM25 top-8 statements + the exact solver ("RAG") against the full-context solver oracle at zero
   noise (op <= 4) and at 8k tokens (op >= 16), same problems;
4. analysis tools: a synthetic model with a known sigmoid (op50 = 12, k = 0.5) is fitted back, and the
   unbiased pass@k matches the analytic mean of 1 - (1 - p)^k;
5. the OpenAI-compatible client against a stub server on 127.0.0.1 gives the same verdicts as the
   CallableModel, injected malformed replies count as wrong, and the harness overhead is small.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.reasoning.gsm_infinity import (
    CallableModel,
    OpenAICompatibleClient,
    OracleModel,
    RAGModel,
    RandomGuessModel,
    SigmoidModel,
    evaluate,
    fit_exponential,
    fit_sigmoid,
    generate_realistic,
    log2_slope,
    make_benchmark,
    pass_at_k,
    problem_seed,
    serve_chat_model,
    solve,
)

PAPER = Paper(
    id="gsm_infinity",
    title="GSM-∞: How Do Your LLMs Behave over Infinitely Increasing Context Length and Reasoning Complexity?",
    module="icml25.reasoning.gsm_infinity",
    anchors=("Infini-AI-Lab/gsm_infinite", "lm-evaluation-harness", "networkx", "scipy"),
    default_seeds=(0, 1, 2),
    commands=("icml25.reasoning.gsm_infinity.cli",),
)

SUBSETS = ("symbolic", "medium", "hard")
TARGETS = (1000, 4000, 8000)  # token targets at smoke/quick; full adds the paper's 16k and 32k
FULL_TARGETS = TARGETS + (16000, 32000)
RAG_K = 8
FAULTS = ["malformed", "no_choices", "500", "500"]  # with max_retries=1: three wrong replies, no crash
RAG_SETS = ("zero_noise_op_le_4", "zero_noise_op_ge_16", "8k_op_ge_16")
CLAIM_OVERHEAD_SWEEP = "the harness overhead stays a constant factor as the number of evaluated problems grows"


def reproduce(run: Run) -> Result:
    # 1. the four experiments, per seed
    per_seed: dict[int, dict] = {}
    for i, seed in enumerate(run.seeds):
        per_seed[seed] = {"difficulty": _difficulty(run, seed)}
        run.progress((i + 0.3) / len(run.seeds), f"seed {seed}: length and retrieval")
        per_seed[seed]["length_rag"] = _length_and_rag(run, seed)
        run.progress((i + 0.7) / len(run.seeds), f"seed {seed}: analysis and client")
        per_seed[seed]["analysis"] = _analysis(run, seed)
        per_seed[seed]["client"] = _client(run, seed)
        run.progress((i + 1) / len(run.seeds), f"seed {seed} done")
    runs = list(per_seed.values())

    # 2. the claims
    claims = [_claim_difficulty_exact(runs), _claim_oracle(runs), _claim_length(runs), _claim_dilution(runs),
              _claim_rag_small(runs), _claim_rag_defeated(runs), _claim_sigmoid_fit(runs), _claim_pass_at_k(runs),
              _claim_client(runs), _claim_overhead(runs)]
    sweeps = [r["length_rag"]["time_overhead_sweep"] for r in runs]
    if run.scale == "full":
        claims.append(_claim_overhead_sweep(sweeps))

    # 3. figure and result
    figures = [_figure(runs, run)]
    if sweeps[0] is not None:
        figures.append(_sweep_figure(run, sweeps))
    return Result(metrics={"per_seed": {str(s): v for s, v in per_seed.items()}, "rag_k": RAG_K,
                           "targets": list(TARGETS)}, claims=claims, figures=figures)


# ---------------------------------------------------------------------------------------------- experiments
def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the seconds it took (one timed call)."""
    box: list[Any] = []
    seconds = median_seconds(lambda: box.append(fn()), 1)
    return box[0], seconds


def _accuracy(model: Any, problems: list, **kwargs: Any) -> float:
    return float(np.mean([r["correct"][0] for r in evaluate(model, problems, workers=1, **kwargs).records]))


def _difficulty(run: Run, seed: int) -> dict:
    """Exact op and solver agreement per subset, the oracle through the harness, the random-guess floor."""
    per_op = run.pick(smoke=3, quick=20, full=200)
    out = {}
    for subset in SUBSETS:
        if subset == "symbolic":
            problems = make_benchmark(subset, [2, 5, 10, 20, 40], per_op, seed=seed)
        else:
            problems = [p for mode in ("forward", "reverse")
                        for p in make_benchmark(subset, [2, 5, 10, 20], per_op, seed=seed, mode=mode,
                                                template=("zoo", "school", "movie")[seed % 3])]
        solved = [solve(p) for p in problems]
        oracle = evaluate(OracleModel(problems), problems, workers=1)
        out[subset] = {
            "n": len(problems),
            "op_exact": float(np.mean([p.op == op for p, (_, op) in zip(problems, solved, strict=True)])),
            "solver_agrees": float(np.mean([p.answer == a for p, (a, _) in zip(problems, solved, strict=True)])),
            "oracle_accuracy": oracle.accuracy_by_op(),
            "oracle_mean": float(np.mean([r["correct"][0] for r in oracle.records])),
            "random_mean": _accuracy(RandomGuessModel(problems, seed=seed), problems),
        }
    stats = [{} for _ in range(run.pick(smoke=3, quick=20, full=100))]
    _, seconds = _timed(lambda: [generate_realistic(10, difficulty="medium", seed=problem_seed(seed, 10, i), stats=st)
                                 for i, st in enumerate(stats)])
    out["time_medium_op10_problems_per_s"] = len(stats) / seconds
    out["medium_op10_acceptance_rate"] = len(stats) / sum(st["attempts"] for st in stats)
    return out


def _length_and_rag(run: Run, seed: int) -> dict:
    """Token targets, unchanged answers and dilution per subset; BM25-RAG against the full-context oracle."""
    per = run.pick(smoke=1, quick=3, full=20)
    ops_big = (16, 20)
    out: dict = {"length": {}, "rag": {}}
    timing_problems = []
    for subset in SUBSETS:
        base = make_benchmark(subset, list(ops_big), per, seed=seed)
        within, same, fraction = [], [], {}
        for target in run.pick(smoke=TARGETS, quick=TARGETS, full=FULL_TARGETS):
            problems, seconds = _timed(lambda sub=subset, t=target: make_benchmark(sub, list(ops_big), per,
                                                                                   lengths=[t], seed=seed))
            if target == 8000:
                noisy = problems
                out.setdefault("time_gen_8k_problems_per_s", {})[subset] = len(noisy) / seconds
            within += [abs(p.length_tokens - target) <= 0.05 * target for p in problems]
            same += [p.answer == b.answer for p, b in zip(problems, base, strict=True)]
            fraction[target] = float(np.mean([len(p.necessary) / len(p.statements) for p in problems]))
        fraction = {0: float(np.mean([len(p.necessary) / len(p.statements) for p in base])), **fraction}
        out["length"][subset] = {"within_5pct": float(np.mean(within)), "answers_unchanged": float(np.mean(same)),
                                 "necessary_fraction": fraction}
        sets = dict(zip(RAG_SETS, (make_benchmark(subset, [2, 3, 4], per, seed=seed), base, noisy), strict=True))
        out["rag"][subset] = {name: {"rag": _accuracy(RAGModel(problems, k=RAG_K), problems),
                                     "oracle": _accuracy(OracleModel(problems, solver=True), problems)}
                              for name, problems in sets.items()}
        timing_problems += noisy
    oracle = OracleModel(timing_problems, solver=True)
    direct = median_seconds(lambda: [oracle.generate(p.messages) for p in timing_problems], 3)
    harness = median_seconds(lambda: evaluate(CallableModel(lambda prompt: oracle.generate(
        [{"role": "user", "content": prompt}])[0]), timing_problems, workers=1), 3)
    out["time_harness_overhead_ratio"] = harness / direct
    sizes = run.pick(smoke=(1, 2), quick=(), full=(5, 10, 20, 40, 80, 120))
    out["time_overhead_sweep"] = _overhead_sweep(oracle, timing_problems, sizes) if sizes else None
    return out


def _overhead_sweep(oracle: OracleModel, problems: list, sizes: tuple[int, ...]) -> dict:
    """``evaluate(CallableModel(oracle))`` against calling the oracle directly on the first ``n`` of ``problems``
    (8k-token contexts) for every ``n`` in ``sizes``: wall-clock seconds (the harness's own timing), medians of 5
    interleaved repeats, and the log-log slopes in ``n``.  Both are linear in ``n``; the harness adds a fixed
    cost per problem (prompt rendering, answer parsing, the record), so the ratio should not drift."""
    rows = []
    for n in sizes:
        subset = problems[:n]
        sec = interleaved_seconds({
            "direct": lambda sub=subset: [oracle.generate(p.messages) for p in sub],
            "harness": lambda sub=subset: evaluate(CallableModel(lambda prompt: oracle.generate(
                [{"role": "user", "content": prompt}])[0]), sub, workers=1)}, 5, warmup=1)
        direct, harness = float(np.median(sec["direct"])), float(np.median(sec["harness"]))
        rows.append({"problems": len(subset), "direct_seconds": direct, "harness_seconds": harness,
                     "harness_over_direct_time": harness / direct})
    counts = [r["problems"] for r in rows]
    return {"rows": rows, "clock": "wall", "slope": {k: loglog_slope(counts, [r[f"{k}_seconds"] for r in rows])
                                                     for k in ("direct", "harness")}}


def _analysis(run: Run, seed: int) -> dict:
    """Fit a known sigmoid back from a synthetic model; pass@k against its analytic value; AUC against log2 k."""
    per = run.pick(smoke=4, quick=30, full=100)
    problems = make_benchmark("symbolic", list(range(1, 31)), per, seed=seed)
    acc = evaluate(SigmoidModel(problems, op50=12.0, k=0.5, seed=seed), problems, workers=1).accuracy_by_op()
    sig, expo = fit_sigmoid(list(acc), list(acc.values())), fit_exponential(list(acc), list(acc.values()))
    n, ks = 16, [1, 2, 4, 8]
    varied = SigmoidModel(problems, op50=12.0, k=0.5, seed=seed, per_problem=True)
    rep = evaluate(varied, problems, n_samples=n, workers=1)
    estimated = rep.pass_at_k(ks)
    p = np.array([varied.success_probability(pr) for pr in problems])
    analytic = {k: float(np.mean(1 - (1 - p) ** k)) for k in ks}
    auc_k = rep.auc_at_k(ks)
    slope, _, r2 = log2_slope(ks, [auc_k[k] for k in ks])
    return {"accuracy": acc, "sigmoid": {**sig.params, "r2": sig.r2}, "exponential": {**expo.params, "r2": expo.r2},
            "pass_at_k": estimated, "pass_at_k_analytic": analytic,
            "pass_at_k_max_error": max(abs(estimated[k] - analytic[k]) for k in ks),
            "auc_at_k": auc_k, "auc_log2k_slope": slope, "auc_log2k_r2": r2,
            "check_pass_at_k": pass_at_k(n, 1, 1)}


def _client(run: Run, seed: int) -> dict:
    """The same oracle as a CallableModel, behind a stub OpenAI-compatible server, and with injected faults."""
    per = run.pick(smoke=2, quick=5, full=20)
    problems = (make_benchmark("symbolic", [3, 8], per, seed=seed)
                + make_benchmark("medium", [3, 8], per, seed=seed, mode="reverse")
                + make_benchmark("hard", [4, 8], per, seed=seed)
                + make_benchmark("hard", [6, 12], per, seed=seed, mode="reverse", template="movie")
                + make_benchmark("medium", [5, 9], per, seed=seed, template="school"))
    oracle = OracleModel(problems)
    callable_acc = evaluate(CallableModel(lambda prompt: oracle.generate([{"role": "user", "content": prompt}])[0]),
                            problems, workers=1)
    with serve_chat_model(oracle) as server:
        http = evaluate(OpenAICompatibleClient(server.base_url, "stub", backoff=0.0), problems, workers=4)
    with serve_chat_model(oracle, faults=list(FAULTS)) as server:
        faulty = evaluate(OpenAICompatibleClient(server.base_url, "stub", backoff=0.0, max_retries=1), problems,
                          workers=1)
    return {"n": len(problems),
            "callable_accuracy": float(np.mean([r["correct"][0] for r in callable_acc.records])),
            "http_accuracy": float(np.mean([r["correct"][0] for r in http.records])),
            "same_verdicts": [r["correct"] for r in http.records] == [r["correct"] for r in callable_acc.records],
            "faulty_wrong": int(sum(not r["correct"][0] for r in faulty.records)),
            "faulty_errors": int(sum(r["error"] is not None for r in faulty.records)),
            "faults_injected": 3}


# ---------------------------------------------------------------------------------------------- claims
def _values(runs: list[dict], *path: str) -> list[Any]:
    """``run[path[0]][path[1]]...`` for every seed's run."""
    out = []
    for value in runs:
        for key in path:
            value = value[key]
        out.append(value)
    return out


def _over_subsets(runs: list[dict], *path: str, agg: Callable = min) -> float:
    """``agg`` over seeds and subsets of ``run[path]``, with ``"*"`` in ``path`` standing for the subset."""
    return float(agg(agg(_values(runs, *(s if key == "*" else key for key in path))) for s in SUBSETS))


def _claim_difficulty_exact(runs: list[dict]) -> Claim:
    op_exact = _over_subsets(runs, "difficulty", "*", "op_exact")
    agrees = _over_subsets(runs, "difficulty", "*", "solver_agrees")
    return Claim(text="difficulty is exact: every problem has the requested op and the independent solver agrees",
                 criterion="100% op exact and 100% solver agreement, every subset and seed",
                 paper=None,
                 measured={"op_exact": op_exact, "solver_agrees": agrees}, baseline=None,
                 holds=op_exact == 1.0 and agrees == 1.0, kind="check")


def _claim_oracle(runs: list[dict]) -> Claim:
    oracle = _over_subsets(runs, "difficulty", "*", "oracle_mean")
    chance = _over_subsets(runs, "difficulty", "*", "random_mean", agg=max)
    return Claim(text="the reference-solution oracle scores 1.0 through render -> model -> extract -> score",
                 criterion="oracle accuracy 1.0 and random-guess accuracy < 0.5, every subset and seed", paper=None,
                 measured=oracle, baseline=chance, holds=oracle == 1.0 and chance < 0.5, kind="check")


def _claim_length(runs: list[dict]) -> Claim:
    within = _over_subsets(runs, "length_rag", "length", "*", "within_5pct")
    unchanged = _over_subsets(runs, "length_rag", "length", "*", "answers_unchanged")
    return Claim(text="context length is set by noise within 5% of the target, answers unchanged",
                 criterion="|length - target| <= 5% for 1k/4k/8k tokens (full: also 16k/32k) and answers equal to "
                           "the zero-noise answers, every problem",
                 paper=None,
                 measured={"within_5pct": within, "answers_unchanged": unchanged}, baseline=None,
                 holds=within == 1.0 and unchanged == 1.0, kind="check")


def _claim_dilution(runs: list[dict]) -> Claim:
    decreasing = all(np.all(np.diff(list(r["length_rag"]["length"][s]["necessary_fraction"].values())) < 0)
                     for r in runs for s in SUBSETS)
    return Claim(text="the share of necessary statements (op / total) falls as the context grows",
                 criterion="strictly decreasing in length for every subset and seed", paper=None,
                 measured=bool(decreasing), baseline=None, holds=bool(decreasing), kind="check")


def _claim_rag_small(runs: list[dict]) -> Claim:
    rag = _over_subsets(runs, "length_rag", "rag", "*", "zero_noise_op_le_4", "rag")
    return Claim(text="BM25-RAG (top-8 statements + exact solver) works without noise at op <= 4",
                 criterion="RAG accuracy >= 0.9, every subset and seed", paper=None, measured=rag, baseline=None,
                 holds=rag >= 0.9)


def _claim_rag_defeated(runs: list[dict]) -> Claim:
    rag = _over_subsets(runs, "length_rag", "rag", "*", "8k_op_ge_16", "rag", agg=max)
    oracle = _over_subsets(runs, "length_rag", "rag", "*", "8k_op_ge_16", "oracle")
    return Claim(text="high information density defeats retrieval: BM25-RAG fails at 8k tokens, op >= 16",
                 criterion="RAG <= 0.2 while the full-context oracle = 1.0 (gap >= 0.8), every subset and seed",
                 paper=None,
                 measured=rag, baseline=oracle, holds=rag <= 0.2 and oracle == 1.0 and oracle - rag >= 0.8)


def _claim_sigmoid_fit(runs: list[dict]) -> Claim:
    op50 = _values(runs, "analysis", "sigmoid", "op50")
    r2_sig, r2_exp = _values(runs, "analysis", "sigmoid", "r2"), _values(runs, "analysis", "exponential", "r2")
    return Claim(text="the sigmoid fit recovers a known decay curve (op50 = 12, k = 0.5)",
                 criterion="fitted op50 within 12 +- 1 and sigmoid R^2 > exponential R^2, every seed",
                 paper="accuracy declines along a sigmoid as op grows (abstract)",
                 measured={"op50": op50, "r2_sigmoid": r2_sig}, baseline={"r2_exponential": r2_exp},
                 holds=all(abs(o - 12) <= 1 for o in op50) and all(s > e for s, e in zip(r2_sig, r2_exp, strict=True)),
                 kind="check")


def _claim_pass_at_k(runs: list[dict]) -> Claim:
    error = float(max(_values(runs, "analysis", "pass_at_k_max_error")))
    return Claim(text="unbiased pass@k matches the analytic average of 1 - (1-p)^k",
                 criterion="max error <= 0.02 for k = 1, 2, 4, 8, every seed",
                 paper="exponentially more inference compute gives only linear gains (abstract)",
                 measured=error, baseline=0.02, holds=error <= 0.02, kind="check")


def _claim_client(runs: list[dict]) -> Claim:
    http_acc, call_acc = _values(runs, "client", "http_accuracy"), _values(runs, "client", "callable_accuracy")
    same = all(_values(runs, "client", "same_verdicts"))
    faults_ok = all(r["client"]["faulty_wrong"] == r["client"]["faulty_errors"] == 3 for r in runs)
    return Claim(text="the OpenAI-compatible client (stub server on 127.0.0.1) scores as the CallableModel; "
                      "malformed replies are wrong, not crashes",
                 criterion="same accuracy and verdicts; 3 injected faults -> 3 wrong replies with errors, every seed",
                 paper=None, measured={"http": http_acc, "faults_ok": faults_ok}, baseline={"callable": call_acc},
                 holds=same and http_acc == call_acc and faults_ok, kind="check")


def _claim_overhead(runs: list[dict]) -> Claim:
    overhead = float(np.median(_values(runs, "length_rag", "time_harness_overhead_ratio")))
    return Claim(text="harness overhead: evaluate(CallableModel(oracle)) vs calling the oracle directly",
                 criterion="median over seeds of the time ratio <= 1.5", paper=None, measured=overhead, baseline=1.0,
                 holds=overhead <= 1.5)


# ---------------------------------------------------------------------------------------------- figure
def _claim_overhead_sweep(sweeps: list[dict]) -> Claim:
    ratios = [[r["harness_over_direct_time"] for r in sw["rows"]] for sw in sweeps]
    per_n = {str(r["problems"]): float(np.median([rs[i] for rs in ratios])) for i, r in enumerate(sweeps[0]["rows"])}
    slopes = {k: float(np.mean([sw["slope"][k] for sw in sweeps])) for k in ("direct", "harness")}
    return Claim(text=CLAIM_OVERHEAD_SWEEP,
                 criterion="wall-clock, medians of interleaved repeats, one sweep per seed over n = 5 ... 120 problems "
                           "(8k-token contexts): median over seeds of the time ratio <= 1.5 at every n, and the mean "
                           "fitted log-log slopes in n within 0.25 of each other (both linear in n)",
                 paper=None, measured={"ratio_by_n": per_n, "slope_harness": slopes["harness"]},
                 baseline={"slope_direct": slopes["direct"]},
                 holds=bool(max(per_n.values()) <= 1.5 and abs(slopes["harness"] - slopes["direct"]) <= 0.25))


def _sweep_figure(run: Run, sweeps: list[dict]) -> str:
    rows = [sw["rows"] for sw in sweeps]
    return cost_vs_size(
        run, "overhead_vs_problems", [r["problems"] for r in rows[0]],
        {"oracle called directly": [[r["direct_seconds"] for r in rs] for rs in rows],
         "evaluate(CallableModel)": [[r["harness_seconds"] for r in rs] for rs in rows]},
        xlabel="problems evaluated (8k-token contexts)", ylabel="wall-clock [s]",
        title="evaluation cost against the number of problems",
        ratios={f"seed {seed}": [r["harness_over_direct_time"] for r in rs]
                for seed, rs in zip(run.seeds, rows, strict=True)},
        bounds={"1.5x (the claim)": 1.5}, ratio_ylabel="harness / direct time",
        ratio_title="overhead (one line per seed)")


def _figure(runs: list[dict], run: Run) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    for s in SUBSETS:
        fr = runs[0]["length_rag"]["length"][s]["necessary_fraction"]
        ax.plot(list(fr), list(fr.values()), marker="o", label=s)
    ax.set(xlabel="target tokens (0 = no noise)", ylabel="necessary / all statements", title="Noise dilutes the core")
    ax.legend()
    ax = axes[1]
    width = 0.25
    for j, s in enumerate(SUBSETS):
        rag = [np.mean([r["length_rag"]["rag"][s][n]["rag"] for r in runs]) for n in RAG_SETS]
        ax.bar(np.arange(3) + j * width, rag, width, label=f"BM25-RAG {s}")
    ax.axhline(1.0, color="k", ls="--", label="full-context oracle")
    ax.set_xticks(np.arange(3) + width, ["no noise\nop <= 4", "no noise\nop >= 16", "8k tokens\nop >= 16"])
    ax.set(ylabel="accuracy", title=f"Retrieval (top-{RAG_K}) vs full context")
    ax.legend(fontsize=7)
    ax = axes[2]
    a = runs[0]["analysis"]
    ops = np.array([int(k) for k in a["accuracy"]])
    ax.plot(ops, list(a["accuracy"].values()), "o", label="synthetic model")
    grid = np.linspace(ops.min(), ops.max(), 200)
    ax.plot(grid, 1 / (1 + np.exp(a["sigmoid"]["k"] * (grid - a["sigmoid"]["op50"]))),
            label=f"sigmoid fit, op50={a['sigmoid']['op50']:.1f}")
    ax.plot(grid, a["exponential"]["a"] * np.exp(-a["exponential"]["b"] * grid), "--", label="exponential fit")
    ax.set(xlabel="op", ylabel="accuracy", title="Analysis tools recover a known curve")
    ax.legend()
    return run.savefig(fig, "gsm_infinity")
