"""Bregman FNO: identity at initialisation, and depth helps BFNO where it does not help FNO.

Exact checks (instant): a freshly built Bregman model maps its lifted input through all blocks
unchanged; sigma(sigma^-1(v)) = v on the interior of every activation's range; the
pre-activation-carrying forward pass equals the explicit sigma^-1 formula on random weights.

Burgers (the brief's setting): u_t + (u^2/2)_x = 0.1 u_xx, T = 1, initial conditions from
N(0, 625 (-Laplacian + 25 I)^-2), solved on 256 points (integrating-factor RK4, dt = 5e-4,
2/3 de-aliasing) and subsampled to 128; 512 train / 64 validation / 128 test samples (the test set
also at 256 points). FNO (ReLU, the usual init) and BFNO (softplus beta = 10, zero-initialised
blocks) share everything else: width 32, 16 modes, a 1x1 lifting from (u0, x), projection
32 -> 128 -> 1 with GELU, Adam lr 1e-3 (constant), batch 32, relative L2 loss, raw (unnormalised)
inputs and outputs as in the brief's trial (see NORMALIZE), and early stopping on the validation
relative L2 as in the official training scripts (the weights of the best validation epoch are
tested). Depths 4 and 16 (full: also 32). Quick: seeds 0, 1, 2 and 20 epochs (the brief's 30 exceed the budget); the
Burgers claims are judged on the mean of the seeds (metrics["seeds_holding"] counts the seeds where
each inequality holds).

Full scale trains 60 epochs and adds depth 32 for the "FNO degrades with depth" claim, and the
2-D Darcy flow problem (32 x 32 interior grid, 12 x 12 modes, FNO vs BFNO at depth 8).
"""

from __future__ import annotations

import time
from functools import partial

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.ticker import NullFormatter

from icml25.data.pde import burgers_1d, darcy_2d
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.parallel import run_jobs
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.operators import ACTIVATIONS, FNO, fit_operator, get_activation_pair, relative_l2

# the Burgers claims are judged on the mean of the seeds' test errors (metrics["seeds_holding"] counts the seeds)
DEEP_CLAIM = "deep BFNO beats deep FNO on Burgers (test relative L2, L = 16)"
DEPTH_CLAIM = "BFNO benefits from depth on Burgers (test relative L2, L = 16 vs L = 4)"
TRANSFER_CLAIM = "BFNO trained at 128 points evaluates at 256 points (resolution transfer, L = 16)"

PAPER = Paper(
    id="bregman_operator",
    title="A Bregman Proximal Viewpoint on Neural Operators",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=5,
    module="icml25.operators.bregman_operator",
    anchors=("armezidi/bregmano", "neuraloperator/neuraloperator"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
)

MODELS = {"fno": ("standard", "relu"), "bfno": ("bregman", "softplus")}
BETA = 10.0  # softplus sharpness for BFNO (the research prototype's value; the official 1-D default is 1000)
# The brief's trial (where its thresholds come from) trains on raw outputs (u(T) has std ~0.01 at nu = 0.1,
# T = 1). Measured in development (seed 0, 30 epochs, test rel. L2): raw FNO L4/L16 0.134/0.234, BFNO
# 0.209/0.113; with per-channel unit-Gaussian normalisation (fit_operator(normalize=True)) all models are far
# more accurate, FNO 0.017/0.060, BFNO 0.016/0.024: BFNO(16) still beats FNO(16) (0.39x), but BFNO(16) does
# not beat BFNO(4) in 30 epochs. The reproduction uses the raw setting; the docs page reports both.
NORMALIZE = False



def _model(name: str, in_channels: int, n_modes: tuple[int, ...], depth: int, width: int, seed: int) -> FNO:
    architecture, activation = MODELS[name]
    torch.manual_seed(seed)
    return FNO(in_channels, 1, hidden_channels=width, n_modes=n_modes, n_layers=depth, lifting_channels=None,
               projection_channels=128, architecture=architecture, activation=activation,
               activation_kwargs={"beta": BETA} if activation == "softplus" else None)


def _exact_checks() -> dict[str, float]:
    """The three exact properties of the Bregman layer (claim 1 of the brief)."""
    torch.manual_seed(0)
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
    models = {arch: FNO(1, 1, hidden_channels=32, n_modes=(16,), n_layers=depth, lifting_channels=None,
                        architecture=arch, activation="softplus", activation_kwargs={"beta": BETA})
              for arch in ("bregman", "standard")}

    def step(model: FNO) -> None:
        model.zero_grad(set_to_none=True)
        relative_l2(model(x), y).backward()

    return interleaved_seconds({arch: partial(step, model) for arch, model in models.items()}, repeats, warmup=2,
                               clock=time.thread_time)


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


def reproduce(run: Run) -> Result:
    cfg = run.pick(
        smoke={"n_train": 64, "n_val": 16, "n_test": 32, "epochs": 2, "depths": (4, 16), "repeats": 2, "darcy": None,
               "workers": 1},
        # quick: the brief's quick setting (512 train / 128 test, L = 4 and 16) on 3 seeds, plus 64 validation
        # samples for early stopping; the 12 fits run in 2 single-threaded processes. 20 epochs instead of the
        # brief's 30 for the 120 s budget: 30 epochs took 147 s on the quiet 2-core machine (268 s of fitting).
        # Measured with early stopping (seeds 0-2, mean test rel. L2 BFNO(16) vs FNO(16), BFNO(4)): 15 epochs
        # 0.105 vs 0.124 (0.84x, a miss), 0.090 (a miss); 20 epochs 0.070 vs 0.101 (0.69x), 0.091; 30 epochs 0.047 vs
        # 0.075 (0.63x), 0.079. The full scale (60 epochs) is in the docs page.
        # Step time: 20 timed repeats after 2 untimed warm-up rounds, on the thread's CPU clock.  Wall-clock medians
        # reached 1.158 and 1.177 in CI next to another pytest worker (quiet: 1.00-1.09).  Beside a process busy on
        # both cores, 12 runs of 20 wall-clock repeats gave 1.02 +- 0.105 (max 1.164), the thread's CPU time
        # 1.02 +- 0.019 (max 1.048): the time another process takes the core no longer counts.
        quick={"n_train": 512, "n_val": 64, "n_test": 128, "epochs": 20, "depths": (4, 16), "repeats": 20,
               "darcy": None, "workers": 2},
        # full: adds depth 32 on Burgers, trains twice as long, and adds the 2-D Darcy problem at the asserted depth
        # (L = 8), 200 train / 50 validation / 50 test samples (the brief's 800 / 200 are out of the CPU budget)
        full={"n_train": 512, "n_val": 64, "n_test": 128, "epochs": 60, "depths": (4, 16, 32), "repeats": 20,
              "workers": 2, "darcy": {"n_train": 200, "n_val": 50, "n_test": 50, "epochs": 30, "depths": (8,)}},
    )
    with single_thread():
        exact = _exact_checks()
    results = _fits(run, cfg)
    seeds = run.seeds
    errors, errors_256, fit_seconds, best_epochs = (_per_seed(results, "burgers", key, seeds)
                                                    for key in ("error", "error_256", "seconds", "best_epoch"))
    darcy_errors = _per_seed(results, "darcy", "error", seeds)
    curves = {m: {d: {"train": results[("burgers", seeds[0], m, d)]["curve"],
                      "val": results[("burgers", seeds[0], m, d)]["val"]} for d in cfg["depths"]} for m in MODELS}
    example = {k: v for m in MODELS for k, v in results[("burgers", seeds[0], m, 16)]["example"].items()}
    data = _burgers(cfg["n_train"], cfg["n_val"], cfg["n_test"], seeds[0])
    with single_thread():
        step = _step_seconds(data["x_train"][:32], data["y_train"][:32], 16, cfg["repeats"])

    mean = {m: {d: float(np.mean(v)) for d, v in per.items()} for m, per in errors.items()}
    mean_256 = {m: {d: float(np.mean(v)) for d, v in per.items()} for m, per in errors_256.items()}
    fno, bfno = mean["fno"], mean["bfno"]
    arr = {m: {d: np.asarray(v) for d, v in per.items()} for m, per in errors.items()}  # per-seed errors
    step_ratio = float(np.median(step["bregman"]) / np.median(step["standard"]))
    transfer = mean_256["bfno"][16] / mean["bfno"][16]
    claims = [
        Claim(text="a freshly built Bregman FNO is the identity through all its blocks (zero-initialised K, W, b)",
              paper="max |z_L - z_0| < 1e-6 (1-D and 2-D, 16 layers)", measured=exact["identity_max_abs"],
              baseline=None, holds=exact["identity_max_abs"] < 1e-6),
        Claim(text="sigma(sigma^-1(v)) = v on the interior of each activation's range (all 8 invertible pairs)",
              paper="max error < 1e-5", measured=exact["roundtrip_max_abs"], baseline=None,
              holds=exact["roundtrip_max_abs"] < 1e-5),
        Claim(text="the pre-activation-carrying forward pass equals the explicit sigma(sigma^-1(v) + Kv + Wv) layer",
              paper="max relative difference < 1e-4 on random weights", measured=exact["explicit_max_rel"],
              baseline=None, holds=exact["explicit_max_rel"] < 1e-4),
        Claim(text=DEEP_CLAIM, paper="BFNO(16) <= 0.8 x FNO(16) (brief's trial: 0.062 vs 0.089)",
              measured=bfno[16], baseline=fno[16], holds=bfno[16] <= 0.8 * fno[16]),
        Claim(text=DEPTH_CLAIM, paper="BFNO(16) <= BFNO(4) (brief's trial: 0.062 vs 0.258)",
              measured=bfno[16], baseline=bfno[4], holds=bfno[16] <= bfno[4]),
        Claim(text=TRANSFER_CLAIM, paper="error at 256 <= 1.5 x error at 128", measured=mean_256["bfno"][16],
              baseline=mean["bfno"][16], holds=transfer <= 1.5),
        Claim(text="a Bregman block costs about the same as a standard block (forward + backward, L = 16, softplus)",
              paper="median step time ratio <= 1.15", measured=step_ratio, baseline=1.0, holds=step_ratio <= 1.15),
    ]
    if run.scale == "full":
        # Measured at full scale (results/full/bregman_operator.json, seeds 0-2, 60 epochs, early stopping): FNO
        # degrades from 16 to 32 layers (0.061 vs 0.040, all 3 seeds) while BFNO improves (0.029 vs 0.040); Darcy
        # BFNO(8) 0.77 vs FNO(8) 0.24 (raw outputs of scale 0.005, 200 samples, 30 epochs): not reproduced at CPU
        # scale. At 60 epochs FNO(16) catches up with BFNO(16) (0.040 vs 0.041), so the L = 16 claim misses there.
        claims.append(Claim(
            text="FNO degrades with depth on Burgers (mean test relative L2 of the seeds, L = 32 vs L = 16)",
            paper="FNO(32) > FNO(16) (paper: FNO error grows with depth; 'not observed' if it fails)",
            measured=fno[32], baseline=fno[16], holds=fno[32] > fno[16]))
        d_fno, d_bfno = (float(np.mean(darcy_errors[m][8])) for m in MODELS)
        claims.append(Claim(
            text="BFNO is at least as accurate as FNO on 2-D Darcy flow at equal depth (L = 8, mean of seeds)",
            paper="BFNO(8) <= 1.05 x FNO(8)", measured=d_bfno, baseline=d_fno, holds=d_bfno <= 1.05 * d_fno))
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
            "n_seeds": len(run.seeds),
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
    return Result(metrics=metrics, claims=claims, figures=[_figure(run, errors, curves, example, darcy_errors)])


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
