"""Reproduction of Hu, Das, Sadigh & Anari, "Diffusion Models are Secretly Exchangeable: Parallelizing DDPMs
via Autospeculation" (ICML 2025, arXiv:2505.03983). Guide, results and calibration notes:
docs/papers/autospeculative_ddpm.md.

1. exactness: ASD samples against sequential samples of the same SL chain (2-D ring of 8 Gaussians and a
   1-D Gaussian, analytic posterior means), two-sample tests, per seed;
2. depth speedup ``K / depth`` against the sequential sampler for K = 64 ... 2048 (uniform SL grid on
   [0, 1000], no window), its log-log slope, and a harder case (window 8; a narrow-mode mixture at T = 1e4);
3. a learned model: a small ε-prediction MLP trained here on the 8x8 digits, sampled on its DDPM schedule
   (K = 100 steps mapped to SL times) by ASD and by the sequential sampler; depth speedup, wall-clock
   ratio, and sample quality (MMD test, a classifier's label histogram);
4. the exchangeability lemma: chains that draw each increment from the exact predictive law given the
   current state only (posterior sampling) have exchangeable increments;
5. cost against size: the depth of ASD and of the sequential sampler against K on log-log axes with fitted
   slopes (the Theorem's K^(2/3) rounds against K), on the ring with and without a window of 8 and, at
   smoke and full scale, on the learned model (depth and one-thread CPU time of one chain, K = 25 ... 400).

Torch runs on one intra-op thread at every scale (``harness.threads.single_thread``); both samplers alike.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy import stats
from sklearn.linear_model import LogisticRegression

from icml25.data.tensors import digits_tensors
from icml25.diffusion import (
    DenoiserPosterior,
    GaussianMixture,
    TinyDenoiser,
    asd_sample,
    ddim_timesteps,
    ddpm_sl_grid,
    make_alphas_cumprod,
    sl_sample_sequential,
    train_denoiser,
    uniform_sl_grid,
)
from icml25.diffusion.metrics import mmd_test
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_panel
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.utils.random import torch_generator

CLAIM_EXACT = "ASD is exact: its samples have the law of the sequential K-step sampler"
CLAIM_SPEEDUP = "depth speedup grows at least like K^(1/3): >= K^(1/3) at every K, slope >= 0.2, >= 3x at K = 1024"
CLAIM_LEARNED = "on a learned digits DDPM (K = 100): depth speedup >= 2x at equal sample quality"
CLAIM_EXCHANGE = "the SL increments are exchangeable: (D1, D2) ~ (D2, D1) ~ (D1, DK)"
CLAIM_DEPTH_SLOPE = ("depth against K follows the complexity: ASD's fitted log-log slope <= 2/3 (the Theorem's "
                     "K^(2/3) rounds), the sequential sampler's 1")

PAPER = Paper(
    id="autospeculative_ddpm",
    title="Diffusion Models are Secretly Exchangeable: Parallelizing DDPMs via Autospeculation",
    module="icml25.diffusion.autospeculative_ddpm",
    anchors=("diffusers (DDPMScheduler)", "ParaDiGMS (StableDiffusionParadigmsPipeline)",
             "speculative decoding (HF assistant_model, vLLM)"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses={CLAIM_EXACT: "full scale, seed 1 only: the ratio of two noisy MMD estimates reaches 2.74 while the "
                               "MMD test between ASD and sequential samples gives p = 0.42 (the sampler is exact by "
                               "construction; the ratio part of the criterion is the noisier one)"},
)

HORIZON, P_MIN = 1000.0, 0.01


def _rng(seed: int, tag: int) -> np.random.Generator:
    """The generator of one experiment of one seed (independent streams per ``tag``)."""
    return np.random.default_rng([seed, tag])


@dataclass(frozen=True)
class Sizes:
    exact_chains: int      # samples per sampler for claim 1
    exact_steps: int
    exact_window: int | None
    ks: tuple[int, ...]    # claim 2
    speed_chains: int
    train_steps: int       # claim 3
    learned_chains: int
    exchange_chains: int   # claim 4
    permutations: int
    sweep: bool = False    # part 5 beyond claim 2's data: the window-8 curve and the learned-model K sweep
    learned_ks: tuple[int, ...] = (25, 50, 100, 200, 400)
    sweep_chains: int = 8
    wall_repeats: int = 3


def _exactness(seed: int, sz: Sizes) -> dict:
    """Claim 1: ASD vs sequential (and sequential vs sequential as the noise floor) on the ring and in 1-D."""
    ring, grid = GaussianMixture.ring(8, std=0.1), uniform_sl_grid(sz.exact_steps, HORIZON)
    shape = (sz.exact_chains, 2)
    asd, _ = asd_sample(ring.posterior_mean, grid, shape, window=sz.exact_window, seed=_rng(seed, 1))
    seq_a, _ = sl_sample_sequential(ring.posterior_mean, grid, shape, seed=_rng(seed, 2))
    seq_b, _ = sl_sample_sequential(ring.posterior_mean, grid, shape, seed=_rng(seed, 3))
    mmd_asd, p_asd = mmd_test(asd.numpy(), seq_a.numpy(), sz.permutations, seed=seed)
    mmd_seq, p_seq = mmd_test(seq_b.numpy(), seq_a.numpy(), sz.permutations, seed=seed)
    line = GaussianMixture([1.0], [[0.5]], [1.0])
    asd_1d, _ = asd_sample(line.posterior_mean, grid, (sz.exact_chains, 1), window=sz.exact_window, seed=_rng(seed, 4))
    seq_1d, _ = sl_sample_sequential(line.posterior_mean, grid, (sz.exact_chains, 1), seed=_rng(seed, 5))
    ks = stats.ks_2samp(asd_1d[:, 0].numpy(), seq_1d[:, 0].numpy()).pvalue
    return {"mmd_p": p_asd, "mmd_p_seq_vs_seq": p_seq, "mmd": mmd_asd, "mmd_seq_vs_seq": mmd_seq,
            "ks_p_1d": float(ks), "samples": {"asd": asd.numpy(), "sequential": seq_a.numpy()}}


def _scaling(seed: int, sz: Sizes) -> dict:
    """Claim 2: mean depth speedup per K, no window; and the harder cases."""
    ring = GaussianMixture.ring(8, std=0.1)
    speed, accept, depth, seq_depth, w8_depth = [], [], [], [], []
    for k in sz.ks:
        _, st = asd_sample(ring.posterior_mean, uniform_sl_grid(k, HORIZON), (sz.speed_chains, 2), seed=_rng(seed, k))
        speed.append(float(st.speedup.mean()))
        accept.append(st.acceptance_rate)
        depth.append(float(st.depth.double().mean()))
        seq_depth.append(st.sequential_depth)
        if sz.sweep:
            _, sw = asd_sample(ring.posterior_mean, uniform_sl_grid(k, HORIZON), (sz.speed_chains, 2), window=8,
                               seed=_rng(seed, 100_000 + k))
            w8_depth.append(float(sw.depth.double().mean()))
    k_ref = sz.ks[len(sz.ks) // 2]
    _, w8 = asd_sample(ring.posterior_mean, uniform_sl_grid(k_ref, HORIZON), (sz.speed_chains, 2), window=8,
                       seed=_rng(seed, 8))
    narrow = GaussianMixture.ring(8, std=0.02)
    _, hard = asd_sample(narrow.posterior_mean, uniform_sl_grid(k_ref, 10 * HORIZON), (sz.speed_chains, 2),
                         seed=_rng(seed, 9))
    slope = float(np.polyfit(np.log(sz.ks), np.log(speed), 1)[0])
    sweep = {"asd": depth, "sequential": seq_depth, **({"asd_window8": w8_depth} if w8_depth else {})}
    return {"speedup": speed, "acceptance": accept, "slope": slope, "k_ref": k_ref,
            "window8_speedup": float(w8.speedup.mean()), "narrow_T1e4_speedup": float(hard.speedup.mean()),
            "depth": sweep, "depth_slope": {name: loglog_slope(sz.ks, d) for name, d in sweep.items()}}


def _learned(seed: int, sz: Sizes) -> dict:
    """Claim 3: train a digits denoiser, sample it on its DDPM schedule by ASD and sequentially."""
    digits = digits_tensors(seed=seed)
    data = digits.X_train * 2 - 1
    abar = make_alphas_cumprod(1000)
    model = TinyDenoiser(shape=(64,), hidden=256, n_layers=3, seed=seed)
    losses = train_denoiser(model, data, abar, steps=sz.train_steps, batch_size=128, lr=2e-3, seed=seed)
    posterior = DenoiserPosterior(model, abar, mean_at_zero=data.mean(0).double(), dtype=torch.float32)
    grid = ddpm_sl_grid(abar, ddim_timesteps(100, 1000))
    shape = (sz.learned_chains, 64)
    with torch.inference_mode():
        asd, st = asd_sample(posterior, grid, shape, seed=_rng(seed, 1))
        seq_a, sq = sl_sample_sequential(posterior, grid, shape, seed=_rng(seed, 2))
        seq_b, _ = sl_sample_sequential(posterior, grid, shape, seed=_rng(seed, 3))
        small = (1, 64)  # one chain: the drafts of a round are the batch a parallel device would absorb
        wall = interleaved_seconds({"asd": lambda: asd_sample(posterior, grid, small, seed=0),
                                    "sequential": lambda: sl_sample_sequential(posterior, grid, small, seed=0)},
                                   repeats=3, warmup=1)
        sweep = _learned_sweep(posterior, abar, sz, seed) if sz.sweep else None
    clf = LogisticRegression(max_iter=2000).fit(data.numpy(), digits.y_train.numpy())
    labels = {k: np.bincount(clf.predict(v.clamp(-1, 1).numpy().astype(np.float32)), minlength=10)
              for k, v in (("asd", asd), ("seq_a", seq_a), ("seq_b", seq_b))}
    return {
        "final_loss": float(np.mean(losses[-100:])),
        "speedup": float(st.speedup.mean()), "nfe_ratio": float(st.nfe.double().mean() / sq.nfe.double().mean()),
        "acceptance": st.acceptance_rate,
        "wall_time_ratio": float(np.median(wall["asd"]) / np.median(wall["sequential"])),
        "mmd_p": mmd_test(asd.numpy(), seq_a.numpy(), sz.permutations, seed=seed)[1],
        "mmd_p_seq_vs_seq": mmd_test(seq_b.numpy(), seq_a.numpy(), sz.permutations, seed=seed)[1],
        "label_p": _homogeneity_p(labels["asd"], labels["seq_a"]),
        "label_p_seq_vs_seq": _homogeneity_p(labels["seq_b"], labels["seq_a"]),
        "labels": {k: v.tolist() for k, v in labels.items()},
        "images": asd[:16].numpy(), "images_sequential": seq_a[:16].numpy(),
        **({"k_sweep": sweep} if sweep else {}),
    }


def _learned_sweep(posterior: DenoiserPosterior, abar: torch.Tensor, sz: Sizes, seed: int) -> dict:
    """Part 5 on the learned model: depth (``sweep_chains`` chains) and one-thread CPU time of one chain
    against the number of DDPM steps ``K`` (leading timesteps mapped to SL times), for both samplers.

    The times are medians of ``wall_repeats`` interleaved repeats on ``time.thread_time``: on one thread a
    batched verify call costs its full work, so this is the samplers' compute, not a parallel wall-clock.
    """
    depth, seq_depth, fns = [], [], {}
    for k in sz.learned_ks:
        grid = ddpm_sl_grid(abar, ddim_timesteps(k, 1000))
        _, st = asd_sample(posterior, grid, (sz.sweep_chains, 64), seed=_rng(seed, 200_000 + k))
        depth.append(float(st.depth.double().mean()))
        seq_depth.append(st.sequential_depth)
        fns[f"asd,{k}"] = lambda grid=grid: asd_sample(posterior, grid, (1, 64), seed=0)
        fns[f"sequential,{k}"] = lambda grid=grid: sl_sample_sequential(posterior, grid, (1, 64), seed=0)
    times = interleaved_seconds(fns, repeats=sz.wall_repeats, warmup=1, clock=time.thread_time)
    cpu = {name: [float(np.median(times[f"{name},{k}"])) for k in sz.learned_ks] for name in ("asd", "sequential")}
    ks = sz.learned_ks
    return {"ks": list(ks), "depth": {"asd": depth, "sequential": seq_depth}, "cpu_seconds": cpu,
            "depth_slope": {"asd": loglog_slope(ks, depth), "sequential": loglog_slope(ks, seq_depth)},
            "cpu_time_slope": {name: loglog_slope(ks, v) for name, v in cpu.items()}}


def _homogeneity_p(a: np.ndarray, b: np.ndarray) -> float:
    """Chi-square test that two label histograms come from one law (empty classes dropped)."""
    table = np.stack([a, b])
    table = table[:, table.sum(0) > 0]
    return float(stats.chi2_contingency(table).pvalue)


def _exchangeability(seed: int, sz: Sizes) -> dict:
    """Claim 4: increments of chains driven by the exact predictive law given the current state only."""
    gm = GaussianMixture([0.5, 0.5], [[-1.0], [1.5]], [0.3, 0.3])
    grid = uniform_sl_grid(6, 12.0)
    g = torch_generator(_rng(seed, 11))
    y = torch.zeros(sz.exchange_chains, 1, dtype=torch.float64)
    incs = []
    for k in range(grid.numel() - 1):
        delta = grid[k + 1] - grid[k]
        x = gm.sample_posterior(y, grid[k], seed=g)  # the predictive law of the next increment given y only
        d = delta * x + delta.sqrt() * torch.randn(y.shape, generator=g, dtype=torch.float64)
        y = y + d
        incs.append(d[:, 0].numpy())
    half = sz.exchange_chains // 2  # the two joint laws are compared on disjoint halves of the chains
    pairs = {"swap": (np.c_[incs[0], incs[1]][:half], np.c_[incs[1], incs[0]][half:]),
             "first_last": (np.c_[incs[0], incs[1]][:half], np.c_[incs[0], incs[-1]][half:])}
    return {k: mmd_test(a, b, sz.permutations, seed=seed)[1] for k, (a, b) in pairs.items()}


def reproduce(run: Run) -> Result:
    sz = run.pick(
        smoke=Sizes(200, 40, 8, (16, 64), 4, 50, 32, 2000, 50, sweep=True, learned_ks=(10, 20), sweep_chains=2,
                    wall_repeats=1),
        quick=Sizes(2000, 200, 32, (64, 128, 256, 512, 1024, 2048), 30, 3000, 500, 20_000, 200),
        full=Sizes(4000, 200, None, (64, 128, 256, 512, 1024, 2048, 4096), 50, 5000, 1000, 100_000, 500, sweep=True),
    )
    seeds = run.seeds
    per_seed = []
    with single_thread():  # small tensors; a second intra-op thread only adds contention on a busy machine
        for i, seed in enumerate(seeds):
            run.progress(i / len(seeds), f"seed {seed}: exactness")
            exact = _exactness(seed, sz)
            run.progress((i + 0.3) / len(seeds), f"seed {seed}: speedup and depth against K")
            scaling = _scaling(seed, sz)
            run.progress((i + 0.6) / len(seeds), f"seed {seed}: learned digits model")
            learned = _learned(seed, sz)
            per_seed.append({"seed": seed, "exact": exact, "scaling": scaling, "learned": learned})
        exchange = _exchangeability(seeds[0], sz)
    claims = [_claim_exact(per_seed), _claim_speedup(per_seed, sz), _claim_learned(per_seed),
              _claim_exchange(exchange)]
    if run.scale == "full":
        claims.append(_claim_depth_slope(per_seed))
    figures = [_speedup_figure(run, per_seed, sz), _samples_figure(run, per_seed[0]),
               _depth_figure(run, per_seed, sz)]
    return Result(metrics=_metrics(per_seed, exchange, sz), claims=claims, figures=figures)


def _claim_exact(per_seed: list[dict]) -> Claim:
    mmd_p = [s["exact"]["mmd_p"] for s in per_seed]
    ks_p = [s["exact"]["ks_p_1d"] for s in per_seed]
    ratio = [s["exact"]["mmd"] / s["exact"]["mmd_seq_vs_seq"] for s in per_seed]
    return Claim(
        text=CLAIM_EXACT,
        criterion=f"every seed: MMD test p > {P_MIN} (2-D ring) and KS p > {P_MIN} (1-D Gaussian) against "
                  "sequential samples, and MMD(ASD, seq) <= 2 x MMD(seq, seq)",
        paper="exact in law for any draft window (Theorem; the samples are those of the K-step DDPM)",
        measured={"mmd_p": summary(mmd_p), "ks_p": summary(ks_p), "mmd_ratio": summary(ratio)},
        baseline={"mmd_p_seq_vs_seq": summary([s["exact"]["mmd_p_seq_vs_seq"] for s in per_seed])},
        holds=min(mmd_p) > P_MIN and min(ks_p) > P_MIN and max(ratio) <= 2.0,
        kind="check",
    )


def _claim_speedup(per_seed: list[dict], sz: Sizes) -> Claim:
    speed = np.array([s["scaling"]["speedup"] for s in per_seed])
    ks = np.array(sz.ks, dtype=float)
    slopes = [s["scaling"]["slope"] for s in per_seed]
    at_1024 = speed[:, sz.ks.index(1024)] if 1024 in sz.ks else speed[:, -1]
    holds = bool(np.all(speed >= ks ** (1 / 3)) and min(slopes) >= 0.2 and at_1024.min() >= 3.0)
    return Claim(
        text=CLAIM_SPEEDUP,
        criterion="every seed: mean K/depth over the chains >= K^(1/3) at every K, fitted log-log slope >= 0.2, "
                  ">= 3 at K = 1024 (8-mode ring, uniform SL grid on [0, 1000], no window)",
        paper="Õ(K^(1/3)) parallel speedup (Theorem); 2-4x in practice",
        measured={"speedup_at_K": {int(k): summary(speed[:, j]) for j, k in enumerate(sz.ks)},
                  "slope": summary(slopes)},
        baseline={"sequential_speedup": 1.0, "K^(1/3)": {int(k): float(k ** (1 / 3)) for k in sz.ks}},
        holds=holds,
    )


def _claim_learned(per_seed: list[dict]) -> Claim:
    lr = [s["learned"] for s in per_seed]
    speed = [x["speedup"] for x in lr]
    ok_quality = all(x["mmd_p"] > P_MIN and x["label_p"] > P_MIN for x in lr)
    return Claim(
        text=CLAIM_LEARNED,
        criterion=f"every seed: depth speedup >= 2, and against sequential samples MMD test p > {P_MIN} and "
                  f"label-histogram chi-square p > {P_MIN}",
        paper="2-4x practical speedups on image and robot-policy DDPMs",
        measured={"speedup": summary(speed), "mmd_p": summary([x["mmd_p"] for x in lr]),
                  "label_p": summary([x["label_p"] for x in lr]),
                  "wall_time_ratio": summary([x["wall_time_ratio"] for x in lr])},
        baseline={"sequential_speedup": 1.0, "mmd_p_seq_vs_seq": summary([x["mmd_p_seq_vs_seq"] for x in lr]),
                  "label_p_seq_vs_seq": summary([x["label_p_seq_vs_seq"] for x in lr])},
        holds=min(speed) >= 2.0 and ok_quality,
    )


def _claim_exchange(exchange: dict) -> Claim:
    pvals = list(exchange.values())
    return Claim(
        text=CLAIM_EXCHANGE,
        criterion=f"MMD two-sample p > {P_MIN} for (D1, D2) vs (D2, D1) and for (D1, D2) vs (D1, DK), uniform grid, "
                  "K = 6, chains drawing each increment from its predictive law given the current state",
        paper="Lemma: the increments are exchangeable",
        measured=exchange,
        holds=min(pvals) > P_MIN,
        kind="check",
    )


def _claim_depth_slope(per_seed: list[dict]) -> Claim:
    asd = [s["scaling"]["depth_slope"]["asd"] for s in per_seed]
    seq = [s["scaling"]["depth_slope"]["sequential"] for s in per_seed]
    return Claim(
        text=CLAIM_DEPTH_SLOPE,
        criterion="every seed: least-squares slope of log(mean depth) on log K over the whole K range (8-mode ring, "
                  "uniform SL grid on [0, 1000], no window) <= 2/3 for ASD; the sequential sampler's slope >= 0.95",
        paper="Õ(K^(2/3)) expected rounds, i.e. Õ(K^(1/3)) speedup (Theorem); the sequential sampler needs K",
        measured={"asd_depth_slope": summary(asd),
                  "window8_depth_slope": summary([s["scaling"]["depth_slope"]["asd_window8"] for s in per_seed])},
        baseline={"sequential_depth_slope": summary(seq)},
        holds=max(asd) <= 2 / 3 and min(seq) >= 0.95,
    )


def _speedup_figure(run: Run, per_seed: list[dict], sz: Sizes) -> str:
    speed = np.array([s["scaling"]["speedup"] for s in per_seed])
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ks = np.array(sz.ks)
    ax[0].errorbar(ks, speed.mean(0), yerr=speed.std(0, ddof=1) if len(speed) > 1 else None, marker="o",
                   label="ASD (mean ± sd over seeds)")
    ax[0].plot(ks, ks ** (1 / 3), "k--", label="K^(1/3)")
    ax[0].axhline(1, color="grey", lw=0.8, label="sequential")
    ax[0].set(xscale="log", yscale="log", xlabel="K (steps)", ylabel="K / depth", title="Depth speedup, 8-mode ring")
    ax[0].legend()
    lr = [s["learned"] for s in per_seed]
    ax[1].bar(["depth speedup", "NFE ratio", "wall ratio"],
              [np.mean([x["speedup"] for x in lr]), np.mean([x["nfe_ratio"] for x in lr]),
               np.mean([x["wall_time_ratio"] for x in lr])], color=["C0", "C1", "C2"])
    ax[1].axhline(1, color="grey", lw=0.8)
    ax[1].set(title="Learned digits DDPM, K = 100 (ASD / sequential)")
    return run.savefig(fig, "speedup")


def _depth_figure(run: Run, per_seed: list[dict], sz: Sizes) -> str:
    """Cost against size: depth on the ring, and depth and CPU time on the learned model, with fitted slopes."""
    sweeps = [s["learned"].get("k_sweep") for s in per_seed]
    learned = all(sweeps)
    fig, axes = plt.subplots(1, 3 if learned else 1, figsize=(15 if learned else 5.5, 4), squeeze=False)
    axes = axes[0]
    ring = {n: [s["scaling"]["depth"][n] for s in per_seed] for n in per_seed[0]["scaling"]["depth"]}
    cost_panel(axes[0], sz.ks, ring,
               xlabel="K (steps)", ylabel="depth (sequential model-call rounds)",
               title="8-mode ring, uniform SL grid on [0, 1000]", references={"K^(2/3) (Theorem)": 2 / 3})
    if learned:
        for ax, key, label, title in ((axes[1], "depth", "depth", "learned digits DDPM: depth"),
                                      (axes[2], "cpu_seconds", "CPU time of one chain [s]",
                                       "learned digits DDPM: one-thread CPU time")):
            cost_panel(ax, sz.learned_ks, {n: [w[key][n] for w in sweeps] for n in ("asd", "sequential")},
                       xlabel="K (DDPM steps)", ylabel=label, title=title)
    fig.tight_layout()
    return run.savefig(fig, "depth_scaling")


def _samples_figure(run: Run, first: dict) -> str:
    fig, ax = plt.subplots(1, 3, figsize=(12, 4))
    for name, color in (("sequential", "C1"), ("asd", "C0")):
        pts = first["exact"]["samples"][name]
        ax[0].scatter(pts[:, 0], pts[:, 1], s=2, alpha=0.4, color=color, label=name)
    ax[0].set(title="8-mode ring: ASD vs sequential", aspect="equal")
    ax[0].legend(markerscale=5)
    for a, key, title in ((ax[1], "images", "ASD samples"), (ax[2], "images_sequential", "sequential samples")):
        tiles = first["learned"][key].reshape(4, 4, 8, 8).transpose(0, 2, 1, 3).reshape(32, 32)
        a.imshow(tiles, cmap="gray", vmin=-1, vmax=1)
        a.set(title=f"digits DDPM: {title}", xticks=[], yticks=[])
    return run.savefig(fig, "samples")


def _metrics(per_seed: list[dict], exchange: dict, sz: Sizes) -> dict:
    drop = ("samples", "images", "images_sequential")
    return {
        "ks": list(sz.ks),
        "per_seed": [{"seed": s["seed"],
                      **{part: {k: v for k, v in s[part].items() if k not in drop}
                         for part in ("exact", "scaling", "learned")}} for s in per_seed],
        "exchangeability": exchange,
    }
