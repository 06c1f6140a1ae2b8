"""Reproduction of Huang, Wang, Li, Xia, Zhang & Zhang, "PIGDreamer: Privileged Information Guided World Models for
Safe Partially Observable Reinforcement Learning" (ICML 2025, arXiv:2508.02159; official code
github.com/hggforget/PIGDreamer). Guide, results and calibration notes: docs/papers/pigdreamer.md.

1. asymmetric critic (ACPOMDP, Sec. 3): on the tabular HiddenHazardCorridor, TD(0) on the same transitions for a
   symmetric cost critic V(o) and an asymmetric one V(o, s) averaged through the exact belief; errors against the
   exact belief value; plus the check that a state-aware optimum is at least the best reactive one (Thm. 3.3);
2. privileged representation alignment (Sec. 4.2): the same world model trained on the same PrivilegedHazardNav
   data with and without L_align; ridge / logistic probes on the naive posterior state for privileged hazard
   features (R^2) and for "cost within 5 steps" (AUROC);
3. (full) PIGDreamer against the SafeDreamer-style agent (and PIG-NoRep) in return at a cost budget;
4. time per update against the SafeDreamer-style agent, timed in turns on the same batch;
5. (full) the same timing swept over the world model's width, with log-log slopes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.preprocessing import StandardScaler

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.rl import (
    AsymWorldModel,
    HiddenHazardCorridor,
    PIGDreamer,
    PrivilegedHazardNav,
    SequenceReplay,
    exact_policy_eval,
    symlog,
    td0_evaluate,
)
from icml25.utils.random import torch_generator

CLAIM_CRITIC = "asymmetric critic: the state-aware cost critic has <= 0.5 x the symmetric critic's error"
CLAIM_THEOREM = "Theorem 3.3's direction: the state-aware optimum is >= the best observation-only one"
CLAIM_ALIGN = "privileged representation alignment distils privileged information into the naive latent"
CLAIM_RETURN = "PIGDreamer beats the unprivileged safe world-model agent in return at equal or lower cost"
CLAIM_SPEED = "PIGDreamer costs <= 1.5 x the unprivileged agent's time per update"
CLAIM_SWEEP = "PIGDreamer's overhead per update is a constant factor <= 1.5 x across world-model widths"

PAPER = Paper(
    id="pigdreamer",
    title="PIGDreamer: Privileged Information Guided World Models for Safe Partially Observable Reinforcement Learning",
    module="icml25.rl.pigdreamer",
    anchors=("hggforget/PIGDreamer", "danijar/dreamerv3", "PKU-Alignment/SafeDreamer", "PKU-Alignment/omnisafe",
             "Safety-Gymnasium"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch", "rl"),
    known_misses={
        CLAIM_ALIGN: "after 200 updates the tiny naive latent barely encodes the sparse hazard lidar with or without "
                     "L_align: R^2 gain 0.03 +- 0.03, AUROC gain -0.01 +- 0.02 (criterion 0.05 / 0.03)",
        CLAIM_SPEED: "on one CPU thread the privileged RSSM runs in series with the naive one (the paper's +28 % "
                     "is on a GPU): 1.50 +- 0.05 x, at the 1.5 x threshold",
        CLAIM_SWEEP: "slopes in the width agree (0.92 vs 0.90) but the ratio rises to 1.52 at w = 512 and 1.55 at "
                     "w = 1024 on one CPU thread (1.44-1.48 up to w = 256)",
        CLAIM_RETURN: "full scale only: after 5000 steps per agent (the paper: 500k-1M on a GPU) no agent respects the "
                      "budget of 5 (last-fifth EpCost 13-30) and PIGDreamer trades return for cost (EpRet 40 vs 51)",
    },
)

GAMMA = 0.99
MODEL = {"deter": 64, "stoch": 8, "classes": 8, "hidden": 64}  # the tiny world model of claims 2-4
ALIGN_FREE_NATS = 0.1  # free bits of L_align for the 8 x 8 latent (chosen on tune seed 100, see the docs page)
MODEL_LR = 1e-3
JUNCTION_LEFT = 0.8  # the fixed reactive policy takes the left branch with this probability
DANGEROUS = 0  # layout 0 puts the cost cell on the left branch, the one the policy prefers


@dataclass(frozen=True)
class Sizes:
    corridor_samples: int   # TD(0) transitions (claim 1)
    corridor_seeds: int     # seeds per reporting seed for claim 1 (cheap)
    data_steps: int         # PrivilegedHazardNav steps for the world models (claim 2)
    updates: int            # world-model updates per variant
    batch: int
    seq_len: int
    probe_episodes: int     # held-out episodes for the probes
    timing_repeats: int     # claim 4: timed updates per agent
    agent_steps: int        # claim 3: env steps per agent (0: not run)
    sweep_widths: tuple[int, ...] = ()  # claim 5: world-model widths (deter = hidden) of the cost sweep (): not run


# ---------------------------------------------------------------- claim 1: tabular ACPOMDP


def _corridor_policy(env: HiddenHazardCorridor) -> np.ndarray:
    """The fixed reactive policy lifted to hidden states: forward in the corridor, left w.p. 0.8 at the junction."""
    policy = np.tile([1.0, 0.0], (2 * env.N_CELLS, 1))
    policy[2 * env.JUNCTION:2 * env.JUNCTION + 2] = [JUNCTION_LEFT, 1 - JUNCTION_LEFT]
    return policy


def _corridor_episodes(env: HiddenHazardCorridor, n_steps: int, rng: np.random.Generator) -> list[dict]:
    """Steps of the reactive policy with the exact belief over the layout after each observation."""
    model, steps = env.model(), []
    seed = int(rng.integers(2**31))
    obs, info = env.reset(seed=seed)
    belief = np.array([0.5, 0.5])
    while len(steps) < n_steps:
        cell, layout = int(obs[0]), int(info["privileged"][1])
        action = int(rng.random() >= JUNCTION_LEFT) if cell == env.JUNCTION else 0
        nxt, _, terminated, truncated, info = env.step(action)
        new_belief = belief * model["p_signal"][2 * int(nxt[0]) + np.arange(2), int(nxt[1])]
        new_belief /= new_belief.sum()
        steps.append({"obs": (cell, int(obs[1])), "layout": layout, "belief": belief, "cost": info["cost"],
                      "next_obs": (int(nxt[0]), int(nxt[1])), "done": terminated})
        obs, belief = nxt, new_belief
        if terminated or truncated:
            obs, info = env.reset()
            belief = np.array([0.5, 0.5])
    return steps


def _corridor(seed: int, sz: Sizes) -> dict:
    """TD(0) for V(o) and V(o, s) on the same transitions; errors against the exact belief value."""
    env = HiddenHazardCorridor(seed=seed)
    model, policy = env.model(), _corridor_policy(env)
    v_cost = exact_policy_eval(model["P"], model["cost"], model["terminal"], policy, GAMMA)
    rng = np.random.default_rng(seed)
    train = _corridor_episodes(env, sz.corridor_samples, rng)
    test = [s for s in _corridor_episodes(env, 2000, rng) if not s["done"]]
    okey = lambda o: 3 * o[0] + o[1]  # noqa: E731 - the observation's table index
    keys = np.array([okey(s["obs"]) for s in train])
    nkeys = np.array([okey(s["next_obs"]) for s in train])
    layouts = np.array([s["layout"] for s in train])
    costs = np.array([s["cost"] for s in train])
    dones = np.array([s["done"] for s in train])
    n_obs = 3 * env.N_CELLS
    v_sym = td0_evaluate(keys, costs, nkeys, dones, n_obs, GAMMA)
    v_asym = td0_evaluate(2 * keys + layouts, costs, 2 * nkeys + layouts, dones, 2 * n_obs, GAMMA).reshape(n_obs, 2)
    truth = np.array([s["belief"] @ v_cost[2 * s["obs"][0] + np.arange(2)] for s in test])
    sym = np.array([v_sym[okey(s["obs"])] for s in test])
    asym = np.array([s["belief"] @ v_asym[okey(s["obs"])] for s in test])
    danger = np.array([s["layout"] == DANGEROUS for s in test])
    return {"mse_sym": float(np.mean((sym - truth) ** 2)), "mse_asym": float(np.mean((asym - truth) ** 2)),
            "bias_sym_dangerous": float(np.mean(sym[danger] - truth[danger])),
            "bias_asym_dangerous": float(np.mean(asym[danger] - truth[danger])),
            "theorem": _theorem(env, model)}


def _theorem(env: HiddenHazardCorridor, model: dict) -> dict:
    """Optimal values of ``reward - cost`` from the start: the best reactive policy (it cannot see the layout at the
    junction) against the state-aware optimum (policy improvement with a state-aware critic)."""
    signal = model["reward"] - model["cost"]
    starts = [2 * 0 + layout for layout in (0, 1)]
    values = {}
    for branch in (0, 1):
        policy = np.tile([1.0, 0.0], (2 * env.N_CELLS, 1))
        policy[2 * env.JUNCTION:2 * env.JUNCTION + 2] = np.eye(2)[branch]
        values[branch] = exact_policy_eval(model["P"], signal, model["terminal"], policy, GAMMA)[starts]
    reactive = max(float(np.mean(values[b])) for b in (0, 1))
    state_aware = float(np.mean(np.maximum(values[0], values[1])))
    return {"reactive": reactive, "state_aware": state_aware}


def _claim_critic(per_seed: list[dict]) -> Claim:
    ratio = [s["corridor"]["mse_asym"] / s["corridor"]["mse_sym"] for s in per_seed]
    bias = [s["corridor"]["bias_sym_dangerous"] for s in per_seed]
    return Claim(
        text=CLAIM_CRITIC,
        criterion="HiddenHazardCorridor, fixed reactive policy, TD(0) on the same transitions: median over seeds of "
                  "MSE(asymmetric V(o, s) through the belief) / MSE(symmetric V(o)) <= 0.5 against the exact "
                  "belief cost value, and the symmetric critic underestimates the cost in the dangerous layout "
                  "(mean bias < 0)",
        paper="asymmetric critics give better value estimates; V_asym represents |S| values instead of beliefs "
              "(Sec. 3, Thms. 3.3-3.4)",
        measured={"mse_ratio": summary(ratio), "mse_asym": summary([s["corridor"]["mse_asym"] for s in per_seed]),
                  "bias_asym_dangerous": summary([s["corridor"]["bias_asym_dangerous"] for s in per_seed])},
        baseline={"mse_sym": summary([s["corridor"]["mse_sym"] for s in per_seed]),
                  "bias_sym_dangerous": summary(bias)},
        holds=float(np.median(ratio)) <= 0.5 and float(np.mean(bias)) < 0,
    )


def _claim_theorem(per_seed: list[dict]) -> Claim:
    th = per_seed[0]["corridor"]["theorem"]
    return Claim(
        text=CLAIM_THEOREM,
        criterion="exact policy evaluation of reward - cost from the start: the state-aware optimum >= the best "
                  "reactive (observation-only) policy",
        paper="V*_asym(b) >= V*_sym(b) (Thm. 3.3)",
        measured=th["state_aware"], baseline=th["reactive"], holds=th["state_aware"] >= th["reactive"] - 1e-12,
        kind="check",
    )


# ---------------------------------------------------------------- claim 2: alignment probes


def _scripted_steps(env: PrivilegedHazardNav, n_steps: int, rng: np.random.Generator) -> list[dict]:
    """A noisy go-to-goal policy that ignores hazards; steps in the replay convention (action *into* the step)."""
    steps = []
    obs, info = env.reset(seed=int(rng.integers(2**31)))
    first = True
    prev = np.zeros(2, np.float32)
    reward, cost, done = 0.0, 0.0, False
    while len(steps) < n_steps:
        steps.append({"obs": obs, "priv": info["privileged"], "action": prev, "reward": reward, "cost": cost,
                      "is_first": float(first), "is_terminal": 0.0})
        if done:
            obs, info = env.reset()
            first, prev, reward, cost, done = True, np.zeros(2, np.float32), 0.0, 0.0, False
            continue
        action = np.clip(3.0 * obs[4:6] + rng.normal(0, 0.6, 2), -1, 1).astype(np.float32)
        obs, reward, _, truncated, info = env.step(action)
        first, prev, cost, done = False, action, info["cost"], truncated
    return steps


def _probe_features(model: AsymWorldModel, episodes: list[list[dict]], seed: int) -> np.ndarray:
    batch = {k: torch.tensor(np.array([[s[k] for s in ep] for ep in episodes]), dtype=torch.float32)
             for k in ("obs", "action", "is_first")}
    with torch.no_grad():
        embed = model.encoder(symlog(batch["obs"]))
        states = model.rssm(embed, batch["action"], batch["is_first"], torch_generator(seed))[0]
    return states.numpy()


def _probe_targets(episodes: list[list[dict]], n_hazards: int) -> tuple[np.ndarray, np.ndarray]:
    priv = np.array([[s["priv"] for s in ep] for ep in episodes])
    nearest = priv[..., [0, 1, 3 * n_hazards]]  # nearest hazard's relative position, signed edge distance
    cost = np.array([[s["cost"] for s in ep] for ep in episodes])
    soon = np.zeros_like(cost)
    for k in range(1, 6):
        soon[:, :-k] = np.maximum(soon[:, :-k], cost[:, k:])
    return nearest, soon


def _probe(features: np.ndarray, nearest: np.ndarray, soon: np.ndarray) -> dict:
    """Ridge R^2 (mean over the three privileged targets) and logistic AUROC, fit on the first half of the
    held-out episodes and scored on the second half."""
    half = len(features) // 2
    flat = lambda x: x.reshape(-1, x.shape[-1]) if x.ndim == 3 else x.reshape(-1)  # noqa: E731
    scaler = StandardScaler().fit(flat(features[:half]))
    X_fit, X_test = scaler.transform(flat(features[:half])), scaler.transform(flat(features[half:]))
    ridge = Ridge(alpha=100.0).fit(X_fit, flat(nearest[:half]))
    r2 = float(r2_score(flat(nearest[half:]), ridge.predict(X_test), multioutput="uniform_average"))
    y_fit, y_test = flat(soon[:half]) > 0, flat(soon[half:]) > 0
    logit = LogisticRegression(C=0.01, max_iter=1000).fit(X_fit, y_fit)
    auroc = float(roc_auc_score(y_test, logit.decision_function(X_test)))
    return {"r2": r2, "auroc": auroc}


def _replay(data: list[dict], seed: int) -> SequenceReplay:
    replay = SequenceReplay(len(data), seed=seed)
    for step in data:
        replay.add(step)
    return replay


def _alignment(seed: int, sz: Sizes) -> dict:
    env = PrivilegedHazardNav(seed=seed)
    rng = np.random.default_rng(seed)
    data = _scripted_steps(env, sz.data_steps, rng)
    held_out = _scripted_steps(env, sz.probe_episodes * (env.episode_len + 1), rng)
    episodes = [held_out[i:i + env.episode_len + 1] for i in range(0, len(held_out), env.episode_len + 1)]
    nearest, soon = _probe_targets(episodes, env.n_hazards)
    out = {}
    for variant in ("pig", "norep"):
        model = AsymWorldModel(14, 2, env.priv_dim, variant, **MODEL, align_free_nats=ALIGN_FREE_NATS, seed=seed)
        replay = _replay(data, seed)
        opt = torch.optim.Adam(model.parameters(), lr=MODEL_LR)
        gen = torch_generator(seed)
        losses = []
        for _ in range(sz.updates):
            loss, metrics, _ = model.loss(replay.sample(sz.batch, sz.seq_len), gen)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 100.0)
            opt.step()
            losses.append(metrics)
        out[variant] = {**_probe(_probe_features(model, episodes, seed), nearest, soon),
                        "final": {k: float(np.mean([m[k] for m in losses[-20:]])) for k in losses[-1]}}
    out["cost_rate"] = float(soon.mean())
    return out


def _claim_align(per_seed: list[dict]) -> Claim:
    gain_r2 = [s["align"]["pig"]["r2"] - s["align"]["norep"]["r2"] for s in per_seed]
    gain_auc = [s["align"]["pig"]["auroc"] - s["align"]["norep"]["auroc"] for s in per_seed]
    return Claim(
        text=CLAIM_ALIGN,
        criterion="same data, seed and updates: probes on the naive posterior state s^- only; median over seeds of "
                  "R^2(with L_align) - R^2(without) >= 0.05 for the nearest hazard's position and edge distance, and "
                  "of AUROC(with) - AUROC(without) >= 0.03 for 'cost within 5 steps'",
        paper="removing the alignment leaves only a marginal gain over the unprivileged agent (ablation, Sec. 5)",
        measured={"r2_gain": summary(gain_r2), "auroc_gain": summary(gain_auc),
                  "r2_with": summary([s["align"]["pig"]["r2"] for s in per_seed]),
                  "auroc_with": summary([s["align"]["pig"]["auroc"] for s in per_seed])},
        baseline={"r2_without": summary([s["align"]["norep"]["r2"] for s in per_seed]),
                  "auroc_without": summary([s["align"]["norep"]["auroc"] for s in per_seed])},
        holds=float(np.median(gain_r2)) >= 0.05 and float(np.median(gain_auc)) >= 0.03,
    )


# ---------------------------------------------------------------- claims 3-4: agents (full scale)

AGENTS = ("pig", "unprivileged", "norep")
COST_LIMIT = 5.0


def _agent(variant: str, env: PrivilegedHazardNav, seed: int, sz: Sizes) -> PIGDreamer:
    return PIGDreamer(14, 2, env.priv_dim, cost_limit=COST_LIMIT, variant=variant, **MODEL, batch_size=sz.batch,
                      seq_len=sz.seq_len, model_lr=MODEL_LR, prefill=min(1000, sz.agent_steps // 4), seed=seed)


def _update_seconds(seed: int, sz: Sizes) -> dict:
    """Seconds per training update (world model + twisted imagination + actor-critic), agents timed in turns on
    the same replayed scripted data, single thread (thread CPU time)."""
    env = PrivilegedHazardNav(seed=seed)
    replay = _replay(_scripted_steps(env, 2000, np.random.default_rng(seed)), seed)
    agents = {v: _agent(v, env, seed, sz) for v in ("pig", "unprivileged")}
    batch = replay.sample(sz.batch, sz.seq_len)
    seconds = interleaved_seconds({v: (lambda a=a: a.update(batch)) for v, a in agents.items()},
                                  repeats=sz.timing_repeats, warmup=1, clock=time.thread_time)
    return {v: float(np.median(t)) for v, t in seconds.items()}


def _width_sweep(seed: int, sz: Sizes) -> dict | None:
    """Thread-CPU seconds per update of both agents at every width ``w`` (GRU ``deter = w``, MLPs ``hidden = w``,
    8 x 8 latents, the same batch), medians of interleaved repeats, and the log-log slopes in ``w``. Every update is
    a fixed number of ``w x w`` products per replayed and imagined token, O(B T (1 + H) w^2) for both agents (the
    privileged RSSM, encoder, decoders and oracle head add a fixed number of them), so both slopes tend to 2 and the
    ratio to a constant."""
    if not sz.sweep_widths:
        return None
    env = PrivilegedHazardNav(seed=seed)
    batch = _replay(_scripted_steps(env, 2000, np.random.default_rng(seed)), seed).sample(sz.batch, sz.seq_len)
    rows = []
    with single_thread():
        for width in sz.sweep_widths:
            model = {**MODEL, "deter": width, "hidden": width}
            agents = {v: PIGDreamer(14, 2, env.priv_dim, cost_limit=COST_LIMIT, variant=v, **model,
                                    batch_size=sz.batch, seq_len=sz.seq_len, model_lr=MODEL_LR, seed=seed)
                      for v in ("pig", "unprivileged")}
            seconds = interleaved_seconds({v: (lambda a=a: a.update(batch)) for v, a in agents.items()},
                                          repeats=sz.timing_repeats, warmup=1, clock=time.thread_time)
            pig, unpriv = float(np.median(seconds["pig"])), float(np.median(seconds["unprivileged"]))
            rows.append({"width": width, "pig_seconds": pig, "unprivileged_seconds": unpriv,
                         "time_ratio": pig / unpriv})
    widths = [r["width"] for r in rows]
    return {"rows": rows, "clock": "thread_time",
            "time_slope_in_width": {v: loglog_slope(widths, [r[f"{v}_seconds"] for r in rows])
                                    for v in ("pig", "unprivileged")}}


def _claim_sweep(per_seed: list[dict]) -> Claim:
    widths = [r["width"] for r in per_seed[0]["sweep"]["rows"]]
    ratio = {w: summary([s["sweep"]["rows"][i]["time_ratio"] for s in per_seed]) for i, w in enumerate(widths)}
    slopes = {v: summary([s["sweep"]["time_slope_in_width"][v] for s in per_seed]) for v in ("pig", "unprivileged")}
    return Claim(
        text=CLAIM_SWEEP,
        criterion=f"widths {', '.join(map(str, widths))} (deter = hidden), one sweep per seed, thread-CPU medians of "
                  "updates timed in turns on the same batch: PIGDreamer / unprivileged <= 1.5 at every width (mean "
                  "over seeds), and the fitted log-log slopes in the width within 0.25 of each other (mean over seeds; "
                  "both O(B T (1 + H) w^2): the privileged branch adds a constant factor)",
        paper="+28 % training time over SafeDreamer (Scaffolder: +69 %)",
        measured={"ratio_by_width": ratio, "slope_pig": slopes["pig"]},
        baseline={"slope_unprivileged": slopes["unprivileged"],
                  "unprivileged_seconds_by_width": {w: summary([s["sweep"]["rows"][i]["unprivileged_seconds"]
                                                                for s in per_seed]) for i, w in enumerate(widths)}},
        holds=bool(max(r["mean"] for r in ratio.values()) <= 1.5
                   and abs(slopes["pig"]["mean"] - slopes["unprivileged"]["mean"]) <= 0.25),
    )


def _agents(seed: int, sz: Sizes) -> dict:
    out = {}
    for variant in AGENTS:
        env = PrivilegedHazardNav(seed=seed)
        agent = _agent(variant, env, seed, sz)
        log = agent.train(env, sz.agent_steps)
        tail = max(1, len(log["EpRet"]) // 5)
        out[variant] = {"EpRet": float(np.mean(log["EpRet"][-tail:])), "EpCost": float(np.mean(log["EpCost"][-tail:])),
                        "curve_ret": log["EpRet"], "curve_cost": log["EpCost"]}
    return out


def _claim_return(per_seed: list[dict]) -> Claim:
    ret = {v: [s["agents"][v]["EpRet"] for s in per_seed] for v in AGENTS}
    cost = {v: [s["agents"][v]["EpCost"] for s in per_seed] for v in AGENTS}
    cost_ok = np.mean(cost["pig"]) <= COST_LIMIT + (np.std(cost["pig"], ddof=1) if len(per_seed) > 1 else 0.0)
    return Claim(
        text=CLAIM_RETURN,
        criterion=f"PrivilegedHazardNav, budget d = {COST_LIMIT:g} per 200-step episode, last fifth of the episodes: "
                  "PIGDreamer's mean EpCost <= d (within one seed sd) and mean EpRet >= 1.15 x the unprivileged "
                  "agent's",
        paper="best reward with near-zero cost on Safety-Gymnasium; +136 % over SafeDreamer on Guard (Sec. 5)",
        measured={"EpRet": summary(ret["pig"]), "EpCost": summary(cost["pig"]),
                  "norep_EpRet": summary(ret["norep"]), "norep_EpCost": summary(cost["norep"])},
        baseline={"EpRet": summary(ret["unprivileged"]), "EpCost": summary(cost["unprivileged"])},
        holds=bool(cost_ok and np.mean(ret["pig"]) >= 1.15 * np.mean(ret["unprivileged"])),
    )


def _claim_speed(per_seed: list[dict]) -> Claim:
    ratio = [s["seconds"]["pig"] / s["seconds"]["unprivileged"] for s in per_seed]
    return Claim(
        text=CLAIM_SPEED,
        criterion="median thread-CPU seconds per training update (world model + twisted imagination + actor-critic), "
                  "the two agents timed in turns on the same batch: PIGDreamer / unprivileged <= 1.5, mean over seeds",
        paper="+28 % training time over SafeDreamer (Scaffolder: +69 %)",
        measured={"ratio": summary(ratio)},
        baseline={"unprivileged_seconds": summary([s["seconds"]["unprivileged"] for s in per_seed])},
        holds=float(np.mean(ratio)) <= 1.5,
    )


# ---------------------------------------------------------------- the run


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(500, 1, 1500, 5, 4, 8, 4, 1, 0, (8, 16)),
                  quick=Sizes(5000, 5, 12_000, 200, 16, 16, 30, 3, 0),
                  full=Sizes(5000, 5, 20_000, 400, 16, 16, 40, 5, 5000, (32, 64, 128, 256, 512, 1024)))
    per_seed = []
    for i, seed in enumerate(run.seeds):
        run.progress(i / len(run.seeds), f"seed {seed}: tabular corridor")
        corridor = [_corridor(1000 * seed + j, sz) for j in range(sz.corridor_seeds)]
        record = {"seed": seed, "corridor": {k: float(np.median([c[k] for c in corridor]))
                                             for k in corridor[0] if k != "theorem"}}
        record["corridor"]["theorem"] = corridor[0]["theorem"]
        run.progress((i + 0.3) / len(run.seeds), f"seed {seed}: world models with and without alignment")
        record["align"] = _alignment(seed, sz)
        record["seconds"] = _update_seconds(seed, sz)
        if sz.sweep_widths:
            run.progress((i + 0.5) / len(run.seeds), f"seed {seed}: cost sweep over the width")
            record["sweep"] = _width_sweep(seed, sz)
        if sz.agent_steps:
            run.progress((i + 0.6) / len(run.seeds), f"seed {seed}: agents")
            record["agents"] = _agents(seed, sz)
        per_seed.append(record)
    claims = [_claim_critic(per_seed), _claim_theorem(per_seed), _claim_align(per_seed), _claim_speed(per_seed)]
    if sz.agent_steps:
        claims.append(_claim_return(per_seed))
    if sz.sweep_widths:
        claims.append(_claim_sweep(per_seed))
    figures = [_figure(run, per_seed)]
    if sz.sweep_widths:
        figures.append(_sweep_figure(run, per_seed))
    return Result(metrics={"per_seed": per_seed}, claims=claims, figures=figures)


def _figure(run: Run, per_seed: list[dict]) -> str:
    agents = "agents" in per_seed[0]
    fig, ax = plt.subplots(1, 3 if agents else 2, figsize=(14 if agents else 9.5, 3.6))
    for offset, key, label in ((-0.2, "mse_sym", "symmetric V(o)"), (0.2, "mse_asym", "asymmetric V(o, s)")):
        vals = [s["corridor"][key] for s in per_seed]
        ax[0].bar(np.arange(len(vals)) + offset, vals, 0.4, label=label)
    ax[0].set(xticks=range(len(per_seed)), xticklabels=[f"seed {s['seed']}" for s in per_seed],
              ylabel="cost-value MSE vs exact belief value", title="Claim 1: TD(0) critics, HiddenHazardCorridor")
    ax[0].legend()
    for offset, variant, label in ((-0.2, "norep", "without L_align"), (0.2, "pig", "with L_align")):
        for j, metric in enumerate(("r2", "auroc")):
            vals = [s["align"][variant][metric] for s in per_seed]
            ax[1].bar(j + offset, np.mean(vals), 0.4, yerr=np.std(vals, ddof=1) if len(vals) > 1 else 0,
                      color=f"C{int(variant == 'pig')}", label=label if j == 0 else None)
    ax[1].set(xticks=[0, 1], xticklabels=["R^2 privileged hazard", "AUROC cost in 5 steps"],
              title="Claim 2: probes on the naive latent")
    ax[1].legend()
    if agents:
        for variant in AGENTS:
            curves = [s["agents"][variant]["curve_ret"] for s in per_seed]
            n = min(len(c) for c in curves)
            ax[2].plot(np.mean([c[:n] for c in curves], 0), label=f"{variant} EpRet")
            costs = [s["agents"][variant]["curve_cost"] for s in per_seed]
            ax[2].plot(np.mean([c[:n] for c in costs], 0), "--", label=f"{variant} EpCost")
        ax[2].axhline(COST_LIMIT, color="k", lw=0.8)
        ax[2].set(xlabel="episode", title="Claims 3: training curves (mean over seeds)")
        ax[2].legend(fontsize=7)
    fig.suptitle("PIGDreamer (arXiv:2508.02159): asymmetric critic and privileged alignment")
    return run.savefig(fig, "pigdreamer")


def _sweep_figure(run: Run, per_seed: list[dict]) -> str:
    rows = [s["sweep"]["rows"] for s in per_seed]
    return cost_vs_size(
        run, "pigdreamer_cost_vs_width", [r["width"] for r in rows[0]],
        {"unprivileged (SafeDreamer-style)": [[r["unprivileged_seconds"] for r in rs] for rs in rows],
         "PIGDreamer": [[r["pig_seconds"] for r in rs] for rs in rows]},
        xlabel="world-model width w (deter = hidden)", ylabel="thread CPU seconds per update",
        title="update cost against width (mean over seeds)",
        ratios={"PIGDreamer / unprivileged": [[r["time_ratio"] for r in rs] for rs in rows]},
        bounds={"1.5x (the claim)": 1.5}, ratio_ylabel="PIGDreamer / unprivileged time", ratio_title="relative cost")
