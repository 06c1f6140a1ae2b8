# docs, results and calibration notes: docs/papers/ucb_ogd.md
"""Reproduction of Zang, Turkcan, Zussman, Kostic & Ghaderi, "Adaptive Data Collection for Robust Learning Across
Multiple Distributions" (ICML 2025, PMLR 267:73974-73994): UCB source selection + OGD against uniform sampling
and active learning.

Three experiments, all on the run's seeds:
1. synthetic multi-source logistic regression (K = 5, d = 20, one conflicting minority source):
   worst-source loss of the averaged iterate after T = 2000 rounds, against uniform and
   round-robin sampling (EXP3 and epsilon-greedy source selection are reported too), and the
   share of samples given to the hard source;
2. regret R_T = sum_t max_k L_k(theta_t) - T L* for T in {250, ..., 4000}: growth exponent of
   UCB-OGD against uniform sampling.  Both algorithms are anytime (step eta0 / sqrt(t), bonus with
   ln t), so R_T for every T is read off one run of the largest T with the same seed;
3. corrupted digits (clean, Gaussian noise, random occlusion, rotation), softmax regression,
   T = 1500: worst-source test accuracy against uniform sampling and entropy / margin sampling.

Population losses of the synthetic task are exact (Gauss-Hermite, see
``MultiSourceLogistic.population_losses``) instead of estimates on held-out samples.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from icml25.bandits.ucb_ogd import (
    AdaptiveCollector,
    ArraySource,
    EXP3Selector,
    GreedySelector,
    LogisticModel,
    RoundRobinSelector,
    SoftmaxModel,
    UCBSelector,
    UncertaintySelector,
    UniformSelector,
    regret_curve,
    regret_exponent,
    solve_minimax,
    source_accuracies,
)
from icml25.data import load_digits_split
from icml25.data.multi_source import DIGIT_CORRUPTIONS, corrupt_digits, make_multisource_logistic
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.stats import summary
from icml25.harness.threads import single_thread

CLAIM_LOSS = "UCB-OGD reaches a lower worst-source loss than uniform sampling at the same budget (synthetic)"
CLAIM_RR = "UCB-OGD's worst-source loss is no higher than round-robin sampling's (synthetic)"
CLAIM_SHARE = "UCB-OGD gives the hard minority source at least twice the uniform share of samples"
CLAIM_SLOPE = "the regret of UCB-OGD grows like sqrt(T K ln T)"
CLAIM_RATIO = "R_T / sqrt(T K ln T) of UCB-OGD stays within a constant factor across T"
CLAIM_UNIFORM = "the regret of uniform sampling grows linearly when the sources conflict"
CLAIM_DIGITS = "corrupted digits: UCB-OGD has a higher worst-source accuracy than uniform sampling"
CLAIM_ACTIVE = "corrupted digits: UCB-OGD's worst-source accuracy is at least that of entropy-based active learning"

PAPER = Paper(
    id="ucb_ogd",
    title="Adaptive Data Collection for Robust Learning Across Multiple Distributions",
    module="icml25.bandits.ucb_ogd",
    anchors=("WILDS GroupDRO", "modAL", "SMPyBandits"),
    default_seeds=tuple(range(20)),
    known_misses={
        CLAIM_DIGITS: "both reach 0.75: the occlusion source caps a linear model (+1.6 points at best offline)",
        CLAIM_ACTIVE: "0.737 vs 0.754 (sd 0.025 / 0.017): within seed noise, the order flips on seeds 0-9",
    },
)

# Settings and their origin: docs/papers/ucb_ogd.md, "Calibration notes".
K_SYN, D_SYN, CONFLICT = 5, 20, 3.0  # synthetic task: K sources in d dimensions, one conflicting source
RADIUS, ETA0 = 2.5, 0.5  # OGD ball radius and step eta0 / sqrt(t), shared by all selectors
LOSS_BOUND = 2.0  # log-loss clipped at B for the bandit feedback
BONUS_GRID = (0.25, 0.5, 1.0)  # UCB bonus c B sqrt(2 ln t / n_k): c chosen on the tuning seeds (1.0 is the default)
N_TUNE = 5  # tuning seeds used for that choice
ETA0_DIGITS, RADIUS_DIGITS = 2.0, 20.0  # digits: softmax regression on 64 pixels in [0, 1]
SYN_NAMES = ("ucb", "uniform", "round_robin", "exp3", "greedy")
DIG_NAMES = ("ucb", "uniform", "entropy", "margin")


def reproduce(run: Run) -> Result:
    seeds = run.seeds[:3] if run.scale == "smoke" else run.seeds
    T1 = run.pick(smoke=200, quick=2000, full=2000)
    horizons = np.array(run.pick(smoke=(50, 100, 200, 400), quick=(250, 500, 1000, 2000, 4000),
                                 full=(250, 500, 1000, 2000, 4000, 8000, 16000)))
    T_digits = run.pick(smoke=150, quick=1500, full=1500)

    # Choose UCB's bonus on the tuning seeds; then run every reporting seed: the synthetic task (experiments
    # 1 and 2), then the corrupted digits (experiment 3).
    syn, dig = [], []
    with single_thread():  # small dense problems: multi-threaded BLAS only adds overhead
        bonus, tuning = _tune_bonus(run.tune_seeds[:N_TUNE], T1)
        run.progress(0.05, f"bonus scale {bonus} chosen on the tuning seeds")
        for i, seed in enumerate(seeds):
            syn.append(_synthetic(seed, T1, int(horizons[-1]), bonus))
            run.progress((i + 0.5) / len(seeds), f"seed {seed}: synthetic done")
            dig.append(_digits(seed, T_digits, bonus))
            run.progress((i + 1) / len(seeds), f"seed {seed}: digits done")

    # Regret R_T at every horizon, per seed; its log-log slope from the mean over seeds.
    regrets = {n: np.array([s[n]["regret"][horizons - 1] for s in syn]) for n in ("ucb", "uniform")}
    slopes = {n: regret_exponent(horizons, r.mean(axis=0)) for n, r in regrets.items()}
    scale = np.sqrt(horizons * K_SYN * np.log(horizons))

    claims = [
        _claim_loss(syn),
        _claim_round_robin(syn),
        _claim_share(syn),
        _claim_slope(slopes),
        _claim_ratio(regrets, scale),
        _claim_uniform(slopes),
        _claim_digits(dig),
        _claim_active(dig),
    ]
    metrics = _metrics(seeds, syn, dig, regrets, slopes, scale, T1, horizons, T_digits)
    metrics["settings"].update(bonus_scale=bonus, bonus_tuning=tuning)
    worst = metrics["synthetic"]["worst_loss_averaged"]
    acc = metrics["digits"]["worst_acc_last"]
    figures = [_figure(run, horizons, regrets, scale, worst, syn, acc, DIG_NAMES, SYN_NAMES, T1, T_digits)]
    return Result(metrics=metrics, claims=claims, figures=figures)


# ----------------------------------------------------------------------------------------------- experiments


def _tune_bonus(tune_seeds: tuple[int, ...], T: int) -> tuple[float, dict]:
    """UCB's bonus scale: the lowest mean worst-source loss (averaged iterate, synthetic task) on the tuning seeds."""
    losses = {}
    for c in BONUS_GRID:
        worst = []
        for seed in tune_seeds:
            task = make_multisource_logistic(K_SYN, D_SYN, conflict=CONFLICT, seed=seed)
            selector = UCBSelector(K_SYN, loss_bound=LOSS_BOUND, bonus_scale=c)
            collector = AdaptiveCollector(LogisticModel(D_SYN), selector, loss_bound=LOSS_BOUND, eta0=ETA0,
                                          radius=RADIUS, seed=seed)
            hist = collector.run(task.samplers(), T, record_params=True)
            worst.append(float(task.population_losses(hist.params[:T].mean(axis=0)).max()))
        losses[c] = float(np.mean(worst))
    return min(BONUS_GRID, key=losses.get), {"grid": list(BONUS_GRID), "tune_seeds": list(tune_seeds),
                                              "mean_worst_loss": {str(c): v for c, v in losses.items()}}


def _synthetic(seed: int, T1: int, Tmax: int, bonus: float) -> dict:
    """One seed of experiments 1 and 2: exact population losses, L*, regret, final models."""
    task = make_multisource_logistic(K_SYN, D_SYN, conflict=CONFLICT, seed=seed)
    L_star, _ = solve_minimax(
        lambda th: (task.population_losses(th), task.population_grads(th)), np.zeros(D_SYN), radius=RADIUS
    )
    selectors = {
        "ucb": (UCBSelector(K_SYN, loss_bound=LOSS_BOUND, bonus_scale=bonus), Tmax),
        "uniform": (UniformSelector(K_SYN), Tmax),
        "round_robin": (RoundRobinSelector(K_SYN), T1),
        "exp3": (EXP3Selector(K_SYN, T1, loss_bound=LOSS_BOUND), T1),
        "greedy": (GreedySelector(K_SYN, epsilon=0.05), T1),
    }
    out: dict = {"L_star": L_star}
    for name, (selector, budget) in selectors.items():
        collector = AdaptiveCollector(
            LogisticModel(D_SYN), selector, loss_bound=LOSS_BOUND, eta0=ETA0, radius=RADIUS, seed=seed
        )
        hist = collector.run(task.samplers(), budget, record_params=True)
        # The first T1 rounds of a longer run are exactly a T1-round run (anytime algorithms).
        averaged = hist.params[:T1].mean(axis=0)
        last = hist.params[T1] if budget > T1 else hist.final_params
        out[name] = {
            "worst_loss_averaged": float(task.population_losses(averaged).max()),
            "worst_loss_last": float(task.population_losses(last).max()),
            "hard_share": float(np.mean(hist.sources[:T1] == K_SYN - 1)),
            "shares": (np.bincount(hist.sources[:T1], minlength=K_SYN) / T1).tolist(),
        }
        if budget == Tmax:
            out[name]["regret"] = regret_curve(task.population_losses(hist.params).max(axis=1), L_star)
    return out


def _digits(seed: int, T: int, bonus: float) -> dict:
    """One seed of experiment 3: four corrupted digit sources, softmax regression by OGD."""
    split = load_digits_split(seed=seed)
    rng = np.random.default_rng((seed, 3))
    tests = [(corrupt_digits(split.X_test, kind, rng), split.y_test) for kind in DIGIT_CORRUPTIONS]
    sources = []
    for kind in DIGIT_CORRUPTIONS:
        if kind in ("clean", "rotation"):  # deterministic corruptions: corrupt the pool once
            sources.append(ArraySource(corrupt_digits(split.X_train, kind, rng), split.y_train))
        else:  # fresh noise / occlusion on every draw, from the collector's generator

            def fresh(X: np.ndarray, rng: np.random.Generator, kind: str = kind) -> np.ndarray:
                return corrupt_digits(X, kind, rng)

            sources.append(ArraySource(split.X_train, split.y_train, transform=fresh))
    K = len(DIGIT_CORRUPTIONS)
    selectors = {
        "ucb": UCBSelector(K, loss_bound=LOSS_BOUND, bonus_scale=bonus),
        "uniform": UniformSelector(K),
        "entropy": UncertaintySelector(K, measure="entropy"),
        "margin": UncertaintySelector(K, measure="margin"),
    }
    out = {}
    for name, selector in selectors.items():
        collector = AdaptiveCollector(
            SoftmaxModel(64, 10), selector, loss_bound=LOSS_BOUND, eta0=ETA0_DIGITS, radius=RADIUS_DIGITS,
            seed=seed,
        )
        hist = collector.run(sources, T)
        acc_last = source_accuracies(collector.model, tests)
        acc_avg = source_accuracies(collector.averaged_model(), tests)
        out[name] = {
            "worst_acc_last": float(acc_last.min()),
            "worst_acc_averaged": float(acc_avg.min()),
            "acc_last": acc_last.tolist(),
            "shares": (hist.counts / T).tolist(),
        }
    return out


def _metrics(seeds, syn, dig, regrets, slopes, scale, T1, horizons, T_digits) -> dict:
    worst = {n: summary([s[n]["worst_loss_averaged"] for s in syn]) for n in SYN_NAMES}
    mean_regret = {n: r.mean(axis=0) for n, r in regrets.items()}
    return {
        "seeds": list(seeds),
        "settings": {"T": T1, "horizons": horizons.tolist(), "T_digits": T_digits, "K": K_SYN, "d": D_SYN,
                     "loss_bound": LOSS_BOUND, "eta0": ETA0, "radius": RADIUS,
                     "eta0_digits": ETA0_DIGITS, "radius_digits": RADIUS_DIGITS},
        "synthetic": {
            "L_star": summary([s["L_star"] for s in syn]),
            "worst_loss_averaged": worst,
            "worst_loss_last": {n: summary([s[n]["worst_loss_last"] for s in syn]) for n in SYN_NAMES},
            "worst_loss_ratio_ucb_over_uniform": worst["ucb"]["mean"] / worst["uniform"]["mean"],
            "seeds_ucb_beats_uniform": int(
                sum(s["ucb"]["worst_loss_averaged"] < s["uniform"]["worst_loss_averaged"] for s in syn)
            ),
            "hard_source_share": {n: summary([s[n]["hard_share"] for s in syn]) for n in SYN_NAMES},
            "shares": {n: np.mean([s[n]["shares"] for s in syn], axis=0).tolist() for n in SYN_NAMES},
        },
        "regret": {
            "mean": {n: m.tolist() for n, m in mean_regret.items()},
            "per_seed": {n: r.tolist() for n, r in regrets.items()},
            "slope": slopes,
            "slope_per_seed": {n: [regret_exponent(horizons, r) for r in regrets[n]] for n in regrets},
            "ucb_over_sqrt_TKlnT": (mean_regret["ucb"] / scale).tolist(),
        },
        "digits": {
            "worst_acc_last": {n: summary([d[n]["worst_acc_last"] for d in dig]) for n in DIG_NAMES},
            "worst_acc_averaged": {n: summary([d[n]["worst_acc_averaged"] for d in dig]) for n in DIG_NAMES},
            "shares": {n: np.mean([d[n]["shares"] for d in dig], axis=0).tolist() for n in DIG_NAMES},
            "source_acc_last": {n: np.mean([d[n]["acc_last"] for d in dig], axis=0).tolist() for n in DIG_NAMES},
            "sources": list(DIGIT_CORRUPTIONS),
        },
    }


# ---------------------------------------------------------------------------------------------------- claims
RATE = "minimax regret O(T^1/2 (K ln T)^1/2), optimal up to ln T (abstract)"
BEATS = "consistent improvements over random sampling and active learning methods (abstract; no number given)"


def _per_seed(rows: list[dict], name: str, key: str) -> dict:
    return summary([r[name][key] for r in rows])


def _claim_loss(syn: list[dict]) -> Claim:
    ucb, uniform = _per_seed(syn, "ucb", "worst_loss_averaged"), _per_seed(syn, "uniform", "worst_loss_averaged")
    return Claim(
        text=CLAIM_LOSS,
        criterion="mean worst-source loss (averaged iterate, T = 2000): UCB-OGD <= 0.9 x uniform",
        paper=BEATS,
        measured=ucb,
        baseline=uniform,
        holds=bool(ucb["mean"] / uniform["mean"] <= 0.9),
        kind="finding",
    )


def _claim_round_robin(syn: list[dict]) -> Claim:
    ucb, rr = _per_seed(syn, "ucb", "worst_loss_averaged"), _per_seed(syn, "round_robin", "worst_loss_averaged")
    return Claim(
        text=CLAIM_RR,
        criterion="mean worst-source loss (averaged iterate): UCB-OGD <= round-robin",
        paper=None,
        measured=ucb,
        baseline=rr,
        holds=bool(ucb["mean"] <= rr["mean"]),
        kind="finding",
    )


def _claim_share(syn: list[dict]) -> Claim:
    ucb, uniform = _per_seed(syn, "ucb", "hard_share"), _per_seed(syn, "uniform", "hard_share")
    return Claim(
        text=CLAIM_SHARE,
        criterion=f"mean share of rounds spent on the hard source >= 2 / K = {2 / K_SYN:.2f}",
        paper=None,
        measured=ucb,
        baseline=uniform,
        holds=bool(ucb["mean"] >= 2 / K_SYN),
        kind="finding",
    )


def _claim_slope(slopes: dict) -> Claim:
    return Claim(
        text=CLAIM_SLOPE,
        criterion="slope of log mean R_T against log T in [0.3, 0.75]",
        paper=RATE,
        measured=slopes["ucb"],
        baseline=slopes["uniform"],
        holds=bool(0.3 <= slopes["ucb"] <= 0.75),
        kind="finding",
    )


def _claim_ratio(regrets: dict, scale: np.ndarray) -> Claim:
    normalised = regrets["ucb"].mean(axis=0) / scale
    spread = float(normalised.max() / normalised.min())
    return Claim(
        text=CLAIM_RATIO,
        criterion="max / min over T of mean R_T / sqrt(T K ln T) <= 3",
        paper=RATE,
        measured=spread,
        baseline=None,
        holds=bool(spread <= 3.0),
        kind="finding",
    )


def _claim_uniform(slopes: dict) -> Claim:
    return Claim(
        text=CLAIM_UNIFORM,
        criterion="slope of log mean R_T against log T of uniform sampling >= 0.9",
        paper=None,
        measured=slopes["uniform"],
        baseline=slopes["ucb"],
        holds=bool(slopes["uniform"] >= 0.9),
        kind="finding",
    )


def _claim_digits(dig: list[dict]) -> Claim:
    ucb, uniform = _per_seed(dig, "ucb", "worst_acc_last"), _per_seed(dig, "uniform", "worst_acc_last")
    return Claim(
        text=CLAIM_DIGITS,
        criterion="mean worst-source test accuracy (last iterate, T = 1500): UCB-OGD >= uniform + 0.02",
        paper=BEATS,
        measured=ucb,
        baseline=uniform,
        holds=bool(ucb["mean"] >= uniform["mean"] + 0.02),
        kind="finding",
    )


def _claim_active(dig: list[dict]) -> Claim:
    ucb, entropy = _per_seed(dig, "ucb", "worst_acc_last"), _per_seed(dig, "entropy", "worst_acc_last")
    return Claim(
        text=CLAIM_ACTIVE,
        criterion="mean worst-source test accuracy (last iterate): UCB-OGD >= entropy sampling",
        paper=BEATS,
        measured=ucb,
        baseline=entropy,
        holds=bool(ucb["mean"] >= entropy["mean"]),
        kind="finding",
    )


# ---------------------------------------------------------------------------------------------------- figure
def _figure(run, horizons, regrets, scale, worst, syn, acc, dig_names, syn_names, T1, T_digits) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    for name, colour in (("ucb", "C0"), ("uniform", "C1")):
        r = regrets[name]
        ax.plot(horizons, r.mean(axis=0), "o-", color=colour, label=name)
        ax.fill_between(horizons, r.min(axis=0), r.max(axis=0), color=colour, alpha=0.2)
    c = regrets["ucb"].mean(axis=0)[-1] / scale[-1]
    ax.plot(horizons, c * scale, "k--", label=r"$\propto\sqrt{TK\ln T}$")
    linear = regrets["uniform"].mean(axis=0)[-1] * horizons / horizons[-1]
    ax.plot(horizons, linear, "k:", label=r"$\propto T$")
    ax.set(xscale="log", yscale="log", xlabel="T", ylabel=r"regret $R_T$", title="Regret (synthetic, K=5)")
    ax.set_xticks(horizons, [str(t) for t in horizons])
    ax.minorticks_off()
    ax.legend()

    ax = axes[1]
    means = [worst[n]["mean"] for n in syn_names]
    sds = [worst[n]["sd"] or 0.0 for n in syn_names]
    ax.bar(syn_names, means, yerr=sds, color=["C0"] + ["C7"] * (len(syn_names) - 1), capsize=3)
    ax.axhline(np.mean([s["L_star"] for s in syn]), color="k", ls="--", label="L* (minimax)")
    ax.set(ylabel="worst-source loss (averaged iterate)", title=f"Synthetic, T = {T1}")
    ax.set_ylim(0.4, None)
    ax.legend()

    ax = axes[2]
    ax.bar(dig_names, [acc[n]["mean"] for n in dig_names], yerr=[acc[n]["sd"] or 0.0 for n in dig_names],
           color=["C0"] + ["C7"] * (len(dig_names) - 1), capsize=3)
    ax.set(ylabel="worst-source test accuracy", title=f"Corrupted digits (K=4), T = {T_digits}")
    ax.set_ylim(0.5, 1.0)
    fig.tight_layout()
    return run.savefig(fig, "ucb_ogd")
