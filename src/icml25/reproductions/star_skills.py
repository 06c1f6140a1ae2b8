"""Reproduction of Li, Lv, Shao, Deng, Li, Hao & Nie, "STAR: Learning Diverse Robot Skill Abstractions through
Rotation-Augmented Vector Quantization" (ICML 2025 spotlight, arXiv:2506.03863). Guide, results and calibration
notes: docs/papers/star_skills.md.

1. RaRSQ keeps the codebook in use: RaRSQ vs residual VQ with the straight-through estimator (identical
   encoder, decoder, initialisation, optimiser and seed) on MetaWorld MT10 scripted action chunks; held-out
   depth-1 perplexity, utilisation and reconstruction MSE (paper: 7/16 codes used by naive VQ, 16/16 by RaRSQ);
   exactness of the rotation trick (forward equals the code, Jacobian s R) and its cost per training step;
2. depth-autoregressive codes are coherent: (a) synthetic codes where each observation admits two valid
   (k_1, k_2) pairs, invalid-pair rate of sampled codes, AR vs independent heads ("w/o AR");
   (b) PlanarSkills detour with two expert modes: fraction of sampled chunks near an expert mode;
3. (full scale) closed-loop MT10 success of STAR, its ablations (w/o rotation, w/o AR, w/o both, w/o offset) and
   chunked MLP behaviour cloning.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.data.cache import cached_npz
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.rl.star_skills import (
    MT10_TASKS,
    CausalSkillTransformer,
    ChunkMLPPolicy,
    PlanarSkillsEnv,
    PlanarSkillsExpert,
    RaRSQ,
    collect_metaworld_demos,
    collect_planar_demos,
    make_chunks,
    make_metaworld_env,
    rollout_success,
    rotate_to,
    rotation_apply,
    train_policy,
    train_rarsq,
)

CLAIM_USAGE = "RaRSQ keeps the codebook in use: depth-1 perplexity >= 1.25 x STE's at no worse utilisation and MSE"
CLAIM_EXACT = "rotation trick: forward equals the code, Jacobian equals s R (R orthogonal), no NaN at degenerate rows"
CLAIM_COST = "rotation overhead: a RaRSQ training step costs <= 1.3 x an STE step"
CLAIM_AR_CODES = "depth-autoregressive codes are coherent: invalid-pair rate <= 0.05 (AR) vs >= 0.35 (independent)"
CLAIM_AR_MODES = "PlanarSkills detour: sampled chunks near an expert mode, AR >= independent heads + 0.15"
CLAIM_MT10 = "MT10 closed loop: STAR >= w/o both + 3 points and >= MLP-BC; w/o offset lower than STAR"

CLAIM_COST_SWEEP = "the rotation overhead stays within 1.3x at every encoder / decoder width (32..1024)"

PAPER = Paper(
    id="star_skills",
    title="STAR: Learning Diverse Robot Skill Abstractions through Rotation-Augmented Vector Quantization",
    module="icml25.rl.star_skills",
    anchors=("vector-quantize-pytorch (ResidualVQ, rotation_trick)", "Fifty et al. 2024 rotation trick",
             "Farama-Foundation/Metaworld", "QueST", "VQ-BeT"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch", "rl"),
    known_misses={
        CLAIM_USAGE: "with learned (non-EMA) codebooks at vector-quantize-pytorch's initialisation the rotation "
                     "trick scales the encoder's gradient by |e|/|r| < 1 and RaRSQ's depth-1 code usage "
                     "collapses further than STE's on MetaWorld chunks",
        CLAIM_AR_MODES: "with D = 2 the depth-1 code already fixes the detour side; a depth-2 code drawn from the "
                        "other mode moves the chunk by far less than the 0.2 threshold, so both variants stay near a "
                        "mode (>= 0.98 of samples)",
        CLAIM_COST: "the ratio at the model's width (hidden 128) sits on the 1.3x bound: medians over seeds 1.24 and "
                    "1.27 on a quiet machine, 1.30 (1.35, 1.30, 1.30) under the CI's two test workers, and the full "
                    "sweep's 1.30 at width 128; which side it falls on depends on load, so <= 1.3 is not established",
        CLAIM_COST_SWEEP: "full scale only: the rotation's O(B m) cost does not shrink with the width, so at width 32 "
                          "it is a larger share of a small step (median 1.38x); from 64 on the median is within 1.3x, "
                          "falling to 1.04x at 1024, as O(B m) against O(B h^2) predicts",
    },
)

EPS_MODE = 0.2  # claim 2b: a sampled chunk is "near a mode" at xy RMSE <= 0.2 from an expert chunk


@dataclass(frozen=True)
class Sizes:
    mw_demos: int        # MetaWorld demonstrations per MT10 task (claims 1 and 3)
    rarsq_steps: int     # stage-0 training steps
    hidden: int          # stage-0 encoder / decoder width
    batch: int
    timing_repeats: int
    code_steps: int      # claim 2a training steps
    planar_demos: int    # detour demonstrations (claim 2b)
    cst_steps: int       # stage-1 training steps (claims 2b and 3)
    d_model: int
    eval_states: int     # claim 2b start states
    eval_episodes: int   # claim 3 episodes per task (0: claim 3 not run)
    sweep_hidden: tuple[int, ...] = ()  # encoder / decoder widths of the step-cost sweep (empty: no sweep)


def _mw_episodes(n_demos: int) -> list[dict]:
    """MT10 scripted demonstrations (noise 0.1, data seed 0, shared by all model seeds), cached on disk."""
    def make() -> dict[str, np.ndarray]:
        eps = collect_metaworld_demos(n_demos=n_demos, noise=0.1, seed=0)
        lengths = np.array([len(e["obs"]) for e in eps])
        return {"obs": np.concatenate([e["obs"] for e in eps]), "actions": np.concatenate([e["actions"] for e in eps]),
                "task": np.array([e["task"] for e in eps]), "lengths": lengths}

    arr = cached_npz(f"star_skills_mt10_demos_n{n_demos}_noise0.1_seed0", make)
    bounds = np.concatenate([[0], np.cumsum(arr["lengths"])])
    return [{"obs": arr["obs"][a:b], "actions": arr["actions"][a:b], "task": int(t)}
            for a, b, t in zip(bounds[:-1], bounds[1:], arr["task"], strict=True)]


def _split(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    cut = int(0.8 * n)
    return perm[:cut], perm[cut:]


# ---------------------------------------------------------------- claim 1: codebook usage


def _usage(seed: int, episodes: list[dict], sz: Sizes) -> dict:
    data = make_chunks(episodes, chunk=8)
    train, test = _split(len(data), seed)
    out, models = {}, {}
    for name, rotation in (("rarsq", True), ("ste", False)):
        model = RaRSQ(4, chunk=8, latent=32, hidden=sz.hidden, seed=seed, codebook_size=16, depth=2, rotation=rotation)
        train_rarsq(model, data.chunks[train], data.mask[train], steps=sz.rarsq_steps, batch_size=sz.batch, seed=seed)
        with torch.no_grad():
            recon, idx, _ = model(data.chunks[test])
        usage = model.quantizer.usage_stats(idx)
        out[name] = {"mse": float(((recon - data.chunks[test]) ** 2).mean()), "usage": usage,
                     "depth1_counts": torch.bincount(idx[:, 0], minlength=16).tolist(),
                     "fallbacks": model.quantizer.n_fallback}
        models[name] = model
    out["step_seconds"] = _step_seconds(models, data.chunks[train], sz)
    if sz.sweep_hidden:
        out["step_cost_sweep"] = _step_sweep(seed, data.chunks[train], sz)
    return out


def _step_sweep(seed: int, chunks: torch.Tensor, sz: Sizes) -> dict:
    """Thread CPU time of one RaRSQ and one STE training step (forward + backward, one batch, one thread) for every
    encoder / decoder width in ``sz.sweep_hidden``, at initialisation; log-log slopes in the width."""
    rows = []
    with single_thread():
        for h in sz.sweep_hidden:
            models = {name: RaRSQ(4, chunk=8, latent=32, hidden=h, seed=seed, codebook_size=16, depth=2,
                                  rotation=rotation) for name, rotation in (("rarsq", True), ("ste", False))}
            sec = _step_seconds(models, chunks, sz)
            rows.append({"hidden": h, "rarsq_seconds": sec["rarsq"], "ste_seconds": sec["ste"],
                         "step_time_ratio": sec["rarsq"] / sec["ste"]})
    hs = [r["hidden"] for r in rows]
    return {"rows": rows, "time_slope_in_hidden": {m: loglog_slope(hs, [r[f"{m}_seconds"] for r in rows])
                                                   for m in ("rarsq", "ste")}}


def _choose_codebook_update(seed: int, episodes: list[dict], sz: Sizes) -> dict:
    """Stage-0 codebook update rule of claims 2b and 3 (learned by the codebook loss, or EMA), chosen on a tuning
    seed by held-out reconstruction MSE of RaRSQ on MT10 chunks (a stage-0 criterion, blind to claims 2-3)."""
    data = make_chunks(episodes, chunk=8)
    train, test = _split(len(data), seed)
    mse = {}
    for ema in (False, True):
        model = RaRSQ(4, chunk=8, latent=32, hidden=sz.hidden, seed=seed, ema=ema)
        train_rarsq(model, data.chunks[train], data.mask[train], steps=sz.rarsq_steps, batch_size=sz.batch, seed=seed)
        with torch.no_grad():
            mse["ema" if ema else "learned"] = float(((model(data.chunks[test])[0] - data.chunks[test]) ** 2).mean())
    return {"tune_seed": seed, "heldout_mse": mse, "ema": mse["ema"] < mse["learned"]}


def _step_seconds(models: dict[str, RaRSQ], chunks: torch.Tensor, sz: Sizes) -> dict[str, float]:
    batch = chunks[:sz.batch]

    def step(model: RaRSQ):
        def fn():
            model.zero_grad(set_to_none=True)
            model.loss(batch)[0].backward()
        return fn

    for m in models.values():
        m.train()
    seconds = interleaved_seconds({k: step(m) for k, m in models.items()}, repeats=sz.timing_repeats, warmup=2,
                                  clock=time.thread_time)
    return {k: float(np.median(v)) for k, v in seconds.items()}


def _exactness(seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    r = torch.randn(64, 16, generator=gen, dtype=torch.float64)
    e = torch.randn(64, 16, generator=gen, dtype=torch.float64)
    r[0], e[1], r[2] = 0.0, 0.0, -3.0 * e[2]  # zero residual, zero code, antipodal pair
    q = rotate_to(r.clone().requires_grad_(True), e)
    forward_err = float((q.detach() - e).abs().max())
    i = 5
    jac = torch.autograd.functional.jacobian(lambda x: rotate_to(x.unsqueeze(0), e[i:i + 1])[0], r[i])
    u, v = r[i] / r[i].norm(), e[i] / e[i].norm()
    R = rotation_apply(u.expand(16, 16), v.expand(16, 16), torch.eye(16, dtype=torch.float64)).T
    s = e[i].norm() / r[i].norm()
    return {"forward_max_abs_err": forward_err, "jacobian_max_abs_err": float((jac - s * R).abs().max()),
            "orthogonality_err": float((R.T @ R - torch.eye(16, dtype=torch.float64)).abs().max()),
            "maps_u_to_v_err": float((R @ u - v).abs().max()), "finite": bool(torch.isfinite(q.detach()).all())}


# ---------------------------------------------------------------- claim 2: depth-autoregressive coherence


def _codes(seed: int, sz: Sizes) -> dict:
    """Each of 8 observations admits (a, f(a)) or (b, f(b)), equally likely, f(a) != f(b)."""
    rng = np.random.default_rng(seed)
    n_obs, K = 8, 16
    obs = torch.tensor(rng.standard_normal((n_obs, 1, 4)), dtype=torch.float32)
    pairs = []
    for _ in range(n_obs):
        a, b = rng.choice(K, 2, replace=False)
        fa, fb = rng.choice(K, 2, replace=False)
        pairs.append(((int(a), int(fa)), (int(b), int(fb))))
    stage0 = RaRSQ(1, chunk=1, latent=4, hidden=4, seed=seed, codebook_size=K, depth=2)
    out = {}
    for name, ar in (("ar", True), ("independent", False)):
        policy = CausalSkillTransformer(4, 1, stage0, autoregressive=ar, offset=False, d_model=32, n_layers=1,
                                        seed=seed)
        opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=3e-3)
        gen = torch.Generator().manual_seed(seed)
        for _ in range(sz.code_steps):
            which = torch.randint(n_obs, (64,), generator=gen)
            mode = torch.randint(2, (64,), generator=gen)
            codes = torch.tensor([pairs[w][m] for w, m in zip(which.tolist(), mode.tolist(), strict=True)])
            loss, _ = policy.loss(obs[which], torch.zeros(64, dtype=torch.int64), codes=codes)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        policy.eval()
        n_samples = 1000
        sampled = policy.sample_codes(obs.repeat_interleave(n_samples, 0), torch.zeros(n_obs * n_samples,
                                                                                      dtype=torch.int64),
                                      top_p=1.0, seed=seed)
        valid = [tuple(c) in pairs[i // n_samples] for i, c in enumerate(sampled.tolist())]
        out[name] = {"invalid_rate": 1.0 - float(np.mean(valid)),
                     "first_code_balance": float(np.mean([c[0] == pairs[i // n_samples][0][0]
                                                          for i, c in enumerate(sampled.tolist())]))}
    return out


def _expert_chunk(seed: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    env, expert = PlanarSkillsEnv("detour"), PlanarSkillsExpert(side=side)
    obs, _ = env.reset(seed=seed)
    expert.reset()
    first, actions = obs, []
    for _ in range(8):
        a = expert(obs)
        actions.append(a)
        obs = env.step(a)[0]
    return first, np.stack(actions)


def _modes(seed: int, sz: Sizes, ema: bool) -> dict:
    episodes = collect_planar_demos(sz.planar_demos, tasks=("detour",), noise=0.1, seed=seed)
    data = make_chunks(episodes, chunk=8)
    stage0 = RaRSQ(3, chunk=8, latent=32, hidden=sz.hidden, seed=seed, ema=ema)
    train_rarsq(stage0, data.chunks, data.mask, steps=sz.rarsq_steps, batch_size=sz.batch, seed=seed)
    starts = [_expert_chunk(10_000 * (seed + 1) + i, side) for i in range(sz.eval_states) for side in (-1, 1)]
    obs = torch.tensor(np.stack([s[0] for s in starts[::2]]), dtype=torch.float32).unsqueeze(1)
    modes = np.stack([[starts[2 * i][1], starts[2 * i + 1][1]] for i in range(sz.eval_states)])  # [S, 2, T, A]
    out = {}
    n_samples = 20
    for name, ar in (("ar", True), ("independent", False)):
        policy = CausalSkillTransformer(PlanarSkillsEnv().observation_space.shape[0], 1, stage0, autoregressive=ar,
                                        d_model=sz.d_model, seed=seed)
        train_policy(policy, data, steps=sz.cst_steps, batch_size=sz.batch, seed=seed)
        chunks = policy.act(obs.repeat_interleave(n_samples, 0), torch.zeros(len(obs) * n_samples, dtype=torch.int64),
                            seed=seed).numpy().reshape(len(obs), n_samples, 8, 3)
        rmse = np.sqrt(((chunks[:, :, None, :, :2] - modes[:, None, :, :, :2]) ** 2).mean(axis=(-1, -2)))  # [S, n, 2]
        near = rmse.min(-1) <= EPS_MODE
        side = rmse.argmin(-1)
        out[name] = {"near_mode": float(near.mean()), "left_share": float((side[near] == 0).mean()) if near.any()
                     else float("nan"), "median_rmse": float(np.median(rmse.min(-1)))}
    return out


# ---------------------------------------------------------------- claim 3: MT10 closed loop (full scale)

VARIANTS = {"STAR": dict(rotation=True, autoregressive=True, offset=True),
            "w/o rotation": dict(rotation=False, autoregressive=True, offset=True),
            "w/o AR": dict(rotation=True, autoregressive=False, offset=True),
            "w/o both": dict(rotation=False, autoregressive=False, offset=True),
            "w/o offset": dict(rotation=True, autoregressive=True, offset=False)}


def _mt10(seed: int, episodes: list[dict], sz: Sizes, ema: bool, progress) -> dict:
    data = make_chunks(episodes, chunk=8)
    stage0 = {}
    for rotation in (True, False):
        stage0[rotation] = RaRSQ(4, chunk=8, latent=32, hidden=sz.hidden, seed=seed, rotation=rotation, ema=ema)
        train_rarsq(stage0[rotation], data.chunks, data.mask, steps=sz.rarsq_steps, batch_size=sz.batch, seed=seed)
    out = {}
    for j, (name, v) in enumerate(VARIANTS.items()):
        progress(f"seed {seed}: {name}")
        policy = CausalSkillTransformer(39, len(MT10_TASKS), stage0[v["rotation"]], autoregressive=v["autoregressive"],
                                        offset=v["offset"], d_model=sz.d_model, seed=seed)
        train_policy(policy, data, steps=sz.cst_steps, batch_size=sz.batch, seed=seed)
        out[name] = _success(policy, sz, seed + 100 * j)
    progress(f"seed {seed}: MLP-BC")
    mlp = ChunkMLPPolicy(39, len(MT10_TASKS), 4, 8, hidden=256, seed=seed)
    train_policy(mlp, data, steps=sz.cst_steps, batch_size=sz.batch, seed=seed)
    out["MLP-BC"] = _success(mlp, sz, seed + 1000)
    return out


@functools.cache
def _mt10_env(task: int):
    """One environment per MT10 task, built once (compiling a MuJoCo model costs about 0.4 s); each reset draws a
    fresh initial state from the episode seed, so sharing it across policies changes nothing."""
    return make_metaworld_env(MT10_TASKS[task], 150)


def _success(policy, sz: Sizes, seed: int) -> dict:
    per_task = rollout_success(policy, _mt10_env, len(MT10_TASKS), sz.eval_episodes, max_steps=150, seed=seed,
                               close=False)
    return {"mean": float(np.mean(list(per_task.values()))), "per_task": {MT10_TASKS[t]: s for t, s in
                                                                         per_task.items()}}


# ---------------------------------------------------------------- the run


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(1, 20, 32, 32, 2, 20, 4, 20, 16, 4, 0, (16, 32)),
                  quick=Sizes(5, 800, 128, 128, 10, 300, 30, 400, 64, 25, 0),
                  full=Sizes(20, 600, 128, 128, 20, 300, 60, 800, 64, 50, 5, (32, 64, 128, 256, 512, 1024)))
    run.progress(0.0, "MetaWorld MT10 scripted demonstrations")
    episodes = _mw_episodes(sz.mw_demos)
    run.progress(0.0, "stage-0 codebook update rule on a tuning seed")
    choice = _choose_codebook_update(run.tune_seeds[0], episodes, sz)
    per_seed = []
    for i, seed in enumerate(run.seeds):
        frac = i / len(run.seeds)
        run.progress(frac, f"seed {seed}: RaRSQ vs STE on MT10 chunks")
        rec = {"seed": seed, "usage": _usage(seed, episodes, sz), "exactness": _exactness(seed)}
        run.progress(frac + 0.3 / len(run.seeds), f"seed {seed}: code coherence")
        rec["codes"] = _codes(seed, sz)
        rec["modes"] = _modes(seed, sz, choice["ema"])
        if sz.eval_episodes:
            rec["mt10"] = _mt10(seed, episodes, sz, choice["ema"], lambda msg, f=frac: run.progress(f, msg))
        per_seed.append(rec)
    claims = [_claim_usage(per_seed), _claim_exact(per_seed), _claim_cost(per_seed), _claim_ar_codes(per_seed),
              _claim_ar_modes(per_seed)]
    figures = [_usage_figure(run, per_seed), _coherence_figure(run, per_seed)]
    if sz.eval_episodes:
        claims.append(_claim_mt10(per_seed))
        figures.append(_mt10_figure(run, per_seed))
    if run.scale == "full":
        claims.append(_claim_cost_every_width(per_seed))
    if sz.sweep_hidden:
        figures.append(_sweep_figure(run, per_seed))
    return Result(metrics={"per_seed": per_seed, "codebook_update_choice": choice,
                           "demo_steps": int(sum(len(e["obs"]) for e in episodes))},
                  claims=claims, figures=figures)


def _vals(per_seed: list[dict], path) -> list[float]:
    return [float(path(s)) for s in per_seed]


def _claim_usage(per_seed: list[dict]) -> Claim:
    def stat(name, key, depth=0):
        return _vals(per_seed, lambda s: s["usage"][name]["usage"][depth][key])

    ratio = np.median([a / b for a, b in zip(stat("rarsq", "perplexity"), stat("ste", "perplexity"), strict=True)])
    util = np.median(np.subtract(stat("rarsq", "utilization"), stat("ste", "utilization")))
    mse = np.median(np.divide(_vals(per_seed, lambda s: s["usage"]["rarsq"]["mse"]),
                              _vals(per_seed, lambda s: s["usage"]["ste"]["mse"])))
    return Claim(
        text=CLAIM_USAGE,
        criterion="MT10 scripted chunks (T = 8, 4-D actions), K = 16, D = 2, latent 32, identical init/optimiser/seed, "
                  "held-out 20 %: median over seeds of perplexity ratio >= 1.25, utilisation difference >= 0, "
                  "MSE ratio <= 1",
        paper="naive residual VQ uses 7/16 codes, RaRSQ 16/16 with near-uniform usage (Figure 5); "
              "91.0 % -> 92.7 % MetaWorld success from the rotation (ablation table)",
        measured={"rarsq_depth1_perplexity": summary(stat("rarsq", "perplexity")),
                  "rarsq_depth1_utilization": summary(stat("rarsq", "utilization")),
                  "rarsq_depth2_perplexity": summary(stat("rarsq", "perplexity", 1)),
                  "rarsq_mse": summary(_vals(per_seed, lambda s: s["usage"]["rarsq"]["mse"])),
                  "median_perplexity_ratio": float(ratio), "median_mse_ratio": float(mse)},
        baseline={"ste_depth1_perplexity": summary(stat("ste", "perplexity")),
                  "ste_depth1_utilization": summary(stat("ste", "utilization")),
                  "ste_depth2_perplexity": summary(stat("ste", "perplexity", 1)),
                  "ste_mse": summary(_vals(per_seed, lambda s: s["usage"]["ste"]["mse"]))},
        holds=bool(ratio >= 1.25 and util >= 0 and mse <= 1.0),
    )


def _claim_exact(per_seed: list[dict]) -> Claim:
    ex = [s["exactness"] for s in per_seed]
    worst = {k: max(e[k] for e in ex) for k in ("forward_max_abs_err", "jacobian_max_abs_err", "orthogonality_err",
                                                  "maps_u_to_v_err")}
    return Claim(
        text=CLAIM_EXACT,
        criterion="float64, m = 16, 64 rows incl. a zero residual, a zero code and an antipodal pair: max |q - e| "
                  "== 0, max |dq/dr - s R| <= 1e-10, |RᵀR - I| <= 1e-10, |R u - v| <= 1e-10, all finite",
        paper="q = sg[s R] r with R u = v: forward value e, gradient s R (Algorithm 1, Eq. 4-5)",
        measured=worst, baseline={"ste_jacobian": "identity"},
        holds=worst["forward_max_abs_err"] == 0.0 and max(list(worst.values())[1:]) <= 1e-10
        and all(e["finite"] for e in ex),
        kind="check",
    )


def _claim_cost(per_seed: list[dict]) -> Claim:
    ratio = _vals(per_seed, lambda s: s["usage"]["step_seconds"]["rarsq"] / s["usage"]["step_seconds"]["ste"])
    return Claim(
        text=CLAIM_COST,
        criterion="median thread CPU time of one forward + backward of the stage-0 model on one batch, RaRSQ / STE "
                  "timed in turns in this process: median over seeds <= 1.3",
        paper="the rotation is O(m) per vector (Section 3.2; no cost figure in the paper)",
        measured={"step_time_ratio": summary(ratio)},
        baseline={"ste_step_seconds": summary(_vals(per_seed, lambda s: s["usage"]["step_seconds"]["ste"]))},
        holds=bool(np.median(ratio) <= 1.3),
    )


def _claim_cost_every_width(per_seed: list[dict]) -> Claim:
    rows = [s["usage"]["step_cost_sweep"]["rows"] for s in per_seed]
    by_h = {r["hidden"]: summary([rs[i]["step_time_ratio"] for rs in rows]) for i, r in enumerate(rows[0])}
    slopes = {m: summary([s["usage"]["step_cost_sweep"]["time_slope_in_hidden"][m] for s in per_seed])
              for m in ("rarsq", "ste")}
    return Claim(
        text=CLAIM_COST_SWEEP,
        criterion="thread CPU time of one training step (one thread, interleaved), RaRSQ / STE: median over seeds "
                  "<= 1.3 at every width of the sweep; log-log slopes in the width reported",
        paper="the rotation is O(m) per vector (Section 3.2; no cost figure in the paper)",
        measured={"step_time_ratio_by_hidden": by_h, "slope_rarsq": slopes["rarsq"]},
        baseline={"slope_ste": slopes["ste"]},
        holds=all(float(np.median(v["values"])) <= 1.3 for v in by_h.values()),
    )


def _claim_ar_codes(per_seed: list[dict]) -> Claim:
    ar = _vals(per_seed, lambda s: s["codes"]["ar"]["invalid_rate"])
    ind = _vals(per_seed, lambda s: s["codes"]["independent"]["invalid_rate"])
    return Claim(
        text=CLAIM_AR_CODES,
        criterion="8 observations x 2 equally likely (k1, k2) pairs, K = 16; 1000 nucleus samples (top_p = 1) per "
                  "observation: AR invalid rate <= 0.05 and independent >= 0.35 on every seed (theory: 0 and 0.5)",
        paper="w/o AR code prediction: 92.7 % -> 89.5 % MetaWorld success (ablation table)",
        measured={"ar_invalid_rate": summary(ar)}, baseline={"independent_invalid_rate": summary(ind)},
        holds=max(ar) <= 0.05 and min(ind) >= 0.35,
    )


def _claim_ar_modes(per_seed: list[dict]) -> Claim:
    ar = _vals(per_seed, lambda s: s["modes"]["ar"]["near_mode"])
    ind = _vals(per_seed, lambda s: s["modes"]["independent"]["near_mode"])
    return Claim(
        text=CLAIM_AR_MODES,
        criterion=f"detour start states, 20 sampled chunks each (top_p 0.9, temperature 1): fraction within RMSE "
                  f"{EPS_MODE} (xy) of the left or the right expert chunk; mean over seeds AR - independent >= 0.15",
        paper="coherent coarse-to-fine skill composition from depth-autoregressive codes (Section 3.3)",
        measured={"ar_near_mode": summary(ar), "difference": summary(np.subtract(ar, ind))},
        baseline={"independent_near_mode": summary(ind)},
        holds=bool(np.mean(ar) - np.mean(ind) >= 0.15),
    )


def _claim_mt10(per_seed: list[dict]) -> Claim:
    names = list(VARIANTS) + ["MLP-BC"]
    succ = {n: _vals(per_seed, lambda s, n=n: 100 * s["mt10"][n]["mean"]) for n in names}
    star = np.mean(succ["STAR"])
    return Claim(
        text=CLAIM_MT10,
        criterion="MT10, state obs, 20 scripted demos/task (noise 0.1), 5 episodes/task of <= 150 steps per seed: "
                  "mean success STAR >= w/o both + 3 points, >= MLP-BC, > w/o offset",
        paper="MetaWorld MT50 92.7 % (STAR), 87.8 % w/o both, w/o offset far lower (Table 2, ablations)",
        measured={"STAR": summary(succ["STAR"])},
        baseline={n: summary(v) for n, v in succ.items() if n != "STAR"},
        holds=bool(star >= np.mean(succ["w/o both"]) + 3 and star >= np.mean(succ["MLP-BC"])
                   and star > np.mean(succ["w/o offset"])),
    )


def _usage_figure(run: Run, per_seed: list[dict]) -> str:
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
    for offset, name in ((-0.2, "ste"), (0.2, "rarsq")):
        counts = np.mean([s["usage"][name]["depth1_counts"] for s in per_seed], axis=0)
        label = {"ste": "RVQ + STE", "rarsq": "RaRSQ"}[name]
        ax[0].bar(np.arange(16) + offset, counts / counts.sum(), 0.4, label=label)
    ax[0].set(xlabel="depth-1 code", ylabel="share of held-out chunks", title="MT10 chunks: depth-1 code usage")
    ax[0].legend()
    for name, marker in (("ste", "o"), ("rarsq", "s")):
        ax[1].scatter([s["usage"][name]["usage"][0]["perplexity"] for s in per_seed],
                      [s["usage"][name]["mse"] for s in per_seed], marker=marker, label=name)
    ax[1].set(xlabel="depth-1 perplexity", ylabel="held-out reconstruction MSE", title="Usage vs reconstruction")
    ax[1].legend()
    return run.savefig(fig, "codebook_usage")


def _coherence_figure(run: Run, per_seed: list[dict]) -> str:
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
    for a, (key, metric, title) in zip(ax, (("codes", "invalid_rate", "Synthetic codes: invalid (k1, k2) pairs"),
                                           ("modes", "near_mode", "Detour: chunks near an expert mode")),
                                       strict=True):
        vals = [[s[key][n][metric] for s in per_seed] for n in ("ar", "independent")]
        a.bar([0, 1], [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals], color=["C0", "C1"])
        a.set(xticks=[0, 1], xticklabels=["depth-AR", "independent"], title=title, ylim=(0, 1))
    return run.savefig(fig, "coherence")


def _sweep_figure(run: Run, per_seed: list[dict]) -> str:
    rows = [s["usage"]["step_cost_sweep"]["rows"] for s in per_seed]
    return cost_vs_size(
        run, "step_cost_vs_width", [r["hidden"] for r in rows[0]],
        {"RVQ + STE": [[r["ste_seconds"] for r in rs] for rs in rows],
         "RaRSQ": [[r["rarsq_seconds"] for r in rs] for rs in rows]},
        xlabel="encoder / decoder width", ylabel="thread CPU time per step [s]",
        title="stage-0 training step (mean ± sd over seeds)",
        ratios={"RaRSQ / STE": [[r["step_time_ratio"] for r in rs] for rs in rows]}, bounds={"1.3x (the claim)": 1.3},
        ratio_ylabel="RaRSQ / STE step time", ratio_title="rotation overhead")


def _mt10_figure(run: Run, per_seed: list[dict]) -> str:
    names = list(VARIANTS) + ["MLP-BC"]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    vals = [[100 * s["mt10"][n]["mean"] for s in per_seed] for n in names]
    ax.bar(range(len(names)), [np.mean(v) for v in vals], yerr=[np.std(v) for v in vals])
    ax.set(xticks=range(len(names)), xticklabels=names, ylabel="success %", title="MetaWorld MT10 closed loop")
    return run.savefig(fig, "mt10_success")


