"""Reproduction of "Code-Generated Graph Representations Using Multiple LLM Agents for Material Properties
Prediction" (Rep-CodeGen, ICML 2025, OpenReview lvvMwGUam6; no official code found). Guide, results and
calibration notes: docs/papers/rep_codegen.md.

Offline and on CPU: the agents are the scripted operator-library agent (no LLM), the data are EMT energies
of small metal cells built with ASE, and the six constraint checkers are our reconstruction.

1. the checkers are right: hand-written reference codes get exactly the pass/fail pattern their construction
   implies, through the sandbox; hostile candidates are recorded as failures and no sandbox process survives;
2. evolution reaches all six constraints from the base codes (CGCNN radius graph, k-NN graph, Matformer-style
   self-loops) in >= 4 of 5 seeds, best fitness never decreasing; random search with as many evaluated
   candidates is the ablation;
3. the evolved representation predicts EMT energy per atom with test MAE <= 0.95 x the CGCNN-style base
   (hard cutoff), same GNN and budget; AMD + kernel ridge reported;
4. the OpenAI-compatible client path runs a generation end to end against a local fake server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np

from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.stats import summary
from icml25.materials import (
    BASE_CODES,
    REFERENCE_GENES,
    FakeOpenAIServer,
    OpenAICompatibleClient,
    RepCodeGen,
    Sandbox,
    ScriptedClient,
    amd,
    compose,
    default_constraints,
    emt_dataset,
    fit_kernel_ridge,
    fit_property,
    genes_of,
    random_search,
    run_candidate,
    structure_bank,
)

CLAIM_CHECKERS = ("the six checkers give the expected pass/fail matrix on reference codes; the sandbox contains "
                  "hostile code")
CLAIM_EVOLUTION = "evolution from the base codes reaches all six constraints (and is not degenerate) in >= 4 of 5 seeds"
CLAIM_PROPERTY = "the evolved representation predicts energy per atom with MAE <= 0.95 x the CGCNN-style base"
CLAIM_LLM = "the OpenAI-compatible agent path completes a generation; malformed replies are failures, not crashes"

PAPER = Paper(
    id="rep_codegen",
    title="Code-Generated Graph Representations Using Multiple LLM Agents for Material Properties Prediction",
    module="icml25.materials.rep_codegen",
    anchors=("ASE (Atoms, build.bulk, calculators.emt)", "pymatgen", "CGCNN", "Matformer", "ComFormer",
             "FunSearch", "openai (OpenAI-compatible endpoints)"),
    default_seeds=(0, 1, 2, 3, 4),
    quick_budget_s=120.0,
    extras=("torch", "materials"),
    known_misses={
        CLAIM_EVOLUTION: "the scripted agent mutates blindly (it ignores the feedback) and stays on the 12-NN plateau "
                         "(6 of 7 checks, mirror-blind) in every seed; random search over the same small library "
                         "reaches all seven in 4 of 5 seeds",
        CLAIM_PROPERTY: "follows from the evolution miss: the best evolved codes are mirror-blind 12-NN graphs, "
                        "no better than the CGCNN-style base on EMT energies (MAE ratio 1.10 +- 0.19)",
    },
)

NAMES = ("C1_permutation", "C2_translation", "C3_rotation", "C4_periodic", "C5_reflection", "C6_lipschitz",
         "C7_discriminative")
# What each reference code's construction implies (1 = passes), in the order of NAMES.
EXPECTED = {
    "cgcnn": (1, 1, 1, 1, 0, 0, 1),          # invariant distances: mirror-blind; hard cutoff jumps
    "knn": (1, 1, 1, 1, 0, 1, 1),            # 12-NN with distance features only: continuous, mirror-blind
    "knn_angle": (1, 0, 0, 0, 0, 0, 1),      # angles of a tie-broken 12-NN set depend on atom order and cell
    "matformer": (1, 1, 1, 0, 0, 0, 1),      # lattice-vector self-loops depend on the basis
    "hard_cutoff": (1, 1, 1, 1, 1, 0, 1),    # chirality-aware but a hard cutoff
    "frac_nodes": (1, 0, 1, 0, 0, 0, 1),     # fractional coordinates as node features
    "cartesian": (1, 1, 0, 1, 0, 1, 1),      # raw Cartesian edge vectors
    "constant": (1, 1, 1, 1, 0, 1, 0),       # 12-NN with a constant edge feature: trivially invariant
    "smooth_triple": (1, 1, 1, 1, 1, 1, 1),  # smooth cutoff + signed triple products
}
HOSTILE = {
    "infinite_loop": "def represent(lattice, frac_coords, numbers):\n    while True:\n        pass\n",
    "memory_bomb": "def represent(lattice, frac_coords, numbers):\n    hoard = []\n    while True:\n"
                   "        hoard.append(np.empty(10**8))\n",
    "forbidden_import": "import os\n\ndef represent(lattice, frac_coords, numbers):\n    return os.listdir('/')\n",
    "runtime_import": "def represent(lattice, frac_coords, numbers):\n    s = __builtins__['__import__']('socket')\n",
    "syntax_error": "def represent(lattice, frac_coords, numbers:\n    return 1\n",
    "raises": "def represent(lattice, frac_coords, numbers):\n    raise RuntimeError('bug')\n",
    "nan_features": "def represent(lattice, frac_coords, numbers):\n    n = len(numbers)\n"
                    "    return Graph(np.full((n, 2), np.nan), np.zeros((2, 0), int), np.zeros((0, 1)))\n",
    "wrong_shape": "def represent(lattice, frac_coords, numbers):\n"
                   "    return Graph(np.ones((1, 2)), np.zeros((2, 0), int), np.zeros((0, 1)))\n",
    "huge_output": "def represent(lattice, frac_coords, numbers):\n    n = len(numbers)\n"
                   "    return Graph(np.ones((n, 1)), np.zeros((2, 10**7), int), np.zeros((10**7, 1)))\n",
}


@dataclass(frozen=True)
class Sizes:
    population: int    # M, candidates written per generation
    generations: int   # G
    n_train: int
    n_test: int
    epochs: int
    property_seeds: int


def reproduce(run: Run) -> Result:
    sz = run.pick(smoke=Sizes(2, 1, 40, 20, 2, 1), quick=Sizes(5, 4, 200, 100, 20, 3),
                  full=Sizes(8, 5, 800, 200, 60, 3))
    constraints = default_constraints(discriminative=True)
    bank = structure_bank(0)
    run.progress(0.0, "reference codes and hostile candidates")
    checkers = _checkers(constraints, bank)
    cache: dict = {}
    evolution = []
    for i, seed in enumerate(run.seeds):
        run.progress(0.1 + 0.5 * i / len(run.seeds), f"seed {seed}: evolution and random search")
        loop = RepCodeGen([ScriptedClient(seed)], constraints, bank, population=sz.population, keep=3,
                          generations=sz.generations, seed=seed, cache=cache)
        history = loop.run()
        rand = random_search(history.n_evaluated, constraints, bank, seed=seed, cache=cache)
        evolution.append({"seed": seed, "curve": history.best_per_generation,
                          "best_passed": history.best.report.n_passed,
                          "best_genes": genes_of(history.best.source), "best_source": history.best.source,
                          "n_evaluated": history.n_evaluated, "random_passed": rand.best.report.n_passed,
                          "random_curve": rand.best_per_generation,
                          "pids": [c.report.pid for c in history.candidates + rand.candidates if c.report.pid]})
    run.progress(0.6, "property prediction")
    prop = [_property(seed, evo, sz) for seed, evo in zip(run.seeds[:sz.property_seeds], evolution, strict=False)]
    run.progress(0.9, "OpenAI-compatible client against a local fake server")
    llm = _llm_plumbing(constraints, bank)
    alive = [pid for evo in evolution for pid in evo["pids"] if _alive(pid)] + checkers["alive"] + llm["alive"]
    claims = [_claim_checkers(checkers, alive), _claim_evolution(evolution), _claim_property(prop), _claim_llm(llm)]
    figures = [_evolution_figure(run, evolution), _property_figure(run, prop)]
    metrics = {"checkers": {k: v for k, v in checkers.items() if k != "alive"},
               "evolution": [{k: v for k, v in e.items() if k not in ("pids", "best_source")} for e in evolution],
               "distinct_evaluations": len(cache), "property": prop,
               "llm": {k: v for k, v in llm.items() if k != "alive"}, "sandbox_processes_alive": len(alive)}
    return Result(metrics=metrics, claims=claims, figures=figures)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _checkers(constraints, bank) -> dict:
    """Every reference code and every hostile candidate through the sandbox."""
    matrix, pids = {}, []
    for name in EXPECTED:
        report = run_candidate(compose(REFERENCE_GENES[name]), bank, constraints, seed=0)
        matrix[name] = tuple(int(report.passed[n]) for n in NAMES)
        pids.append(report.pid)
    hostile = {}
    for name, source in HOSTILE.items():
        report = run_candidate(source, bank, constraints, timeout=3.0, seed=0)
        hostile[name] = {"failed": report.error is not None, "reason": (report.error or "")[:160]}
        pids.append(report.pid)
    return {"matrix": matrix, "hostile": hostile, "alive": [p for p in pids if p and _alive(p)]}


def _claim_checkers(checkers: dict, alive: list[int]) -> Claim:
    wrong = {k: v for k, v in checkers["matrix"].items() if v != EXPECTED[k]}
    contained = all(h["failed"] for h in checkers["hostile"].values())
    return Claim(
        text=CLAIM_CHECKERS,
        criterion=f"the pass/fail matrix of {len(EXPECTED)} reference codes over C1-C7, evaluated in the sandbox, "
                  f"equals the one their construction implies; all {len(HOSTILE)} hostile candidates (infinite loop, "
                  "memory bomb, forbidden imports, syntax error, exception, NaN, wrong shape, huge output) are "
                  "recorded as failures; no sandbox process is alive at the end of the run",
        paper="constraints are checked by executing the generated code (Sec. 3.2); representations such as CGCNN's "
              "and Matformer's satisfy only some of the six constraints (Sec. 2, Table 1)",
        measured={"matrix": checkers["matrix"], "mismatches": wrong, "hostile": checkers["hostile"],
                  "processes_alive": len(alive)},
        baseline={"expected": EXPECTED},
        holds=not wrong and contained and not alive,
        kind="check",
    )


def _claim_evolution(evolution: list[dict]) -> Claim:
    evo = [e["best_passed"] == len(NAMES) for e in evolution]
    rand = [e["random_passed"] == len(NAMES) for e in evolution]
    monotone = all(all(b >= a for a, b in zip(e["curve"], e["curve"][1:], strict=False)) for e in evolution)
    need = int(np.ceil(0.8 * len(evolution)))
    return Claim(
        text=CLAIM_EVOLUTION,
        criterion=f"scripted agent, bases {', '.join(BASE_CODES)}: the best candidate passes C1-C6 and C7 "
                  f"(non-degenerate: a 4 %-expanded copy gives a different graph) in >= "
                  f"{need} of {len(evolution)} seeds, the best-so-far number of passed checks never decreases, and "
                  "evolution succeeds in at least as many seeds as random search over the same library with the "
                  "same number of evaluated candidates",
        paper="a representation generated from codes satisfying three constraints satisfies six (abstract, Sec. 4)",
        measured={"seeds_all_six": int(sum(evo)), "best_passed": [e["best_passed"] for e in evolution],
                  "base_passed": [e["curve"][0] for e in evolution], "curves": [e["curve"] for e in evolution],
                  "monotone": monotone, "best_genes": [e["best_genes"] for e in evolution]},
        baseline={"random_search_seeds_all_six": int(sum(rand)),
                  "random_search_best_passed": [e["random_passed"] for e in evolution],
                  "evaluated_candidates": [e["n_evaluated"] for e in evolution]},
        holds=sum(evo) >= need and monotone and sum(evo) >= sum(rand),
    )


def _graphs(source: str, crystals: list) -> list:
    with Sandbox(source, timeout=120.0) as box:
        return [g for start in range(0, len(crystals), 100) for g in box.represent(crystals[start:start + 100])]


def _property(seed: int, evo: dict, sz: Sizes) -> dict:
    crystals, y = emt_dataset(sz.n_train + sz.n_test, seed=seed)
    tr, te = slice(0, sz.n_train), slice(sz.n_train, None)
    out = {"seed": seed, "evolved_genes": evo["best_genes"], "evolved_passed": evo["best_passed"],
           "test_sd": float(y[te].std())}
    for name, source in (("evolved", evo["best_source"]), ("cgcnn_hard", compose(REFERENCE_GENES["cgcnn"]))):
        graphs = _graphs(source, crystals)
        _, out[f"mae_{name}"] = fit_property(graphs[tr], y[tr], graphs[te], y[te], epochs=sz.epochs, seed=seed)
    features = np.stack([np.concatenate([amd(c, 24), [c.numbers.mean() / 100, c.numbers.std() / 100]])
                         for c in crystals])
    out["mae_amd_krr"] = fit_kernel_ridge(features[tr], y[tr], features[te], y[te], seed=seed)
    return out


def _claim_property(prop: list[dict]) -> Claim:
    ratios = [p["mae_evolved"] / p["mae_cgcnn_hard"] for p in prop]
    return Claim(
        text=CLAIM_PROPERTY,
        criterion="EMT energy per atom of strained, rattled, substituted fcc/bcc cells of Al, Cu, Ni, Ag, Au, Pd, "
                  "Pt; the same 3-layer gated GNN (hidden 64) and training budget on both representations: mean over "
                  "seeds of MAE(best evolved) / MAE(CGCNN-style radius graph, hard cutoff) <= 0.95",
        paper="a GNN on the generated representation reaches state-of-the-art accuracy on two real materials data "
              "sets (abstract, Sec. 4)",
        measured={"mae_ratio": summary(ratios), "mae_evolved": summary([p["mae_evolved"] for p in prop])},
        baseline={"mae_cgcnn_hard": summary([p["mae_cgcnn_hard"] for p in prop]),
                  "mae_amd_kernel_ridge": summary([p["mae_amd_krr"] for p in prop]),
                  "test_sd": summary([p["test_sd"] for p in prop])},
        holds=float(np.mean(ratios)) <= 0.95,
    )


def _llm_plumbing(constraints, bank) -> dict:
    """One generation with the real ``openai`` client against canned replies on 127.0.0.1."""
    good = f"Sure.\n```python\n{compose(REFERENCE_GENES['smooth_triple'])}```"
    replies = [good, "I cannot write code today.", None, "```python\nimport subprocess\ndef represent(a, b, c):\n"
               "    return subprocess.run(['ls'])\n```"]
    with FakeOpenAIServer(replies) as server:
        client = OpenAICompatibleClient(server.url, "fake-model", api_key="none", timeout=10.0, retries=0)
        history = RepCodeGen([client], constraints, bank, population=len(replies), generations=1, seed=0).run()
        n_requests = len(server.requests)
    new = [c for c in history.candidates if c.generation == 1]
    pids = [c.report.pid for c in history.candidates if c.report.pid]
    return {"generations": len(history.best_per_generation) - 1, "requests": n_requests,
            "candidates": len(new), "failed": sum(not c.report.ok for c in new),
            "best_passed": history.best.report.n_passed, "agent_failures": history.agent_failures,
            "alive": [p for p in pids if _alive(p)]}


def _claim_llm(llm: dict) -> Claim:
    return Claim(
        text=CLAIM_LLM,
        criterion="RepCodeGen with OpenAICompatibleClient (the openai package) against a local fake server whose "
                  "four canned replies are: valid code, prose without code, HTTP 500, code with a forbidden import: "
                  "one generation completes, the valid code passes all seven checks, the other three are failed "
                  "candidates",
        paper="multiple LLM agents write, evaluate and evolve the code (Sec. 3, Fig. 2)",
        measured=llm | {"alive": len(llm["alive"])}, baseline={"replies": 4},
        holds=llm["generations"] == 1 and llm["failed"] == 3 and llm["best_passed"] == len(NAMES),
        kind="check",
    )


def _evolution_figure(run: Run, evolution: list[dict]) -> str:
    fig, ax = plt.subplots(1, 2, figsize=(11, 3.8))
    for e in evolution:
        ax[0].plot(range(len(e["curve"])), e["curve"], marker="o", alpha=0.7, label=f"seed {e['seed']}")
        ax[1].plot(range(1, len(e["random_curve"]) + 1), e["random_curve"], alpha=0.7)
    ax[0].set(xlabel="generation", ylabel="constraints passed by the best", ylim=(0, 6.3),
              title="Rep-CodeGen (scripted agent): best fitness")
    ax[0].legend(fontsize=7)
    ax[1].set(xlabel="candidates evaluated", ylabel="best so far", ylim=(0, 6.3), title="Random search (ablation)")
    return run.savefig(fig, "evolution")


def _property_figure(run: Run, prop: list[dict]) -> str:
    fig, ax = plt.subplots(figsize=(6, 3.8))
    names = ("mae_evolved", "mae_cgcnn_hard", "mae_amd_krr")
    vals = [[p[n] for p in prop] for n in names]
    ax.bar(["evolved (GNN)", "CGCNN hard (GNN)", "AMD (kernel ridge)"], [np.mean(v) for v in vals],
           yerr=[np.std(v) for v in vals])
    ax.set(ylabel="test MAE (eV/atom)", title="EMT energy per atom")
    return run.savefig(fig, "property_mae")
