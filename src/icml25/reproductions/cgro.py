"""Reproduction of Li & Li (ICML 2025, arXiv:2306.01271): clean generalization and robust overfitting (CGRO).
Guide, results and calibration notes (how eps, sigma, delta and init std were set): docs/papers/cgro.md.

A. Representation view on digits (8x8, 1437/360 split, pixels in [0, 1]): a clean MLP g (64-128-10) is
   wrapped by ``RobustMemorizer`` at ℓ∞ radius ε = 0.1; certified and PGD-20 robust training accuracy,
   clean and PGD-20 robust test accuracy of F against g alone, and the extra parameter count.
B. CGRO in real adversarial training on digits: PGD-10 (ℓ∞, ε = 0.1, α = ε/4) adversarial training of an
   MLP 64-256-256-10 with Adam 1e-3 for 60 epochs, against standard training and FGSM training with the same
   loop; robust accuracies by PGD-20.  The cost of a PGD-10 epoch against a clean epoch (ratio of medians);
   at full scale also against the hidden width w of an MLP 64-w-w-10 (log-log slopes).
C. Training dynamics on the signal/noise patch data (``icml25.data.patch_data``; d = 200, P = 2, α = 1,
   σ = 4, N = 64, 2000 test points): a two-layer cubic CNN (m = 32 filters per class) trained by full-batch
   gradient descent on the adversarial logistic loss (ℓ2 PGD-10, radius δ = 0.7); Φ_t, Ψ_t and accuracies
   along training; the same run with N = 1024 training points.
D. Capacity: the run of C with m ∈ {4, 16, 64} filters per class.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.data.patch_data import make_patch_data, random_feature
from icml25.data.tensors import digits_tensors
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.learning_theory.attacks import adversarial_train, clean_accuracy, robust_accuracy
from icml25.learning_theory.cgro import DynamicsTracker, RobustMemorizer, TwoLayerPatchCNN, separation
from icml25.utils.nn import make_mlp, train_classifier

CLAIM_GAP = "digits: PGD adversarial training shows a robust generalization gap >= 25 points"
CLAIM_STAGE_ORDER = "patch data: Phi reaches 90 % of its final value before Psi reaches 50 % of its final value"
CLAIM_STAGE_GROWTH = "patch data: final Psi >= 3x its value at the end of stage I"
CLAIM_EPOCH_SWEEP = ("a PGD-10 epoch stays within 12 clean epochs as the MLP widens, both growing alike "
                     "(64-w-w-10, w = 64..2048)")

PAPER = Paper(
    id="cgro",
    title="On the Clean Generalization and Robust Overfitting in Adversarial Training from Two Theoretical "
          "Views: Representation Complexity and Training Dynamics",
    module="icml25.learning_theory.cgro",
    anchors=("torchattacks", "adversarial-robustness-toolbox", "RobustBench"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses={
        CLAIM_GAP: "on 8x8 digits the robust gap is ~11 points within the budget (MNIST/CIFAR-scale gaps do not "
                   "appear)",
        CLAIM_STAGE_ORDER: "in our reconstruction Phi and Psi grow together after a short feature-first phase",
        CLAIM_STAGE_GROWTH: "Psi grows only ~1.1x after stage I: memorization is not a separate late stage here",
    },
)

# Settings chosen once on seed 0 (see the docs' calibration notes).
DIGITS_EPS = 0.1
PATCH = {"d": 200, "alpha": 1.0, "sigma": 4.0, "delta": 0.7, "init_std": 0.05, "lr": 0.3}


def _memorization(seed: int, epochs: int) -> dict:
    """Claim A: the robust-memorization wrapper on digits."""
    data = digits_tensors(test_size=0.2, seed=seed)
    g = make_mlp([64, 128, 10], seed=seed)
    train_classifier(g, data.X_train, data.y_train, epochs=epochs, batch_size=64, lr=1e-3, seed=seed)
    F = RobustMemorizer(g, data.X_train, data.y_train, eps=DIGITS_EPS, on_conflict="drop")
    attack = {"eps": DIGITS_EPS, "steps": 20, "seed": seed}
    with torch.no_grad():
        forward_seconds = median_seconds(lambda: F(data.X_test), repeats=5)
    n, dim = data.X_train.shape
    return {
        "n_train": n, "dim": dim, "dropped": int(F.dropped_.numel()), "M": F.M,
        "separation_different_labels": separation(data.X_train, data.y_train),
        "certified_train": float(F.certify(data.X_train, data.y_train).float().mean()),
        "robust_train_F": robust_accuracy(F, data.X_train, data.y_train, **attack),
        "robust_train_g": robust_accuracy(g, data.X_train, data.y_train, **attack),
        "clean_test_F": clean_accuracy(F, data.X_test, data.y_test),
        "clean_test_g": clean_accuracy(g, data.X_test, data.y_test),
        "robust_test_F": robust_accuracy(F, data.X_test, data.y_test, **attack),
        "robust_test_g": robust_accuracy(g, data.X_test, data.y_test, **attack),
        "extra_parameters": F.extra_parameters, "extra_hidden_units": F.extra_hidden_units,
        "clean_parameters": sum(p.numel() for p in g.parameters()),
        "forward_seconds_360_test_points": forward_seconds,
    }


def _adversarial_training(seed: int, epochs: int) -> dict:
    """Claim B: PGD / FGSM / standard training of the same MLP with the same loop."""
    data = digits_tensors(test_size=0.2, seed=seed)
    out = {}
    for attack in ("pgd", "fgsm", "none"):
        model = make_mlp([64, 256, 256, 10], seed=seed)
        hist = adversarial_train(model, data.X_train, data.y_train, eps=DIGITS_EPS, epochs=epochs, attack=attack,
                                 steps=10, batch_size=64, lr=1e-3, eval_data=(data.X_test, data.y_test),
                                 eval_every=max(1, epochs // 6), seed=seed)
        out[attack] = {"epochs": hist.epochs, "clean_train": hist.clean_train, "robust_train": hist.robust_train,
                       "clean_test": hist.clean_test, "robust_test": hist.robust_test,
                       "epoch_seconds": statistics.median(hist.epoch_seconds)}
    return out


def _patch_run(seed: int, n_train: int, m: int, steps: int, n_test: int, track: bool) -> dict:
    """Claims C and D: adversarial training of the patch CNN; Φ/Ψ and accuracies."""
    d, delta = PATCH["d"], PATCH["delta"]
    w_star = random_feature(d, seed)
    train = make_patch_data(n_train, d=d, alpha=PATCH["alpha"], sigma=PATCH["sigma"], w_star=w_star,
                            seed=seed + 100)
    test = make_patch_data(n_test, d=d, alpha=PATCH["alpha"], sigma=PATCH["sigma"], w_star=w_star, seed=seed + 200)
    X, y = torch.from_numpy(train.X), torch.from_numpy(train.y)
    Xt, yt = torch.from_numpy(test.X), torch.from_numpy(test.y)
    attack = {"eps": delta, "norm": "l2", "clip": None}
    model = TwoLayerPatchCNN(d, m, activation="cubic", init_std=PATCH["init_std"], seed=seed)

    def evaluate(net):
        return {"clean_test": clean_accuracy(net, Xt[:500], yt[:500]),
                "robust_train": robust_accuracy(net, X, y, steps=20, seed=seed, **attack)}

    tracker = DynamicsTracker(train.w_star, train.noise, every=5, evaluate=evaluate if track else None, eval_every=2)
    adversarial_train(model, X, y, epochs=steps, attack="pgd", steps=10, batch_size=None,
                      optimizer=torch.optim.SGD, lr=PATCH["lr"], callback=tracker, seed=seed, **attack)
    result = {
        "clean_train": clean_accuracy(model, X, y), "clean_test": clean_accuracy(model, Xt, yt),
        "robust_train": robust_accuracy(model, X, y, steps=20, seed=seed, **attack),
        "robust_test": robust_accuracy(model, Xt, yt, steps=20, seed=seed, **attack),
        "phi_final": tracker.phi[-1], "psi_final": tracker.psi[-1],
    }
    result["robust_gap"] = result["robust_train"] - result["robust_test"]
    if track:
        t1, t3 = tracker.stages()
        result.update({"t_stage1_end": t1, "t_stage3_start": t3, "psi_at_stage1_end": tracker.value_at(t1),
                       "steps": tracker.steps, "phi": tracker.phi, "psi": tracker.psi,
                       "eval_steps": [s for s, _ in tracker.extras["clean_test"]],
                       "eval_clean_test": [v for _, v in tracker.extras["clean_test"]],
                       "eval_robust_train": [v for _, v in tracker.extras["robust_train"]]})
    return result


def _first_step(steps: list[int], values: list[float], level: float) -> float:
    hit = [s for s, v in zip(steps, values, strict=True) if v >= level]
    return float(hit[0]) if hit else float("inf")


def _mean(values) -> float:
    return float(np.mean(values))


def reproduce(run: Run) -> Result:
    # 1. Sizes.
    epochs_g = run.pick(smoke=2, quick=20, full=50)
    epochs_at = run.pick(smoke=2, quick=60, full=200)
    steps = run.pick(smoke=10, quick=250, full=2000)
    n_test = run.pick(smoke=200, quick=2000, full=10000)
    n_large = run.pick(smoke=128, quick=1024, full=1024)
    widths = (4, 16, 64)
    seeds = run.pick(smoke=run.seeds[:1], quick=run.seeds, full=run.seeds)  # smoke proves the pipeline only
    sweep_widths = run.pick(smoke=(8, 16), quick=(), full=(64, 128, 256, 512, 1024, 2048))

    # 2. Experiments A-D per seed.
    per_seed = []
    for i, seed in enumerate(seeds):
        run.progress(i / len(seeds), f"seed {seed}: robust memorization on digits")
        memo = _memorization(seed, epochs_g)
        run.progress((i + 0.25) / len(seeds), f"seed {seed}: adversarial training on digits")
        at = _adversarial_training(seed, epochs_at)
        run.progress((i + 0.5) / len(seeds), f"seed {seed}: patch-data dynamics")
        main = _patch_run(seed, 64, 32, steps, n_test, track=True)
        large = _patch_run(seed, n_large, 32, steps, n_test, track=False)
        capacity = {m: _patch_run(seed, 64, m, steps, n_test, track=False) for m in widths}
        per_seed.append({"seed": seed, "memorization": memo, "adversarial_training": at, "patch": main,
                         "patch_large_n": large, "capacity": {str(m): v for m, v in capacity.items()}})
    run.progress(1.0, "epoch cost against the MLP width")
    sweep = _epoch_sweep(sweep_widths, run.pick(smoke=1, quick=1, full=5), seeds[0])
    run.progress(1.0, "claims")
    memo = [s["memorization"] for s in per_seed]
    final = {attack: [_final(s["adversarial_training"][attack]) for s in per_seed]
             for attack in ("pgd", "fgsm", "none")}
    main = [s["patch"] for s in per_seed]
    large = [s["patch_large_n"] for s in per_seed]
    cap = {m: [s["capacity"][str(m)] for s in per_seed] for m in widths}
    epoch_ratio = statistics.median(s["adversarial_training"]["pgd"]["epoch_seconds"]
                                    / s["adversarial_training"]["none"]["epoch_seconds"] for s in per_seed)

    # 3. Claims.
    claims = [
        _claim_memorizer_certified(memo),
        _claim_memorizer_keeps_clean(memo),
        _claim_memorizer_robust_test_poor(memo),
        _claim_memorizer_size(memo),
        _claim_digits_fit(final),
        _claim_digits_gap(final),
        _claim_patch_cgro(main),
        _claim_stage_order(main),
        _claim_stage_growth(main),
        _claim_more_data(main, large),
        _claim_capacity(cap, widths),
        _claim_epoch_cost(epoch_ratio),
    ]
    if run.scale == "full":
        claims.append(_claim_epoch_sweep(sweep))

    # 4. Figures and metrics.
    figures = [_figure_memorization(run, per_seed), _figure_dynamics(run, per_seed, widths)]
    if sweep is not None:
        figures.append(_figure_epoch_sweep(run, sweep))
    metrics = {"per_seed": per_seed,
               "summary": _summary_metrics(memo, final, main, large, cap, widths, epoch_ratio),
               "epoch_time_sweep": sweep,
               "config": {"digits_eps": DIGITS_EPS, "patch": PATCH, "patch_steps": steps, "n_large": n_large}}
    return Result(metrics=metrics, claims=claims, figures=figures)


def _epoch_sweep(widths: tuple[int, ...], repeats: int, seed: int) -> dict[str, Any] | None:
    """One PGD-10 epoch against one clean epoch (the same ``adversarial_train`` loop, batch 64, digits) of an MLP
    64-w-w-10 for every ``w`` in ``widths``: thread CPU time on one thread, medians of interleaved repeats, and the
    log-log slopes in ``w``.  Both epochs cost O(n (64 w + w^2 + 10 w)) multiply-adds, the PGD epoch (steps + 1)
    forward/backward passes per batch against one."""
    if not widths:
        return None
    data = digits_tensors(test_size=0.2, seed=seed)
    rows = []
    with single_thread():
        for w in widths:
            models = {a: make_mlp([64, w, w, 10], seed=seed) for a in ("pgd", "none")}

            def epoch(attack: str, models: dict = models) -> None:
                adversarial_train(models[attack], data.X_train, data.y_train, eps=DIGITS_EPS, epochs=1,
                                  attack=attack, steps=10, batch_size=64, lr=1e-3, seed=seed)

            sec = interleaved_seconds({a: lambda a=a: epoch(a) for a in models}, repeats, warmup=1,
                                      clock=time.thread_time)
            pgd, clean = float(np.median(sec["pgd"])), float(np.median(sec["none"]))
            rows.append({"width": w, "pgd_seconds": pgd, "clean_seconds": clean, "pgd_over_clean_time": pgd / clean})
    ws = [r["width"] for r in rows]
    return {"rows": rows, "clock": "thread_time", "repeats": repeats, "seed": seed,
            "time_slope_in_width": {k: loglog_slope(ws, [r[f"{k}_seconds"] for r in rows]) for k in ("pgd", "clean")}}


def _final(history: dict) -> dict[str, float]:
    return {k: history[k][-1] for k in ("clean_train", "robust_train", "clean_test", "robust_test")}


def _gap(rows: list[dict]) -> list[float]:
    return [r["robust_train"] - r["robust_test"] for r in rows]


def _params_per_nd(memo: list[dict]) -> float:
    return max(r["extra_parameters"] / (r["n_train"] * r["dim"]) for r in memo)


def _claim_memorizer_certified(memo: list[dict]) -> Claim:
    return Claim(
        text="robust memorization: F is certified robust on every training point and PGD-20 finds no training "
             "counterexample",
        criterion="certified and PGD-20 robust training accuracy of F = 100 %, every seed",
        paper="robust on every training point by construction (representation theorem)",
        measured={"certified_train_min": min(r["certified_train"] for r in memo),
                  "pgd_robust_train_F_min": min(r["robust_train_F"] for r in memo)},
        baseline={"pgd_robust_train_g": summary([r["robust_train_g"] for r in memo])},
        holds=all(r["certified_train"] == 1.0 and r["robust_train_F"] == 1.0 for r in memo),
        kind="check",
    )


def _claim_memorizer_keeps_clean(memo: list[dict]) -> Claim:
    shift = max(abs(r["clean_test_F"] - r["clean_test_g"]) for r in memo)
    return Claim(
        text="robust memorization keeps g's clean test accuracy",
        criterion="|clean test F - g| <= 0.5 point, every seed",
        paper="F = g away from the training points (construction)",
        measured=shift,
        baseline=summary([r["clean_test_g"] for r in memo]),
        holds=shift <= 0.005,
    )


def _claim_memorizer_robust_test_poor(memo: list[dict]) -> Claim:
    robust_test_F = summary([r["robust_test_F"] for r in memo])
    shift = max(abs(r["robust_test_F"] - r["robust_test_g"]) for r in memo)
    return Claim(
        text="robust memorization leaves robust test accuracy as poor as g's (CGRO)",
        criterion="|robust test F - g| <= 1 point on every seed and mean robust test of F <= 60 %",
        paper="clean generalization with robust overfitting (qualitative)",
        measured={"robust_test_F": robust_test_F, "max_shift": shift},
        baseline=summary([r["robust_test_g"] for r in memo]),
        holds=shift <= 0.01 and robust_test_F["mean"] <= 0.60,
    )


def _claim_memorizer_size(memo: list[dict]) -> Claim:
    per_nd = _params_per_nd(memo)
    return Claim(
        text="the wrapper adds O(N D) parameters: exactly N (6D + 2) nonzero weights and biases",
        criterion="extra parameters == N (6D + 2) on every seed, and <= 7 N D",
        paper="O(N D) extra parameters (representation theorem)",
        measured=per_nd,
        baseline={"clean_parameters": memo[0]["clean_parameters"], "N_times_D": memo[0]["n_train"] * memo[0]["dim"]},
        holds=all(r["extra_parameters"] == r["n_train"] * (6 * r["dim"] + 2) for r in memo) and per_nd <= 7,
        kind="check",
    )


def _claim_digits_fit(final: dict[str, list[dict]]) -> Claim:
    robust_train = summary([r["robust_train"] for r in final["pgd"]])
    clean_test = summary([r["clean_test"] for r in final["pgd"]])
    return Claim(
        text="digits: PGD adversarial training fits robustly and generalizes on clean data",
        criterion="mean robust train >= 90 % and mean clean test >= 85 %",
        paper="near-zero robust training error and good clean test accuracy (qualitative)",
        measured={"robust_train": robust_train, "clean_test": clean_test},
        baseline={"standard_training_robust_train": summary([r["robust_train"] for r in final["none"]]),
                  "fgsm_training_robust_train": summary([r["robust_train"] for r in final["fgsm"]])},
        holds=robust_train["mean"] >= 0.90 and clean_test["mean"] >= 0.85,
    )


def _claim_digits_gap(final: dict[str, list[dict]]) -> Claim:
    gap = summary(_gap(final["pgd"]))
    return Claim(
        text=CLAIM_GAP,
        criterion="mean robust train - robust test >= 25 points",
        paper="robust test accuracy stays low (robust overfitting, qualitative)",
        measured=gap,
        baseline={"standard_training_gap": summary(_gap(final["none"]))},
        holds=gap["mean"] >= 0.25,
    )


def _claim_patch_cgro(main: list[dict]) -> Claim:
    measured = {k: summary([r[k] for r in main]) for k in ("robust_train", "clean_test", "robust_test")}
    gap = summary([r["robust_gap"] for r in main])
    return Claim(
        text="patch data: adversarial training converges to CGRO",
        criterion="means over seeds: robust train >= 95 %, clean test >= 90 %, robust test <= 70 %, gap >= 25 points",
        paper="converges to the robust-memorization regime (training-dynamics theorem)",
        measured=measured,
        baseline=None,
        holds=measured["robust_train"]["mean"] >= 0.95 and measured["clean_test"]["mean"] >= 0.9
        and measured["robust_test"]["mean"] <= 0.7 and gap["mean"] >= 0.25,
    )


def _claim_stage_order(main: list[dict]) -> Claim:
    order = [(r["t_stage1_end"], r["t_stage3_start"]) for r in main]
    return Claim(
        text=CLAIM_STAGE_ORDER,
        criterion="t_stage1_end < t_stage3_start on every seed",
        paper="three stages: partial feature learning first, noise memorization last (training-dynamics theorem)",
        measured=order,
        baseline=None,
        holds=all(t1 < t3 for t1, t3 in order),
    )


def _claim_stage_growth(main: list[dict]) -> Claim:
    growth = [r["psi_final"] / r["psi_at_stage1_end"] for r in main]
    return Claim(
        text=CLAIM_STAGE_GROWTH,
        criterion="Psi_final / Psi(t_stage1_end) >= 3 on every seed",
        paper="three stages: noise memorization after feature learning (training-dynamics theorem)",
        measured=summary(growth),
        baseline=None,
        holds=all(v >= 3 for v in growth),
    )


def _claim_more_data(main: list[dict], large: list[dict]) -> Claim:
    gap_small = summary([r["robust_gap"] for r in main])
    gap_large = summary([r["robust_gap"] for r in large])
    return Claim(
        text="patch data: more data (N = 1024) shrinks the robust gap, so the failure is memorization",
        criterion="mean robust gap(N = 1024) < mean robust gap(N = 64)",
        paper=None,
        measured=gap_large,
        baseline=gap_small,
        holds=gap_large["mean"] < gap_small["mean"],
    )


def _claim_capacity(cap: dict[int, list[dict]], widths: tuple[int, ...]) -> Claim:
    robust_train = [float(np.mean([r["robust_train"] for r in cap[m]])) for m in widths]
    clean_test = [float(np.mean([r["clean_test"] for r in cap[m]])) for m in widths]
    return Claim(
        text="patch data: robust training accuracy grows with the number of filters m, clean test stays high",
        criterion="mean robust train non-decreasing in m in {4, 16, 64} (2-point slack), mean clean test >= 90 %",
        paper="robust memorization needs capacity (representation view, qualitative)",
        measured={"robust_train": robust_train, "clean_test": clean_test},
        baseline=None,
        holds=all(b >= a - 0.02 for a, b in zip(robust_train, robust_train[1:], strict=False))
        and min(clean_test) >= 0.9,
    )


def _claim_epoch_cost(epoch_ratio: float) -> Claim:
    return Claim(
        text="a PGD-10 adversarial-training epoch costs at most 12 clean epochs (same loop)",
        criterion="median over seeds of (median PGD epoch seconds / median clean epoch seconds) <= 12",
        paper=None,
        measured=epoch_ratio,
        baseline=1.0,
        holds=epoch_ratio <= 12,
    )


def _claim_epoch_sweep(sweep: dict[str, Any]) -> Claim:
    ratios = {r["width"]: r["pgd_over_clean_time"] for r in sweep["rows"]}
    slopes = sweep["time_slope_in_width"]
    return Claim(
        text=CLAIM_EPOCH_SWEEP,
        criterion="thread CPU time, medians of interleaved repeats: PGD-10 epoch / clean epoch <= 12 at every width, "
                  "and the fitted log-log slopes in w within 0.25 of each other (the same O(w^2) network, 11 passes "
                  "against 1)",
        paper=None,
        measured={"ratio_by_width": ratios, "slope_pgd": slopes["pgd"]},
        baseline={"slope_clean": slopes["clean"]},
        holds=bool(max(ratios.values()) <= 12 and abs(slopes["pgd"] - slopes["clean"]) <= 0.25),
    )


def _summary_metrics(memo, final, main, large, cap, widths, epoch_ratio) -> dict:
    return {
        "params_per_ND": _params_per_nd(memo),
        "digits_at_gap": float(np.mean(_gap(final["pgd"]))),
        "digits_std_gap": float(np.mean(_gap(final["none"]))),
        "patch_gap_N64": float(np.mean([r["robust_gap"] for r in main])),
        "first_step_90": [{"clean_test": _first_step(r["eval_steps"], r["eval_clean_test"], 0.9),
                           "robust_train": _first_step(r["eval_steps"], r["eval_robust_train"], 0.9)} for r in main],
        "patch_gap_large_N": float(np.mean([r["robust_gap"] for r in large])),
        "capacity_robust_train": [float(np.mean([r["robust_train"] for r in cap[m]])) for m in widths],
        "capacity_clean_test": [float(np.mean([r["clean_test"] for r in cap[m]])) for m in widths],
        "epoch_time_ratio_pgd_over_clean": epoch_ratio,
    }


def _figure_memorization(run: Run, per_seed: list[dict]) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    names = ["clean test", "robust train", "robust test"]
    keys = [("clean_test_g", "clean_test_F"), ("robust_train_g", "robust_train_F"), ("robust_test_g", "robust_test_F")]
    x = np.arange(len(names))
    for j, label in enumerate(("clean g", "g + robust memorization")):
        vals = [_mean([s["memorization"][k[j]] for s in per_seed]) for k in keys]
        axes[0].bar(x + (j - 0.5) * 0.38, vals, 0.38, label=label)
    axes[0].set_xticks(x, names)
    axes[0].set_ylabel(f"accuracy (PGD-20, l-inf eps = {DIGITS_EPS})")
    axes[0].set_title("digits: robust memorization wrapper")
    axes[0].set_ylim(0, 1.25)
    axes[0].legend(loc="upper center", ncol=2)
    at = per_seed[0]["adversarial_training"]
    for attack, style in (("pgd", "-"), ("none", ":")):
        h = at[attack]
        label = "PGD training" if attack == "pgd" else "standard training"
        axes[1].plot(h["epochs"], h["robust_train"], style, color="C0", label=f"{label}: robust train")
        axes[1].plot(h["epochs"], h["robust_test"], style, color="C3", label=f"{label}: robust test")
        axes[1].plot(h["epochs"], h["clean_test"], style, color="C2", label=f"{label}: clean test")
    axes[1].set_xlabel("epoch")
    axes[1].set_ylabel("accuracy")
    axes[1].set_title(f"digits: adversarial training (seed {per_seed[0]['seed']})")
    axes[1].legend(fontsize=7)
    return run.savefig(fig, "memorization")


def _figure_dynamics(run: Run, per_seed: list[dict], widths: tuple[int, ...]) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    main = per_seed[0]["patch"]
    axes[0].plot(main["steps"], main["phi"], label="feature learning Φ")
    axes[0].plot(main["steps"], main["psi"], label="noise memorization Ψ")
    axes[0].axvline(main["t_stage1_end"], color="gray", ls=":", label="Φ at 90 % of final")
    axes[0].axvline(main["t_stage3_start"], color="k", ls="--", label="Ψ at 50 % of final")
    axes[0].set_xlabel("gradient step")
    axes[0].set_title(f"patch data, N = 64 (seed {per_seed[0]['seed']})")
    axes[0].legend(fontsize=8)
    axes[1].plot(main["eval_steps"], main["eval_clean_test"], label="clean test")
    axes[1].plot(main["eval_steps"], main["eval_robust_train"], label="robust train (PGD-20)")
    axes[1].set_xlabel("gradient step")
    axes[1].set_ylabel("accuracy")
    axes[1].set_title(f"accuracies along training (seed {per_seed[0]['seed']})")
    axes[1].legend(fontsize=8)
    labels = [f"m={m}" for m in widths] + ["N=1024"]
    rows = [[s["capacity"][str(m)] for s in per_seed] for m in widths] + [[s["patch_large_n"] for s in per_seed]]
    x = np.arange(len(labels))
    for j, key in enumerate(("robust_train", "robust_test", "clean_test")):
        heights = [_mean([r[key] for r in row]) for row in rows]
        axes[2].bar(x + (j - 1) * 0.27, heights, 0.27, label=key.replace("_", " "))
    axes[2].set_xticks(x, labels)
    axes[2].set_ylabel("accuracy (mean over seeds)")
    axes[2].set_title("capacity (N = 64) and more data (m = 32)")
    axes[2].legend(fontsize=8)
    return run.savefig(fig, "dynamics")


def _figure_epoch_sweep(run: Run, sweep: dict[str, Any]) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "epoch_cost_vs_width", [r["width"] for r in rows],
        {"clean epoch": [r["clean_seconds"] for r in rows], "PGD-10 epoch": [r["pgd_seconds"] for r in rows]},
        xlabel="hidden width w (MLP 64-w-w-10)", ylabel="thread CPU time per epoch [s]",
        title="epoch cost against width (digits, batch 64)",
        ratios={"PGD-10 / clean": [r["pgd_over_clean_time"] for r in rows]}, bounds={"12x (the claim)": 12},
        ratio_ylabel="PGD-10 epoch / clean epoch", ratio_title="relative cost")
