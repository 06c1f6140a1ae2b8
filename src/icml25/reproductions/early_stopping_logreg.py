"""Reproduction of Wu, Bartlett, Telgarsky & Yu (ICML 2025, arXiv:2502.13283): early-stopped GD vs GD at convergence.
Guide, results and calibration notes: docs/papers/early_stopping_logreg.md.

Data: the paper's Figure 1 model (``x ~ N(0, diag(i^-2))``, ``P(y=1|x) = sigmoid(<x, w*>)``,
``w* = 1`` on the first ``k`` coordinates), ``d = 2n``.  All population quantities (logistic
risk, zero-one risk, calibration error) are exact (quadrature), so no test set is needed.
For each seed and each ``n`` we run GD from zero to ``eta t = 1e5`` with checkpoints and compare

1. the oracle early stop (checkpoint of smallest population logistic risk) with the end of the
   path and with the max-margin limit ``c * u`` (GD at convergence);
2. the excess zero-one error of early-stopped GD with the max-margin classifier at every ``n``;
3. the GD path with the ridge path at ``lambda = 1 / (eta t)``;
4. the cost of the exact risks against GD's; at full scale also against size: both timed at every ``n`` (thread
   CPU time, one thread, interleaved repeats, first seed) with the log-log slopes in ``n``.  Complexity: GD
   costs ``O(T n d) = O(T n^2)`` for ``T = eta t / eta`` steps; L, E and CE on ``C`` checkpoints cost
   ``O(C (d + q))`` (two Gaussian moments of ``<x, w>`` per checkpoint, ``q`` quadrature nodes), ``O(n)``.
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.learning_theory.early_stopping_logreg import (
    EarlyStoppedLogisticGD,
    GaussianLogisticModel,
    max_margin_direction,
    ridge_logistic_path,
)

RAY_TEXT = "max-margin limit c*u: excess logistic risk increases over c in {1,10,100} x ||w_ES||/||u||"
RATIO_TEXT = "GD path ~ ridge path (lambda = 1/(eta t)): norm ratio ||w_t||/||w_lambda|| in [0.7, 1.4]"

PAPER = Paper(
    id="early_stopping_logreg",
    title="Benefits of Early Stopping in Gradient Descent for Overparameterized Logistic Regression",
    module="icml25.learning_theory.early_stopping_logreg",
    anchors=("scikit-learn",),
    default_seeds=(0, 1, 2, 3, 4),
    known_misses={
        RAY_TEXT: "the risk along c*u is U-shaped from the early-stopped norm (under-scaled at 1x); it rises from "
                  "10x on",
        RATIO_TEXT: "only the first GD step (eta*t ~ 2) overshoots gradient flow (ratio ~1.46); from eta*t >= 10, "
                    "and with a 4x smaller step, it is inside",
    },
)

RAY_SCALES = np.array([1.0, 10.0, 100.0])


def _excess_curves(model: GaussianLogisticModel, path: np.ndarray) -> dict[str, np.ndarray]:
    bayes = model.bayes_risks()
    return {
        "logistic": model.logistic_risk(path) - bayes["logistic"],
        "zero_one": model.zero_one_risk(path) - bayes["zero_one"],
        "calibration": model.calibration_error(path),
    }


def _one_instance(seed: int, n: int, k: int, max_eta_t: float, n_checkpoints: int, main: bool) -> dict:
    """GD path, oracle stop, max-margin and interpolator for one (seed, n); ridge/validation if ``main``."""
    model = GaussianLogisticModel.power_law(d=2 * n, n_signal=k, seed=np.random.default_rng([seed, n]))
    X, y = model.sample(n)
    bayes = model.bayes_risks()
    excess_zero = float(np.log(2.0) - bayes["logistic"])

    gd = EarlyStoppedLogisticGD(stop="none", max_eta_t=max_eta_t, n_checkpoints=n_checkpoints).fit(X, y)
    curves = _excess_curves(model, gd.path_)
    es = int(np.argmin(curves["logistic"]))
    decade = int(np.argmin(np.abs(np.log(gd.eta_t_ / (max_eta_t / 10.0)))))
    u = max_margin_direction(X, y)
    interp = np.linalg.lstsq(X, y, rcond=None)[0]
    out = {
        "n": n,
        "d": 2 * n,
        "step_size": gd.step_size_,
        "excess_of_zero": excess_zero,
        "oracle_eta_t": float(gd.eta_t_[es]),
        "es_excess_logistic": float(curves["logistic"][es]),
        "end_excess_logistic": float(curves["logistic"][-1]),
        "decade_excess_logistic": float(curves["logistic"][decade]),
        "es_calibration": float(curves["calibration"][es]),
        "end_calibration": float(curves["calibration"][-1]),
        "es_excess_zero_one": float(curves["zero_one"][es]),
        "end_excess_zero_one": float(curves["zero_one"][-1]),
        "max_margin_excess_zero_one": float(model.zero_one_risk(u) - bayes["zero_one"]),
        "min_norm_interpolator_excess_zero_one": float(model.zero_one_risk(interp) - bayes["zero_one"]),
    }
    if not main:
        return out

    norm_u = float(np.linalg.norm(u))
    for name, w in (("es", gd.path_[es]), ("end", gd.path_[-1])):
        rays = RAY_SCALES[:, None] * (np.linalg.norm(w) / norm_u) * u
        out[f"ray_from_{name}_excess_logistic"] = (model.logistic_risk(rays) - bayes["logistic"]).tolist()
    ray_norms = np.geomspace(np.linalg.norm(gd.path_[es]), 10.0 * np.linalg.norm(gd.path_[-1]), 30)
    out["ray_norms"] = ray_norms.tolist()
    out["ray_excess_logistic"] = (
        model.logistic_risk(ray_norms[:, None] * u / norm_u) - bayes["logistic"]
    ).tolist()
    out["path_norms"] = np.linalg.norm(gd.path_, axis=1).tolist()
    out["eta_t"] = gd.eta_t_.tolist()
    out.update({f"path_excess_{key}": value.tolist() for key, value in curves.items()})

    window = (gd.eta_t_ >= 1.0) & (gd.eta_t_ <= 1e3)
    ridge = ridge_logistic_path(X, y, 1.0 / gd.eta_t_[window])
    out["ridge_eta_t"] = gd.eta_t_[window].tolist()
    out.update(_compare_paths(gd.path_[window], ridge))
    out["ridge_excess_logistic"] = (model.logistic_risk(ridge) - bayes["logistic"]).tolist()

    # The same comparison with a 4x smaller step, closer to gradient flow (see the docs' calibration notes).
    small = EarlyStoppedLogisticGD(
        step_size=gd.step_size_ / 4, stop="budget", budget=1e3, min_eta_t=1.0, n_checkpoints=n_checkpoints
    ).fit(X, y)
    small_ridge = ridge_logistic_path(X, y, 1.0 / small.eta_t_)
    out["small_step_eta_t"] = small.eta_t_.tolist()
    out.update({f"small_step_{key}": v for key, v in _compare_paths(small.path_, small_ridge).items()})

    val = EarlyStoppedLogisticGD(
        stop="validation", max_eta_t=max_eta_t, n_checkpoints=n_checkpoints, random_state=seed
    ).fit(X, y)
    out["validation_stop_eta_t"] = float(val.eta_t_[val.stop_index_])
    out["validation_stop_excess_logistic"] = float(model.logistic_risk(val.coef_) - bayes["logistic"])
    out["validation_stop_excess_zero_one"] = float(model.zero_one_risk(val.coef_) - bayes["zero_one"])
    out["_model"], out["_data"], out["_path"] = model, (X, y), gd.path_
    return out


def _compare_paths(gd_path: np.ndarray, ridge: np.ndarray) -> dict[str, list[float]]:
    norm_gd = np.linalg.norm(gd_path, axis=1)
    norm_ridge = np.linalg.norm(ridge, axis=1)
    return {
        "ridge_cosine": ((gd_path * ridge).sum(axis=1) / (norm_gd * norm_ridge)).tolist(),
        "ridge_norm_ratio": (norm_gd / norm_ridge).tolist(),
    }


def _timing_ratio(main: dict, max_eta_t: float, n_checkpoints: int, repeats: int = 3) -> dict[str, float]:
    """Median time of the three population risks on the path over the median time of the GD fit."""
    model, (X, y), path = main["_model"], main["_data"], main["_path"]
    times = interleaved_seconds({
        "fit": lambda: EarlyStoppedLogisticGD(stop="none", max_eta_t=max_eta_t, n_checkpoints=n_checkpoints).fit(X, y),
        "eval": lambda: _excess_curves(model, path),
    }, repeats=repeats, warmup=0)
    fit, evaluation = float(np.median(times["fit"])), float(np.median(times["eval"]))
    return {
        "gd_fit_seconds": fit,
        "path_eval_seconds": evaluation,
        "eval_over_fit_time_ratio": evaluation / fit,
    }


def _sweep(seed: int, n_list: tuple[int, ...], k: int, max_eta_t: float, n_checkpoints: int,
           repeats: int) -> dict:
    """GD fit against the three exact risks on its path, at every ``n`` (``d = 2n``): thread CPU time of
    ``repeats`` interleaved rounds after one warm-up on one thread, and the log-log slopes in ``n``."""
    rows = []
    with single_thread():
        for n in n_list:
            model = GaussianLogisticModel.power_law(d=2 * n, n_signal=k, seed=np.random.default_rng([seed, n]))
            X, y = model.sample(n)
            gd = EarlyStoppedLogisticGD(stop="none", max_eta_t=max_eta_t, n_checkpoints=n_checkpoints).fit(X, y)
            times = interleaved_seconds({
                "fit": lambda X=X, y=y: EarlyStoppedLogisticGD(stop="none", max_eta_t=max_eta_t,
                                                               n_checkpoints=n_checkpoints).fit(X, y),
                "eval": lambda model=model, path=gd.path_: _excess_curves(model, path),
            }, repeats=repeats, warmup=1, clock=time.thread_time)
            fit, evaluation = float(np.median(times["fit"])), float(np.median(times["eval"]))
            rows.append({"n": n, "d": 2 * n, "gd_steps": int(round(gd.eta_t_[-1] / gd.step_size_)),
                         "checkpoints": len(gd.path_), "gd_fit_seconds": fit, "path_eval_seconds": evaluation,
                         "eval_over_fit_time_ratio": evaluation / fit})
    ns = [r["n"] for r in rows]
    return {"rows": rows, "clock": "thread_time", "repeats": repeats,
            "time_slope_in_n": {key: loglog_slope(ns, [r[f"{key}_seconds"] for r in rows])
                                for key in ("gd_fit", "path_eval")}}


def _monotone(values: list[float]) -> bool:
    return bool(np.all(np.diff(values) > 0))


def reproduce(run: Run) -> Result:
    # 1. Sizes: the paper's Figure 1 model with d = 2n; quick runs n in {125, 250}.
    n_list = run.pick(smoke=(15, 30), quick=(125, 250), full=(125, 250, 500, 1000))
    k = run.pick(smoke=5, quick=25, full=100)
    max_eta_t = run.pick(smoke=1e3, quick=1e5, full=1e5)
    n_checkpoints = run.pick(smoke=20, quick=60, full=60)
    n_main = max(n_list)

    # 2. Experiment: per seed and n, the GD path, the oracle stop, the max-margin limit, the
    #    interpolator; at the largest n also the ridge path, a smaller step and the validation stop.
    per_seed: dict[int, dict[int, dict]] = {}
    total = len(run.seeds) * len(n_list)
    for i, seed in enumerate(run.seeds):
        per_seed[seed] = {}
        for j, n in enumerate(n_list):
            per_seed[seed][n] = _one_instance(seed, n, k, max_eta_t, n_checkpoints, main=n == n_main)
            run.progress((i * len(n_list) + j + 1) / total, f"seed {seed}, n = {n}")
    mains = [per_seed[s][n_main] for s in run.seeds]
    timing = _timing_ratio(mains[0], max_eta_t, n_checkpoints)
    sweep = None
    if run.scale != "quick":
        run.progress(1.0, "cost against size: GD fit vs exact risks")
        sweep = _sweep(run.seeds[0], n_list, k, max_eta_t, n_checkpoints, run.pick(smoke=1, quick=1, full=3))
    by_n = {key: [float(np.mean([per_seed[s][n][key] for s in run.seeds])) for n in n_list]
            for key in ("es_excess_zero_one", "max_margin_excess_zero_one", "min_norm_interpolator_excess_zero_one")}

    # 3. Claims (measured numbers and the two known misses: docs/papers/early_stopping_logreg.md).
    claims = [
        _claim_early_stop_consistent(mains),
        _claim_end_of_path_overfits(mains, max_eta_t),
        _claim_ray_from_early_stop(mains),
        _claim_ray_from_end(mains),
        _claim_calibrated(mains),
        _claim_zero_one_gap(by_n, n_list),
        _claim_ridge_cosine(mains),
        _claim_ridge_norm_ratio(mains),
        _claim_cheap_risks(timing),
    ]
    if run.scale == "full":
        claims.append(_claim_cheap_at_every_size(sweep))

    # 4. Figures and metrics.
    figures = [_figure(run, mains, n_list, *by_n.values())] + ([_sweep_figure(run, sweep)] if sweep else [])
    metrics = _metrics(per_seed, mains, by_n, n_list, k, max_eta_t, timing)
    metrics["cost_sweep"] = sweep
    return Result(metrics=metrics, claims=claims, figures=figures)


def _ratios(mains: list[dict], num: str, den: str) -> list[float]:
    return [m[num] / m[den] for m in mains]


def _claim_early_stop_consistent(mains: list[dict]) -> Claim:
    es = summary(_ratios(mains, "es_excess_logistic", "excess_of_zero"))
    return Claim(
        text="early-stopped GD (oracle stop) has small excess logistic risk; GD at eta*t = max does not",
        criterion="mean over seeds of (L(w_ES) - L(w*)) / (L(0) - L(w*)) <= 0.25; baseline: the same ratio at "
                  "the end of the path",
        paper="excess logistic risk of early-stopped GD vanishes; of GD at convergence it diverges (theorems, "
              "no numbers)",
        measured=es,
        baseline=summary(_ratios(mains, "end_excess_logistic", "excess_of_zero")),
        holds=es["mean"] <= 0.25,
    )


def _claim_end_of_path_overfits(mains: list[dict], max_eta_t: float) -> Claim:
    end_over_min = summary(_ratios(mains, "end_excess_logistic", "es_excess_logistic"))
    rising = [m["end_excess_logistic"] > m["decade_excess_logistic"] for m in mains]
    return Claim(
        text=f"GD run to eta*t = {max_eta_t:g} overfits: excess risk >= 3x the path minimum, rising",
        criterion="mean over seeds of excess(end) / excess(oracle stop) >= 3, and excess(end) > excess(eta*t = "
                  "max/10) on every seed (baseline: the number of seeds rising)",
        paper="excess logistic risk of GD at convergence -> infinity (theorem, no numbers)",
        measured=end_over_min,
        baseline=int(sum(rising)),
        holds=end_over_min["mean"] >= 3.0 and all(rising),
    )


def _claim_ray_from_early_stop(mains: list[dict]) -> Claim:
    monotone = [_monotone(m["ray_from_es_excess_logistic"]) for m in mains]
    return Claim(
        text=RAY_TEXT,
        criterion="excess logistic risk of c*u strictly increasing over the three scales, every seed "
                  "(measured: share of seeds)",
        paper="excess logistic risk of GD at convergence -> infinity (theorem, no numbers)",
        measured=float(np.mean(monotone)),
        baseline=None,
        holds=all(monotone),
    )


def _claim_ray_from_end(mains: list[dict]) -> Claim:
    monotone = [_monotone(m["ray_from_end_excess_logistic"]) for m in mains]
    return Claim(
        text="max-margin limit c*u beyond GD's end-of-path norm: excess risk increases over "
             "c in {1,10,100} x ||w_end||/||u|| (asymptotic GD diverges)",
        criterion="strictly increasing over the three scales, every seed (measured: share of seeds; baseline: "
                  "excess risk at 100x)",
        paper="excess logistic risk of GD at convergence -> infinity (theorem, no numbers)",
        measured=float(np.mean(monotone)),
        baseline=summary([m["ray_from_end_excess_logistic"][-1] for m in mains]),
        holds=all(monotone),
    )


def _claim_calibrated(mains: list[dict]) -> Claim:
    es = summary([m["es_calibration"] for m in mains])
    end = summary([m["end_calibration"] for m in mains])
    return Claim(
        text="early-stopped GD is calibrated: calibration error at the oracle stop <= 0.5 x at the end",
        criterion="mean CE(w_ES) <= 0.5 x mean CE(w at eta*t = max), over seeds",
        paper="early-stopped GD is calibrated, GD at convergence is not (theorems, no numbers)",
        measured=es,
        baseline=end,
        holds=es["mean"] <= 0.5 * end["mean"],
    )


def _claim_zero_one_gap(by_n: dict[str, list[float]], n_list) -> Claim:
    es01, mm01 = by_n["es_excess_zero_one"], by_n["max_margin_excess_zero_one"]
    return Claim(
        text=f"excess 0-1 error: early-stopped GD < max-margin at every n in {list(n_list)} (d = 2n), "
             "decreasing in n",
        criterion="mean over seeds: ES excess 0-1 < max-margin's at every n, and ES decreasing in n",
        paper="polynomial sample complexity for early-stopped GD, exponential for any interpolator in some "
              "instances (theorems, no numbers)",
        measured=es01,
        baseline=mm01,
        holds=bool(all(a < b for a, b in zip(es01, mm01, strict=False)) and all(np.diff(es01) < 0)),
    )


def _claim_ridge_cosine(mains: list[dict]) -> Claim:
    cos_min = float(min(min(m["ridge_cosine"]) for m in mains))
    return Claim(
        text="GD path ~ ridge path (lambda = 1/(eta t)): cosine >= 0.95 on eta*t in [1, 1e3]",
        criterion="minimum over seeds and checkpoints of cosine(w_t, w_lambda) >= 0.95",
        paper="the early-stopped GD path stays close in angle to the ridge path (theorem, no numbers)",
        measured=cos_min,
        baseline=None,
        holds=cos_min >= 0.95,
    )


def _claim_ridge_norm_ratio(mains: list[dict]) -> Claim:
    lo = float(min(min(m["ridge_norm_ratio"]) for m in mains))
    hi = float(max(max(m["ridge_norm_ratio"]) for m in mains))
    small_lo = float(min(min(m["small_step_ridge_norm_ratio"]) for m in mains))
    small_hi = float(max(max(m["small_step_ridge_norm_ratio"]) for m in mains))
    return Claim(
        text=RATIO_TEXT,
        criterion="[min, max] over seeds and checkpoints of ||w_t|| / ||w_lambda|| within [0.7, 1.4] for eta*t in "
                  "[1, 1e3]; baseline: the same with a 4x smaller step",
        paper="the early-stopped GD path stays close in norm to the ridge path (theorem, no numbers)",
        measured=[lo, hi],
        baseline=[small_lo, small_hi],
        holds=lo >= 0.7 and hi <= 1.4,
    )


def _claim_cheap_risks(timing: dict[str, float]) -> Claim:
    ratio = timing["eval_over_fit_time_ratio"]
    return Claim(
        text="exact population risks are cheap: L, E and CE on the whole path <= 0.2 x GD time",
        criterion="median time of L, E and CE on the path <= 0.2 x median GD fit time (3 interleaved repeats, "
                  "first seed)",
        paper=None,
        measured=ratio,
        baseline=0.2,
        holds=ratio <= 0.2,
    )


def _claim_cheap_at_every_size(sweep: dict) -> Claim:
    ratios = {r["n"]: r["eval_over_fit_time_ratio"] for r in sweep["rows"]}
    slopes = sweep["time_slope_in_n"]
    return Claim(
        text="the exact risks stay cheap as the problem grows: <= 0.2 x GD time at every n, and they grow more "
             "slowly in n than GD",
        criterion="thread CPU time of L, E and CE on the path / of the GD fit <= 0.2 at every n of the sweep (d = 2n), "
                  "and fitted log-log slope in n of the risks < GD's (complexity O(C d) against O(T n d))",
        paper=None,
        measured={"ratio_by_n": ratios, "slope_path_eval": slopes["path_eval"]},
        baseline={"slope_gd_fit": slopes["gd_fit"]},
        holds=max(ratios.values()) <= 0.2 and slopes["path_eval"] < slopes["gd_fit"],
    )


def _sweep_figure(run: Run, sweep: dict) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "cost_vs_size", [r["n"] for r in rows],
        {"GD fit": [r["gd_fit_seconds"] for r in rows],
         "L, E, CE on the path": [r["path_eval_seconds"] for r in rows]},
        xlabel="n (d = 2n)", title="cost against size",
        ratios={"risks / GD": [r["eval_over_fit_time_ratio"] for r in rows]}, bounds={"0.2 (the claim)": 0.2},
        ratio_ylabel="risks / GD time", ratio_title="relative cost of the exact risks", ratio_log=True)


def _metrics(per_seed, mains, by_n, n_list, k, max_eta_t, timing) -> dict:
    n_main = max(n_list)
    late = [r for m in mains for e, r in zip(m["ridge_eta_t"], m["ridge_norm_ratio"], strict=False) if e >= 10.0]
    return {
        "n_list": list(n_list),
        "n_main": n_main,
        "d_main": 2 * n_main,
        "n_signal": k,
        "max_eta_t": max_eta_t,
        "es_over_zero_excess_ratio": _ratios(mains, "es_excess_logistic", "excess_of_zero"),
        "end_over_zero_excess_ratio": _ratios(mains, "end_excess_logistic", "excess_of_zero"),
        "end_over_min_excess_ratio": _ratios(mains, "end_excess_logistic", "es_excess_logistic"),
        "rising_over_last_decade": [m["end_excess_logistic"] > m["decade_excess_logistic"] for m in mains],
        "calibration_ratio_es_over_end": _ratios(mains, "es_calibration", "end_calibration"),
        "ray_from_es_monotone": [_monotone(m["ray_from_es_excess_logistic"]) for m in mains],
        "ray_from_end_monotone": [_monotone(m["ray_from_end_excess_logistic"]) for m in mains],
        "es_excess_zero_one_by_n": by_n["es_excess_zero_one"],
        "max_margin_excess_zero_one_by_n": by_n["max_margin_excess_zero_one"],
        "min_norm_interpolator_excess_zero_one_by_n": by_n["min_norm_interpolator_excess_zero_one"],
        "ridge_cosine_min": float(min(min(m["ridge_cosine"]) for m in mains)),
        "ridge_norm_ratio_range": [float(min(min(m["ridge_norm_ratio"]) for m in mains)),
                                   float(max(max(m["ridge_norm_ratio"]) for m in mains))],
        "ridge_norm_ratio_from_eta_t_10": [float(min(late)), float(max(late))] if late else None,
        "small_step_ridge_norm_ratio_range": [float(min(min(m["small_step_ridge_norm_ratio"]) for m in mains)),
                                              float(max(max(m["small_step_ridge_norm_ratio"]) for m in mains))],
        "small_step_ridge_cosine_min": float(min(min(m["small_step_ridge_cosine"]) for m in mains)),
        "validation_stop_over_zero_excess_ratio": _ratios(mains, "validation_stop_excess_logistic", "excess_of_zero"),
        "validation_stop_excess_zero_one": [m["validation_stop_excess_zero_one"] for m in mains],
        "timing_seconds": timing,
        "per_seed": {
            str(s): {str(n): {key: v for key, v in r.items() if not key.startswith("_")} for n, r in rows.items()}
            for s, rows in per_seed.items()
        },
    }


def _on_grid(grid: np.ndarray, xs: list, ys: list) -> np.ndarray:
    """Interpolate each seed's curve (log x) on a common grid; rows are seeds."""
    return np.array([np.interp(np.log(grid), np.log(x), y) for x, y in zip(xs, ys, strict=False)])


def _band(ax, grid: np.ndarray, rows: np.ndarray, label: str, color: str) -> None:
    ax.plot(grid, rows.mean(axis=0), color=color, label=label)
    ax.fill_between(grid, rows.min(axis=0), rows.max(axis=0), color=color, alpha=0.2)


def _figure(run: Run, mains: list[dict], n_list, es01, mm01, mn01) -> str:
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    lo = max(min(m["eta_t"][0] for m in mains), 1e-1)
    grid = np.geomspace(max(m["eta_t"][0] for m in mains), min(m["eta_t"][-1] for m in mains), 80)
    xs = [m["eta_t"] for m in mains]

    ax = axes[0, 0]
    _band(ax, grid, _on_grid(grid, xs, [m["path_excess_logistic"] for m in mains]), "GD path", "C0")
    rgrid = np.geomspace(
        max(m["ridge_eta_t"][0] for m in mains), min(m["ridge_eta_t"][-1] for m in mains), 40
    )
    ridge = _on_grid(rgrid, [m["ridge_eta_t"] for m in mains], [m["ridge_excess_logistic"] for m in mains])
    _band(ax, rgrid, ridge, "ridge path, lambda = 1/(eta t)", "C2")
    ax.axhline(np.mean([m["excess_of_zero"] for m in mains]), color="gray", ls=":", label="w = 0")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="eta * t",
        ylabel="excess logistic risk",
        xlim=(lo, None),
        title="(a) excess logistic risk along the path",
    )
    ax.legend(fontsize=8)

    ax = axes[0, 1]
    _band(
        ax, grid, _on_grid(grid, xs, [m["path_excess_calibration"] for m in mains]), "calibration error", "C3"
    )
    _band(ax, grid, _on_grid(grid, xs, [m["path_excess_zero_one"] for m in mains]), "excess 0-1 error", "C1")
    ax.set(xscale="log", xlabel="eta * t", title="(b) calibration and 0-1 error along the path")
    ax.legend(fontsize=8)

    ax = axes[0, 2]
    ax.plot(n_list, es01, "o-", label="early-stopped GD (oracle)")
    ax.plot(n_list, mm01, "s-", label="max-margin (GD at convergence)")
    ax.plot(n_list, mn01, "^--", label="min-norm interpolator")
    ax.set(
        xscale="log",
        xlabel="n (d = 2n)",
        ylabel="excess 0-1 error",
        title="(c) early stopping vs interpolation",
    )
    ax.set_xticks(n_list, [str(n) for n in n_list])
    ax.minorticks_off()
    ax.legend(fontsize=8)

    ax = axes[1, 0]
    for i, m in enumerate(mains):
        ax.plot(
            m["path_norms"],
            m["path_excess_logistic"],
            color="C0",
            alpha=0.7,
            label="GD path" if i == 0 else None,
        )
        ax.plot(
            m["ray_norms"],
            m["ray_excess_logistic"],
            color="C3",
            alpha=0.7,
            label="max-margin ray c*u" if i == 0 else None,
        )
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="||w||",
        ylabel="excess logistic risk",
        title="(d) GD vs its max-margin limit, by norm",
    )
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    cgrid = rgrid
    _band(
        ax,
        cgrid,
        _on_grid(cgrid, [m["ridge_eta_t"] for m in mains], [m["ridge_cosine"] for m in mains]),
        "cosine, default step",
        "C0",
    )
    _band(
        ax,
        cgrid,
        _on_grid(cgrid, [m["ridge_eta_t"] for m in mains], [m["ridge_norm_ratio"] for m in mains]),
        "norm ratio, default step",
        "C1",
    )
    sgrid = np.geomspace(max(m["small_step_eta_t"][0] for m in mains), 1e3, 40)
    _band(
        ax,
        sgrid,
        _on_grid(
            sgrid, [m["small_step_eta_t"] for m in mains], [m["small_step_ridge_norm_ratio"] for m in mains]
        ),
        "norm ratio, step / 4",
        "C4",
    )
    for bound in (0.7, 1.4, 0.95):
        ax.axhline(bound, color="gray", ls=":")
    ax.set(xscale="log", xlabel="eta * t (lambda = 1 / (eta t))", title="(e) GD path vs ridge path")
    ax.legend(fontsize=8)

    ax = axes[1, 2]
    rows = {
        "oracle stop": [m["es_excess_logistic"] / m["excess_of_zero"] for m in mains],
        "validation stop": [m["validation_stop_excess_logistic"] / m["excess_of_zero"] for m in mains],
        "end of path": [m["end_excess_logistic"] / m["excess_of_zero"] for m in mains],
    }
    seeds = np.arange(len(mains))
    for i, (label, values) in enumerate(rows.items()):
        ax.bar(seeds + (i - 1) * 0.27, values, width=0.27, label=label)
    ax.axhline(0.25, color="gray", ls=":", label="0.25 (criterion)")
    ax.set(
        yscale="log",
        xlabel="seed",
        ylabel="excess risk / (L(0) - L(w*))",
        title="(f) stopping rules (validation: 20% held out)",
    )
    ax.set_xticks(seeds)
    every = [v for values in rows.values() for v in values]
    ax.set_ylim(0.5 * min(every), 30 * max(every))
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    fig.suptitle(
        f"Early-stopped GD, d = {mains[0]['d']}, n = {mains[0]['n']}, {len(mains)} seeds (band: min-max)"
    )
    fig.tight_layout()
    return run.savefig(fig, "early_stopping")
