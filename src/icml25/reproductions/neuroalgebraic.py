"""Reproduction of Marchetti, Shahverdi, Mereta, Trager & Kohn (ICML 2025 position paper, arXiv:2501.18915).
Guide, results and calibration notes: docs/papers/neuroalgebraic.md.

The paper has no numeric headline claim; it proposes reading dimension, singularities and
related invariants of the function spaces of polynomial networks as expressivity, sample
complexity and training behaviour.  We check the mathematical facts this dictionary rests on,
with the dimension computed as the generic rank of the parametrisation's Jacobian
(``icml25.learning_theory.neuroalgebraic``), per run seed (fresh random parameters and points):

1. shallow single-output networks: the computed dimension equals the Alexander–Hirschowitz
   value on the grid ``d0 ∈ 2..5, d1 ∈ 1..8, r ∈ {2, 3, 4}`` (plus the AH exception
   ``(5, 14, 1), r = 4``), and the expected-dimension formula (the baseline) is wrong exactly on
   the defective cases;
2. deep architectures: reference dimensions, including the defective ``(3, 2, 2, 1), r = 2``;
3. sample complexity: the rank with ``M`` samples is ``min(M, dim)`` for ``(3, 5, 1), r = 4``;
4. sub-networks are singular points of the neurovariety ``det S = 0`` of ``(3, 2, 1), r = 2``
   (Jacobian criterion) and critical points of the parametrisation;
5. the activation degree threshold of equi-width architectures is 1 (Finkel et al.);
6. linear networks (``r = 1``): dimension of rank-bounded matrices, where the expected-dimension
   count (scalings only) is wrong;
7. float rank against the exact rank (sympy, arithmetic modulo 2^31 - 1): equal on small cases,
   and at least 20x faster on ``(3, 4, 1), r = 3`` (ratio of medians, same process);
8. full scale only, cost against size: float and exact ranks timed (thread CPU time, one thread,
   interleaved repeats) on two families ``(d0, k, 1), r = 3`` with growing hidden width ``k``, and the
   log-log slopes of time against the parameter count ``P`` fitted.  Both paths build the ``M x P``
   Jacobian (``M ~ 2 max(A, P)`` points) by forward mode through ``O(M k P)`` intermediates (float64
   arrays, or Python integers modulo ``p``), then take its rank: an ``O(M P^2)`` SVD, or ``O(M P rho)``
   field operations of elimination, ``rho`` the rank.  Predictions: where ``rho = min(6k, 56)`` grows with
   ``P`` (``d0 = 6``) the exact path grows faster and the ratio grows; where ``rho = A = 10`` is capped
   (``d0 = 3``) the elimination stays cheap and the ratio stops growing at the large end.
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_panel, ratio_panel
from icml25.harness.stats import loglog_slope
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.learning_theory.neuroalgebraic import (
    AH_EXCEPTIONS,
    PolyNet,
    activation_degree_threshold,
    ah_secant_dim,
    expected_dim,
    linear_net_dim,
    neurovariety_dim,
    numerical_rank,
    param_rank,
    quadratic_coefficients,
    quadratic_shallow_equations,
    rank_with_samples,
    singularity_report,
    sym_coordinates,
)

PAPER = Paper(
    id="neuroalgebraic",
    title="Algebra Unveils Deep Learning — An Invitation to Neuroalgebraic Geometry",
    module="icml25.learning_theory.neuroalgebraic",
    anchors=("sympy", "Macaulay2 (out of scope)", "HomotopyContinuation.jl (out of scope)"),
    default_seeds=(0, 1, 2),
)

NAMED_SHALLOW = {  # (widths, r): defective shallow cases (Alexander–Hirschowitz) and their dimensions
    ((3, 5, 1), 4): 14, ((4, 9, 1), 4): 34, ((5, 7, 1), 3): 34, ((5, 14, 1), 4): 69,
    ((4, 2, 1), 2): 7, ((5, 3, 1), 2): 12,
}
DEEP = {  # (widths, r): reference dimension (the expected one, except the defective (3, 2, 2, 1), r = 2: 7 < 8)
    ((2, 3, 2), 2): 6, ((3, 3, 3), 2): 15, ((2, 2, 2, 2), 2): 8, ((2, 2, 3), 2): 8,
    ((3, 3, 1), 3): 9, ((3, 2, 2, 1), 2): 7,
}
LINEAR = ((3, 2, 3), (4, 3, 2, 5), (2, 4, 3, 2), (5, 2, 4), (3, 1, 3))
EXACT_CASES = (((3, 5, 1), 4), ((4, 2, 1), 2), ((3, 2, 2, 1), 2), ((2, 3, 2), 2), ((3, 4, 1), 3),
               ((3, 2, 3), 1))
SPEED_CASE = ((3, 4, 1), 3)
SWEEP_R = 3
SWEEP_FAMILIES = {  # input width d0 -> hidden widths k per scale (no sweep at quick scale)
    3: {"smoke": (2, 4), "full": (2, 4, 8, 16, 32, 64)},  # rank capped at A = 10
    6: {"smoke": (1, 2), "full": (1, 2, 4, 8, 16)},  # rank min(6k, 56) grows with P
}
THRESHOLD_WIDTHS = ((2, 2, 2), (3, 3, 3))


def _shallow_grid(scale: str) -> list[tuple[tuple[int, ...], int]]:
    """The grid ``d0 ∈ 2..5, d1 ∈ 1..8, r ∈ 2..4`` with ``A ≤ 400``; ``full`` adds ``d0 = 6, 7``, ``r = 5``."""
    d0s, d1s, rs = {"smoke": (range(2, 4), range(1, 5), (2, 3)),
                    "quick": (range(2, 6), range(1, 9), (2, 3, 4)),
                    "full": (range(2, 8), range(1, 16), (2, 3, 4, 5))}[scale]
    grid = [((d0, d1, 1), r) for d0 in d0s for d1 in d1s for r in rs
            if PolyNet((d0, d1, 1), r).ambient_dim <= 400]
    extra = [case for case in NAMED_SHALLOW if case not in grid and scale != "smoke"]
    return grid + extra


def _singular_check(seed: int) -> dict:
    """Claim 4 on one seed: det S and its gradient at a generic width-2 point and at ``c_2 = 0``."""
    net = PolyNet((3, 2, 1), 2)
    variety = quadratic_shallow_equations(3, 2)
    theta = net.random_params(np.random.default_rng([seed, 4]))
    sub = theta.copy()
    sub[-1] = 0.0  # outgoing weight of neuron 2: a width-1 sub-network
    generic = singularity_report(variety, sym_coordinates(quadratic_coefficients(theta, 3, 2)))
    narrow = singularity_report(variety, sym_coordinates(quadratic_coefficients(sub, 3, 2)))
    parallel = theta.copy()
    parallel[3:6] = theta[0:3]  # two neurons with the same incoming row
    return {
        "det_generic": generic["residual"], "det_sub": narrow["residual"],
        "grad_generic": generic["grad_norm"], "grad_sub": narrow["grad_norm"],
        "grad_ratio": generic["grad_norm"] / max(narrow["grad_norm"], 1e-300),
        "param_rank_generic": param_rank((3, 2, 1), 2, theta, seed=seed),
        "param_rank_sub": param_rank((3, 2, 1), 2, sub, seed=seed),
        "param_rank_parallel": param_rank((3, 2, 1), 2, parallel, seed=seed),
    }


def _teacher_student(seed: int, steps: int) -> dict:
    """Illustration: GD on a width-3 quadratic student fitting a width-1 teacher from small init."""
    rng = np.random.default_rng([seed, 7])
    teacher, student = PolyNet((3, 1, 1), 2), PolyNet((3, 3, 1), 2)
    w = rng.standard_normal(3)
    t_theta = np.concatenate([w / np.linalg.norm(w), [1.0]])
    X = rng.standard_normal((60, 3))
    y = teacher.forward(t_theta, X)[:, 0]
    theta = 0.1 * rng.standard_normal(student.n_params)
    record, sigmas, losses = max(1, steps // 100), [], []
    for step in range(steps + 1):
        resid = student.forward(theta, X)[:, 0] - y
        if step % record == 0:
            sigmas.append(np.linalg.svd(quadratic_coefficients(theta, 3, 3), compute_uv=False).tolist())
            losses.append(float(np.mean(resid**2)))
        theta = theta - 0.05 * student.jacobian(theta, X).T @ resid / len(y)
    return {"steps": list(range(0, steps + 1, record)), "sigma_S": sigmas, "mse": losses}


def reproduce(run: Run) -> Result:
    # 1. Sizes.
    grid = _shallow_grid(run.scale)
    seeds = run.seeds
    repeats = run.pick(smoke=3, quick=15, full=30)
    steps = run.pick(smoke=200, quick=3000, full=20000)

    # 2. Experiments: the dimension, sample, singularity, threshold and linear checks, exact vs float.
    run.progress(0.0, f"shallow grid, {len(grid)} architectures x {len(seeds)} seeds")
    shallow = _shallow(grid, seeds)
    run.progress(1 / 6, "deep architectures")
    deep = {f"{w}|r={r}": [neurovariety_dim(w, r, seed=seed).dim for seed in seeds] for w, r in DEEP}
    run.progress(2 / 6, "rank with M samples")
    m_range = list(range(1, 21))
    ranks_m = {seed: [rank_with_samples((3, 5, 1), 4, m, seed=seed) for m in m_range] for seed in seeds}
    run.progress(3 / 6, "singular points")
    sing = {seed: _singular_check(seed) for seed in seeds}
    run.progress(4 / 6, "thresholds and linear networks")
    thresholds = {str(w): [activation_degree_threshold(w, 4, seed=seed) for seed in seeds] for w in THRESHOLD_WIDTHS}
    bottleneck = activation_degree_threshold((3, 1, 3), 4, seed=seeds[0])
    linear = {str(w): {"computed": [neurovariety_dim(w, 1, seed=seed).dim for seed in seeds],
                       "rank_bounded": linear_net_dim(w), "expected": expected_dim(w, 1)} for w in LINEAR}
    run.progress(5 / 6, "exact ranks and timing")
    exact = {f"{w}|r={r}": {"float": [neurovariety_dim(w, r, seed=seed).dim for seed in seeds],
                            "exact": [neurovariety_dim(w, r, exact=True, seed=seed).dim for seed in seeds]}
             for w, r in EXACT_CASES}
    timing = _timing(repeats)
    ts = {seed: _teacher_student(seed, steps) for seed in seeds}  # illustration, no claim
    sweep = None
    if run.scale != "quick":
        run.progress(0.9, "cost against size: float and exact ranks")
        sweep = _sweep(run.scale, seeds, run.pick(smoke=1, quick=1, full=5))

    # 3. Claims.
    claims = [
        _claim_shallow_ah(shallow, len(grid)),
        _claim_expected_dim_wrong(shallow, seeds),
        _claim_deep(deep),
        _claim_sample_complexity(ranks_m, m_range, seeds),
        _claim_singular(sing),
        _claim_threshold(thresholds, bottleneck),
        _claim_linear(linear),
        _claim_exact_vs_float(exact, timing),
    ]
    if run.scale == "full":
        claims += [_claim_sweep_agree(sweep), _claim_ratio_grows(sweep), _claim_ratio_stops(sweep)]

    # 4. Figure and metrics.
    figure = _figure(run, grid, shallow["computed"][seeds[0]], shallow["expected"], m_range, ranks_m, sing, ts,
                     _spectra(seeds[0]), timing["float"], timing["exact"])
    figures = [figure] + ([_sweep_figure(run, sweep)] if sweep else [])
    metrics = {
        "sweep": sweep,
        "shallow": {"cases": [f"{w}|r={r}" for w, r in grid], "ah": shallow["truth"], "expected": shallow["expected"],
                    "computed_per_seed": {str(s): shallow["computed"][s] for s in seeds},
                    "mismatch_ah_per_seed": {str(s): v for s, v in shallow["mismatch_ah"].items()},
                    "known_defective": shallow["known_defective"]},
        "deep": {"computed_per_seed": deep, "expected": {f"{w}|r={r}": expected_dim(w, r) for w, r in DEEP},
                 "reference": {f"{w}|r={r}": d for (w, r), d in DEEP.items()}},
        "rank_with_samples": {"M": m_range, "per_seed": {str(s): v for s, v in ranks_m.items()}},
        "singular": {str(s): v for s, v in sing.items()},
        "threshold": thresholds, "threshold_bottleneck_313": bottleneck,
        "linear": linear,
        "exact_vs_float": exact,
        "timing_seconds": {"float": timing["float"], "exact": timing["exact"], "speedup": timing["speedup"]},
        "teacher_student": {str(s): {"final_sigma_S": v["sigma_S"][-1], "final_mse": v["mse"][-1]}
                            for s, v in ts.items()},
    }
    run.progress(1.0, "done")
    return Result(metrics=metrics, claims=claims, figures=figures)


def _shallow(grid: list, seeds: tuple[int, ...]) -> dict:
    """Computed dimension per seed against Alexander–Hirschowitz and the expected-dimension formula."""
    truth = {f"{w}|r={r}": ah_secant_dim(w[0], w[1], r) for w, r in grid}
    expected = {f"{w}|r={r}": expected_dim(w, r) for w, r in grid}
    computed = {seed: {f"{w}|r={r}": neurovariety_dim(w, r, seed=seed).dim for w, r in grid} for seed in seeds}
    named = {f"{w}|r={r}": [computed[s].get(f"{w}|r={r}") for s in seeds] for (w, r) in NAMED_SHALLOW
             if f"{w}|r={r}" in truth}
    return {
        "truth": truth, "expected": expected, "computed": computed, "named": named,
        "mismatch_ah": {seed: sorted(k for k in truth if computed[seed][k] != truth[k]) for seed in seeds},
        "known_defective": sorted(k for k in truth if truth[k] != expected[k]),
        "edim_wrong": {seed: sorted(k for k in truth if computed[seed][k] != expected[k]) for seed in seeds},
        "named_ok": all(all(v == NAMED_SHALLOW[case] for v in named[f"{case[0]}|r={case[1]}"])
                        for case in NAMED_SHALLOW if f"{case[0]}|r={case[1]}" in named),
        "ah_in_grid": sorted(k for k in truth if k in {f"{(d0, d1, 1)}|r={r}" for d0, r, d1 in AH_EXCEPTIONS}),
    }


def _timing(repeats: int) -> dict:
    """Median seconds of one float and one exact dimension computation on SPEED_CASE, and whether they agree."""
    t_float = median_seconds(lambda: neurovariety_dim(*SPEED_CASE, seed=0), repeats)
    t_exact = median_seconds(lambda: neurovariety_dim(*SPEED_CASE, exact=True, seed=0), repeats)
    agree = neurovariety_dim(*SPEED_CASE, seed=0).dim == neurovariety_dim(*SPEED_CASE, exact=True, seed=0).dim
    return {"float": t_float, "exact": t_exact, "speedup": t_exact / t_float, "agree": agree}


def _sweep(scale: str, seeds: tuple[int, ...], repeats: int) -> dict:
    """Float and exact dimension of ``(d0, k, 1), r = SWEEP_R`` for every family and width: thread CPU time of
    ``repeats`` interleaved rounds after one warm-up (seed 0, one thread), ranks on every run seed, and the
    log-log slopes of time against the parameter count (whole family; and its three largest sizes)."""
    rows = []
    with single_thread():
        for d0, ks in SWEEP_FAMILIES.items():
            for k in ks[scale]:
                w = (d0, k, 1)
                times = interleaved_seconds({"float": lambda w=w: neurovariety_dim(w, SWEEP_R, seed=0),
                                             "exact": lambda w=w: neurovariety_dim(w, SWEEP_R, exact=True, seed=0)},
                                            repeats, warmup=1, clock=time.thread_time)
                net = PolyNet(w, SWEEP_R)
                rows.append({
                    "d0": d0, "k": k, "n_params": net.n_params, "ambient": net.ambient_dim,
                    "float_seconds": float(np.median(times["float"])),
                    "exact_seconds": float(np.median(times["exact"])),
                    "rank_float": [neurovariety_dim(w, SWEEP_R, seed=s).dim for s in seeds],
                    "rank_exact": [neurovariety_dim(w, SWEEP_R, exact=True, seed=s).dim for s in seeds],
                })
                rows[-1]["speedup"] = rows[-1]["exact_seconds"] / rows[-1]["float_seconds"]
    slopes: dict[str, dict[str, float]] = {}
    for d0 in SWEEP_FAMILIES:
        fam = [r for r in rows if r["d0"] == d0]
        P = [r["n_params"] for r in fam]
        for mode in ("float", "exact"):
            t = [r[f"{mode}_seconds"] for r in fam]
            slopes.setdefault(f"d0={d0}", {})[mode] = loglog_slope(P, t)
            if len(fam) >= 4:
                slopes[f"d0={d0}"][f"{mode}_top3"] = loglog_slope(P[-3:], t[-3:])
    return {"r": SWEEP_R, "repeats": repeats, "clock": "thread_time", "rows": rows, "time_slope_in_P": slopes}


def _spectra(seed: int) -> dict[str, np.ndarray]:
    """Singular values of the equilibrated Jacobian of two architectures, for the figure."""
    spectra = {}
    for w, r in (((3, 5, 1), 4), ((3, 2, 2, 1), 2)):
        net = PolyNet(w, r)
        rng = np.random.default_rng(seed)
        spectra[f"{w}|r={r}"] = numerical_rank(
            net.jacobian(net.random_params(rng), net.random_points(3 * net.ambient_dim, rng))).singular_values
    return spectra


def _claim_shallow_ah(shallow: dict, n_cases: int) -> Claim:
    return Claim(
        text="shallow nets: generic Jacobian rank = Alexander-Hirschowitz dimension on the grid",
        criterion="exact equality on every case (d0 2..5, d1 1..8, r 2..4, + (5,14,1) r=4), every seed",
        paper="the neurovariety of a shallow single-output network is a secant variety of a Veronese variety; "
              "its dimension is given by Alexander-Hirschowitz",
        measured={"cases": n_cases, "mismatches": sum(len(v) for v in shallow["mismatch_ah"].values()),
                  "named_defective": shallow["named"]},
        baseline={"expected_dim_wrong_on": len(shallow["known_defective"])},
        holds=all(not v for v in shallow["mismatch_ah"].values()) and shallow["named_ok"],
    )


def _claim_expected_dim_wrong(shallow: dict, seeds: tuple[int, ...]) -> Claim:
    known = shallow["known_defective"]
    return Claim(
        text="the expected-dimension formula is wrong exactly on the defective cases",
        criterion="{edim != computed dim} = {r=2, 2<=d1<=d0-1} + AH exceptions, every seed",
        paper="defective architectures exist (dimension below the parameter count minus symmetries)",
        measured={"edim_wrong": len(shallow["edim_wrong"][seeds[0]]), "ah_exceptions_in_grid": shallow["ah_in_grid"]},
        baseline={"known_defective": len(known)},
        holds=bool(known) and all(shallow["edim_wrong"][s] == known for s in seeds),
    )


def _claim_deep(deep: dict[str, list[int]]) -> Claim:
    return Claim(
        text="deep architectures: computed dimension equals the reference dimensions",
        criterion="equality on every seed: " + "; ".join(f"{w} r={r} -> {d}" for (w, r), d in DEEP.items()),
        paper=None,
        measured=deep,
        baseline={f"{w}|r={r}": expected_dim(w, r) for w, r in DEEP},
        holds=all(all(v == DEEP[(w, r)] for v in deep[f"{w}|r={r}"]) for w, r in DEEP),
    )


def _claim_sample_complexity(ranks_m: dict, m_range: list[int], seeds: tuple[int, ...]) -> Claim:
    target = [min(m, 14) for m in m_range]
    return Claim(
        text="sample complexity: rank with M samples = min(M, 14) for (3,5,1) r=4",
        criterion="equality for M = 1..20, every seed",
        paper="the dimension of the neurovariety is the number of generic samples that determine the function",
        measured=ranks_m[seeds[0]],
        baseline=target,
        holds=all(ranks_m[seed] == target for seed in seeds),
    )


def _claim_singular(sing: dict) -> Claim:
    min_ratio = min(s["grad_ratio"] for s in sing.values())
    max_det = max(max(s["det_generic"], s["det_sub"]) for s in sing.values())
    rank_drop = all(s["param_rank_sub"] < s["param_rank_generic"] and s["param_rank_parallel"] < s["param_rank_generic"]
                    for s in sing.values())
    return Claim(
        text="sub-networks are singular points of det S = 0 ((3,2,1), r=2)",
        criterion="|det| < 1e-12 at both points; ||grad det|| generic / sub-network >= 1e8; param_rank drops, "
                  "every seed",
        paper="sub-networks lie at singular points of the neurovariety (qualitative)",
        measured={"min_grad_ratio": min_ratio, "max_abs_det": max_det,
                  "param_rank": {s: [v["param_rank_generic"], v["param_rank_sub"], v["param_rank_parallel"]]
                                 for s, v in sing.items()}},
        baseline=None,
        holds=min_ratio >= 1e8 and max_det < 1e-12 and rank_drop,
    )


def _claim_threshold(thresholds: dict, bottleneck: int | None) -> Claim:
    return Claim(
        text="activation degree threshold of equi-width (2,2,2) and (3,3,3) is 1",
        criterion="activation_degree_threshold(w, r_max=4) == 1 on every seed, None for the (3,1,3) bottleneck",
        paper="a threshold exists without width-one bottlenecks (Finkel et al., cited)",
        measured=thresholds,
        baseline={"(3, 1, 3) bottleneck": bottleneck},
        holds=all(v == 1 for vals in thresholds.values() for v in vals) and bottleneck is None,
    )


def _claim_linear(linear: dict) -> Claim:
    ok = all(all(v == d["rank_bounded"] for v in d["computed"]) for d in linear.values())
    edim_wrong = sum(d["expected"] != d["rank_bounded"] for d in linear.values())
    return Claim(
        text="linear networks (r=1): dimension of rank-bounded matrices k(d0+dL-k)",
        criterion="equality on every seed, and the scaling-only expected dimension over-counts at least once",
        paper="linear networks parametrise rank-bounded matrices (determinantal varieties)",
        measured={w: d["computed"][0] for w, d in linear.items()},
        baseline={w: d["expected"] for w, d in linear.items()},
        holds=ok and edim_wrong >= 1,
    )


def _claim_exact_vs_float(exact: dict, timing: dict) -> Claim:
    agree = all(v["float"] == v["exact"] for v in exact.values()) and timing["agree"]
    return Claim(
        text="float Jacobian rank agrees with exact sympy rank and is >= 20x faster ((3,4,1), r=3)",
        criterion="equal ranks on the small cases, every seed; median exact / float time >= 20",
        paper=None,
        measured={"speedup": timing["speedup"], "agree": agree},
        baseline={"exact_seconds": timing["exact"], "float_seconds": timing["float"]},
        holds=agree and timing["speedup"] >= 20,
    )


def _claim_sweep_agree(sweep: dict) -> Claim:
    bad = [f"({r['d0']}, {r['k']}, 1)" for r in sweep["rows"] if r["rank_float"] != r["rank_exact"]]
    return Claim(
        text="float and exact ranks agree at every size of the cost sweep ((d0, k, 1), r=3, P up to 256)",
        criterion="equal dimension from float SVD and exact GF(p) elimination at every size, every seed",
        paper=None,
        measured={f"({r['d0']}, {r['k']}, 1)": r["rank_float"] for r in sweep["rows"]},
        baseline={"disagreeing sizes": bad},
        holds=not bad,
    )


def _claim_ratio_grows(sweep: dict) -> Claim:
    s = sweep["time_slope_in_P"]["d0=6"]
    fam = [r for r in sweep["rows"] if r["d0"] == 6]
    return Claim(
        text="where the rank grows with P (d0=6, r=3, k=1..16) the exact/float time ratio grows with size",
        criterion="fitted log-log slope in P of exact time >= float time's + 0.5, and ratio at the largest P "
                  ">= 5x the ratio at the smallest",
        paper=None,
        measured={"slope_exact": s["exact"], "speedup_by_P": {r["n_params"]: r["speedup"] for r in fam}},
        baseline={"slope_float": s["float"]},
        holds=bool(s["exact"] >= s["float"] + 0.5 and fam[-1]["speedup"] >= 5 * fam[0]["speedup"]),
    )


def _claim_ratio_stops(sweep: dict) -> Claim:
    s = sweep["time_slope_in_P"]["d0=3"]
    fam = [r for r in sweep["rows"] if r["d0"] == 3]
    return Claim(
        text="where the rank is capped (d0=3, r=3, rank = A = 10) the ratio stops growing: exact ~ P^2, float ~ P^3",
        criterion="over the three largest sizes (k = 16, 32, 64) the log-log slope in P of exact time <= float "
                  "time's",
        paper=None,
        measured={"slope_exact_top3": s["exact_top3"], "speedup_by_P": {r["n_params"]: r["speedup"] for r in fam}},
        baseline={"slope_float_top3": s["float_top3"]},
        holds=bool(s["exact_top3"] <= s["float_top3"]),
    )


def _sweep_figure(run: Run, sweep: dict) -> str:
    sizes, costs, ratios, top3_slopes, colors, styles = {}, {}, {}, {}, {}, {}
    for d0, color in zip(SWEEP_FAMILIES, ("C0", "C1"), strict=False):
        fam = [r for r in sweep["rows"] if r["d0"] == d0]
        slopes = sweep["time_slope_in_P"][f"d0={d0}"]
        top3 = d0 == 3 and "float_top3" in slopes  # the d0=3 claim fits its three largest sizes
        for mode, style in (("float", "-o"), ("exact", "--s")):
            label = f"{mode}, d0={d0}" + (f", fit k={fam[-3]['k']}..{fam[-1]['k']}" if top3 else "")
            costs[label] = [r[f"{mode}_seconds"] for r in fam]
            if top3:
                top3_slopes[label] = slopes[f"{mode}_top3"]
            styles[label] = style
            sizes[label], colors[label] = [r["n_params"] for r in fam], color
        label = f"d0={d0}, k={fam[0]['k']}..{fam[-1]['k']}"
        ratios[label] = [r["speedup"] for r in fam]
        sizes[label], colors[label] = [r["n_params"] for r in fam], color
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    cost_panel(axes[0], sizes, costs, xlabel="parameters P of (d0, k, 1), r=3",
               title="dimension by float SVD vs exact GF(p) rank", slopes=top3_slopes, colors=colors, styles=styles)
    ratio_panel(axes[1], sizes, ratios, xlabel="parameters P", ylabel="exact / float time",
                title="speed-up of the float rank against size", bounds={"20x (the (3,4,1) claim)": 20}, log=True,
                colors=colors)
    fig.tight_layout()
    return run.savefig(fig, "cost_vs_size")


def _figure(run, grid, computed, expected, m_range, ranks_m, sing, ts, spectra, t_float, t_exact) -> str:
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))

    ax = axes[0, 0]
    d0s = sorted({w[0] for w, _ in grid})
    rs = sorted({r for _, r in grid})
    d1max = max(w[1] for w, _ in grid)
    table = np.full((len(d0s) * len(rs), d1max), np.nan)
    for w, r in grid:
        key = f"{w}|r={r}"
        table[rs.index(r) * len(d0s) + d0s.index(w[0]), w[1] - 1] = expected[key] - computed[key]
    cmap = plt.get_cmap("Reds").with_extremes(bad="lightgrey")
    ax.imshow(np.ma.masked_invalid(table), cmap=cmap, vmin=0, vmax=max(2.0, float(np.nanmax(table))), aspect="auto")
    for (i, j), v in np.ndenumerate(table):
        if np.isfinite(v) and v > 0:
            ax.text(j, i, f"{int(v)}", ha="center", va="center", fontsize=8,
                    color="white" if v >= 0.6 * np.nanmax(table) else "black")
    ax.set_yticks(range(len(d0s) * len(rs)), [f"r={r}, d0={d0}" for r in rs for d0 in d0s], fontsize=7)
    ax.set_xticks(range(d1max), range(1, d1max + 1))
    ax.set_xlabel("hidden width d1")
    ax.set_title("(a) defect = expected dim - computed dim\n(shallow, single output; grey: not in grid)")

    ax = axes[0, 1]
    for key, s in spectra.items():
        ax.semilogy(np.arange(1, len(s) + 1), s, "o-", ms=3, label=key)
    ax.set_xlabel("index j")
    ax.set_ylabel("singular value of equilibrated J")
    ax.set_title("(b) Jacobian spectra: cliff at dim (14, 7)")
    ax.legend(fontsize=8)

    ax = axes[0, 2]
    for seed, ranks in ranks_m.items():
        ax.plot(m_range, ranks, "o-", ms=3, label=f"seed {seed}")
    ax.plot(m_range, [min(m, 14) for m in m_range], "k--", label="min(M, 14)")
    ax.set_xlabel("samples M")
    ax.set_ylabel("rank of J with M samples")
    ax.set_title("(c) sample complexity, (3,5,1) r=4")
    ax.legend(fontsize=8)

    ax = axes[1, 0]
    seeds = list(sing)
    x = np.arange(len(seeds))
    ax.bar(x - 0.2, [sing[s]["grad_generic"] for s in seeds], 0.4, label="generic width-2 point")
    ax.bar(x + 0.2, [max(sing[s]["grad_sub"], 1e-30) for s in seeds], 0.4, label="width-1 sub-network")
    ax.set_yscale("log")
    ax.set_xticks(x, [f"seed {s}" for s in seeds])
    ax.set_ylabel("||grad det S||")
    ax.set_title("(d) singular points of det S = 0, (3,2,1) r=2")
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    for seed, rec in ts.items():
        sig = np.asarray(rec["sigma_S"])
        for j, style in enumerate(("-", "--", ":")):
            ax.semilogy(rec["steps"], sig[:, j], style, color=f"C{list(ts).index(seed)}",
                        label=f"seed {seed}" if j == 0 else None)
    ax.set_xlabel("GD step")
    ax.set_ylabel("singular values of S")
    ax.set_title("(e) illustration: width-3 student, width-1 teacher")
    ax.legend(fontsize=8)

    ax = axes[1, 2]
    ax.bar(["float64 SVD", "exact (sympy, GF(p))"], [t_float * 1e3, t_exact * 1e3], color=["C0", "C1"])
    ax.set_yscale("log")
    ax.set_ylabel("median ms per dimension, (3,4,1) r=3")
    ax.set_title(f"(f) exact / float time = {t_exact / t_float:.0f}x")

    fig.tight_layout()
    return run.savefig(fig, "neuroalgebraic")
