"""fiber_bundle_dynamics: measurement-aware CBF and noise-weighted Neural ODE, in our 2-D instantiation.

Reproduces Zheng & Mei, "Learning Dynamics under Environmental Constraints via Measurement-Induced
Bundle Structures" (ICML 2025, arXiv 2505.19521); the user guide is docs/papers/fiber_bundle_dynamics.md.
The paper's tasks (Genesis soft worm, Franka, quadrotor) are out of reach offline; our substitute is a
planar point robot with unknown drag, four corner beacons whose noise bound (the fibre radius) grows with distance,
random obstacle layouts and a PD controller behind a safety QP.  Per seed:

1. exploration data (40 trajectories of 2 s) measured at noise scales 0.5, 1 and 2 (the same
   true trajectories and unit noise, scaled); structured Neural ODEs fitted by multiple shooting
   with the inverse-covariance weighting (all scales) and without it (scale 1, the ablation);
   relative vector-field error on 2000 clean random points;
2. 30 random layouts, each run in lockstep with common random numbers under the mCBF, the
   noise-blind CBF (raw measurements, no margin), the worst-case robust CBF (margin
   ``L max delta_v``) and no filter, all on the weighted scale-1 model, and the mCBF and the
   noise-blind CBF at noise scales 0.5, 1, 2, 4;
3. (full scale) the filter cost against the number of QP constraints: both filters on 30 states with
   n = 3..96 random obstacles, all of them in the QP (``k_nearest = n``), log-log slopes in n.

Claims pool the episodes of all seeds (90 at quick scale) or average the seeds' errors.
"""

from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np

from icml25.control.fiber_bundle_dynamics import (
    EpisodeConfig,
    LocalSensorModel,
    MeasurementAwareCBF,
    NeuralODEDynamics,
    exploration_data,
    fit_neural_ode,
    random_layout,
    rollout,
    shooting_error_quantile,
    vector_field_error,
)
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds

CLAIM_SAFE = "mCBF keeps constraints under local noisy sensing (zero-violation episodes, CSR) vs the noise-blind CBF"
CLAIM_ADAPTIVE = "adaptive margins are less conservative than the worst-case robust CBF at equal safety"
CLAIM_WEIGHTED = "uncertainty-weighted Neural ODE: vector-field error <= 0.8 x unweighted"
CLAIM_SCALING = "weighted error grows with the noise scale, at most 4x from scale 0.5 to 2"
CLAIM_DEGRADE = "graceful degradation: mCBF violation rate <= noise-blind at every noise scale, <= 0.1 at scale 2"
CLAIM_COST = "mCBF filter adds at most 2x per-step cost over the noise-blind CBF"
CLAIM_COST_SWEEP = ("mCBF filter cost has the order of the noise-blind filter's in the number of QP constraints "
                    "(3..96 obstacles, all in the QP)")
DRIFT = "drifting noise (our added noise model)"
WHITE = "white noise"

PAPER = Paper(
    id="fiber_bundle_dynamics",
    title="Learning Dynamics under Environmental Constraints via Measurement-Induced Bundle Structures",
    module="icml25.control.fiber_bundle_dynamics",
    anchors=("torchdiffeq", "ContinuumCoder/Measurement-Induced-Bundle-for-Learning-Dynamics"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses={
        f"{CLAIM_ADAPTIVE}, {DRIFT}": "a narrow miss of both branches (+0.09 SR, path ratio 0.954): the PD + QP "
                                      "controller deadlocks in passages either margin closes",
        CLAIM_SCALING: "the error grows about quadratically with the noise: each segment starts from a noisy "
                       "measurement, a bias Theorem 4.1 does not model",
        CLAIM_DEGRADE: "full scale only, on one episode: at drifting noise scale 0.5 the mCBF violates in 1 of 300 "
                       "episodes where the noise-blind one has none; at larger scales it is much safer (0.05 vs 0.42)",
    },
)

TRAIN_SCALES = (0.5, 1.0, 2.0)
SWEEP_SCALES = (0.5, 1.0, 2.0, 4.0)
# Control groups per noise model.  "slow": the sensor error drifts within the fibre (AR(1), 1 s);
# "white": i.i.d. draws every 20 ms (the paper's bounded-noise model), which the plant itself averages out.
NOISE = {"slow": 1.0, "white": 0.0}
GROUPS = {
    "slow": [("mcbf", 1.0), ("blind", 1.0), ("worst_case", 1.0), ("none", 1.0)]
    + [(m, s) for s in SWEEP_SCALES if s != 1.0 for m in ("mcbf", "blind")],
    "white": [(m, s) for s in SWEEP_SCALES for m in ("mcbf", "blind")] + [("worst_case", 1.0), ("none", 1.0)],
}
DT = 0.02


def _test_points(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Clean (x, u) points: p in [0, 2]^2, v in [-1, 1]^2, u in [-2, 2]^2."""
    rng = np.random.default_rng([seed, 7])
    x = np.concatenate([rng.uniform(0, 2, (n, 2)), rng.uniform(-1, 1, (n, 2))], axis=1)
    return x, rng.uniform(-2, 2, (n, 2))


def _learning(seed: int, size: dict) -> tuple[dict, NeuralODEDynamics, float]:
    """Fit the weighted models at every training scale and the unweighted one at scale 1."""
    x_test, u_test = _test_points(seed, size["n_test"])
    errors, seconds, models = {}, {}, {}
    for scale in TRAIN_SCALES:
        sensor = LocalSensorModel(scale=scale)
        x, y, u = exploration_data(size["n_traj"], 2.0, DT, sensor, seed=np.random.default_rng([seed, 1]))
        for weighting in (True, False) if scale == 1.0 else (True,):
            key = f"{'weighted' if weighting else 'unweighted'}@{scale:g}"
            model = NeuralODEDynamics(seed=seed, drag_inputs="velocity")
            t0 = time.perf_counter()
            fit_neural_ode(model, y, u, DT, sensor.state_sigma, weighting=weighting, horizon=10,
                           steps=size["steps"], lr=size["lr"], batch_size=size["batch"], stride=2, seed=seed)
            seconds[key] = time.perf_counter() - t0
            errors[key] = vector_field_error(model, x_test, u_test)
            models[key] = model
    x_val, _, u_val = exploration_data(10, 2.0, DT, LocalSensorModel(), seed=np.random.default_rng([seed, 2]))
    eps_f = shooting_error_quantile(models["weighted@1"], x_val, u_val, DT, horizon=10, q=0.95)
    return {"vf_error": errors, "train_seconds": seconds, "eps_f": eps_f}, models["weighted@1"], eps_f


def _filter_cost(seed: int, repeats: int) -> dict:
    """Median time of one batched filter call (30 states) for the mCBF and the noise-blind CBF."""
    rng = np.random.default_rng([seed, 3])
    lay = [random_layout(rng) for _ in range(30)]
    obs = np.stack([np.resize(lay_i.obstacles, (6, 2)) for lay_i in lay])
    rad = np.stack([np.resize(lay_i.radii, 6) for lay_i in lay])
    x = np.concatenate([rng.uniform(0, 2, (30, 2)), rng.uniform(-1, 1, (30, 2))], axis=1)
    sensor = LocalSensorModel()
    f0 = np.concatenate([x[:, 2:], -0.4 * x[:, 2:]], axis=1)
    G = np.zeros((30, 4, 2))
    G[:, 2, 0] = G[:, 3, 1] = 1.0
    out = {}
    for mode in ("adaptive", "blind"):
        cbf = MeasurementAwareCBF(obs, rad, mode=mode)
        out[mode] = median_seconds(lambda cbf=cbf: cbf.filter(x, np.ones((30, 2)), lambda _: (f0, G),
                                                              sensor.radius(x[:, :2]), 2.0), repeats)
    return out


def _cost_sweep(seed: int, sizes: tuple[int, ...], repeats: int) -> dict | None:
    """Thread CPU time of one batched filter call (30 states, ``n`` random obstacles, all ``n`` in the QP) for the
    mCBF and the noise-blind CBF, medians of interleaved repeats, and the log-log slopes in ``n``.

    Both filters build the same ``n + 4``-constraint QP; the vertex enumeration of ``solve_qp_2d`` checks
    O(n^2) candidates against n constraints (O(n^3), O(n^2) while the constant terms dominate); the mCBF adds
    one O(n) Lipschitz margin ``L_i delta_v`` to the offsets.  Same order, a ratio that tends to 1.
    """
    if not sizes:
        return None
    rng = np.random.default_rng([seed, 5])
    x = np.concatenate([rng.uniform(0, 2, (30, 2)), rng.uniform(-1, 1, (30, 2))], axis=1)
    parts = (np.concatenate([x[:, 2:], -0.4 * x[:, 2:]], axis=1), np.zeros((30, 4, 2)))
    parts[1][:, 2, 0] = parts[1][:, 3, 1] = 1.0
    delta_v, u_nom = LocalSensorModel().radius(x[:, :2]), np.ones((30, 2))
    rows = []
    for n in sizes:
        obs, rad = rng.uniform(0.2, 1.8, (30, n, 2)), rng.uniform(0.05, 0.15, (30, n))
        cbfs = {mode: MeasurementAwareCBF(obs, rad, mode=mode, k_nearest=n) for mode in ("adaptive", "blind")}
        fns = {mode: lambda cbf=cbf: cbf.filter(x, u_nom, lambda _: parts, delta_v, 2.0) for mode, cbf in cbfs.items()}
        sec = {k: float(np.median(v)) for k, v in interleaved_seconds(fns, repeats, clock=time.thread_time).items()}
        rows.append({"n_obstacles": n, "n_constraints": n + 4, "mcbf_seconds": sec["adaptive"],
                     "blind_seconds": sec["blind"], "mcbf_over_blind_time_ratio": sec["adaptive"] / sec["blind"]})
    ns = [r["n_obstacles"] for r in rows]
    return {"rows": rows, "clock": "thread_time", "repeats": repeats,
            "time_slope_in_n": {k: loglog_slope(ns, [r[f"{k}_seconds"] for r in rows]) for k in ("mcbf", "blind")}}


def _pooled(per_seed: list[dict], key: str) -> np.ndarray:
    return np.concatenate([np.asarray(r["episodes"][key], dtype=float) for r in per_seed])


def reproduce(run: Run) -> Result:
    """Learn the dynamics at three noise scales, then run every layout under each safety filter."""
    size = run.pick(
        smoke=dict(n_traj=8, steps=10, lr=5e-3, batch=128, n_test=200, episodes=4, horizon_s=3.0, repeats=5),
        quick=dict(n_traj=40, steps=200, lr=5e-3, batch=256, n_test=2000, episodes=30, horizon_s=15.0, repeats=50),
        full=dict(n_traj=40, steps=1500, lr=1e-3, batch=512, n_test=2000, episodes=100, horizon_s=15.0, repeats=200),
    )
    sweep_sizes = run.pick(smoke=(3, 6), quick=(), full=(3, 6, 12, 24, 48, 96))
    learn, costs, sweeps, example = [], [], [], None
    control = {f"{noise}/{m}@{s:g}": [] for noise, groups in GROUPS.items() for m, s in groups}
    with single_thread():  # tiny MLPs: one thread is fastest, at every scale
        for i, seed in enumerate(run.seeds):
            stats, model, eps_f = _learning(seed, size)
            learn.append(stats)
            run.progress((i + 0.6) / len(run.seeds), f"seed {seed}: models fitted")
            example = _episodes(seed, size, model, eps_f, control, example, record=i == 0)
            costs.append(_filter_cost(seed, size["repeats"]))
            sweeps.append(_cost_sweep(seed, sweep_sizes, run.pick(smoke=2, quick=1, full=15)))
            run.progress((i + 1) / len(run.seeds), f"seed {seed}: episodes done")

    err = {k: float(np.mean([s["vf_error"][k] for s in learn])) for k in learn[0]["vf_error"]}
    rates = {noise: {f"{s:g}": {m: _rate(control, f"{noise}/{m}@{s:g}", "violated") for m in ("mcbf", "blind")}
                     for s in SWEEP_SCALES} for noise in NOISE}
    ratio = float(np.median([c["adaptive"] / c["blind"] for c in costs]))
    claims = []
    for noise, label in (("white", WHITE), ("slow", DRIFT)):
        claims += [_claim_safe(control, noise, label), _claim_adaptive(control, noise, label)]
    claims += [_claim_weighted(err, learn), _claim_scaling(err), _claim_degrade(rates), _claim_cost(ratio)]
    metrics = _metrics(control, rates, err, learn, costs, ratio)
    figures = [_figure(run, example, metrics["control"], rates, learn, err)]
    if sweep_sizes:
        sweep = _sweep_summary(sweeps)
        metrics["filter_cost_sweep"] = sweep
        if run.scale == "full":
            claims.append(_claim_cost_sweep(sweep))
        figures.append(_sweep_figure(run, sweep))
    return Result(metrics=metrics, claims=claims, figures=figures)


def _episodes(seed: int, size: dict, model: NeuralODEDynamics, eps_f: float, control: dict, example: dict | None,
              record: bool) -> dict | None:
    """Run this seed's layouts under every group of both noise models; append the results to ``control``."""
    rng = np.random.default_rng([seed, 4])
    layouts = [random_layout(rng) for _ in range(size["episodes"])]
    cfg = EpisodeConfig(horizon_s=size["horizon_s"], model_err=eps_f)
    for noise, tau in NOISE.items():
        results = rollout(layouts, model.affine, GROUPS[noise], LocalSensorModel(correlation_time=tau),
                          config=cfg, seed=seed, record=record and noise == "slow")
        for (m, s), res in zip(GROUPS[noise], results, strict=True):
            trajectory = res.pop("trajectory", None)
            if trajectory is not None and s == 1.0:
                example = example or {"layouts": layouts, "traj": {}}
                example["traj"][m] = trajectory
            control[f"{noise}/{m}@{s:g}"].append(res)
    if record:  # show a layout where the adaptive margin succeeds and the worst-case one does not
        ok_m = np.asarray(control["slow/mcbf@1"][0]["episodes"]["success"])
        ok_r = np.asarray(control["slow/worst_case@1"][0]["episodes"]["success"])
        example["show"] = int(np.argmax(ok_m & ~ok_r)) if np.any(ok_m & ~ok_r) else int(np.argmax(ok_m))
    return example


def _rate(control: dict, key: str, field: str) -> float:
    return float(np.mean(_pooled(control[key], field)))


def _mean_csr(control: dict, key: str) -> float:
    return float(np.mean([r["CSR"] for r in control[key]]))


def _claim_safe(control: dict, noise: str, label: str) -> Claim:
    viol_m = _pooled(control[f"{noise}/mcbf@1"], "violated")
    viol_b = _pooled(control[f"{noise}/blind@1"], "violated")
    safe_frac, csr_m = 1.0 - float(np.mean(viol_m)), _mean_csr(control, f"{noise}/mcbf@1")
    return Claim(
        text=f"{CLAIM_SAFE}, {label}",
        criterion=">= 95% zero-violation episodes, CSR >= 0.99, violation episodes <= 0.5 x noise-blind "
                  "(episodes pooled over seeds)",
        measured={"zero_violation_episodes": safe_frac, "CSR": csr_m, "violation_episodes": int(viol_m.sum())},
        baseline={"noise_blind_violation_episodes": int(viol_b.sum()),
                  "noise_blind_CSR": _mean_csr(control, f"{noise}/blind@1"),
                  "no_filter_CSR": _mean_csr(control, f"{noise}/none@1")},
        holds=bool(safe_frac >= 0.95 and csr_m >= 0.99 and viol_m.sum() <= 0.5 * viol_b.sum()),
        paper="99.3% CSR with the mCBF vs 72.8% without (ablation table)", kind="finding")


def _claim_adaptive(control: dict, noise: str, label: str) -> Claim:
    mc, wc = control[f"{noise}/mcbf@1"], control[f"{noise}/worst_case@1"]
    sr_m, sr_r = _rate(control, f"{noise}/mcbf@1", "success"), _rate(control, f"{noise}/worst_case@1", "success")
    both = (_pooled(mc, "success") > 0) & (_pooled(wc, "success") > 0)
    pl_ratio = float(np.mean(_pooled(mc, "path")[both]) / np.mean(_pooled(wc, "path")[both])) if both.any() else 1.0
    csr_m, csr_r = _mean_csr(control, f"{noise}/mcbf@1"), _mean_csr(control, f"{noise}/worst_case@1")
    return Claim(
        text=f"{CLAIM_ADAPTIVE}, {label}",
        criterion="SR >= robust SR + 0.1, or SR >= robust SR and PL <= 0.95 x robust PL (common successes); "
                  "both CSR >= 0.99",
        measured={"SR": sr_m, "PL_ratio_common_successes": pl_ratio, "CSR": csr_m},
        baseline={"worst_case_SR": sr_r, "worst_case_CSR": csr_r},
        holds=bool(min(csr_m, csr_r) >= 0.99 and (sr_m >= sr_r + 0.1 or (sr_m >= sr_r and pl_ratio <= 0.95))),
        paper="18.5 m paths against 26-27 m for robust baselines, with higher success (comparison table)",
        kind="finding")


def _claim_weighted(err: dict, learn: list[dict]) -> Claim:
    return Claim(
        text=CLAIM_WEIGHTED, criterion="mean over seeds: weighted <= 0.8 x unweighted",
        measured=summary([s["vf_error"]["weighted@1"] for s in learn]),
        baseline=summary([s["vf_error"]["unweighted@1"] for s in learn]),
        holds=bool(err["weighted@1"] <= 0.8 * err["unweighted@1"]),
        paper="the ablation without uncertainty weighting is worse (ablation table)", kind="finding")


def _claim_scaling(err: dict) -> Claim:
    e05, e1, e2 = err["weighted@0.5"], err["weighted@1"], err["weighted@2"]
    return Claim(
        text=CLAIM_SCALING, criterion="seed means non-decreasing over scales {0.5, 1, 2} (5% slack), e(2) <= 4 e(0.5)",
        measured={"0.5": e05, "1": e1, "2": e2}, baseline=None,
        holds=bool(e1 >= 0.95 * e05 and e2 >= 0.95 * e1 and e2 <= 4 * e05),
        paper="error <= c1 exp(-l t) + c2 delta_v (Theorem 4.1)", kind="finding")


def _claim_degrade(rates: dict) -> Claim:
    return Claim(
        text=CLAIM_DEGRADE,
        criterion="violation-episode rate: mCBF <= noise-blind at every scale, mCBF <= 0.1 at scale 2 "
                  "(both noise models)",
        measured={noise: {s: r["mcbf"] for s, r in by.items()} for noise, by in rates.items()},
        baseline={noise: {s: r["blind"] for s, r in by.items()} for noise, by in rates.items()},
        holds=bool(all(r["mcbf"] <= r["blind"] for by in rates.values() for r in by.values())
                   and all(by["2"]["mcbf"] <= 0.1 for by in rates.values())),
        paper="P(safe) >= 1 - exp(-c / delta_v^2) (Theorem 3.1)", kind="finding")


def _claim_cost(ratio: float) -> Claim:
    return Claim(text=CLAIM_COST, criterion="median over seeds of t(mCBF filter) / t(noise-blind filter) <= 2",
                 measured=ratio, baseline=1.0, holds=bool(ratio <= 2.0), paper=None, kind="finding")


def _sweep_summary(sweeps: list[dict]) -> dict:
    """Per size the median over seeds of each filter's seconds and of the ratio; the slopes per seed and their
    median."""
    rows = [{"n_obstacles": r0["n_obstacles"], "n_constraints": r0["n_constraints"]}
            | {key: float(np.median([s["rows"][i][key] for s in sweeps]))
               for key in ("mcbf_seconds", "blind_seconds", "mcbf_over_blind_time_ratio")}
            for i, r0 in enumerate(sweeps[0]["rows"])]
    slopes = {k: summary([s["time_slope_in_n"][k] for s in sweeps]) for k in ("mcbf", "blind")}
    return {"rows": rows, "per_seed": sweeps, "clock": "thread_time", "time_slope_in_n": slopes,
            "median_time_slope": {k: float(np.median(v["values"])) for k, v in slopes.items()}}


def _claim_cost_sweep(sweep: dict) -> Claim:
    ratios = {r["n_obstacles"]: r["mcbf_over_blind_time_ratio"] for r in sweep["rows"]}
    slope = sweep["median_time_slope"]
    return Claim(text=CLAIM_COST_SWEEP,
                 criterion="thread CPU time, medians of interleaved repeats, median over seeds: "
                           "t(mCBF) / t(noise-blind) <= 2 at every size, and median fitted log-log slopes in n within "
                           "0.25 of each other (the same QP; the margin adds O(n))",
                 measured={"ratio_by_n": ratios, "slope_mcbf": sweep["time_slope_in_n"]["mcbf"]},
                 baseline={"slope_blind": sweep["time_slope_in_n"]["blind"]},
                 holds=bool(max(ratios.values()) <= 2.0 and abs(slope["mcbf"] - slope["blind"]) <= 0.25),
                 paper=None, kind="finding")


def _metrics(control: dict, rates: dict, err: dict, learn: list[dict], costs: list[dict], ratio: float) -> dict:
    table = {}
    for key, per_seed in control.items():
        ok = _pooled(per_seed, "success") > 0
        table[key] = {m: _rate(control, key, f) for m, f in (("SR", "success"), ("violation_rate", "violated"))}
        table[key] |= {"CSR": _mean_csr(control, key),
                       "PL": float(np.mean(_pooled(per_seed, "path")[ok])) if ok.any() else None,
                       "collision_rate": float(np.mean([r["collision_rate"] for r in per_seed])),
                       "ACM": float(np.mean([r["ACM"] for r in per_seed])),
                       "min_clearance": float(np.min([r["min_clearance"] for r in per_seed])),
                       "infeasible_qp_steps": int(sum(r["infeasible_qp_steps"] for r in per_seed)),
                       "infeasible_starts": int(sum(r["infeasible_starts"] for r in per_seed))}
    return {
        "control": table,
        "control_per_seed": {k: [{m: r[m] for m in ("SR", "CSR", "violation_rate", "PL")} for r in v]
                             for k, v in control.items()},
        "violation_rate_by_scale": rates,
        "vf_error_mean": err,
        "vf_error_per_seed": [s["vf_error"] for s in learn],
        "eps_f_per_seed": [s["eps_f"] for s in learn],
        "train_seconds": [s["train_seconds"] for s in learn],
        "filter_seconds": costs,
        "filter_cost_ratio_time": ratio,
    }


def _figure(run: Run, example: dict, summary: dict, rates: dict, learn: list[dict], err: dict) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(16, 5))
    ax = axes[0]
    sensor = LocalSensorModel()
    g = np.linspace(-0.2, 2.2, 121)
    P = np.stack(np.meshgrid(g, g), axis=-1)
    im = ax.pcolormesh(g, g, sensor.radius(P), cmap="Greys", shading="auto", alpha=0.6)
    fig.colorbar(im, ax=ax, label="fibre radius $\\delta_v(p)$")
    i = example["show"]
    lay = example["layouts"][i]
    for o, r in zip(lay.obstacles, lay.radii, strict=True):
        ax.add_patch(plt.Circle(o, r, color="tab:red", alpha=0.6))
        ax.add_patch(plt.Circle(o, r + 0.05, fill=False, ls="--", color="tab:red"))
    styles = {"mcbf": ("tab:blue", "mCBF"), "blind": ("tab:orange", "noise-blind CBF"),
              "worst_case": ("tab:green", "worst-case CBF"), "none": ("k", "no filter")}
    for m, (c, label) in styles.items():
        tr = example["traj"][m][:, i]
        ax.plot(tr[:, 0], tr[:, 1], color=c, lw=1.5, label=label)
    ax.plot(*lay.start[:2], "ko")
    ax.plot(*lay.goal, "k*", ms=12)
    ax.set(xlim=(-0.2, 2.2), ylim=(-0.2, 2.2), aspect="equal", title="one layout (seed 0), drifting noise, scale 1")
    ax.legend(fontsize=8, loc="best", framealpha=0.7)

    ax = axes[1]
    scales = [float(s) for s in SWEEP_SCALES]
    for noise, ls, name in (("slow", "-", "drifting"), ("white", "--", "white")):
        for m, c, mk in (("mcbf", "tab:blue", "o"), ("blind", "tab:orange", "s")):
            ax.plot(scales, [rates[noise][f"{s:g}"][m] for s in scales], ls, marker=mk, color=c,
                    label=f"{'mCBF' if m == 'mcbf' else 'noise-blind'}, {name} noise: violation episodes")
    ax.plot(scales, [summary[f"slow/mcbf@{s:g}"]["SR"] for s in scales], ":", marker="o", color="tab:blue",
            alpha=0.6, label="mCBF, drifting noise: success")
    ax.set(xscale="log", xlabel="noise scale", ylabel="fraction of episodes", ylim=(-0.02, 1.02),
           title="safety vs sensing quality (pooled seeds)")
    ax.minorticks_off()
    ax.set_xticks(scales, [f"{s:g}" for s in scales])
    ax.legend(fontsize=7)

    ax = axes[2]
    for j, s in enumerate(learn):
        ax.plot(TRAIN_SCALES, [s["vf_error"][f"weighted@{t:g}"] for t in TRAIN_SCALES], "o-", color="tab:blue",
                alpha=0.35, label="weighted (per seed)" if j == 0 else None)
        ax.plot([1.0], [s["vf_error"]["unweighted@1"]], "x", color="tab:orange", alpha=0.6,
                label="unweighted (per seed)" if j == 0 else None)
    ax.plot(TRAIN_SCALES, [err[f"weighted@{t:g}"] for t in TRAIN_SCALES], "o-", color="tab:blue", lw=2.5,
            label="weighted (mean)")
    ax.plot([1.0], [err["unweighted@1"]], "X", color="tab:orange", ms=12, label="unweighted (mean)")
    ax.set(xlabel="noise scale of the training data", ylabel="relative vector-field error",
           title="Neural ODE: inverse-covariance weighting")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return run.savefig(fig, "fiber_bundle_dynamics")


def _sweep_figure(run: Run, sweep: dict) -> str:
    """Left: filter cost against the number of obstacles (log-log, fitted slopes); right: the ratio with the 2x line."""
    per_seed = [s["rows"] for s in sweep["per_seed"]]
    return cost_vs_size(
        run, "filter_cost_vs_size", [r["n_obstacles"] for r in per_seed[0]],
        {label: [[r[f"{key}_seconds"] for r in rows] for rows in per_seed]
         for key, label in (("blind", "noise-blind CBF"), ("mcbf", "mCBF"))},
        xlabel="obstacles n (QP constraints n + 4), 30 states per call",
        title="safety-filter cost against size (median over seeds)",
        ratios={"mCBF / noise-blind": [[r["mcbf_over_blind_time_ratio"] for r in rows] for rows in per_seed]},
        bounds={"2x (the claim)": 2.0}, ratio_ylabel="mCBF / noise-blind time", center="median")
