"""Private adversarial bandits: batched Laplace conversion vs per-round Laplace noise, the exact audit,
and private bandits with expert advice.

Claims 1-2 use oblivious Bernoulli losses (K = 5, best arm mean 0.25, others 0.75; pseudo-regret
against the best arm).  Both private learners use the same base, Tsallis-INF on the raw noisy
losses.  Claim 3 is an exact computation.  Claim 4 uses a stream of scikit-learn's bundled digits
with decision-tree experts (``icml25.data.expert_advice``).
"""

from __future__ import annotations

import math
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from icml25.bandits.base import (
    EXP4,
    BernoulliEnv,
    ExpertAdviceEnv,
    TsallisINF,
    expert_regret,
    pseudo_regret,
    run_experts,
)
from icml25.bandits.private_bandits import (
    BatchedExpertsAsArms,
    BatchedPrivateBandit,
    PerRoundLaplaceBandit,
    PrivateEXP4,
    two_batch_audit,
)
from icml25.data.expert_advice import digits_expert_stream
from icml25.harness import Claim, Paper, Result, Run

CLAIM_EPS01 = "eps = 0.1: batched conversion regret <= 0.6 x per-round Laplace regret"
CLAIM_EPS001 = "eps = 0.01: batched regret <= 0.6 x uniform play and <= per-round regret + 2 SE"
CLAIM_EPS1 = "eps = 1 (tau = 1, the conversion is per-round noise): batched regret <= 1.5 x per-round"
CLAIM_SUBLINEAR = (
    "eps = T^-1/2: R_T/T of the batched conversion falls >= 1.8x from T = 1e4 to 1e6, <= 0.5 x uniform"
)
CLAIM_AUDIT = "exact two-batch audit: max log-ratio of action-sequence probabilities <= eps (+1e-9)"
CLAIM_C1 = "experts, eps = 1: batched experts-as-arms regret <= 0.5 x random expert (N = 16 and 256)"
CLAIM_C2 = "experts, eps = 1: private EXP4 regret <= 0.5 x random expert (N = 16 and 256)"

PAPER = Paper(
    id="private_bandits",
    title="Faster Rates for Private Adversarial Bandits",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=8,
    module="icml25.bandits.private_bandits",
    anchors=("SMPyBandits", "OpenDP"),
    default_seeds=tuple(range(10)),
    known_misses=(CLAIM_SUBLINEAR, CLAIM_C1, CLAIM_C2),  # explained beside the claims in reproduce()
)

K = 5
MEANS = np.array([0.25] + [0.75] * (K - 1))
N_ACTIONS = 10


def _rng(seed: int, *tags: int) -> np.random.Generator:
    """An independent stream per (seed, experiment cell); A and B of one cell share it."""
    return np.random.default_rng([seed, *tags])


def _bandit_regrets(make, horizon: int, seeds, tag: tuple[int, ...], replicates: int = 1) -> list[float]:
    """Pseudo-regret per seed (the mean over ``replicates`` independent runs of that seed)."""
    env = BernoulliEnv(MEANS, horizon)
    return [
        float(
            np.mean([pseudo_regret(env, make(horizon).run(env, _rng(s, *tag, r))) for r in range(replicates)])
        )
        for s in seeds
    ]


def _mean_se(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(
        values.std(ddof=1) / math.sqrt(values.size)
    ) if values.size > 1 else 0.0


def _batched(epsilon: float):
    return lambda horizon: BatchedPrivateBandit(TsallisINF(K), horizon, epsilon)


def _per_round(epsilon: float):
    return lambda horizon: PerRoundLaplaceBandit(TsallisINF(K), horizon, epsilon)


def reproduce(run: Run) -> Result:
    seeds = run.seeds
    metrics: dict = {"seconds": {}}
    claims: list[Claim] = []

    # ---------------------------------------------------------------- claim 1: A vs B at fixed eps
    tick = time.perf_counter()
    horizon_1 = run.pick(smoke=2_000, quick=30_000, full=100_000)
    # eps = 0.01 runs at T = 1e5 in quick too: at T = 3e4 tau = 100 leaves 300 super-rounds and the
    # batched regret was 0.72 x uniform (8.7k vs 12k, 10 seeds), so the brief's T = 1e5 is used.
    horizon_small_eps = run.pick(smoke=2_000, quick=100_000, full=100_000)
    cells = {}
    for i, (eps, horizon) in enumerate(((1.0, horizon_1), (0.1, horizon_1), (0.01, horizon_small_eps))):
        a = _bandit_regrets(_batched(eps), horizon, seeds, (1, i))
        b = _bandit_regrets(_per_round(eps), horizon, seeds, (1, i))
        env = BernoulliEnv(MEANS, horizon)
        uniform = float(env.mean_totals().mean() - env.mean_totals().min())
        cells[eps] = {"T": horizon, "batched": a, "per_round": b, "uniform": uniform}
        run.progress((i + 1) / 8, f"claim 1: eps = {eps}")
    metrics["claim1"] = {str(k): v for k, v in cells.items()}
    metrics["seconds"]["claim1"] = time.perf_counter() - tick

    a_mean, _ = _mean_se(cells[0.1]["batched"])
    b_mean, _ = _mean_se(cells[0.1]["per_round"])
    claims.append(
        Claim(
            CLAIM_EPS01,
            "mean regret(A) <= 0.6 x mean regret(B) (paper: 11.7k vs 49.9k at T=1e5)",
            measured=a_mean,
            baseline=b_mean,
            holds=bool(a_mean <= 0.6 * b_mean),
        )
    )
    cell = cells[0.01]
    a_mean, _ = _mean_se(cell["batched"])
    b_mean, b_se = _mean_se(cell["per_round"])
    claims.append(
        Claim(
            CLAIM_EPS001,
            "A <= 0.6 x uniform and A <= B + 2 SE (pre-check 15.7k vs 27.7k, T=1e5)",
            measured=a_mean,
            baseline={"uniform": cell["uniform"], "per_round": b_mean, "per_round_2se": 2 * b_se},
            holds=bool(a_mean <= 0.6 * cell["uniform"] and a_mean <= b_mean + 2 * b_se),
        )
    )
    a_mean, _ = _mean_se(cells[1.0]["batched"])
    b_mean, _ = _mean_se(cells[1.0]["per_round"])
    claims.append(
        Claim(
            CLAIM_EPS1,
            "mean regret(A) <= 1.5 x mean regret(B)",
            measured=a_mean,
            baseline=b_mean,
            holds=bool(a_mean <= 1.5 * b_mean),
        )
    )

    # ---------------------------------------------------------------- claim 2: eps = T^-1/2
    tick = time.perf_counter()
    horizons = run.pick(
        smoke=(1_000, 10_000), quick=(10_000, 100_000, 1_000_000), full=(10_000, 100_000, 1_000_000)
    )
    per_round_t = run.pick(smoke=1_000, quick=10_000, full=100_000)
    # R_T/T at eps = T^-1/2 is heavy-tailed (runs that lock onto a wrong arm for a while): with 200
    # runs it fell 0.314 -> 0.174 (SE 0.008 each), i.e. a fall of 1.80, right at the brief's threshold.
    # Each seed therefore averages several independent runs (cheap: at most 1000 base steps per run).
    replicates = run.pick(smoke=1, quick=5, full=20)
    rate = {}
    for j, horizon in enumerate(horizons):
        eps = horizon**-0.5
        regrets = _bandit_regrets(_batched(eps), horizon, seeds, (2, j), replicates)
        rate[horizon] = [r / horizon for r in regrets]
    per_round_rate = [
        r / per_round_t for r in _bandit_regrets(_per_round(per_round_t**-0.5), per_round_t, seeds, (2, 99))
    ]
    uniform_rate = float(MEANS.mean() - MEANS.min())
    metrics["claim2"] = {
        "R_over_T_batched": {str(k): v for k, v in rate.items()},
        "R_over_T_per_round": {"T": per_round_t, "values": per_round_rate},
        "R_over_T_uniform": uniform_rate,
    }
    metrics["seconds"]["claim2"] = time.perf_counter() - tick
    run.progress(4 / 8, "claim 2")
    # Known miss (quick scale, default seeds): R_T/T falls 0.310 -> 0.184, a factor 1.68 < 1.8; the second
    # condition (R_T/T(1e6) <= 0.2) holds.  A 200-run estimate gives 0.314 -> 0.174 (SE 0.008 each), a fall
    # of 1.80 +- 0.1, so the brief's threshold sits at the expected value of this implementation (its
    # pre-check, 0.28 -> 0.117, used 5 seeds).  Theory predicts a fall of 100^(1/4) = 3.2 asymptotically;
    # the gap is the heavy tail of runs where Tsallis-INF on raw noisy losses locks onto a wrong arm.
    first, last = float(np.mean(rate[horizons[0]])), float(np.mean(rate[horizons[-1]]))
    claims.append(
        Claim(
            CLAIM_SUBLINEAR,
            "fall >= 1.8x and R_T/T(1e6) <= 0.5 x 0.40 (pre-check 0.28 -> 0.117)",
            measured={"R_over_T_first": first, "R_over_T_last": last, "fall": first / last},
            baseline={"uniform": uniform_rate, "per_round_R_over_T": float(np.mean(per_round_rate))},
            holds=bool(first / last >= 1.8 and last <= 0.5 * uniform_rate),
        )
    )

    # ---------------------------------------------------------------- claim 3: exact audit
    tick = time.perf_counter()
    audit_eps = run.pick(smoke=(1.0,), quick=(0.1, 0.5, 1.0), full=(0.01, 0.1, 0.5, 1.0, 2.0))
    audits = {eps: two_batch_audit(eps) for eps in audit_eps}
    control = two_batch_audit(0.5, noise_multiplier=0.5)  # noise at half the calibrated scale
    metrics["claim3"] = {
        "max_log_ratio": {str(e): r.max_log_ratio for e, r in audits.items()},
        "worst_pair": {str(e): [list(map(list, seq)) for seq in r.worst_pair] for e, r in audits.items()},
        "n_pairs": audits[audit_eps[0]].n_pairs,
        "control_half_noise_eps_0.5": control.max_log_ratio,
    }
    metrics["seconds"]["claim3"] = time.perf_counter() - tick
    run.progress(5 / 8, "claim 3")
    worst_ratio = max(r.max_log_ratio / e for e, r in audits.items())
    claims.append(
        Claim(
            CLAIM_AUDIT,
            "max log ratio <= eps + 1e-9 (Laplace mechanism, parallel composition)",
            measured={"max_log_ratio_over_eps": worst_ratio},
            baseline={"half_noise_control_over_eps": control.max_log_ratio / 0.5},
            holds=bool(
                all(r.max_log_ratio <= e + 1e-9 for e, r in audits.items())
                and control.max_log_ratio > 0.5 + 1e-3
            ),
        )
    )

    # ---------------------------------------------------------------- claim 4: expert advice
    tick = time.perf_counter()
    horizon_4 = run.pick(smoke=1_000, quick=20_000, full=20_000)
    experts = run.pick(smoke=(4, 16), quick=(16, 256), full=(16, 256))
    expert_seeds = seeds[: run.pick(smoke=2, quick=5, full=len(seeds))]
    algos = {
        "batched_experts_as_arms": lambda n: BatchedExpertsAsArms(TsallisINF(n), N_ACTIONS, horizon_4, 1.0),
        "private_exp4": lambda n: PrivateEXP4(n, N_ACTIONS, horizon_4, 1.0),
        "exp4_nonprivate": lambda n: EXP4(n, N_ACTIONS, horizon_4),
    }
    expert_results: dict = {name: {} for name in (*algos, "random_expert")}
    for n in experts:
        for name in expert_results:
            expert_results[name][n] = []
        for s in expert_seeds:
            env = ExpertAdviceEnv(*digits_expert_stream(n, horizon_4, seed=int(s)))
            expert_results["random_expert"][n].append(
                float(env.expert_totals.mean() - env.expert_totals.min())
            )
            for k, (name, make) in enumerate(algos.items()):
                expert_results[name][n].append(
                    expert_regret(env, run_experts(make(n), env, _rng(s, 4, n, k)))
                )
        run.progress(5 / 8 + 3 / 8 * (experts.index(n) + 1) / len(experts), f"claim 4: N = {n}")
    means = {name: {n: float(np.mean(v)) for n, v in by_n.items()} for name, by_n in expert_results.items()}
    small, large = experts
    metrics["claim4"] = {
        "T": horizon_4,
        "seeds": list(expert_seeds),
        "regret": {name: {str(n): v for n, v in by_n.items()} for name, by_n in expert_results.items()},
        # The brief's N-dependence check (C2 grows <= 1.6x, C1 >= 1.5x from N = 16 to 256): reported only,
        # as the brief allows, because C1's per-seed regrets are dominated by lock-in on noisy arms.
        "growth_small_to_large_N": {name: means[name][large] / means[name][small] for name in algos},
    }
    metrics["seconds"]["claim4"] = time.perf_counter() - tick
    # Known misses (both algorithms, quick and full scale, T = 2e4, eps = 1): measured at quick scale,
    # C1 is about 0.8-1.0 x the random expert and C2 about 0.8 x.  Reasons, from the numbers:
    # * C2's theory bound sqrt(KT ln N) ln(KT)/eps = 744 x 12.2 ~ 9k for N = 16 exceeds the random
    #   expert's regret (~4.5k): the clipping range c = ln(KT)/eps = 12.2 shrinks the loss gaps 25x,
    #   so EXP4 with the brief's eta barely moves its weights in 2e4 rounds (non-private EXP4: ~0.15x).
    # * C1 at eps = 1 has tau = 1, i.e. Laplace(1) noise on every loss; Tsallis-INF on raw noisy losses
    #   locks onto an arm whose rare negative draw was divided by a tiny probability; even without
    #   noise Tsallis-INF over 256 expert-arms reaches only ~0.6x the random expert at T = 2e4.
    for text, name in ((CLAIM_C1, "batched_experts_as_arms"), (CLAIM_C2, "private_exp4")):
        ratios = {str(n): means[name][n] / means["random_expert"][n] for n in experts}
        claims.append(
            Claim(
                text,
                "regret <= 0.5 x random expert's regret (not pre-checked in the brief)",
                measured=ratios,
                baseline={str(n): means["random_expert"][n] for n in experts},
                holds=bool(all(r <= 0.5 for r in ratios.values())),
            )
        )

    # ---------------------------------------------------------------- figure
    fig, axes = plt.subplots(1, 4, figsize=(20, 4.2))
    ax = axes[0]
    labels = [f"eps={e}\nT={cells[e]['T']:,}" for e in cells]
    x = np.arange(len(cells))
    for offset, key, color in ((-0.2, "batched", "C0"), (0.2, "per_round", "C3")):
        stats = [_mean_se(cells[e][key]) for e in cells]
        ax.bar(
            x + offset,
            [m / cells[e]["T"] for (m, _), e in zip(stats, cells, strict=True)],
            0.4,
            yerr=[se / cells[e]["T"] for (_, se), e in zip(stats, cells, strict=True)],
            color=color,
            label={"batched": "batched (ours)", "per_round": "per-round Laplace"}[key],
        )
    ax.axhline(uniform_rate, color="gray", ls="--", label="uniform play")
    ax.set_xticks(x, labels)
    ax.set_ylabel("regret / T (mean, SE bars)")
    ax.set_title("Claim 1: same base (Tsallis-INF), same eps")
    ax.legend(fontsize=8)
    ax = axes[1]
    ts = np.array(horizons, dtype=float)
    rate_means = [np.mean(rate[h]) for h in horizons]
    rate_se = [_mean_se(rate[h])[1] for h in horizons]
    ax.errorbar(ts, rate_means, yerr=rate_se, marker="o", label="batched, eps = T^-1/2")
    ax.plot([per_round_t], [np.mean(per_round_rate)], "s", color="C3", label="per-round, eps = T^-1/2")
    ax.axhline(uniform_rate, color="gray", ls="--", label="uniform play")
    ax.set_xscale("log")
    ax.set_ylim(0, None)
    ax.set_xlabel("T")
    ax.set_ylabel("R_T / T")
    ax.set_title("Claim 2: sublinear regret at eps = 1/sqrt(T)")
    ax.legend(fontsize=8)
    ax = axes[2]
    eps_list = list(audits)
    ax.plot(eps_list, eps_list, "k--", label="eps (the DP bound)")
    ax.plot(eps_list, [audits[e].max_log_ratio for e in eps_list], "o", label="calibrated noise (ours)")
    ax.plot([0.5], [control.max_log_ratio], "x", color="C3", ms=10, label="half the noise (control)")
    ax.set_xlabel("eps")
    ax.set_ylabel("max |log P(s|D) / P(s|D')|")
    ax.set_title(f"Claim 3: exact audit, {audits[eps_list[0]].n_pairs} neighbouring pairs")
    ax.legend(fontsize=8)
    ax = axes[3]
    x = np.arange(len(experts))
    names = ("random_expert", "batched_experts_as_arms", "private_exp4", "exp4_nonprivate")
    for k, name in enumerate(names):
        ax.bar(x + (k - 1.5) * 0.2, [means[name][n] for n in experts], 0.2, label=name.replace("_", " "))
    ax.set_xticks(x, [f"N={n}" for n in experts])
    ax.set_ylabel(f"regret vs best expert (T={horizon_4:,})")
    ax.set_title("Claim 4: digits experts, eps = 1")
    ax.legend(fontsize=8)
    fig.tight_layout()
    figure = run.savefig(fig, "private_bandits")
    return Result(metrics=metrics, claims=claims, figures=[figure])
