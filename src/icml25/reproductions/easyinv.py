"""Reproduction of Zhang, Lin, Yan & Ji, "EasyInv: Toward Fast and Better DDIM Inversion" (ICML 2025,
arXiv:2408.05159; official code github.com/potato-kitty/EasyInv). Guide, results and calibration notes:
docs/papers/easyinv.md.

Two beds, both inverted and then reconstructed with plain DDIM on the same steps (error = reconstruction MSE):
A. analytic: a 10-component Gaussian mixture in d = 16 (std 0.22) with its exact ε; "limited precision" is
   an independent N(0, σ²) error on every ε call (σ = 0.05, 0.15) or bfloat16 evaluation;
B. learned: a small ε-prediction MLP trained here on the 8x8 digits in [-1, 1]; "limited precision" is
   bfloat16 evaluation and an under-trained checkpoint (1/10 of the steps); PSNR / SSIM per image.

1. on par with DDIM for an accurate model: the EasyInv window (start × length grid) is chosen on
   validation points, its test MSE compared with DDIM's; the default window's penalty is reported;
2. better than DDIM when precision is limited (bed A, default window 0.05 / 0.2, N = 20 and 50; bed B reported);
3. about 3x faster than the iterative methods: network calls and wall-clock of fixed-point iteration and
   ReNoise (3 iterations each) against EasyInv; at full scale also thread CPU time against the number of
   inversion steps N (log-log slopes);
4. plug-in: the EasyInv hook on fixed-point inversion keeps its calls and its error.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.data.tensors import digits_tensors
from icml25.diffusion import (
    EasyInvHook,
    GaussianMixture,
    MixtureEps,
    NoisyEps,
    TinyDenoiser,
    ddim_invert,
    ddim_reconstruct,
    fixed_point_invert,
    image_scores,
    make_alphas_cumprod,
    renoise_invert,
    train_denoiser,
)
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_vs_size
from icml25.harness.stats import loglog_slope, summary
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds

CLAIM_PAR = "on par with DDIM inversion for an accurate model: best window's error <= 1.05 x DDIM"
CLAIM_PRECISION = "better than DDIM inversion under limited precision: error <= 0.7 x DDIM"
CLAIM_LEARNED = "learned digits bed under limited precision (bfloat16, under-trained): PSNR >= DDIM's - 0.3 dB"
CLAIM_CALLS = "EasyInv costs exactly N network calls, the iterative methods >= 2.5 x as many"
CLAIM_SPEED = "EasyInv is >= 2.5x faster than fixed-point and ReNoise inversion (CPU time, one thread)"
CLAIM_SPEED_SWEEP = ("EasyInv stays >= 2.5x faster than fixed-point and ReNoise inversion at every number of steps "
                     "N = 10..200, all three growing alike")
CLAIM_PLUGIN = "plug-in: the EasyInv hook on fixed-point inversion keeps its calls and is within 5 % of its error"

PAPER = Paper(
    id="easyinv",
    title="EasyInv: Toward Fast and Better DDIM Inversion",
    module="icml25.diffusion.easyinv",
    anchors=("potato-kitty/EasyInv", "diffusers (DDIMInverseScheduler)", "ReNoise", "AIDI fixed-point inversion"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch", "diffusion"),
    known_misses={
        CLAIM_PAR: "the aggregation perturbs an exact inversion in every window; the least harmful window chosen on "
                   "validation points still costs 7-70 % more error on the test points",
        CLAIM_PRECISION: "at the smallest injected error (σ = 0.05) with N = 50 the gain is seed-dependent "
                         "(0.53-1.62 x DDIM); the other three settings hold (0.18-0.59 x)",
        CLAIM_LEARNED: "DDIM inversion of the small digits model is accurate in bfloat16 and when under-trained, so "
                       "the default window only adds its bias (about -7 to -9 dB)",
    },
)

ABAR = make_alphas_cumprod(1000)
DEFAULT = EasyInvHook(eta=0.5, start=0.05, length=0.2)  # the official Stable Diffusion 1.4 setting
STARTS, LENGTHS = (0.05, 0.3, 0.6, 0.85), (0.1, 0.2)
SIGMAS, STEPS = (0.05, 0.15), (20, 50)


@dataclass(frozen=True)
class Sizes:
    points: int        # test points / images per seed
    val_points: int    # validation points for the window choice
    train_steps: int   # bed B
    timing_repeats: int
    sweep_steps: tuple[int, ...] = ()  # numbers of inversion steps of the cost sweep (none: no sweep)
    sweep_points: int = 0              # the first test points, inverted in the cost sweep


def _mse(model, x0, n_steps, hook=None, invert=ddim_invert, dtype=None, **kw) -> float:
    zT, _ = invert(model, x0, ABAR, n_steps, hook=hook, dtype=dtype, **kw)
    x_hat, _ = ddim_reconstruct(model, zT, ABAR, n_steps, dtype=dtype)
    return float(((x_hat - x0) ** 2).mean())


def _window_hooks() -> dict[str, EasyInvHook]:
    return {f"{s}/{ln}": EasyInvHook(0.5, s, ln) for s, ln in itertools.product(STARTS, LENGTHS)}


def _analytic(seed: int, sz: Sizes) -> dict:
    """Bed A: exact ε (claim 1), noisy ε and bfloat16 (claim 2), the iterative methods (claims 3-4)."""
    gm = GaussianMixture.random(10, 16, 0.22, seed=seed)
    exact = MixtureEps(gm, ABAR)
    x_val, x_test = gm.sample(sz.val_points, seed=1000 + seed), gm.sample(sz.points, seed=2000 + seed)
    val = {k: _mse(exact, x_val, 50, h) for k, h in _window_hooks().items()}
    best = min(val, key=val.get)
    par = {"ddim": _mse(exact, x_test, 50), "best_window": best,
           "easyinv_best": _mse(exact, x_test, 50, _window_hooks()[best]),
           "easyinv_default": _mse(exact, x_test, 50, DEFAULT)}
    precision = {}
    for sigma, n in itertools.product(SIGMAS, STEPS):
        key = f"sigma={sigma},N={n}"
        precision[key] = {name: _mse(NoisyEps(exact, sigma, seed=seed), x_test, n, hook)
                          for name, hook in (("ddim", None), ("easyinv", DEFAULT))}
    precision["bfloat16,N=50"] = {name: _mse(exact, x_test, 50, hook, dtype=torch.bfloat16)
                                  for name, hook in (("ddim", None), ("easyinv", DEFAULT))}
    noisy = lambda: NoisyEps(exact, SIGMAS[0], seed=seed)  # noqa: E731 - a fresh error stream per method
    iterative = {"fixed_point": _mse(noisy(), x_test, 50, invert=fixed_point_invert),
                 "fixed_point+easyinv": _mse(noisy(), x_test, 50, DEFAULT, invert=fixed_point_invert),
                 "renoise": _mse(noisy(), x_test, 50, invert=renoise_invert),
                 "easyinv": precision[f"sigma={SIGMAS[0]},N=50"]["easyinv"],
                 "ddim": precision[f"sigma={SIGMAS[0]},N=50"]["ddim"]}
    return {"validation": val, "par": par, "precision": precision, "iterative_mse": iterative,
            **_cost(exact, x_test, sz), "time_sweep": _steps_sweep(exact, x_test[:sz.sweep_points], sz)}


def _cost(model, x0, sz: Sizes) -> dict:
    """Network calls of each method and their thread CPU seconds on one thread, timed in turns in this process."""
    methods = {"easyinv": lambda: ddim_invert(model, x0, ABAR, 50, hook=EasyInvHook()),
               "ddim": lambda: ddim_invert(model, x0, ABAR, 50),
               "fixed_point": lambda: fixed_point_invert(model, x0, ABAR, 50),
               "renoise": lambda: renoise_invert(model, x0, ABAR, 50),
               "fixed_point+easyinv": lambda: fixed_point_invert(model, x0, ABAR, 50, hook=EasyInvHook())}
    nfe = {k: fn()[1].nfe for k, fn in methods.items()}
    with single_thread():
        seconds = interleaved_seconds(methods, repeats=sz.timing_repeats, warmup=1, clock=time.thread_time)
    return {"nfe": nfe, "seconds": {k: float(np.median(v)) for k, v in seconds.items()}}


def _steps_sweep(model, x0, sz: Sizes) -> dict[str, Any] | None:
    """EasyInv against fixed-point and ReNoise inversion of ``x0`` for every number of steps in ``sz.sweep_steps``:
    thread CPU time on one thread, medians of ``sz.timing_repeats`` interleaved repeats, and the log-log slopes in N.
    EasyInv makes N network calls, the iterative methods N (1 + 3) (three refinements per step), all O(N) in the
    latent's size."""
    if not sz.sweep_steps:
        return None
    rows = []
    with single_thread():
        for n in sz.sweep_steps:
            methods = {"easyinv": lambda n=n: ddim_invert(model, x0, ABAR, n, hook=EasyInvHook()),
                       "fixed_point": lambda n=n: fixed_point_invert(model, x0, ABAR, n),
                       "renoise": lambda n=n: renoise_invert(model, x0, ABAR, n)}
            sec = {k: float(np.median(v)) for k, v in interleaved_seconds(methods, repeats=sz.timing_repeats, warmup=1,
                                                                           clock=time.thread_time).items()}
            rows.append({"n_steps": n, **{f"{k}_seconds": v for k, v in sec.items()},
                         **{f"{k}_over_easyinv_time": sec[k] / sec["easyinv"] for k in ("fixed_point", "renoise")}})
    steps = [r["n_steps"] for r in rows]
    return {"rows": rows, "clock": "thread_time",
            "time_slope_in_steps": {k: loglog_slope(steps, [r[f"{k}_seconds"] for r in rows])
                                    for k in ("easyinv", "fixed_point", "renoise")}}


def _learned(seed: int, sz: Sizes) -> dict:
    """Bed B: digits DDPM; fp32, bfloat16 and an under-trained checkpoint; PSNR / SSIM per image."""
    digits = digits_tensors(seed=seed)
    data = (digits.X_train * 2 - 1).reshape(-1, 1, 8, 8)
    x0 = (digits.X_test[:sz.points] * 2 - 1).reshape(-1, 1, 8, 8)
    early = TinyDenoiser(shape=(1, 8, 8), seed=seed)
    train_denoiser(early, data, ABAR, steps=max(1, sz.train_steps // 10), seed=seed)
    model = TinyDenoiser(shape=(1, 8, 8), seed=seed)
    train_denoiser(model, data, ABAR, steps=sz.train_steps, seed=seed)
    out = {}
    for setting, net, dtype in (("fp32", model, None), ("bfloat16", model, torch.bfloat16),
                                ("under_trained", early, None)):
        for name, hook in (("ddim", None), ("easyinv", DEFAULT)):
            zT, _ = ddim_invert(net, x0, ABAR, 50, hook=hook, dtype=dtype)
            x_hat, _ = ddim_reconstruct(net, zT, ABAR, 50, dtype=dtype)
            scores = image_scores(x0.numpy(), x_hat.clamp(-1, 1).numpy())
            out[f"{setting}/{name}"] = {k: float(v.mean()) for k, v in scores.items()}
            if setting == "under_trained":
                out[f"{setting}/{name}"]["images"] = x_hat[:8].numpy()
    out["originals"] = x0[:8].numpy()
    return out


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(32, 32, 30, 1, (5, 10), 8), quick=Sizes(300, 200, 3000, 3),
                  full=Sizes(1000, 500, 20_000, 7, (10, 20, 50, 100, 200), 250))
    per_seed = []
    for i, seed in enumerate(run.seeds):
        run.progress(i / len(run.seeds), f"seed {seed}: analytic bed")
        analytic = _analytic(seed, sz)
        run.progress((i + 0.5) / len(run.seeds), f"seed {seed}: learned digits bed")
        per_seed.append({"seed": seed, "analytic": analytic, "learned": _learned(seed, sz)})
    claims = [_claim_par(per_seed), _claim_precision(per_seed), _claim_learned(per_seed), _claim_calls(per_seed),
              _claim_speed(per_seed), _claim_plugin(per_seed)]
    if run.scale == "full":
        claims.append(_claim_speed_sweep(per_seed))
    figures = [_error_figure(run, per_seed), _images_figure(run, per_seed[0]["learned"])]
    if sz.sweep_steps:
        figures.append(_sweep_figure(run, per_seed))
    return Result(metrics=_metrics(per_seed), claims=claims, figures=figures)


def _ratios(per_seed: list[dict], path) -> list[float]:
    return [float(path(s["analytic"])) for s in per_seed]


def _claim_par(per_seed: list[dict]) -> Claim:
    best = _ratios(per_seed, lambda a: a["par"]["easyinv_best"] / a["par"]["ddim"])
    default = _ratios(per_seed, lambda a: a["par"]["easyinv_default"] / a["par"]["ddim"])
    return Claim(
        text=CLAIM_PAR,
        criterion="analytic bed, exact ε, N = 50: the window with the lowest validation error (start in "
                  "{0.05, 0.3, 0.6, 0.85} x length in {0.1, 0.2}, η = 0.5) has test MSE <= 1.05 x DDIM's, every seed",
        paper="on par with or better than DDIM inversion (abstract; Tables 1-2)",
        measured={"best_window_over_ddim": summary(best), "default_window_over_ddim": summary(default),
                  "best_windows": [s["analytic"]["par"]["best_window"] for s in per_seed]},
        baseline={"ddim_mse": summary(_ratios(per_seed, lambda a: a["par"]["ddim"]))},
        holds=max(best) <= 1.05,
    )


def _claim_precision(per_seed: list[dict]) -> Claim:
    keys = [f"sigma={s},N={n}" for s, n in itertools.product(SIGMAS, STEPS)]
    ratio = {k: summary(_ratios(per_seed, lambda a, k=k: a["precision"][k]["easyinv"] / a["precision"][k]["ddim"]))
             for k in keys}
    bf16 = summary(_ratios(per_seed, lambda a: a["precision"]["bfloat16,N=50"]["easyinv"]
                           / a["precision"]["bfloat16,N=50"]["ddim"]))
    return Claim(
        text=CLAIM_PRECISION,
        criterion="analytic bed with N(0, σ²) error on every ε call, σ in {0.05, 0.15}, N in {20, 50}, default "
                  "window 0.05 / 0.2: MSE(EasyInv) <= 0.7 x MSE(DDIM) at every setting and seed",
        paper="better than DDIM inversion especially when the model's precision is limited (abstract)",
        measured={"easyinv_over_ddim": ratio, "bfloat16_easyinv_over_ddim": bf16},
        baseline={k: summary(_ratios(per_seed, lambda a, k=k: a["precision"][k]["ddim"])) for k in keys},
        holds=all(max(r["values"]) <= 0.7 for r in ratio.values()),
    )


def _claim_learned(per_seed: list[dict]) -> Claim:
    def gap(setting: str, metric: str) -> dict:
        return summary([s["learned"][f"{setting}/easyinv"][metric] - s["learned"][f"{setting}/ddim"][metric]
                        for s in per_seed])

    psnr = {setting: gap(setting, "psnr") for setting in ("bfloat16", "under_trained")}
    return Claim(
        text=CLAIM_LEARNED,
        criterion="digits DDPM, N = 50, default window: mean PSNR(EasyInv) - PSNR(DDIM) >= -0.3 dB in bfloat16 and "
                  "with the under-trained checkpoint, every seed",
        paper="equal or better reconstructions with a half-precision Stable Diffusion (Tables 1-2)",
        measured={"psnr_gain_db": psnr, "ssim_gain": {k: gap(k, "ssim") for k in ("bfloat16", "under_trained")},
                  "fp32_psnr_gain_db": gap("fp32", "psnr")},
        baseline={f"ddim_psnr_{k}": summary([s["learned"][f"{k}/ddim"]["psnr"] for s in per_seed])
                  for k in ("fp32", "bfloat16", "under_trained")},
        holds=min(min(v["values"]) for v in psnr.values()) >= -0.3,
    )


def _claim_calls(per_seed: list[dict]) -> Claim:
    nfe = per_seed[0]["analytic"]["nfe"]
    return Claim(
        text=CLAIM_CALLS,
        criterion="N = 50: NFE(EasyInv) == 50 and NFE(fixed point), NFE(ReNoise) >= 2.5 x NFE(EasyInv) (3 iterations)",
        paper="no extra network call; iterative methods need several per step",
        measured=nfe, baseline={"ddim": nfe["ddim"]},
        holds=nfe["easyinv"] == 50 and min(nfe["fixed_point"], nfe["renoise"]) >= 2.5 * nfe["easyinv"],
        kind="check",
    )


def _claim_speed(per_seed: list[dict]) -> Claim:
    ratio = {k: summary(_ratios(per_seed, lambda a, k=k: a["seconds"][k] / a["seconds"]["easyinv"]))
             for k in ("fixed_point", "renoise", "ddim")}
    return Claim(
        text=CLAIM_SPEED,
        criterion="median thread CPU time on one thread of 50-step inversions (analytic bed, timed in turns): fixed "
                  "point / EasyInv and ReNoise / EasyInv >= 2.5 on every seed",
        paper="about 3x faster than iterative optimisation (abstract)",
        measured=ratio, baseline={"easyinv_seconds": summary(_ratios(per_seed, lambda a: a["seconds"]["easyinv"]))},
        holds=min(min(ratio["fixed_point"]["values"]), min(ratio["renoise"]["values"])) >= 2.5,
    )


def _claim_speed_sweep(per_seed: list[dict]) -> Claim:
    sweeps = [s["analytic"]["time_sweep"] for s in per_seed]
    ratios = {k: {r["n_steps"]: summary([sw["rows"][i][f"{k}_over_easyinv_time"] for sw in sweeps])
                  for i, r in enumerate(sweeps[0]["rows"])} for k in ("fixed_point", "renoise")}
    slopes = {k: summary([sw["time_slope_in_steps"][k] for sw in sweeps])
              for k in ("easyinv", "fixed_point", "renoise")}
    lowest = min(min(v["values"]) for by_n in ratios.values() for v in by_n.values())
    gap = max(abs(slopes[k]["mean"] - slopes["easyinv"]["mean"]) for k in ("fixed_point", "renoise"))
    return Claim(
        text=CLAIM_SPEED_SWEEP,
        criterion="analytic bed, thread CPU time, medians of interleaved repeats, one sweep per seed: fixed point / "
                  "EasyInv and ReNoise / EasyInv >= 2.5 at every N in {10, 20, 50, 100, 200} on every seed, and the "
                  "mean fitted log-log slopes in N of both within 0.25 of EasyInv's (all O(N): 4N against N calls)",
        paper="about 3x faster than iterative optimisation (abstract)",
        measured={"ratio_by_steps": ratios, "lowest_ratio": lowest, "slope_fixed_point": slopes["fixed_point"],
                  "slope_renoise": slopes["renoise"]},
        baseline={"slope_easyinv": slopes["easyinv"]},
        holds=bool(lowest >= 2.5 and gap <= 0.25),
    )


def _claim_plugin(per_seed: list[dict]) -> Claim:
    ratio = _ratios(per_seed, lambda a: a["iterative_mse"]["fixed_point+easyinv"] / a["iterative_mse"]["fixed_point"])
    nfe = per_seed[0]["analytic"]["nfe"]
    return Claim(
        text=CLAIM_PLUGIN,
        criterion=f"σ = {SIGMAS[0]}, N = 50: NFE(fixed point + hook) == NFE(fixed point) and MSE(fixed point + hook) "
                  "<= 1.05 x MSE(fixed point), every seed",
        paper="can be combined with most inversion methods by four lines of code (abstract)",
        measured={"mse_ratio": summary(ratio), "nfe": nfe["fixed_point+easyinv"]},
        baseline={"fixed_point_nfe": nfe["fixed_point"]},
        holds=nfe["fixed_point+easyinv"] == nfe["fixed_point"] and max(ratio) <= 1.05,
    )


def _error_figure(run: Run, per_seed: list[dict]) -> str:
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    keys = [f"sigma={s},N={n}" for s, n in itertools.product(SIGMAS, STEPS)]
    labels = ["exact"] + [k.replace("sigma=", "σ=") for k in keys]
    for offset, name in ((-0.2, "ddim"), (0.2, "easyinv")):
        vals = [[s["analytic"]["par"]["ddim" if name == "ddim" else "easyinv_default"] for s in per_seed]]
        vals += [[s["analytic"]["precision"][k][name] for s in per_seed] for k in keys]
        means = [np.mean(v) for v in vals]
        sds = [np.std(v, ddof=1) if len(v) > 1 else 0 for v in vals]
        ax[0].bar(np.arange(len(vals)) + offset, means, 0.4, yerr=sds, label=name)
    ax[0].set(xticks=range(len(labels)), xticklabels=labels, ylabel="reconstruction MSE",
              title="Analytic bed: DDIM vs EasyInv (0.05 / 0.2)")
    ax[0].legend()
    sec = {k: np.mean([s["analytic"]["seconds"][k] for s in per_seed]) for k in per_seed[0]["analytic"]["seconds"]}
    ax[1].bar(list(sec), [v / sec["easyinv"] for v in sec.values()])
    ax[1].axhline(2.5, color="k", ls="--", lw=0.8)
    ax[1].set(ylabel="CPU time / EasyInv", title="Cost of a 50-step inversion")
    ax[1].tick_params(axis="x", rotation=20)
    return run.savefig(fig, "errors_and_cost")


def _sweep_figure(run: Run, per_seed: list[dict]) -> str:
    rows = [s["analytic"]["time_sweep"]["rows"] for s in per_seed]
    methods = (("easyinv", "EasyInv"), ("fixed_point", "fixed point"), ("renoise", "ReNoise"))
    return cost_vs_size(
        run, "cost_vs_steps", [r["n_steps"] for r in rows[0]],
        {label: [[r[f"{key}_seconds"] for r in rs] for rs in rows] for key, label in methods},
        xlabel="inversion steps N", ylabel="thread CPU time [s] (mean ± sd over seeds)",
        title="Inversion cost against N (analytic bed)",
        ratios={f"{label} / EasyInv": [[r[f"{key}_over_easyinv_time"] for r in rs] for rs in rows]
                for key, label in methods[1:]},
        bounds={"2.5x (the claim)": 2.5}, ratio_ylabel="time / EasyInv (mean ± sd over seeds)")


def _images_figure(run: Run, learned: dict) -> str:
    rows = [("original", learned["originals"]), ("DDIM", learned["under_trained/ddim"]["images"]),
            ("EasyInv", learned["under_trained/easyinv"]["images"])]
    fig, ax = plt.subplots(len(rows), 1, figsize=(8, 3.6))
    for a, (name, imgs) in zip(ax, rows, strict=True):
        a.imshow(np.concatenate(list(imgs[:, 0]), axis=1), cmap="gray", vmin=-1, vmax=1)
        a.set(xticks=[], yticks=[], ylabel=name)
    ax[0].set_title("Digits, under-trained model: reconstructions after inversion")
    return run.savefig(fig, "reconstructions")


def _metrics(per_seed: list[dict]) -> dict:
    def strip(d):
        return {k: strip(v) for k, v in d.items() if k not in ("images", "originals")} if isinstance(d, dict) else d

    return {"per_seed": [strip(s) for s in per_seed]}
