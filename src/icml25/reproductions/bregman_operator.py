"""Bregman FNO: identity at initialisation, and depth helps BFNO more than FNO. Docs: docs/papers/bregman_operator.md

Mezidi et al., "A Bregman Proximal Viewpoint on Neural Operators" (ICML 2025, HAL hal-04584456).

Exact checks (instant): a freshly built Bregman model maps its lifted input through all blocks
unchanged; sigma(sigma^-1(v)) = v on the interior of every activation's range; the
pre-activation-carrying forward pass equals the explicit sigma^-1 formula on random weights.

Burgers: u_t + (u^2/2)_x = 0.1 u_xx, T = 1, initial conditions from N(0, 625 (-Laplacian + 25 I)^-2),
solved on 256 points (integrating-factor RK4, dt = 5e-4, 2/3 de-aliasing) and subsampled to 128;
512 train / 64 validation / 128 test samples (the test set also at 256 points). FNO (ReLU, the usual
init) and BFNO (softplus beta = 10, zero-initialised blocks) share everything else: width 32, 16 modes,
a 1x1 lifting from (u0, x), projection 32 -> 128 -> 1 with GELU, Adam lr 1e-3 (constant), batch 32,
relative L2 loss, unit-Gaussian normalised inputs and outputs (see NORMALIZE), and early stopping on the
validation relative L2 as in the official training scripts (the weights of the best validation epoch
are tested). Depths 4 and 16 (full: also 32). Quick: seeds 0, 1, 2 and 20 epochs; the Burgers claims
are judged on the mean of the seeds (metrics["seeds_holding"] counts the seeds where each inequality
holds).

Full scale trains 60 epochs and adds depth 32 for the "FNO degrades with depth" claim, the
2-D Darcy flow problem (32 x 32 interior grid, 12 x 12 modes, FNO vs BFNO at depth 8), and a sweep of
the training-step cost over the grid resolution (64 to 2048 points, L = 16) with fitted log-log slopes.
"""

from __future__ import annotations

import time
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullFormatter

from icml25.data.pde import burgers_1d, darcy_2d
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.parallel import run_jobs
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.operators import ACTIVATIONS, FNO, fit_operator, get_activation_pair, relative_l2
from icml25.utils.random import seeded

PAPER = Paper(
    id="bregman_operator",
    title="A Bregman Proximal Viewpoint on Neural Operators",
    module="icml25.operators.bregman_operator",
    anchors=("armezidi/bregmano", "neuraloperator/neuraloperator"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses={
        "BFNO benefits from depth on Burgers (test relative L2, L = 16 vs L = 4)":
            "with fit_operator's default normalised outputs BFNO(4) is already at 1.2 % and BFNO(16) ends at 1.5 % "
            "(3 seeds, 20 epochs); the claim held (0.070 vs 0.091) only with raw outputs, a setting chosen by "
            "looking at these seeds",
    },
)

STEP_SWEEP_CLAIM = "the Bregman block's cost overhead stays constant with the grid size (forward + backward, L = 16)"
DEEP_CLAIM = "deep BFNO beats deep FNO on Burgers (test relative L2, L = 16)"
DEPTH_CLAIM = "BFNO benefits from depth on Burgers (test relative L2, L = 16 vs L = 4)"
TRANSFER_CLAIM = "BFNO trained at 128 points evaluates at 256 points (resolution transfer, L = 16)"
MODELS = {"fno": ("standard", "relu"), "bfno": ("bregman", "softplus")}
BETA = 10.0  # softplus sharpness for BFNO (a research prototype's value; the official 1-D default is 1000)
NORMALIZE = True  # fit_operator's default (unit-Gaussian inputs and outputs); raw outputs: the docs page
CONFIG = {
    "smoke": {"n_train": 64, "n_val": 16, "n_test": 32, "epochs": 2, "depths": (4, 16), "repeats": 2, "darcy": None,
              "workers": 1, "sweep": {"grids": (32, 64), "repeats": 2}},
    # 20 epochs instead of 30 for the 120 s budget (calibration notes); the 12 fits in 2 single-threaded processes
    "quick": {"n_train": 512, "n_val": 64, "n_test": 128, "epochs": 20, "depths": (4, 16), "repeats": 20,
              "darcy": None, "workers": 2, "sweep": None},
    # adds depth 32 on Burgers, trains three times as long, and adds the 2-D Darcy problem at L = 8
    # adds the step-cost sweep over the grid resolution (up to 2048 points, beyond PDEBench's 1024)
    "full": {"n_train": 512, "n_val": 64, "n_test": 128, "epochs": 60, "depths": (4, 16, 32), "repeats": 20,
             "workers": 2, "darcy": {"n_train": 200, "n_val": 50, "n_test": 50, "epochs": 30, "depths": (8,)},
             "sweep": {"grids": (64, 128, 256, 512, 1024, 2048), "repeats": 10}},
}


def reproduce(run: Run) -> Result:
    # 1. set-up
    cfg = run.pick(**CONFIG)
    seeds = run.seeds

    # 2. the experiments: exact checks, every (problem, seed, model, depth) fit, the step timing
    with single_thread():
        exact = _exact_checks()
    results = _fits(run, cfg)
    errors, errors_256, fit_seconds, best_epochs = (_per_seed(results, "burgers", key, seeds)
                                                    for key in ("error", "error_256", "seconds", "best_epoch"))
    darcy_errors = _per_seed(results, "darcy", "error", seeds)
    data = _burgers(cfg["n_train"], cfg["n_val"], cfg["n_test"], seeds[0])
    with single_thread():
        step = _step_seconds(data["x_train"][:32], data["y_train"][:32], 16, cfg["repeats"])
        sweep = _step_sweep(cfg["sweep"]) if cfg["sweep"] else None
    step_ratio = float(np.median(step["bregman"]) / np.median(step["standard"]))

    # 3. the claims (the Burgers ones judge the mean of the seeds' test errors)
    claims = [_claim_identity(exact), _claim_roundtrip(exact), _claim_explicit(exact), _claim_deep(errors),
              _claim_depth(errors), _claim_transfer(errors, errors_256), _claim_step_time(step_ratio)]
    if run.scale == "full":
        claims += [_claim_fno_degrades(errors), _claim_darcy(darcy_errors), _claim_step_sweep(sweep)]

    # 4. metrics, figure, result
    curves = {m: {d: {"train": results[("burgers", seeds[0], m, d)]["curve"],
                      "val": results[("burgers", seeds[0], m, d)]["val"]} for d in cfg["depths"]} for m in MODELS}
    example = {k: v for m in MODELS for k, v in results[("burgers", seeds[0], m, 16)]["example"].items()}
    metrics = _metrics(cfg, exact, errors, errors_256, darcy_errors, curves, best_epochs, step, step_ratio,
                       fit_seconds, len(seeds))
    metrics["step_sweep"] = sweep
    figures = [_figure(run, errors, curves, example, darcy_errors)]
    if sweep is not None:
        figures.append(_figure_step_sweep(run, sweep))
    return Result(metrics=metrics, claims=claims, figures=figures)


# ---------------------------------------------------------------------------------------------- experiments
def _model(name: str, in_channels: int, n_modes: tuple[int, ...], depth: int, width: int, seed: int) -> FNO:
    architecture, activation = MODELS[name]
    with seeded(seed):
        return FNO(in_channels, 1, hidden_channels=width, n_modes=n_modes, n_layers=depth, lifting_channels=None,
                   projection_channels=128, architecture=architecture, activation=activation,
                   activation_kwargs={"beta": BETA} if activation == "softplus" else None)


def _exact_checks() -> dict[str, float]:
    """The three exact properties of the Bregman layer, on weights drawn from one seeded stream."""
    with seeded(0):
        identity = 0.0
        for n_modes, grid in (((16,), (128,)), ((12, 12), (32, 32))):
            model = FNO(2, 1, hidden_channels=32, n_modes=n_modes, n_layers=16, architecture="bregman",
                        activation="softplus", activation_kwargs={"beta": BETA})
            x = torch.randn(4, 2, *grid)
            with torch.no_grad():
                identity = max(identity, float((model.hidden(x) - model.lift(x)).abs().max()))
        roundtrip = 0.0
        for name in ACTIVATIONS:
            sigma, inv, (lo, hi) = get_activation_pair(name, version="bregman")
            if inv is None:
                continue
            lo_, hi_ = max(lo, -5.0), min(hi, 5.0)
            v = torch.linspace(lo_ + 0.01 * (hi_ - lo_), hi_ - 0.01 * (hi_ - lo_), 10001, dtype=torch.float64)
            roundtrip = max(roundtrip, float((sigma(inv(v)) - v).abs().max()))
        explicit = 0.0
        for activation in ("softplus", "tanh", "asinh", "relu"):
            kw = {"hidden_channels": 16, "n_modes": (8,), "n_layers": 8, "architecture": "bregman",
                  "activation": activation, "zero_init": False,
                  "activation_kwargs": {"beta": 1.0} if activation == "softplus" else None}
            carry = FNO(1, 1, **kw).double()
            with torch.no_grad():
                for p in carry.blocks.parameters():
                    p.mul_(0.1)
            direct = FNO(1, 1, carry_preactivation=False, **kw).double()
            direct.load_state_dict(carry.state_dict())
            x = torch.randn(8, 1, 64, dtype=torch.float64)
            with torch.no_grad():
                a, b = carry(x), direct(x)
            explicit = max(explicit, float((a - b).norm() / a.norm()))
    return {"identity_max_abs": identity, "roundtrip_max_abs": roundtrip, "explicit_max_rel": explicit}


def _step_seconds(x: torch.Tensor, y: torch.Tensor, depth: int, repeats: int) -> dict[str, list[float]]:
    """Forward + backward CPU time of the Bregman and standard block rules (both softplus) on the calling
    thread (the caller sets one torch thread), interleaved, after two warm-up rounds that are not timed."""
    with seeded(0):
        models = {arch: FNO(1, 1, hidden_channels=32, n_modes=(16,), n_layers=depth, lifting_channels=None,
                            architecture=arch, activation="softplus", activation_kwargs={"beta": BETA})
                  for arch in ("bregman", "standard")}

    def step(model: FNO) -> None:
        model.zero_grad(set_to_none=True)
        relative_l2(model(x), y).backward()

    return interleaved_seconds({arch: partial(step, model) for arch, model in models.items()}, repeats, warmup=2,
                               clock=time.thread_time)


def _step_sweep(cfg: dict) -> dict:
    """Step cost (forward + backward, batch 32, width 32, 16 modes, L = 16) of the Bregman and standard
    block rules on grids of ``cfg["grids"]`` points: thread CPU time, medians of interleaved repeats, and
    the log-log slopes in the number of points. Per layer both cost O(C N log N) for the FFTs plus O(C^2 N)
    for the skip weights (the Bregman rule only changes the activation), so both slopes should be near 1.
    The inputs are seeded Gaussian noise: the cost of these operations does not depend on the values."""
    rows = []
    for n in cfg["grids"]:
        gen = torch.Generator().manual_seed(n)
        x, y = torch.randn(32, 1, n, generator=gen), torch.randn(32, 1, n, generator=gen)
        sec = _step_seconds(x, y, 16, cfg["repeats"])
        bregman, standard = float(np.median(sec["bregman"])), float(np.median(sec["standard"]))
        rows.append({"grid": n, "bregman_seconds": bregman, "standard_seconds": standard,
                     "bregman_over_standard_time": bregman / standard})
    grids = [r["grid"] for r in rows]
    return {"rows": rows, "clock": "thread_time", "repeats": cfg["repeats"], "depth": 16, "batch": 32,
            "time_slope_in_grid": {k: loglog_slope(grids, [r[f"{k}_seconds"] for r in rows])
                                   for k in ("bregman", "standard")}}


def _burgers(n_train: int, n_val: int, n_test: int, seed: int) -> dict[str, torch.Tensor]:
    """Burgers samples in the order train / validation / test (train and validation at 128 points)."""
    u0, uT = burgers_1d(n_train + n_val + n_test, grid=256, solver_grid=256, seed=seed)
    x, y = torch.tensor(u0)[:, None], torch.tensor(uT)[:, None]
    tr, va = slice(0, n_train), slice(n_train, n_train + n_val)
    te = slice(n_train + n_val, None)
    return {"x_train": x[tr, :, ::2], "y_train": y[tr, :, ::2], "val": (x[va, :, ::2], y[va, :, ::2]),
            "test": (x[te, :, ::2], y[te, :, ::2]), "test_256": (x[te], y[te])}


def _darcy(n_train: int, n_val: int, n_test: int, seed: int) -> dict[str, torch.Tensor]:
    a, u = darcy_2d(n_train + n_val + n_test, grid=32, seed=seed)
    x, y = torch.tensor(a)[:, None], torch.tensor(u)[:, None]
    va = slice(n_train, n_train + n_val)
    return {"x_train": x[:n_train], "y_train": y[:n_train], "val": (x[va], y[va]),
            "test": (x[n_train + n_val:], y[n_train + n_val:])}


def _fit_task(problem: str, seed: int, name: str, depth: int, cfg: dict) -> dict:
    """One seeded fit: Burgers (test at 128 and 256 points) or Darcy, early-stopped on validation."""
    if problem == "burgers":
        data, n_modes, pcfg = _burgers(cfg["n_train"], cfg["n_val"], cfg["n_test"], seed), (16,), cfg
        tests = {"128": data["test"], "256": data["test_256"]}
    else:
        pcfg = cfg["darcy"]
        data, n_modes = _darcy(pcfg["n_train"], pcfg["n_val"], pcfg["n_test"], seed), (12, 12)
        tests = {"128": data["test"]}
    model = _model(name, 1, n_modes, depth, 32, seed)
    t0 = time.perf_counter()
    fit = fit_operator(model, data["x_train"], data["y_train"], tests, epochs=pcfg["epochs"], lr=1e-3,
                       batch_size=32, seed=seed, normalize=NORMALIZE, validation=data["val"])
    out = {"seconds": time.perf_counter() - t0, "error": fit["test_rel_l2"]["128"],
           "error_256": fit["test_rel_l2"].get("256"), "curve": fit["train_loss"], "val": fit["val_rel_l2"],
           "best_epoch": fit["best_epoch"], "example": None}
    if problem == "burgers" and depth == 16:
        x256, y256 = data["test_256"]
        with torch.no_grad():
            pred = model(x256[:1])  # raw units: the models are trained without normalisation
        out["example"] = {"x": x256[0, 0].numpy(), "y": y256[0, 0].numpy(), name: pred[0, 0].numpy()}
    return out


def _fits(run: Run, cfg: dict) -> dict[tuple, dict]:
    """Every (problem, seed, model, depth) fit, spread over ``cfg["workers"]`` single-threaded processes.

    Every fit is seeded, so the numbers do not depend on the number of workers. The data is generated
    (and cached) in this process first, so the workers only read it.
    """
    tasks = [("burgers", s, m, d) for s in run.seeds for m in MODELS for d in cfg["depths"]]
    if cfg["darcy"]:
        tasks += [("darcy", s, m, d) for s in run.seeds for m in MODELS for d in cfg["darcy"]["depths"]]
    for seed in run.seeds:
        _burgers(cfg["n_train"], cfg["n_val"], cfg["n_test"], seed)
        if cfg["darcy"]:
            _darcy(cfg["darcy"]["n_train"], cfg["darcy"]["n_val"], cfg["darcy"]["n_test"], seed)
    tasks.sort(key=lambda t: -t[3] * (4 if t[0] == "darcy" else 1))  # longest first, for load balance
    done = run_jobs(_fit_task, [(*task, cfg) for task in tasks], cfg["workers"], run.progress,
                    describe=lambda job: f"{job[0]} seed {job[1]} {job[2]} L={job[3]}")
    return dict(zip(tasks, done, strict=True))


def _per_seed(results: dict[tuple, dict], problem: str, key: str, seeds: tuple[int, ...]) -> dict:
    """``{model: {depth: [value per seed]}}`` of one problem (empty if it was not run)."""
    depths = sorted({t[3] for t in results if t[0] == problem})
    if not depths:
        return {}
    return {m: {d: [results[(problem, s, m, d)][key] for s in seeds] for d in depths} for m in MODELS}


def _metrics(cfg: dict, exact: dict, errors: dict, errors_256: dict, darcy_errors: dict, curves: dict,
             best_epochs: dict, step: dict, step_ratio: float, fit_seconds: dict, n_seeds: int) -> dict:
    mean = {m: {d: float(np.mean(v)) for d, v in per.items()} for m, per in errors.items()}
    mean_256 = {m: {d: float(np.mean(v)) for d, v in per.items()} for m, per in errors_256.items()}
    fno, bfno = mean["fno"], mean["bfno"]
    arr = {m: {d: np.asarray(v) for d, v in per.items()} for m, per in errors.items()}  # per-seed errors
    metrics = {
        "config": {**cfg, "width": 32, "n_modes": [16], "darcy_n_modes": [12, 12], "beta": BETA, "lr": 1e-3,
                   "batch_size": 32, "solver_grid": 256, "train_grid": 128, "normalize": NORMALIZE,
                   "models": {m: list(v) for m, v in MODELS.items()}},
        "exact_checks": exact,
        "burgers_test_rel_l2": {"mean": mean, "per_seed": errors},
        "burgers_test_rel_l2_at_256": {"mean": mean_256, "per_seed": errors_256},
        "fno_depth_ratio_16_over_4": fno[16] / fno[4],
        "bfno_depth_ratio_16_over_4": bfno[16] / bfno[4],
        "bfno_over_fno": {d: bfno[d] / fno[d] for d in cfg["depths"]},
        # per-claim count of the seeds on which the claim's inequality holds (the claims judge the seed means)
        "seeds_holding": {
            "n_seeds": n_seeds,
            "bfno16_le_0.8_fno16": int(np.sum(arr["bfno"][16] <= 0.8 * arr["fno"][16])),
            "bfno16_le_bfno4": int(np.sum(arr["bfno"][16] <= arr["bfno"][4])),
            "transfer_256_le_1.5x_128": int(np.sum(np.asarray(errors_256["bfno"][16]) <= 1.5 * arr["bfno"][16])),
        },
        "bfno_over_fno_per_seed": {d: (arr["bfno"][d] / arr["fno"][d]).tolist() for d in cfg["depths"]},
        "curves_first_seed": curves,
        "best_epoch": best_epochs,
        "step_time_ratio": step_ratio,
        "step_seconds_median": {a: float(np.median(v)) for a, v in step.items()},
        "fit_seconds": fit_seconds,
    }
    if 32 in fno:
        metrics["fno_depth_ratio_32_over_16"] = fno[32] / fno[16]
        metrics["bfno_depth_ratio_32_over_16"] = bfno[32] / bfno[16]
    if darcy_errors:
        metrics["darcy_test_rel_l2"] = {"per_seed": darcy_errors,
                                        "mean": {m: {d: float(np.mean(v)) for d, v in per.items()}
                                                 for m, per in darcy_errors.items()}}
    return metrics


# ---------------------------------------------------------------------------------------------- claims
def _claim_identity(exact: dict) -> Claim:
    value = exact["identity_max_abs"]
    return Claim(text="a freshly built Bregman FNO is the identity through all its blocks (zero-initialised K, W, b)",
                 criterion="max |z_L - z_0| < 1e-6 (1-D and 2-D, 16 layers)",
                 paper="a Bregman layer with zero weights is the identity (Sec. 3)", measured=value, baseline=None,
                 holds=value < 1e-6, kind="check")


def _claim_roundtrip(exact: dict) -> Claim:
    value = exact["roundtrip_max_abs"]
    return Claim(text="sigma(sigma^-1(v)) = v on the interior of each activation's range (all 8 invertible pairs)",
                 criterion="max |sigma(sigma^-1(v)) - v| < 1e-5", paper=None, measured=value, baseline=None,
                 holds=value < 1e-5, kind="check")


def _claim_explicit(exact: dict) -> Claim:
    value = exact["explicit_max_rel"]
    return Claim(text="the pre-activation-carrying forward pass equals the explicit sigma(sigma^-1(v) + Kv + Wv) layer",
                 criterion="max relative difference < 1e-4 on random weights (4 activations, 8 layers)",
                 paper="v_{l+1} = sigma(sigma^-1(v_l) + W v_l + K v_l + b) (Sec. 3)", measured=value, baseline=None,
                 holds=value < 1e-4, kind="check")


def _claim_deep(errors: dict) -> Claim:
    bfno, fno = summary(errors["bfno"][16]), summary(errors["fno"][16])
    return Claim(text=DEEP_CLAIM, criterion="mean test relative L2 over seeds: BFNO(16) <= 0.8 x FNO(16)",
                 paper="BFNO's error stays low as depth grows while FNO's degrades (Burgers depth study)",
                 measured=bfno, baseline=fno, holds=bfno["mean"] <= 0.8 * fno["mean"])


def _claim_depth(errors: dict) -> Claim:
    deep, shallow = summary(errors["bfno"][16]), summary(errors["bfno"][4])
    return Claim(text=DEPTH_CLAIM, criterion="mean test relative L2 over seeds: BFNO(16) <= BFNO(4)",
                 paper="BFNO keeps improving with more layers (Burgers depth study)",
                 measured=deep, baseline=shallow, holds=deep["mean"] <= shallow["mean"])


def _claim_transfer(errors: dict, errors_256: dict) -> Claim:
    fine, coarse = summary(errors_256["bfno"][16]), summary(errors["bfno"][16])
    return Claim(text=TRANSFER_CLAIM, criterion="mean test relative L2 over seeds: at 256 points <= 1.5 x at 128",
                 paper=None, measured=fine, baseline=coarse, holds=fine["mean"] / coarse["mean"] <= 1.5)


def _claim_step_time(ratio: float) -> Claim:
    return Claim(text="a Bregman block costs about the same as a standard block (forward + backward, L = 16, softplus)",
                 criterion="median step time ratio Bregman / standard <= 1.15 (thread CPU time, interleaved)",
                 paper=None, measured=ratio, baseline=1.0, holds=ratio <= 1.15)


def _claim_step_sweep(sweep: dict) -> Claim:
    ratios = {r["grid"]: r["bregman_over_standard_time"] for r in sweep["rows"]}
    slopes = sweep["time_slope_in_grid"]
    return Claim(text=STEP_SWEEP_CLAIM,
                 criterion="thread CPU time, medians of interleaved repeats: Bregman / standard <= 1.15 at every "
                           "grid size (64 to 2048 points), and the fitted log-log slopes in the grid size within 0.1 "
                           "of each other (the same order, O(C N log N + C^2 N) per layer)",
                 paper=None, measured={"ratio_by_grid": ratios, "slope_bregman": slopes["bregman"]},
                 baseline={"slope_standard": slopes["standard"]},
                 holds=bool(max(ratios.values()) <= 1.15 and abs(slopes["bregman"] - slopes["standard"]) <= 0.1))


def _claim_fno_degrades(errors: dict) -> Claim:
    deeper, deep = summary(errors["fno"][32]), summary(errors["fno"][16])
    return Claim(text="FNO degrades with depth on Burgers (mean test relative L2 of the seeds, L = 32 vs L = 16)",
                 criterion="mean test relative L2 over seeds: FNO(32) > FNO(16) ('not observed' if it fails)",
                 paper="FNO's error grows with depth on Burgers (depth study)",
                 measured=deeper, baseline=deep, holds=deeper["mean"] > deep["mean"])


def _claim_darcy(darcy_errors: dict) -> Claim:
    bfno, fno = summary(darcy_errors["bfno"][8]), summary(darcy_errors["fno"][8])
    return Claim(text="BFNO is at least as accurate as FNO on 2-D Darcy flow at equal depth (L = 8, mean of seeds)",
                 criterion="mean test relative L2 over seeds: BFNO(8) <= 1.05 x FNO(8)",
                 paper="BFNO gives the lowest error on most of the PDE benchmarks, Darcy flow among them",
                 measured=bfno, baseline=fno, holds=bfno["mean"] <= 1.05 * fno["mean"])


# ---------------------------------------------------------------------------------------------- figure
def _figure(run: Run, errors: dict, curves: dict, example: dict, darcy_errors: dict) -> str:
    colors, labels = {"fno": "C0", "bfno": "C3"}, {"fno": "FNO (ReLU)", "bfno": "BFNO (softplus)"}
    fig, axes = plt.subplots(1, 3 + bool(darcy_errors), figsize=(5 * (3 + bool(darcy_errors)), 4))
    ax = axes[0]
    for name, per in errors.items():
        depths = sorted(per)
        ax.plot(depths, [np.mean(per[d]) for d in depths], "o-", color=colors[name], label=labels[name])
        for d in depths:
            ax.scatter([d] * len(per[d]), per[d], color=colors[name], s=12, alpha=0.5)
    ax.set(xscale="log", yscale="log", xlabel="layers L", ylabel="test relative L2",
           title="Burgers: error vs depth (dots: seeds)")
    ax.set_xticks(sorted(errors["fno"]), [str(d) for d in sorted(errors["fno"])])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.legend()
    ax = axes[1]
    for name, per in curves.items():
        for depth, curve in per.items():
            if depth != 16:
                continue
            for part, ls in (("train", "-"), ("val", ":")):
                ax.plot(np.arange(1, len(curve[part]) + 1), curve[part], color=colors[name], ls=ls,
                        label=f"{labels[name]} L=16, {part}")
    ax.set(yscale="log", xlabel="epoch", ylabel="relative L2",
           title="L = 16: train and validation error (first seed)")
    ax.legend(fontsize=7)
    ax = axes[2]
    grid = np.arange(example["y"].size) / example["y"].size
    ax.plot(grid, example["y"], "k", lw=2, label="u(T) (solver)")
    for name in MODELS:
        ax.plot(grid, example[name], color=colors[name], ls="--", label=f"{labels[name]} L=16")
    ax.set(xlabel="x", ylabel="u(T)", title="a test sample at 256 points (trained at 128)")
    ax.legend(fontsize=7, loc="upper right")
    twin = ax.twinx()
    twin.plot(grid, example["x"], color="0.75", lw=1)
    twin.set_ylabel("u0 (grey)", color="0.5")
    if darcy_errors:
        ax = axes[3]
        for name, per in darcy_errors.items():
            depths = sorted(per)
            ax.plot(depths, [np.mean(per[d]) for d in depths], "o-", color=colors[name], label=labels[name])
        ax.set(xlabel="layers L", ylabel="test relative L2", title="Darcy 32x32: error vs depth")
        ax.legend()
    fig.tight_layout()
    name = run.savefig(fig, "bregman_operator")
    plt.close(fig)
    return name


def _figure_step_sweep(run: Run, sweep: dict) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "step_cost_vs_grid", [r["grid"] for r in rows],
        {"standard block": [r["standard_seconds"] for r in rows],
         "Bregman block": [r["bregman_seconds"] for r in rows]},
        xlabel="grid points N", ylabel="thread CPU time per step [s]",
        title="training step (L = 16, batch 32) against N",
        ratios={"Bregman / standard": [r["bregman_over_standard_time"] for r in rows]},
        bounds={"1.15x (the claim)": 1.15}, ratio_ylabel="Bregman / standard step time", ratio_title="relative cost")
