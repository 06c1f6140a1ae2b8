"""iSSM: interventional vs observational state-space models on simulated perturbation data.

Reproduces Nejatbakhsh & Wang, "Identifying Neural Dynamics Using Interventional State Space Models"
(ICML 2025, OpenReview n7qKt6gjl9); the user guide is docs/papers/issm.md.

Data (``icml25.data.stimulated_dynamics``, the small ground truth of this reproduction): a linear latent
system ``x_t = M x_{t-1}`` with ``M = 0.98 Rot(0.1 rad)`` (D = 2), observed through a fixed random
2-layer tanh MLP (N = 10) with noise sd 0.05; K trials of T steps, dt = 0.05, ``x_1 ~ N(0, I)``.
Stimulation follows the official protocol (both latents in turn, amplitude 1, 5 repetitions,
jitter sd 0.5), and acts as an intervention: a stimulated latent is set to the stimulus.

Per seed, the iSSM and the plain SSM (the same class with ``interventional=False``, additive
input) are fitted on the same K training trials with the same initial parameters (400 Adam steps,
lr 1e-2, betas (0.8, 0.9), gamma = 1) and evaluated on fresh trials of the same generator:

1. latents: R^2 after the best signed permutation and per-coordinate affine map, on the
   unstimulated steps of K held-out trials under the training protocol;
2. dynamics: mean error of the matched eigenvalues of ``(1 - dt) I + dt A`` against those of ``M``;
3. novel perturbations: K trials stimulating one latent only, 3 pulses per window with a 2:1
   rest:pulse ratio (other times, signs and jitter); the latent is inferred from the first 10
   steps, then the learned dynamics are rolled out open-loop under the new input and decoded;
   MSE against the observed responses after step 10;
4. (reported, not asserted: it is noisy) the observational regime: the same generator
   with amplitude 0, where the iSSM equals the SSM.

Speed: the time of one training step (loss and backward) of iSSM and SSM, interleaved in the same
process; the claim is the ratio of the medians.  At full scale a cost-vs-size sweep over the trial length T
(both steps are O(K T) scans: the LSTM encoder and the transition; the mask is elementwise) adds log-log slopes.  At
full scale the official DynamicAttractor
("motor cortex") example is also fitted (K = 20 trials of 10 time units) and reported.
"""

from __future__ import annotations

import time
import warnings
from functools import partial
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.data.stimulated_dynamics import simulate_dynamic_attractor, simulate_linear_latent, stimulation_trials
from icml25.dynamics import ISSM, align_latents, aligned_r2, eigen_error
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds
from icml25.utils.random import torch_generator

PAPER = Paper(
    id="issm",
    title="Identifying Neural Dynamics Using Interventional State Space Models",
    module="icml25.dynamics.issm",
    anchors=("amin-nejat/issm", "probml/dynamax", "lindermanlab/ssm"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
)

D, N_OBS, DT, PREFIX = 2, 10, 0.05, 10
PROTOCOL = {"amplitude": 1.0, "stim_d": 1.0, "rest_d": 1.0, "repetition": 5, "sigma": 0.5}
NOVEL = {**PROTOCOL, "repetition": 3, "rest_d": 2.0}
MODELS = ("issm", "ssm")
# Cost-vs-size sweep over the trial length T (full scale; smoke runs a 2-size grid): the claim's bounds.
SWEEP_RATIO_MAX, SWEEP_SLOPE_TOL = 1.2, 0.1
CLAIM_SWEEP = ("an iSSM training step costs about the same as an SSM step at every trial length from 32 to 1024 "
               "steps, with the same growth in the length")


def _data(seed: int, K: int, T: int) -> tuple[dict[str, tuple[np.ndarray, ...]], dict[str, np.ndarray]]:
    """(x, y, u) for the training, held-out, novel-perturbation and observational trial sets, and the truth."""
    rng = np.random.default_rng(seed)
    halves = (K // 2, K - K // 2)  # novel: half the trials stimulate latent 1 only, half latent 2 only
    u = {
        "train": stimulation_trials(K, T, D, seed=rng, **PROTOCOL),
        "test": stimulation_trials(K, T, D, seed=rng, **PROTOCOL),
        "novel": np.concatenate([stimulation_trials(halves[i], T, D, seed=rng, stimulated=[i], **NOVEL)
                                 for i in range(D)]),
        "obs_train": np.zeros((K, T, D)),
        "obs_test": np.zeros((K, T, D)),
    }
    x, y, truth = simulate_linear_latent(len(u) * K, T, D, N_OBS, DT, u=np.concatenate(list(u.values())),
                                         x0_scale=1.0, seed=rng)
    sets = {name: (x[i * K:(i + 1) * K], y[i * K:(i + 1) * K], uu) for i, (name, uu) in enumerate(u.items())}
    return sets, truth


def _latent_r2(model: ISSM, x: np.ndarray, y: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    """Perm-aligned and linearly aligned R^2 on the unstimulated steps."""
    x_hat = model.infer_latents(y, u).numpy()
    mask = (u == 0).all(-1)
    return aligned_r2(x, x_hat, mask, "perm"), aligned_r2(x, x_hat, mask, "linear")


def _step_seconds(models: dict[str, ISSM], y: np.ndarray, u: np.ndarray, repeats: int) -> dict[str, list[float]]:
    """CPU time of one loss + backward per model on the calling thread (the caller sets one torch thread), the
    models interleaved after two untimed warm-up rounds: another process holding the core does not count."""
    yt, ut = torch.as_tensor(y, dtype=torch.float32), torch.as_tensor(u, dtype=torch.float32)
    gen = torch_generator(0)

    def step(model: ISSM) -> None:
        model.zero_grad(set_to_none=True)
        model.loss(yt, ut, seed=gen).backward()

    return interleaved_seconds({name: partial(step, model) for name, model in models.items()}, repeats,
                               warmup=2, clock=time.thread_time)


def _sweep(seed: int, K: int, lengths: tuple[int, ...], repeats: int, rnn_hidden: int) -> dict[str, Any] | None:
    """iSSM against SSM, one training step (loss and backward) on K trials of every length T in ``lengths``: thread
    CPU time (the caller sets one thread), medians of interleaved repeats (``_step_seconds``), freshly initialised
    models with the same seed, and the log-log slopes in T.  Both steps scan the T steps once in the encoder and
    once in the transition, so both cost O(K T); the iSSM adds one elementwise mask per step."""
    if not lengths:
        return None
    rows = []
    for T in lengths:
        sets, _ = _data(seed, K, T)
        models = {name: ISSM(D, N_OBS, D, dt=DT, interventional=name == "issm", rnn_hidden=rnn_hidden, seed=seed)
                  for name in MODELS}
        sec = _step_seconds(models, *sets["train"][1:], repeats)
        issm, ssm = float(np.median(sec["issm"])), float(np.median(sec["ssm"]))
        rows.append({"T": T, "issm_seconds": issm, "ssm_seconds": ssm, "issm_over_ssm": issm / ssm})
    ts = [r["T"] for r in rows]
    return {"rows": rows, "K": K, "repeats": repeats, "clock": "thread_time",
            "time_slope_in_T": {name: loglog_slope(ts, [r[f"{name}_seconds"] for r in rows]) for name in MODELS}}


def _dynamic_attractor(seed: int, n_iter: int, rnn_hidden: int) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """The official demo's motor-cortex model (K = 20 training and 20 held-out trials, 10 time units).

    Only the phase x2 is scored on unstimulated steps: with a1 dt = -1 the radius coordinate x1 is
    exactly 0 one Euler step after each release, so it carries no variance there.
    """
    rng = np.random.default_rng(1000 + seed)
    K, steps = 20, 200
    u = stimulation_trials(2 * K, steps, 2, seed=rng, **PROTOCOL)
    x, y = simulate_dynamic_attractor(2 * K, 10.0, DT, u=u, seed=rng)
    out, traces = {}, {"x": x[K], "u": u[K]}
    for name in MODELS:
        model = ISSM(2, 2, 2, dt=DT, interventional=name == "issm", rnn_hidden=rnn_hidden, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # D = N = 2 is the demo's setting
            model.fit(y[:K], u[:K], n_iter=n_iter, seed=seed)
        x_hat = model.infer_latents(y[K:], u[K:]).numpy()
        mask = (u[K:] == 0).all(-1)
        out[f"{name}_phase_r2_perm"] = aligned_r2(x[K:, :, 1:], x_hat, mask, "perm")
        out[f"{name}_phase_r2_linear"] = aligned_r2(x[K:, :, 1:], x_hat, mask, "linear")
        traces[name] = align_latents(x[K:, :, 1:], x_hat, mask, "perm")[0, :, 0]
        y_hat = model.reconstruct(y[K:], u[K:]).numpy()
        out[f"{name}_reconstruction_corr"] = float(np.corrcoef(y_hat.ravel(), y[K:].ravel())[0, 1])
    return out, traces


def reproduce(run: Run) -> Result:
    """Fit the iSSM, the SSM and the iSSM without interventions per seed; compare latents, dynamics,
    predictions and step time."""
    K, T, n_iter, repeats = run.pick(smoke=(4, 30, 10, 2), quick=(16, 100, 400, 20), full=(20, 200, 1000, 50))
    rnn_hidden = 32
    per_seed: dict[str, dict[str, list]] = {m: {} for m in (*MODELS, "observational")}
    step_times: dict[str, list[float]] = {name: [] for name in MODELS}
    fit_seconds: dict[str, list[float]] = {name: [] for name in (*MODELS, "observational")}
    dynamic_attractor: list[dict[str, float]] = []
    show: dict[str, object] = {}
    with single_thread():  # the step-time claim reads the thread's CPU clock
        for seed in run.seeds:
            sets, truth = _data(seed, K, T)
            models = _fit_and_score(run, seed, sets, truth, n_iter, rnn_hidden, per_seed, fit_seconds)
            for name, times in _step_seconds({m: models[m] for m in MODELS}, *sets["train"][1:], repeats).items():
                step_times[name] += times
            if seed == run.seeds[0]:
                show = {"sets": sets, "truth": truth, "models": models}
            if run.scale == "full":
                scores, traces = _dynamic_attractor(seed, n_iter, rnn_hidden)
                dynamic_attractor.append(scores)
                show.setdefault("dynamic_attractor", traces)
        sweep = _sweep(run.seeds[0], K, run.pick(smoke=(8, 16), quick=(), full=(32, 64, 128, 256, 512, 1024)),
                       run.pick(smoke=2, quick=1, full=25), rnn_hidden)
        run.progress(None, "step-time sweep over the trial length")

    issm, ssm = per_seed["issm"], per_seed["ssm"]
    time_ratio = float(np.median(step_times["issm"]) / np.median(step_times["ssm"]))
    claims = [_claim_latents(issm, ssm), _claim_dynamics(issm, ssm), _claim_novel(issm, ssm),
              _claim_step_time(time_ratio)]
    if run.scale == "full":
        claims.append(_claim_sweep(sweep))
    metrics = _metrics(K, T, n_iter, rnn_hidden, per_seed, show, time_ratio, step_times, fit_seconds)
    if dynamic_attractor:
        metrics["dynamic_attractor"] = {
            "per_seed": dynamic_attractor,
            "mean": {k: float(np.mean([d[k] for d in dynamic_attractor])) for k in dynamic_attractor[0]},
        }
    figures = [_figure(run, show, per_seed)]
    if "dynamic_attractor" in show:
        figures.append(_figure_dynamic_attractor(run, show["dynamic_attractor"]))
    if sweep is not None:
        metrics["step_time_sweep"] = sweep
        figures.append(_sweep_figure(run, sweep))
    return Result(metrics=metrics, claims=claims, figures=figures)


def _fit_and_score(run: Run, seed: int, sets: dict, truth: dict, n_iter: int, rnn_hidden: int,
                   per_seed: dict, fit_seconds: dict) -> dict[str, ISSM]:
    """Fit the three models of one seed on the same trials and append their scores to ``per_seed``."""
    models = {}
    for name in (*MODELS, "observational"):
        model = ISSM(D, N_OBS, D, dt=DT, interventional=name != "ssm", rnn_hidden=rnn_hidden, seed=seed)
        x, y, u = sets["obs_train" if name == "observational" else "train"]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the observational fit warns (on purpose) about identifiability
            model.fit(y, u, n_iter=n_iter, seed=seed)
        fit_seconds[name].append(time.perf_counter() - t0)
        run.progress(None, f"seed {seed}: {name} fitted")
        stats = per_seed[name]
        r2_perm, r2_linear = _latent_r2(model, *sets["obs_test" if name == "observational" else "test"])
        stats.setdefault("r2_perm", []).append(r2_perm)
        stats.setdefault("r2_linear", []).append(r2_linear)
        stats.setdefault("eigen_error", []).append(eigen_error(model.transition_matrix().detach(), truth["M"]))
        stats.setdefault("eigenvalues", []).append(
            np.linalg.eigvals(model.transition_matrix().detach().numpy()).astype(complex))
        x_n, y_n, u_n = sets["novel"]
        y_pred = model.predict(u_n, y_prefix=y_n[:, :PREFIX]).numpy()
        stats.setdefault("novel_mse", []).append(float(np.mean((y_pred[:, PREFIX:] - y_n[:, PREFIX:]) ** 2)))
        models[name] = model
    return models


def _claim_latents(issm: dict, ssm: dict) -> Claim:
    r2_i, r2_s = summary(issm["r2_perm"]), summary(ssm["r2_perm"])
    return Claim(
        text="iSSM recovers the true latents better than the SSM (aligned R^2, held-out, unstimulated steps)",
        criterion="iSSM R^2 >= 0.7 and >= SSM R^2 + 0.1 (means over seeds)",
        measured=r2_i, baseline=r2_s, holds=bool(r2_i["mean"] >= 0.7 and r2_i["mean"] >= r2_s["mean"] + 0.1),
        paper=None, kind="finding")


def _claim_dynamics(issm: dict, ssm: dict) -> Claim:
    eig_i, eig_s = summary(issm["eigen_error"]), summary(ssm["eigen_error"])
    return Claim(
        text="iSSM identifies the dynamics (eigenvalues of the learned transition vs the true one)",
        criterion="iSSM eigenvalue error <= 0.5 x SSM error (means over seeds)",
        measured=eig_i, baseline=eig_s, holds=bool(eig_i["mean"] <= 0.5 * eig_s["mean"]), paper=None,
        kind="finding")


def _claim_novel(issm: dict, ssm: dict) -> Claim:
    mse_i, mse_s = summary(issm["novel_mse"]), summary(ssm["novel_mse"])
    return Claim(
        text="iSSM predicts responses to novel perturbations (open-loop roll-out, observation MSE)",
        criterion="iSSM MSE <= 0.8 x SSM MSE (means over seeds)",
        measured=mse_i, baseline=mse_s, holds=bool(mse_i["mean"] <= 0.8 * mse_s["mean"]), paper=None,
        kind="finding")


def _claim_step_time(time_ratio: float) -> Claim:
    return Claim(
        text="an iSSM training step costs about the same as an SSM step (the mask is the only difference)",
        criterion="median step time iSSM / SSM <= 1.2 (thread CPU time, all seeds' repeats)",
        measured=time_ratio, baseline=1.0, holds=bool(time_ratio <= 1.2), paper=None, kind="finding")


def _claim_sweep(sweep: dict[str, Any]) -> Claim:
    ratios = {r["T"]: r["issm_over_ssm"] for r in sweep["rows"]}
    slopes = sweep["time_slope_in_T"]
    return Claim(
        CLAIM_SWEEP,
        criterion=f"thread CPU time, K = {sweep['K']} trials, medians of {sweep['repeats']} interleaved repeats: "
                  f"iSSM / SSM <= {SWEEP_RATIO_MAX} at every T, and the fitted log-log slopes in T within "
                  f"{SWEEP_SLOPE_TOL} of each other (both O(K T); the mask is elementwise)",
        measured={"ratio_by_T": ratios, "slope_issm": slopes["issm"]}, baseline={"slope_ssm": slopes["ssm"]},
        holds=bool(max(ratios.values()) <= SWEEP_RATIO_MAX and abs(slopes["issm"] - slopes["ssm"]) <= SWEEP_SLOPE_TOL),
        paper=None, kind="finding")


def _metrics(K: int, T: int, n_iter: int, rnn_hidden: int, per_seed: dict, show: dict, time_ratio: float,
             step_times: dict, fit_seconds: dict) -> dict:
    mean = {m: {k: float(np.mean(v)) for k, v in s.items() if k != "eigenvalues"} for m, s in per_seed.items()}
    return {
        "config": {"K": K, "T": T, "D": D, "N": N_OBS, "dt": DT, "n_iter": n_iter, "rnn_hidden": rnn_hidden,
                   "prefix": PREFIX, "protocol": PROTOCOL, "novel_protocol": {**NOVEL, "stimulated": "one latent"}},
        "mean": mean,
        "per_seed": {m: {k: (v if k != "eigenvalues" else [[[z.real, z.imag] for z in e] for e in v])
                         for k, v in s.items()} for m, s in per_seed.items()},
        "true_eigenvalues": [[z.real, z.imag] for z in np.linalg.eigvals(show["truth"]["M"])],
        "seeds_r2_gap_ge_0.1": int(sum(a >= b + 0.1 for a, b in zip(per_seed["issm"]["r2_perm"],
                                                                      per_seed["ssm"]["r2_perm"], strict=True))),
        "observational_r2_below_interventional": bool(mean["observational"]["r2_perm"] < mean["issm"]["r2_perm"]),
        "step_time_ratio": time_ratio,
        "step_seconds_median": {m: float(np.median(v)) for m, v in step_times.items()},
        "fit_seconds": fit_seconds,
    }


def _figure(run: Run, show: dict, per_seed: dict) -> str:
    sets, truth, models = show["sets"], show["truth"], show["models"]
    colors = {"issm": "C3", "ssm": "C0", "observational": "C2"}
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))

    x, y, u = sets["test"]
    mask = (u == 0).all(-1)
    for row, name in enumerate(MODELS):
        ax = axes[row, 0]
        aligned = align_latents(x, models[name].infer_latents(y, u).numpy(), mask, "perm")
        for i, ls in enumerate(("-", "--")):
            ax.plot(x[0, :, i], color="k", ls=ls, lw=1.2, label=f"true x{i + 1}")
            ax.plot(aligned[0, :, i], color=colors[name], ls=ls, lw=1.2, label=f"{name} x{i + 1}")
        for t in np.flatnonzero(~mask[0]):
            ax.axvspan(t - 0.5, t + 0.5, color="0.9", lw=0)
        label = "iSSM" if name == "issm" else "SSM"
        ax.set(title=f"{label} latents (perm-aligned), held-out trial; grey: stimulated", xlabel="step")
        ax.legend(fontsize=7, ncol=2)

    ax = axes[0, 1]
    grid = np.stack(np.meshgrid(np.linspace(-2, 2, 9), np.linspace(-2, 2, 9)), -1).reshape(-1, 2)
    true_flow = grid @ truth["A"].T - grid
    arrows = {"angles": "xy", "scale_units": "xy", "scale": 2.0 * np.abs(true_flow).max() / 0.45, "width": 0.006}
    ax.quiver(grid[:, 0], grid[:, 1], true_flow[:, 0], true_flow[:, 1], color="k", label="true", **arrows)
    for name in MODELS:
        _, W, c = align_latents(x, models[name].infer_latents(y, u).numpy(), mask, "perm", return_map=True)
        # the learned flow in true coordinates: z = x_hat W + c, so dz/dt = flow(x_hat) W
        x_hat_grid = (grid - c) @ np.linalg.pinv(W)
        flow = models[name].flow(x_hat_grid).numpy() @ W
        ax.quiver(grid[:, 0], grid[:, 1], flow[:, 0], flow[:, 1], color=colors[name], alpha=0.6, label=name, **arrows)
    ax.set(title="flow (A - I) x in true coordinates, first seed", xlabel="x1", ylabel="x2")
    ax.legend(fontsize=8)

    ax = axes[1, 1]
    theta = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.cos(theta), np.sin(theta), color="0.8", lw=0.8)
    ev = np.linalg.eigvals(truth["M"])
    ax.scatter(ev.real, ev.imag, marker="*", s=150, color="k", label="true", zorder=3)
    every = [ev]
    for name in (*MODELS, "observational"):
        ev = np.concatenate(per_seed[name]["eigenvalues"])
        every.append(ev)
        ax.scatter(ev.real, ev.imag, color=colors[name], s=25, alpha=0.8, label=f"{name} (all seeds)")
    every = np.concatenate(every)
    top = max(0.2, np.abs(every.imag).max() + 0.05)
    ax.set(title="eigenvalues of (1 - dt) I + dt A", xlabel="Re", ylabel="Im",
           xlim=(min(0.6, every.real.min() - 0.05), max(1.05, every.real.max() + 0.05)), ylim=(-top, top))
    ax.legend(fontsize=8)

    ax = axes[0, 2]
    x_n, y_n, u_n = sets["novel"]
    ax.plot(y_n[0, :, 0], color="k", lw=1.2, label="observed")
    for name in MODELS:
        ax.plot(models[name].predict(u_n, y_prefix=y_n[:, :PREFIX]).numpy()[0, :, 0], color=colors[name], label=name)
    for t in np.flatnonzero((u_n[0] != 0).any(-1)):
        ax.axvspan(t - 0.5, t + 0.5, color="0.9", lw=0)
    ax.axvline(PREFIX - 0.5, color="0.5", ls=":")
    ax.set(title="novel perturbation: open-loop prediction of y1", xlabel="step")
    ax.legend(fontsize=8)

    ax = axes[1, 2]
    labels = ("iSSM", "SSM", "observational\n(amplitude 0)")
    for k, name in enumerate((*MODELS, "observational")):
        vals = per_seed[name]["r2_perm"]
        ax.bar(k, np.mean(vals), color=colors[name], alpha=0.6)
        ax.scatter(np.full(len(vals), k), vals, color="k", s=12, zorder=3)
    ax.set_xticks(range(3), labels)
    ax.set(title="latent R^2 (perm-aligned, held-out); dots: seeds", ylim=(0, 1.05))
    fig.tight_layout()
    return run.savefig(fig, "issm")


def _figure_dynamic_attractor(run: Run, traces: dict[str, np.ndarray]) -> str:
    fig, ax = plt.subplots(figsize=(9, 3.5))
    stim = (traces["u"] != 0).any(-1)
    for t in np.flatnonzero(stim):
        ax.axvspan(t - 0.5, t + 0.5, color="0.9", lw=0)
    shown = np.where(stim, np.nan, traces["x"][:, 1])
    ax.plot(shown, color="k", lw=2, label="true phase x2 (unstimulated steps)")
    for name, color in zip(MODELS, ("C3", "C0"), strict=True):
        ax.plot(np.where(stim, np.nan, traces[name]), color=color, label=f"{name} (perm-aligned)")
    ax.set(title="DynamicAttractor (motor cortex), held-out trial; grey = stimulated", xlabel="step")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return run.savefig(fig, "dynamic_attractor")


def _sweep_figure(run: Run, sweep: dict[str, Any]) -> str:
    rows = sweep["rows"]
    return cost_vs_size(
        run, "step_cost_vs_length", [r["T"] for r in rows],
        {"SSM": [r["ssm_seconds"] for r in rows], "iSSM": [r["issm_seconds"] for r in rows]},
        xlabel="trial length T (steps)", ylabel="thread CPU time per step [s]",
        title=f"training step (loss + backward), K = {sweep['K']}",
        ratios={"iSSM / SSM": [r["issm_over_ssm"] for r in rows]},
        bounds={f"{SWEEP_RATIO_MAX}x (the claim)": SWEEP_RATIO_MAX}, ratio_ylabel="iSSM / SSM step time")
