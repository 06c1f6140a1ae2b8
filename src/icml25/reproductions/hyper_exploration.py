"""Reproduction of Wang, Liu, Li, Amani, Zhou & Yang, "Hyper: Hyperparameter Robust Efficient Exploration in
Reinforcement Learning" (ICML 2025, arXiv:2412.03767; no official code found). Guide, results and calibration
notes: docs/papers/hyper_exploration.md.

The bed is tabular (the mechanism, not the paper's deep-RL numbers): DeceptiveRooms, a four-room gridworld with a
terminal distractor (+0.1) two steps from the start and the terminal goal (+1) 20 steps away. Q-learning learners
with replay; the count bonus ``1 / sqrt(N(s'))``; the curiosity coefficient swept over ``beta`` in
{0.01, 0.1, 1, 10, 100}. Agents: plain Q-learning, Curiosity (one learner on ``r + beta r_int``, evaluated),
Decouple (exploitation learner on ``r`` evaluated, exploration learner on the mixed reward acts) and Hyper
(Decouple plus repositioning: each episode starts with ``L ~ TruncGeom(c = 0.95, H = 100)`` steps of the
exploitation learner). Metric: normalised return of the evaluated greedy policy (1 = goal, 0 = distractor or
nothing), the mean of the last five evaluations; AUC = the mean over all evaluations.

1. robustness over beta: Hyper's worst case >= 0.8 and >= Curiosity's worst case + 0.3;
2. Hyper's spread over beta <= 0.5 x Curiosity's;
3. plain Q-learning fails (<= 0.2; else the bed is too easy and claims 1-2 are void);
4. at beta = 100 Hyper's AUC >= 1.1 x Decouple's (median over seeds);
5. the repositioning schedule: empirical mean of 10k draws within 2 % of the analytic mean; c = 0 never repositions.
Full scale adds DQN + RND on MiniGrid-DoorKey-5x5 (Hyper vs Curiosity at three betas).
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.stats import summary
from icml25.rl import (
    RND,
    CountBonus,
    Curiosity,
    DeceptiveRooms,
    Decouple,
    DQNAgent,
    DQNArgs,
    Hyper,
    TabularQ,
    truncated_geometric,
    truncated_geometric_mean,
)

CLAIM_ROBUST = "Hyper is robust over beta: worst-case normalised return >= 0.8 and >= Curiosity's worst case + 0.3"
CLAIM_SPREAD = "Hyper's spread over beta is at most half of Curiosity's"
CLAIM_QFAIL = "plain Q-learning fails on DeceptiveRooms (normalised return <= 0.2): the bed needs exploration"
CLAIM_LARGE_BETA = "at beta = 100 repositioning speeds learning: Hyper's AUC >= 1.1 x Decouple's"
CLAIM_SCHEDULE = "the truncated geometric repositioning length has its analytic mean (within 2 %); c = 0 is Decouple"
CLAIM_DEEP = "deep RL (DQN + RND) on MiniGrid-DoorKey-5x5: Hyper's success rate >= 0.8 at every beta"

PAPER = Paper(
    id="hyper_exploration",
    title="Hyper: Hyperparameter Robust Efficient Exploration in Reinforcement Learning",
    module="icml25.rl.hyper_exploration",
    anchors=("CleanRL (dqn.py, td3_continuous_action.py, ppo_rnd_envpool.py)", "gymnasium", "minigrid",
             "rllte intrinsic rewards"),
    default_seeds=(3, 4, 5),
    quick_budget_s=120.0,
    extras=("rl", "torch"),
    known_misses={
        CLAIM_SPREAD: "at 15k steps Curiosity fails at every beta (its evaluated greedy policy is the optimistic, "
                      "bonus-driven explorer), so its spread is 0; at full scale (30k steps) it recovers at "
                      "beta = 0.01 and the claim holds",
        CLAIM_LARGE_BETA: "in the tabular bed Decouple already explores the whole maze at beta = 100 and its "
                          "exploitation learner learns off-policy as fast as Hyper's (the paper's gap comes with "
                          "function approximation)",
        CLAIM_DEEP: "full scale only: no agent, Hyper or Curiosity, reaches the DoorKey goal within 12 000 steps on "
                    "any seed; a paper-scale run needs 100 000+ steps per agent and beta",
    },
)

BETAS = (0.01, 0.1, 1.0, 10.0, 100.0)
GAMMA = 0.99
C, HORIZON = 0.95, 100
AGENTS = ("curiosity", "decouple", "hyper")


@dataclass(frozen=True)
class Sizes:
    steps: int        # environment steps per tabular run
    eval_every: int
    betas: tuple[float, ...]
    deep_steps: int   # DQN + RND on MiniGrid (0: skipped)
    deep_betas: tuple[float, ...]


def _normalised(ret: float) -> float:
    """1 for the goal's return, 0 for the distractor's or none (the undiscounted return is 0, 0.1 or 1)."""
    return float(np.clip((ret - DeceptiveRooms.distractor_reward)
                         / (DeceptiveRooms.goal_reward - DeceptiveRooms.distractor_reward), 0.0, 1.0))


def _agent(name: str, beta: float, seed: int):
    """The three bonus agents share one exploration learner: a Q-table started at the upper bound of its
    return, ``1 + beta / (1 - gamma)`` (one terminal task reward plus a bonus <= 1 every step); plain
    Q-learning and every exploitation learner start at 0."""
    def plain(env, s):
        return TabularQ(env.observation_space, env.action_space, gamma=GAMMA, seed=s)

    def optimistic(env, s):
        return TabularQ(env.observation_space, env.action_space, gamma=GAMMA, q_init=1.0 + beta / (1.0 - GAMMA),
                        seed=s)

    if name == "q_learning":
        return Curiosity(plain, CountBonus(), beta=0.0, seed=seed)
    kind = {"curiosity": Curiosity, "decouple": Decouple}.get(name)
    if kind is not None:
        return kind(plain, CountBonus(), beta=beta, make_explore_learner=optimistic, seed=seed)
    return Hyper(plain, CountBonus(), beta=beta, c=C, horizon=HORIZON, make_explore_learner=optimistic, seed=seed)


def _tabular_run(name: str, beta: float, seed: int, sz: Sizes) -> dict:
    history = _agent(name, beta, seed).train(DeceptiveRooms(), sz.steps, eval_every=sz.eval_every)
    curve = [_normalised(r) for r in history.returns]
    return {"final": float(np.mean(curve[-5:])), "auc": float(np.mean(curve)), "curve": curve,
            "explore_fraction": history.explore_fraction[-1],
            "mean_reposition": float(np.mean(history.reposition_lengths))}


def _deep_run(name: str, beta: float, seed: int, steps: int) -> dict:
    """DQN + RND on a flattened MiniGrid-DoorKey-5x5 (layouts vary with the reset seed); success = the share of
    20 greedy evaluation episodes after training that reach the goal."""
    import gymnasium
    from minigrid.wrappers import ImgObsWrapper

    from icml25.rl import evaluate_policy

    def make():
        return gymnasium.wrappers.FlattenObservation(ImgObsWrapper(gymnasium.make("MiniGrid-DoorKey-5x5-v0")))

    env = make()
    args = DQNArgs(total_timesteps=steps, learning_rate=2.5e-4, buffer_size=steps, batch_size=128,
                   target_network_frequency=500, train_frequency=4, learning_starts=1000, exploration_fraction=0.25,
                   hidden=(128, 128))

    def learner(e, s):
        return DQNAgent(e.observation_space, e.action_space, args, seed=s)

    obs_dim = int(env.observation_space.shape[0])
    common = dict(curiosity=RND(obs_dim, seed=seed), beta=beta, buffer_size=steps, batch_size=128,
                  learning_starts=1000, train_frequency=4, horizon=env.unwrapped.max_steps, seed=seed)
    agent = (Curiosity(learner, **common) if name == "curiosity" else Hyper(learner, c=C, **common))
    history = agent.train(env, steps, eval_env=make(), eval_every=max(steps // 6, 1), eval_episodes=3)
    final = evaluate_policy(make(), agent.act, n_episodes=20, seed=10_000 + seed)
    return {"success": float((final.returns > 0).mean()), "curve": history.returns}


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(1500, 500, (0.01, 100.0), 0, ()),
                  quick=Sizes(15_000, 1000, BETAS, 0, ()),
                  full=Sizes(30_000, 1000, BETAS, 12_000, (0.01, 100.0)))
    per_seed = []
    total = len(run.seeds) * (1 + len(sz.betas) * len(AGENTS) + 2 * len(sz.deep_betas))
    done = 0
    for seed in run.seeds:
        rec = {"seed": seed, "q_learning": _tabular_run("q_learning", 0.0, seed, sz), "tabular": {}, "deep": {}}
        done += 1
        for beta in sz.betas:
            for name in AGENTS:
                run.progress(done / total, f"seed {seed}: {name}, beta = {beta}")
                rec["tabular"][f"{name}/{beta}"] = _tabular_run(name, beta, seed, sz)
                done += 1
        for beta in sz.deep_betas:
            for name in ("curiosity", "hyper"):
                run.progress(done / total, f"seed {seed}: DQN + RND {name}, beta = {beta}")
                rec["deep"][f"{name}/{beta}"] = _deep_run(name, beta, seed, sz.deep_steps)
                done += 1
        per_seed.append(rec)
    claims = [_claim_robust(per_seed, sz), _claim_spread(per_seed, sz), _claim_qfail(per_seed),
              _claim_large_beta(per_seed, sz), _claim_schedule(run)]
    if sz.deep_betas:
        claims.append(_claim_deep(per_seed, sz))
    figures = [_beta_figure(run, per_seed, sz), _curve_figure(run, per_seed, sz)]
    return Result(metrics=_metrics(per_seed, sz), claims=claims, figures=figures)


def _final(per_seed: list[dict], name: str, beta: float, key: str = "final") -> list[float]:
    return [s["tabular"][f"{name}/{beta}"][key] for s in per_seed]


def _by_beta(per_seed: list[dict], name: str, sz: Sizes) -> dict[float, float]:
    """Seed-mean final normalised return per beta."""
    return {b: float(np.mean(_final(per_seed, name, b))) for b in sz.betas}


def _claim_robust(per_seed: list[dict], sz: Sizes) -> Claim:
    means = {name: _by_beta(per_seed, name, sz) for name in AGENTS}
    worst = {name: min(m.values()) for name, m in means.items()}
    return Claim(
        text=CLAIM_ROBUST,
        criterion=f"min over beta in {list(sz.betas)} of the seed-mean final normalised return: Hyper's >= 0.8 and "
                  ">= Curiosity's + 0.3 (same seeds, same steps)",
        paper="Hyper's return is stable across curiosity coefficients where curiosity collapses (Figures 1 and 4)",
        measured={"hyper_worst": worst["hyper"], "hyper_by_beta": means["hyper"],
                  "hyper_per_seed": {str(b): summary(_final(per_seed, "hyper", b)) for b in sz.betas}},
        baseline={"curiosity_worst": worst["curiosity"], "curiosity_by_beta": means["curiosity"],
                  "decouple_worst": worst["decouple"], "decouple_by_beta": means["decouple"]},
        holds=worst["hyper"] >= 0.8 and worst["hyper"] >= worst["curiosity"] + 0.3,
    )


def _claim_spread(per_seed: list[dict], sz: Sizes) -> Claim:
    spread = {name: max(m.values()) - min(m.values())
              for name, m in ((n, _by_beta(per_seed, n, sz)) for n in AGENTS)}
    return Claim(
        text=CLAIM_SPREAD,
        criterion="max - min over beta of the seed-mean final normalised return: Hyper's <= 0.5 x Curiosity's, "
                  "with Curiosity's > 0",
        paper="curiosity's performance swings with beta, Hyper's stays flat (Figure 1)",
        measured={"hyper_spread": spread["hyper"]},
        baseline={"curiosity_spread": spread["curiosity"], "decouple_spread": spread["decouple"]},
        holds=spread["curiosity"] > 0 and spread["hyper"] <= 0.5 * spread["curiosity"],
    )


def _claim_qfail(per_seed: list[dict]) -> Claim:
    q = [s["q_learning"]["final"] for s in per_seed]
    return Claim(
        text=CLAIM_QFAIL,
        criterion="plain Q-learning (Q init 0, epsilon 0.05, no bonus): seed-mean final normalised return <= 0.2",
        paper="exploration is needed: a learner without a bonus stays at the first local optimum (Section 1)",
        measured=summary(q), baseline=None, holds=float(np.mean(q)) <= 0.2,
    )


def _claim_large_beta(per_seed: list[dict], sz: Sizes) -> Claim:
    beta = max(sz.betas)
    hyper, dec = _final(per_seed, "hyper", beta, "auc"), _final(per_seed, "decouple", beta, "auc")
    ratio = float(np.median(hyper)) / max(float(np.median(dec)), 1e-12)
    return Claim(
        text=CLAIM_LARGE_BETA,
        criterion=f"beta = {beta}: median over seeds of the AUC (mean normalised return over all evaluations), "
                  "Hyper / Decouple >= 1.1",
        paper="decoupling alone degrades at large beta; repositioning restores efficiency (ablation, Section 6)",
        measured={"hyper_auc": summary(hyper), "ratio_of_medians": ratio,
                  "hyper_auc_beta_10": summary(_final(per_seed, "hyper", 10.0, "auc")) if 10.0 in sz.betas else None},
        baseline={"decouple_auc": summary(dec),
                  "decouple_auc_beta_10": summary(_final(per_seed, "decouple", 10.0, "auc"))
                  if 10.0 in sz.betas else None},
        holds=ratio >= 1.1,
    )


def _claim_schedule(run: Run) -> Claim:
    rows, ok = [], True
    for c, horizon in ((0.5, 100), (0.9, 100), (0.95, 100), (0.99, 100), (0.999, 1000)):
        draws = truncated_geometric(c, horizon, size=10_000, seed=run.seeds[0])
        analytic = truncated_geometric_mean(c, horizon)
        rel = abs(float(draws.mean()) - analytic) / analytic
        ok &= rel <= 0.02
        rows.append({"c": c, "H": horizon, "analytic": analytic, "empirical": float(draws.mean()), "rel_error": rel})
    zero = truncated_geometric(0.0, HORIZON, size=10_000, seed=run.seeds[0])
    return Claim(
        text=CLAIM_SCHEDULE,
        criterion="10k draws per (c, H): |mean - analytic| <= 2 % of the analytic mean "
                  "c/(1-c) - (H+1)c^(H+1)/(1-c^(H+1)); all draws 0 for c = 0",
        paper="repositioning length drawn from a truncated geometric distribution (Algorithm 1)",
        measured=rows, baseline={"c=0_max_draw": int(zero.max())},
        holds=bool(ok and zero.max() == 0), kind="check",
    )


def _claim_deep(per_seed: list[dict], sz: Sizes) -> Claim:
    success = {name: {str(b): summary([s["deep"][f"{name}/{b}"]["success"] for s in per_seed])
                      for b in sz.deep_betas} for name in ("hyper", "curiosity")}
    worst = min(v["mean"] for v in success["hyper"].values())
    return Claim(
        text=CLAIM_DEEP,
        criterion=f"DQN + RND, {sz.deep_steps} steps, beta in {list(sz.deep_betas)}: Hyper's seed-mean success "
                  "rate over 20 greedy episodes >= 0.8 at every beta (Curiosity reported for contrast)",
        paper="Hyper is robust with deep RL on sparse-reward navigation (Figures 4-6)",
        measured={"hyper_success": success["hyper"]}, baseline={"curiosity_success": success["curiosity"]},
        holds=worst >= 0.8,
    )


def _beta_figure(run: Run, per_seed: list[dict], sz: Sizes) -> str:
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for name in AGENTS:
        vals = np.array([_final(per_seed, name, b) for b in sz.betas])
        sd = vals.std(axis=1, ddof=1) if vals.shape[1] > 1 else np.zeros(len(sz.betas))
        ax.errorbar(sz.betas, vals.mean(axis=1), yerr=sd, marker="o", capsize=3, label=name)
    q = np.mean([s["q_learning"]["final"] for s in per_seed])
    ax.axhline(q, color="k", ls=":", lw=1, label="Q-learning (no bonus)")
    ax.set(xscale="log", xlabel="curiosity coefficient beta", ylabel="final normalised return",
           title="DeceptiveRooms: final return over beta (mean ± sd over seeds)", ylim=(-0.05, 1.05))
    ax.legend()
    return run.savefig(fig, "return_over_beta")


def _curve_figure(run: Run, per_seed: list[dict], sz: Sizes) -> str:
    beta = max(sz.betas)
    fig, ax = plt.subplots(figsize=(6.4, 4))
    for name in AGENTS:
        curves = np.array(_final(per_seed, name, beta, "curve"))
        steps = sz.eval_every * np.arange(1, curves.shape[1] + 1)
        ax.plot(steps, curves.mean(axis=0), label=name)
        ax.fill_between(steps, curves.min(axis=0), curves.max(axis=0), alpha=0.15)
    ax.set(xlabel="environment steps", ylabel="normalised return (greedy evaluation)",
           title=f"DeceptiveRooms, beta = {beta}: learning curves (mean, min-max over seeds)", ylim=(-0.05, 1.05))
    ax.legend()
    return run.savefig(fig, "curves_large_beta")


def _metrics(per_seed: list[dict], sz: Sizes) -> dict:
    return {
        "final_by_beta": {name: {str(b): summary(_final(per_seed, name, b)) for b in sz.betas} for name in AGENTS},
        "auc_by_beta": {name: {str(b): summary(_final(per_seed, name, b, "auc")) for b in sz.betas}
                        for name in AGENTS},
        "q_learning_final": summary([s["q_learning"]["final"] for s in per_seed]),
        "hyper_mean_reposition": summary([s["tabular"][f"hyper/{sz.betas[-1]}"]["mean_reposition"]
                                          for s in per_seed]),
        "per_seed": per_seed,
    }
