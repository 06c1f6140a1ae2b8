"""Exact and robust tests of independent training on a TinyGLU zoo. Docs: docs/papers/model_independence.md

Zhu, Ahmed, Kuditipudi and Liang, "Independence Tests for Language Models" (ICML 2025).

The paper's evidence is 21 open-weight LLMs; offline on 2 CPU cores we build a controlled zoo, where the
ground truth is known by construction.  Per run seed, on scikit-learn's digits:
six base TinyGLU classifiers B1..B6 (64 -> embed 32 -> 2 x [RMSNorm -> SwiGLU h = 64] -> 10, Adam
3e-3, batch 64, trained on one half of the training set from independent seeds; 15 independent
pairs) and children of B1: F1 fine-tuned on the other half (different seed and lr), P1 = F1 with
the hidden units of both blocks permuted, R1 = P1 with the residual stream rotated by a random
orthogonal Q (same outputs as F1), S1 = B1 with its second block pruned to 48 of 64 units then
fine-tuned, X1 = B1 with its second block re-initialised and retrained from scratch (everything else
frozen).  Probe inputs for activations are the 360 held-out images.

Tests: PERMTEST (Algorithm 1) with the Fisher statistic of phi_U (re-matched on every permuted
copy), phi_U / Fisher read directly off Spearman (Algorithms 2-4), naive phi_L2 / unaligned cosine
under PERMTEST, the weight matching of gate rows against up rows, and the robust activation MATCH
with all-pairs localisation (Section 4).  Blocks are numbered from 0 in the metrics.

Cost against size: phi_U and PERMTEST timed in the same process (interleaved repeats, medians of one-thread
CPU time) against the number of permuted copies T on seed 0's (B1, B2), and against the hidden width h on
untrained independent TinyGLU pairs; log-log slopes fitted beside the paper's complexity (one matching
against T + 1).
"""

from __future__ import annotations

import copy
import itertools
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from scipy.stats import kstest

from icml25.data.tensors import TensorSplit, digits_tensors
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.figures import cost_panel
from icml25.harness.stats import loglog_slope
from icml25.harness.threads import single_thread
from icml25.harness.timing import interleaved_seconds, median_seconds
from icml25.interpretability.model_independence import (
    TinyGLU,
    generalized_match_test,
    localize,
    match_test,
    perm_test,
    permute_hidden,
    phi_cosine,
    phi_h,
    phi_jsd,
    phi_l2,
    phi_u,
    prune_hidden,
    reinit_block,
    rotate_residual,
    weight_match_test,
)
from icml25.utils.nn import accuracy, train_classifier
from icml25.utils.random import torch_generator

CLAIM_EXACT = ("exact test (PERMTEST of the phi_U Fisher statistic, T copies) detects the fine-tuned child: "
               "p = 1/(T+1), Fisher p < 1e-10")
CLAIM_NULL = ("independent pairs: PERMTEST and phi_U p-values look uniform (at most one p <= 0.01 of 15, "
              "KS vs U(0,1) does not reject at 0.01)")
CLAIM_NAIVE = ("hidden permutation P1: naive L2 / unaligned cosine PERMTEST do not detect it (p > 0.01), "
               "LAP-aligned weight matching does (p < 1e-10)")
CLAIM_ROTATION = "rotated child R1 evades the weight test phi_U (p >= 0.01)"
CLAIM_MATCH = "MATCH detects F1, P1 and R1: every block p < 1e-6, Fisher p < 1e-12"
CLAIM_MATCH_NULL = "MATCH p-values of independent pairs (15 x 2 blocks) look uniform: KS p >= 0.01, <= 20% below 0.05"
CLAIM_LOCAL = ("localisation: pruned S1 (64 -> 48) matched in both blocks, retrained block of X1 not (p > 1e-3); "
               "maps {0: 0, 1: 1} and {0: 0}")
CLAIM_SPEED = "phi_U + Spearman >= 20x faster than PERMTEST re-matching T copies, same decision on the zoo"
CLAIM_T_SLOPE = ("cost against T follows the complexity: PERMTEST linear in the number of copies "
                 "(log-log slope 0.8-1.2), phi_U flat (<= 0.2)")
CLAIM_WIDTH = "phi_U's speed-up over PERMTEST (T = 99) >= 20x at every hidden width h = 32 ... 512"

PAPER = Paper(
    id="model_independence",
    title="Independence Tests for Language Models",
    module="icml25.interpretability.model_independence",
    anchors=("ahmeda14960/model-tracing", "scipy.optimize.linear_sum_assignment", "arcee-ai/mergekit"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
)

ALPHA = 0.01
LR_BASE, LR_FT, BATCH = 3e-3, 1e-3, 64
CHILDREN = ("F1", "P1", "R1", "S1", "X1")
SIZES = {"smoke": {"n_base": 3, "epochs": 2, "prune_epochs": 1, "T": 19, "distill_steps": 0},
         "quick": {"n_base": 6, "epochs": 15, "prune_epochs": 5, "T": 99, "distill_steps": 0},
         "full": {"n_base": 6, "epochs": 15, "prune_epochs": 5, "T": 999, "distill_steps": 5000}}
PAPER_DETECTS = "every non-independent pair among 21 Llama-family models (210 pairs) detected"
SWEEPS = {"smoke": {"Ts": (19, 39), "widths": (16, 32), "T_width": 19, "repeats": 1},
          "quick": {"Ts": (19, 99), "widths": (32, 64), "T_width": 19, "repeats": 3},
          "full": {"Ts": (19, 49, 99, 199, 499, 999), "widths": (32, 64, 128, 256, 512), "T_width": 99, "repeats": 3}}


def reproduce(run: Run) -> Result:
    # 1. set-up: the zoo's sizes, the digits split and the two training halves
    sizes = run.pick(**SIZES)
    data = digits_tensors(test_size=0.2, seed=0)  # 1437 train, 360 held-out probe images
    n = data.X_train.shape[0]
    order = torch.randperm(n, generator=torch_generator(0))
    half_a, half_b = order[: n // 2], order[n // 2:]

    # 2. the experiment: per seed, train the zoo and run every test (tiny models: one thread)
    per_seed, pair = {}, None
    with single_thread():
        for i, seed in enumerate(run.seeds):
            share = 0.9 / len(run.seeds)
            per_seed[seed], zoo_pair = _one_seed(seed, sizes, data, half_a, half_b, run, i * share, share)
            pair = pair or zoo_pair
            run.progress((i + 1) * share, f"seed {seed} done")
        run.progress(0.9, "cost against T and against the hidden width")
        cost = _cost_sweep(pair, **run.pick(**SWEEPS))
    seeds = list(per_seed.values())

    # 3. the claims
    T, n_pairs = sizes["T"], math.comb(sizes["n_base"], 2)
    speed = _claim_speed(seeds)
    claims = [_claim_exact(seeds, T), _claim_null(seeds, n_pairs), _claim_naive(seeds), _claim_rotation(seeds),
              _claim_match(seeds), _claim_match_null(seeds), _claim_local(seeds), speed]
    if run.scale == "full":
        claims += [_claim_t_slope(cost), _claim_width(cost)]

    # 4. figures and result
    figures = [_figure(run, per_seed, T), _cost_figure(run, cost)]
    return Result(metrics={"sizes": sizes, "per_seed": {str(k): v for k, v in per_seed.items()},
                           "speedup_phi_u_vs_permtest": speed.measured["speedup"], "cost_scaling": cost},
                  claims=claims, figures=figures)


# ---------------------------------------------------------------------------------------------- experiments
def _train(model: torch.nn.Module, X: torch.Tensor, y: torch.Tensor, epochs: int, lr: float, seed: int,
           params: Iterable[torch.nn.Parameter] | None = None) -> torch.nn.Module:
    """Adam with shuffled mini-batches of BATCH (over ``params`` only, when given)."""
    opt = torch.optim.Adam(params, lr=lr) if params is not None else None
    train_classifier(model, X, y, epochs=epochs, batch_size=BATCH, lr=lr, optimizer=opt, seed=seed)
    return model


def _zoo(seed: int, n_base: int, epochs: int, prune_epochs: int, data: TensorSplit, half_a: torch.Tensor,
         half_b: torch.Tensor) -> dict[str, TinyGLU]:
    """The controlled model family of one run seed (all randomness derived from ``seed``)."""
    base = 100 * seed
    Xa, ya, Xb, yb = data.X_train[half_a], data.y_train[half_a], data.X_train[half_b], data.y_train[half_b]
    zoo = {f"B{k}": _train(TinyGLU(seed=base + k), Xa, ya, epochs, LR_BASE, base + k) for k in range(1, n_base + 1)}
    B1 = zoo["B1"]
    zoo["F1"] = _train(copy.deepcopy(B1), Xb, yb, epochs, LR_FT, base + 50)
    g = torch_generator(base + 60)
    P1 = zoo["F1"]
    for block in range(2):
        P1 = permute_hidden(P1, block, torch.randperm(64, generator=g))
    zoo["P1"] = P1
    Q, _ = torch.linalg.qr(torch.randn(32, 32, generator=g, dtype=torch.float64))
    zoo["R1"] = rotate_residual(P1, Q)
    keep = torch.randperm(64, generator=g)[:48].sort().values
    zoo["S1"] = _train(prune_hidden(B1, 1, keep), Xb, yb, prune_epochs, LR_FT, base + 70)
    X1 = reinit_block(B1, 1, seed=base + 80)
    zoo["X1"] = _train(X1, Xa, ya, epochs, LR_BASE, base + 81, params=X1.blocks[1].mlp.parameters())
    return zoo


def _fisher_phi_u(a: dict, b: dict) -> float:
    return phi_u(a, b).fisher_statistic


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the seconds it took (one call, through the harness's timer)."""
    box: list[Any] = []
    seconds = median_seconds(lambda: box.append(fn()), 1)
    return box[0], seconds


def _one_seed(seed: int, sizes: dict, data: TensorSplit, half_a: torch.Tensor, half_b: torch.Tensor, run: Run,
              done: float, share: float) -> tuple[dict, tuple[dict, dict]]:
    """Train one seed's zoo and run every test on it; the metrics and the state dicts of (B1, B2)."""
    zoo = _zoo(seed, sizes["n_base"], sizes["epochs"], sizes["prune_epochs"], data, half_a, half_b)
    run.progress(done + 0.6 * share, f"seed {seed}: zoo trained, testing")
    X = data.X_test
    sd = {name: m.state_dict() for name, m in zoo.items()}
    bases = [f"B{k}" for k in range(1, sizes["n_base"] + 1)]
    pairs = list(itertools.combinations(bases, 2))
    T = sizes["T"]
    out: dict = {"accuracy": {n: accuracy(m, X, data.y_test) for n, m in zoo.items()}}
    with torch.no_grad():
        out["rotation_max_output_change"] = float((zoo["R1"](X) - zoo["F1"](X)).abs().max())

    # Constrained setting: PERMTEST (re-matching every copy) against phi_U read off Spearman.
    perm_p, fisher_p, perm_s, fast_s = {}, {}, [], []
    for a, b in pairs + [("B1", c) for c in ("F1", "P1", "R1")]:
        res, seconds = _timed(lambda a=a, b=b: phi_u(sd[a], sd[b]))
        fast_s.append(seconds)
        perm, seconds = _timed(lambda a=a, b=b: perm_test(sd[a], sd[b], _fisher_phi_u, T=T,
                                                          seed=seed * 1000 + len(perm_p)))
        perm_p[f"{a}-{b}"] = perm.p_value
        perm_s.append(seconds)
        fisher_p[f"{a}-{b}"] = res.p_value
        out.setdefault("phi_u_blocks", {})[f"{a}-{b}"] = res.block_pvalues
    out.update(permtest_p=perm_p, phi_u_fisher_p=fisher_p, permtest_seconds=perm_s, phi_u_seconds=fast_s)
    indep = [f"{a}-{b}" for a, b in pairs]
    for key, vals in (("permtest", [perm_p[k] for k in indep]), ("phi_u", [fisher_p[k] for k in indep])):
        out[f"null_{key}"] = {"ks_p": float(kstest(vals, "uniform").pvalue),
                              "n_at_most_alpha": int(sum(v <= ALPHA for v in vals))}

    # Naive statistics under PERMTEST, and weight matching (gate rows vs up rows).
    out["naive_permtest_p"] = {
        f"{stat.__name__}-{c}": perm_test(sd["B1"], sd[c], stat, T=T, seed=seed * 1000 + 500 + i).p_value
        for i, (stat, c) in enumerate(itertools.product((phi_l2, phi_cosine), ("F1", "P1", "R1")))}
    out["weight_match_p"] = {c: weight_match_test(sd["B1"], sd[c]).p_value for c in ("F1", "P1", "R1")}
    out["weight_match_null"] = [p for a, b in pairs for p in weight_match_test(sd[a], sd[b]).block_pvalues]
    out["phi_h_p"] = {c: phi_h(zoo["B1"], zoo[c], X).p_value for c in ("F1", "P1", "R1")}
    out["jsd"] = {"children": {c: -phi_jsd(zoo["B1"], zoo[c], X) for c in ("F1", "P1", "R1")},
                  "independent_min": min(-phi_jsd(zoo[a], zoo[b], X) for a, b in pairs)}

    # Unconstrained setting: MATCH on activations, localisation.
    out["match_null"] = [p for a, b in pairs for p in match_test(zoo[a], zoo[b], X).block_pvalues]
    out["match"] = {}
    for c in CHILDREN:
        res = match_test(zoo["B1"], zoo[c], X)
        out["match"][c] = {"blocks": res.block_pvalues, "fisher": res.p_value,
                           "truncated": [b.truncated for b in res.blocks]}
    for c in ("S1", "X1"):
        full = match_test(zoo["B1"], zoo[c], X, block_pairs="all")
        out["match"][c]["all_pairs"] = [[b.block1, b.block2, b.p_value] for b in full.blocks]
        out["match"][c]["layer_map"] = {str(k): v for k, v in localize(zoo["B1"], zoo[c], X).items()}
    null = out["match_null"]
    out["null_match"] = {"ks_p": float(kstest(null, "uniform").pvalue),
                         "frac_below_0.05": float(np.mean(np.asarray(null) < 0.05))}
    if sizes["distill_steps"]:  # Algorithm 5 on block 0 (expensive: full scale only)
        out["generalized_match_p"] = {
            c: generalized_match_test(zoo["B1"].blocks[0].mlp, zoo[c].blocks[0].mlp, 32, 64,
                                      steps=sizes["distill_steps"], seed=seed).p_value for c in ("F1", "B2")}
    return out, (sd["B1"], sd["B2"])


def _time_both(sd1: dict, sd2: dict, Ts: Iterable[int], tag: str, fns: dict) -> None:
    """Add phi_U and PERMTEST (T copies, re-matching each) on one pair to ``fns``, keyed ``"<test>,<tag>,<T>"``."""
    for T in Ts:
        fns[f"phi_u,{tag},{T}"] = lambda: phi_u(sd1, sd2)
        fns[f"permtest,{tag},{T}"] = lambda T=T: perm_test(sd1, sd2, _fisher_phi_u, T=T, seed=T)


def _cost_sweep(pair: tuple[dict, dict], Ts: tuple[int, ...], widths: tuple[int, ...], T_width: int,
                repeats: int) -> dict:
    """phi_U and PERMTEST timed against T (a trained independent pair) and against the hidden width h.

    The width sweep uses untrained TinyGLU pairs from independent seeds (the null case; only the
    shapes matter for the cost).  All calls take turns in ``repeats`` rounds after one warm-up round
    (``interleaved_seconds``, one-thread CPU time); each cell is the median over the rounds.
    """
    fns: dict[str, Callable[[], Any]] = {}
    _time_both(*pair, Ts, "T", fns)
    for h in widths:
        a, b = (TinyGLU(h=h, seed=10_000 + 2 * h + k).state_dict() for k in range(2))
        _time_both(a, b, (T_width,), f"h{h}", fns)
    times = {k: float(np.median(v)) for k, v in
             interleaved_seconds(fns, repeats, warmup=1, clock=time.thread_time).items()}
    tests = ("phi_u", "permtest")
    by_T = {t: [times[f"{t},T,{T}"] for T in Ts] for t in tests}
    by_h = {t: [times[f"{t},h{h},{T_width}"] for h in widths] for t in tests}
    return {"Ts": list(Ts), "widths": list(widths), "T_width": T_width, "repeats": repeats,
            "seconds_by_T": by_T, "seconds_by_width": by_h,
            "speedup_by_T": [p / f for p, f in zip(by_T["permtest"], by_T["phi_u"], strict=True)],
            "speedup_by_width": [p / f for p, f in zip(by_h["permtest"], by_h["phi_u"], strict=True)],
            "time_slope_in_T": {t: loglog_slope(Ts, by_T[t]) for t in tests},
            "time_slope_in_width": {t: loglog_slope(widths, by_h[t]) for t in tests}}


def _independent(pvalues: dict[str, float]) -> list[float]:
    """The p-values of the base-base pairs (keys ``"Bi-Bj"``)."""
    return [p for k, p in pvalues.items() if k.split("-")[1].startswith("B")]


# ---------------------------------------------------------------------------------------------- claims
def _claim_exact(seeds: list[dict], T: int) -> Claim:
    exact_perm = [s["permtest_p"]["B1-F1"] for s in seeds]
    exact_fisher = [s["phi_u_fisher_p"]["B1-F1"] for s in seeds]
    return Claim(
        text=CLAIM_EXACT, criterion=f"PERMTEST p = {1 / (T + 1):.3g} and Fisher p < 1e-10 on every seed",
        paper=f"PERMTEST and phi_U give exact p-values; {PAPER_DETECTS}",
        measured={"permtest_p_max": max(exact_perm), "fisher_p_max": max(exact_fisher)},
        baseline={"independent_permtest_p_median": float(np.median([p for s in seeds
                                                                    for p in _independent(s["permtest_p"])]))},
        holds=all(p == 1 / (T + 1) for p in exact_perm) and max(exact_fisher) < 1e-10)


def _claim_null(seeds: list[dict], n_pairs: int) -> Claim:
    counts = [max(s["null_permtest"]["n_at_most_alpha"], s["null_phi_u"]["n_at_most_alpha"]) for s in seeds]
    ks = [min(s["null_permtest"]["ks_p"], s["null_phi_u"]["ks_p"]) for s in seeds]
    pooled = {key: float(kstest([p for s in seeds for p in _independent(s[src])], "uniform").pvalue)
              for key, src in (("permtest", "permtest_p"), ("phi_u", "phi_u_fisher_p"))}
    return Claim(
        text=CLAIM_NULL, criterion=f"<= 1 of {n_pairs} pairs at p <= 0.01 and KS p >= 0.01, on every seed",
        paper="under independent initialisations the p-values are exact, i.e. uniform (Secs. 2-3)",
        measured={"max_count_at_most_0.01": max(counts), "min_ks_p": min(ks), "pooled_ks_p": pooled},
        baseline={"expected_count": n_pairs * ALPHA}, holds=max(counts) <= 1 and min(ks) >= ALPHA)


def _claim_naive(seeds: list[dict]) -> Claim:
    naive_p1 = [min(s["naive_permtest_p"]["phi_l2-P1"], s["naive_permtest_p"]["phi_cosine-P1"]) for s in seeds]
    aligned_p1 = [s["weight_match_p"]["P1"] for s in seeds]
    return Claim(
        text=CLAIM_NAIVE, criterion="naive PERMTEST p > 0.01 on P1 and aligned weight matching p < 1e-10, every seed",
        paper="statistics that ignore the permutation symmetry are evaded by permuting hidden units (Sec. 3)",
        measured={"naive_p_min": min(naive_p1), "aligned_weight_match_p_max": max(aligned_p1)},
        baseline={"naive_L2_p_on_unpermuted_F1": max(s["naive_permtest_p"]["phi_l2-F1"] for s in seeds),
                  "phi_u_vs_identity_p_on_P1_min": min(s["phi_u_fisher_p"]["B1-P1"] for s in seeds)},
        holds=min(naive_p1) > ALPHA and max(aligned_p1) < 1e-10)


def _claim_rotation(seeds: list[dict]) -> Claim:
    rot = [s["phi_u_fisher_p"]["B1-R1"] for s in seeds]
    return Claim(
        text=CLAIM_ROTATION, criterion="phi_U p >= 0.01 on (B1, R1), every seed (the test is evaded)",
        paper="weight-based tests are evaded by rotating the residual stream, which keeps the outputs (Sec. 4)",
        measured={"phi_u_p_min": min(rot), "weight_match_p_min": min(s["weight_match_p"]["R1"] for s in seeds)},
        baseline={"phi_u_p_on_F1_max": max(s["phi_u_fisher_p"]["B1-F1"] for s in seeds)},
        holds=min(rot) >= ALPHA)


def _claim_match(seeds: list[dict]) -> Claim:
    blocks = [p for s in seeds for c in ("F1", "P1", "R1") for p in s["match"][c]["blocks"]]
    fisher = [s["match"][c]["fisher"] for s in seeds for c in ("F1", "P1", "R1")]
    return Claim(
        text=CLAIM_MATCH, criterion="every block p < 1e-6 and Fisher p < 1e-12 for F1, P1 and R1, every seed",
        paper="the robust MATCH test is unaffected by permutations and rotations and traces Llama-3.2-3B to "
              "Llama-3.1-8B (Sec. 4)",
        measured={"block_p_max": max(blocks), "fisher_p_max": max(fisher)},
        baseline={"phi_u_p_on_R1_min": min(s["phi_u_fisher_p"]["B1-R1"] for s in seeds)},
        holds=max(blocks) < 1e-6 and max(fisher) < 1e-12)


def _claim_match_null(seeds: list[dict]) -> Claim:
    ks = [s["null_match"]["ks_p"] for s in seeds]
    frac = [s["null_match"]["frac_below_0.05"] for s in seeds]
    weight_null = [p for s in seeds for p in s["weight_match_null"]]
    return Claim(
        text=CLAIM_MATCH_NULL, criterion="KS p >= 0.01 and at most 20% of p-values below 0.05, every seed",
        paper="MATCH p-values of independent models behave like uniform p-values empirically (Sec. 4)",
        measured={"min_ks_p": min(ks), "max_frac_below_0.05": max(frac),
                  "pooled_ks_p": float(kstest([p for s in seeds for p in s["match_null"]], "uniform").pvalue)},
        baseline={"weight_match_null_pooled_ks_p": float(kstest(weight_null, "uniform").pvalue),
                  "expected_frac": 0.05},
        holds=min(ks) >= ALPHA and max(frac) <= 0.2)


def _claim_local(seeds: list[dict]) -> Claim:
    s1 = [p for s in seeds for p in s["match"]["S1"]["blocks"]]
    x1_shared = [s["match"]["X1"]["blocks"][0] for s in seeds]
    x1_new = [s["match"]["X1"]["blocks"][1] for s in seeds]
    maps_ok = all(s["match"]["S1"]["layer_map"] == {"0": 0, "1": 1} and s["match"]["X1"]["layer_map"] == {"0": 0}
                  for s in seeds)
    return Claim(
        text=CLAIM_LOCAL,
        criterion="S1 blocks p < 1e-6; X1 block 0 p < 1e-6 and block 1 p > 1e-3; layer maps as built, every seed",
        paper="localised MATCH finds the shared layers of pruned or partly retrained models (StripedHyena's "
              "Mistral layers; Llama-3.2-3B from Llama-3.1-8B)",
        measured={"S1_p_max": max(s1), "X1_shared_p_max": max(x1_shared), "X1_retrained_p_min": min(x1_new),
                  "layer_maps_as_built": maps_ok},
        baseline=None, holds=max(s1) < 1e-6 and max(x1_shared) < 1e-6 and min(x1_new) > 1e-3 and maps_ok)


def _claim_speed(seeds: list[dict]) -> Claim:
    fast = float(np.median([t for s in seeds for t in s["phi_u_seconds"]]))
    slow = float(np.median([t for s in seeds for t in s["permtest_seconds"]]))
    agree = [(s["permtest_p"][k] <= ALPHA) == (s["phi_u_fisher_p"][k] <= ALPHA) for s in seeds for k in s["permtest_p"]]
    return Claim(
        text=CLAIM_SPEED, criterion="median time ratio >= 20x and the same decision (alpha = 0.01) on every pair",
        paper="phi_U's p-value needs one matching instead of T + 1 (Sec. 3)",
        measured={"speedup": slow / fast, "decisions_agree": f"{sum(agree)}/{len(agree)}"},
        baseline={"permtest_seconds_median": slow, "phi_u_seconds_median": fast},
        holds=slow / fast >= 20 and all(agree))


def _claim_t_slope(cost: dict) -> Claim:
    slope = cost["time_slope_in_T"]
    return Claim(
        text=CLAIM_T_SLOPE,
        criterion=f"least-squares slope of log(median time) on log T over T = {cost['Ts'][0]} ... {cost['Ts'][-1]} "
                  "(seed 0's B1-B2): PERMTEST in [0.8, 1.2], phi_U <= 0.2",
        paper="PERMTEST evaluates the statistic on T + 1 copies; phi_U's p-value needs one matching (Sec. 3)",
        measured={"phi_u_slope": slope["phi_u"], "speedup_by_T": dict(zip(cost["Ts"], cost["speedup_by_T"],
                                                                          strict=True))},
        baseline={"permtest_slope": slope["permtest"]},
        holds=0.8 <= slope["permtest"] <= 1.2 and slope["phi_u"] <= 0.2)


def _claim_width(cost: dict) -> Claim:
    speed = dict(zip(cost["widths"], cost["speedup_by_width"], strict=True))
    return Claim(
        text=CLAIM_WIDTH,
        criterion=f"t(PERMTEST, T = {cost['T_width']}) / t(phi_U) >= 20 at every width (untrained independent pairs)",
        paper="phi_U's p-value needs one matching instead of T + 1 (Sec. 3); each matching is a LAP, O(h^3)",
        measured={"speedup_by_width": speed, "phi_u_slope_in_h": cost["time_slope_in_width"]["phi_u"]},
        baseline={"permtest_slope_in_h": cost["time_slope_in_width"]["permtest"]},
        holds=min(speed.values()) >= 20)


# ---------------------------------------------------------------------------------------------- figures
def _cost_figure(run: Run, cost: dict) -> str:
    """Median time of phi_U and PERMTEST against T and against h, log-log, fitted slopes in the legend."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, x, key, xlabel, title in (
            (axes[0], cost["Ts"], "seconds_by_T", "permuted copies T", "against T (trained B1-B2, h = 64)"),
            (axes[1], cost["widths"], "seconds_by_width", "hidden width h",
             f"against h (untrained pairs, T = {cost['T_width']})")):
        cost_panel(ax, x, {"phi_U + Spearman": cost[key]["phi_u"], "PERMTEST (re-matching)": cost[key]["permtest"]},
                   xlabel=xlabel, title=title, ylabel="median CPU time [s] (one thread)")
    fig.suptitle("Cost against size: paper's complexity T + 1 matchings (PERMTEST) vs 1 (phi_U)", y=1.02)
    return run.savefig(fig, "cost_scaling")


def _figure(run: Run, per_seed: dict, T: int) -> str:
    """Null p-value CDFs, the children's -log10 p per test, and the all-pairs MATCH map."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    series = {
        "PERMTEST (phi_U Fisher)": [p for s in per_seed.values() for p in _independent(s["permtest_p"])],
        "phi_U Fisher (Spearman)": [p for s in per_seed.values() for p in _independent(s["phi_u_fisher_p"])],
        "MATCH per block": [p for s in per_seed.values() for p in s["match_null"]],
    }
    for label, vals in series.items():
        v = np.sort(vals)
        ax.step(v, np.arange(1, v.size + 1) / v.size, where="post", label=f"{label} (n={v.size})")
    ax.plot([0, 1], [0, 1], "k--", lw=1, label="U(0,1)")
    ax.set(xlabel="p-value", ylabel="empirical CDF", title="independent pairs: p-values are uniform")
    ax.legend(fontsize=8)

    ax = axes[1]
    first = per_seed[min(per_seed)]
    cap = 320.0

    def nlog(p: float) -> float:
        return min(-math.log10(max(p, 1e-320)), cap)
    tests = {
        "phi_U (weights vs identity)": [nlog(first["phi_u_fisher_p"][f"B1-{c}"]) for c in ("F1", "P1", "R1")],
        "PERMTEST L2": [nlog(first["naive_permtest_p"][f"phi_l2-{c}"]) for c in ("F1", "P1", "R1")],
        "weight matching gate vs up": [nlog(first["weight_match_p"][c]) for c in ("F1", "P1", "R1")],
        "MATCH (activations)": [nlog(first["match"][c]["fisher"]) for c in ("F1", "P1", "R1")],
    }
    width = 0.2
    for i, (label, vals) in enumerate(tests.items()):
        ax.bar(np.arange(3) + (i - 1.5) * width, vals, width, label=label)
    ax.axhline(-math.log10(1 / (T + 1)), color="grey", lw=0.8, ls=":", label=f"PERMTEST floor 1/{T + 1}")
    ax.set_yscale("symlog", linthresh=2)
    ax.set_xticks(range(3), ["F1 fine-tuned", "P1 + permuted", "R1 + rotated"])
    ax.set(ylabel="-log10 p (underflow capped at 308)", title=f"children of B1 (seed {min(per_seed)})")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)

    ax = axes[2]
    mats = []
    for c in ("S1", "X1"):
        M = np.zeros((2, 2))
        for b1, b2, p in first["match"][c]["all_pairs"]:
            M[b1, b2] = nlog(p)
        mats.append(M)
    im = ax.imshow(np.hstack([mats[0], np.full((2, 1), np.nan), mats[1]]), cmap="viridis", norm="symlog")
    ax.set_xticks([0, 1, 3, 4], ["S1 b0", "S1 b1\n(48 units)", "X1 b0", "X1 b1\n(retrained)"])
    ax.set_yticks([0, 1], ["B1 b0", "B1 b1"])
    ax.set_title("MATCH all block pairs: -log10 p")
    fig.colorbar(im, ax=ax, shrink=0.8)
    fig.suptitle("Independence tests on a TinyGLU zoo (digits)", y=1.02)
    name = run.savefig(fig, "independence_tests")
    plt.close(fig)
    return name
