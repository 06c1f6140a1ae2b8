"""DIGGED: one rule sequence per DAG, lossless, compact, generative, predictive.

Data (synthetic, seeded per run seed): ENAS-like cells (input, 6 ops, output, skip edges with
probability 0.3; D-VAE's ENAS space) with a synthetic accuracy, and connected random DAGs over
the 8 Asia variables with the BIC of 1,000 rows sampled from the Asia network as the property.
For each data set and seed a grammar is induced and disambiguated, then:

1. lossless: decode(encode(G)) is isomorphic to G for every training graph;
2. unambiguous: derivations per graph (exhaustive search) against the number of node strings
   (= topological orders, exact DP) of the same graphs;
3. compact: rules per derivation against vertices per graph (node-string tokens), and the
   description length (grammar + derivations) against the graphs written plainly;
4. generation (ENAS): 500 random rule sequences, uniform over the lhs-compatible rules (the
   brief's check) and with the paper's interactive validity mask; validity, novelty, uniqueness;
5. property prediction: the same GRU regressor on rule tokens and on node strings in random
   (and BFS) topological order, 5-fold cross-validated RMSE.
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.graphs.dag_grammar import (
    DagGrammarInducer,
    bn_property,
    count_topological_orders,
    decode,
    enas_feasible,
    enas_property,
    encode,
    generation_metrics,
    is_isomorphic,
    is_valid_enas,
    make_bn_like,
    make_enas_like,
    node_string,
    sample_asia,
)
from icml25.graphs.dag_grammar.models import cross_validated_rmse, node_string_features, rule_sequence_features
from icml25.harness import Claim, Paper, Result, Run

DL_CLAIM = "Compression: grammar + derivations take <= 0.7x the bits of the plain graphs"
UNIFORM_CLAIM = "Sampling rules uniformly (lhs mask) gives valid, novel, unique ENAS cells"
PREDICTION_CLAIM = "A GRU on rule tokens predicts the property at least as well as on random-order node strings"

PAPER = Paper(
    id="dag_grammar",
    title="Directed Graph Grammars for Sequence-based Learning",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=18,
    module="icml25.graphs.dag_grammar",
    anchors=("networkx", "shiningsunnyday/induction"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses=(DL_CLAIM, UNIFORM_CLAIM, PREDICTION_CLAIM),
)

ASIA_ROWS_SEED = 12345  # the fixed synthetic data set the BIC property is computed on


def _dataset(name: str, n: int, seed: int) -> tuple[list, np.ndarray]:
    if name == "enas":
        graphs = make_enas_like(n, seed=seed)
        return graphs, enas_property(graphs, seed=seed)
    graphs = make_bn_like(n, seed=seed)
    return graphs, bn_property(graphs, sample_asia(1000, seed=ASIA_ROWS_SEED))


def _one(name: str, seed: int, run: Run) -> dict:
    n = run.pick(smoke={"enas": 30, "bn": 20}, quick={"enas": 150, "bn": 100}, full={"enas": 300, "bn": 300})[name]
    graphs, y = _dataset(name, n, seed)
    start = time.perf_counter()
    inducer = DagGrammarInducer(max_motif=4, timeout=run.pick(2.0, 2.0, 10.0)).fit(graphs)
    induce_seconds = time.perf_counter() - start
    grammar, seqs = inducer.grammar_, inducer.sequences_
    out = {
        "n_graphs": n,
        "n_rules": len(grammar),
        "induce_seconds": induce_seconds,
        "lossless": float(np.mean([is_isomorphic(decode(grammar, encode(grammar, g)), g) for g in graphs])),
        "unique_fraction": float(np.mean([c == 1 for c in inducer.n_derivations_])),
        "derivation_counts": inducer.n_derivations_,
        "search_timeouts": int(sum(inducer.timed_out_)),
        "rules_removed": inducer.n_removed_,
        "graphs_redone": inducer.n_redone_,
        "topological_orders": float(np.mean([count_topological_orders(g) for g in graphs])),
        "rules_per_graph": float(np.mean([len(s) for s in seqs])),
        "vertices_per_graph": float(np.mean([g.number_of_nodes() for g in graphs])),
        "description_length": inducer.description_length_,
        "uncompressed_bits": inducer.uncompressed_bits_,
        "dl_history": inducer.history_,
    }
    if name == "enas":
        max_len = 3 * max(len(s) for s in seqs)
        n_samples = run.pick(50, 500, 2000)
        for mask, feasible in (("uniform", None), ("masked", enas_feasible)):
            samples = grammar.sample(n_samples, seed=seed, max_len=max_len, feasible=feasible)
            derived = [grammar.derive(s) if grammar.is_valid(s) else None for s in samples]
            out[f"generation_{mask}"] = generation_metrics(derived, graphs, is_valid_enas)
    labels = sorted({g.nodes[v]["label"] for g in graphs for v in g})
    epochs = run.pick(20, 150, 300)
    reps = {
        "rules": rule_sequence_features(grammar, seqs),
        "rule_ids_only": rule_sequence_features(grammar, seqs, content=False),
        "ns_random": node_string_features([node_string(g, "random", seed=seed * 7919 + i)
                                           for i, g in enumerate(graphs)], labels),
        "ns_bfs": node_string_features([node_string(g, "bfs") for g in graphs], labels),
    }
    out["rmse"] = {k: float(np.mean(cross_validated_rmse(x, lengths, y, seed=seed, epochs=epochs, d_model=32, lr=1e-2)))
                   for k, (x, lengths) in reps.items()}
    out["property_sd"] = float(np.std(y))
    return out


def reproduce(run: Run) -> Result:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is fastest, and stable on a shared machine
    try:
        return _reproduce(run)
    finally:
        torch.set_num_threads(threads)


def _reproduce(run: Run) -> Result:
    per_seed: dict[str, list[dict]] = {"enas": [], "bn": []}
    for i, seed in enumerate(run.seeds):
        for name in per_seed:
            per_seed[name].append(_one(name, seed, run))
            run.progress((i + 0.5 * (1 + (name == "bn"))) / len(run.seeds), f"seed {seed}: {name}")
    both = per_seed["enas"] + per_seed["bn"]

    def mean(name: str, key: str) -> float:
        return float(np.mean([r[key] for r in per_seed[name]]))

    lossless = min(r["lossless"] for r in both)
    unique = min(r["unique_fraction"] for r in both)
    orders_bn, orders_enas = mean("bn", "topological_orders"), mean("enas", "topological_orders")
    rule_ratio = float(np.mean([r["rules_per_graph"] / r["vertices_per_graph"] for r in both]))
    dl_ratio = float(np.mean([r["description_length"] / r["uncompressed_bits"] for r in both]))
    gen = {mask: {k: float(np.mean([r[f"generation_{mask}"][k] for r in per_seed["enas"]]))
                  for k in ("validity", "novelty", "uniqueness")} for mask in ("uniform", "masked")}
    rmse = {name: {k: mean_rmse for k, mean_rmse in
                   ((k, float(np.mean([r["rmse"][k] for r in per_seed[name]]))) for k in per_seed[name][0]["rmse"])}
            for name in per_seed}
    wins = sum(r["rmse"]["rules"] <= r["rmse"]["ns_random"] for r in both)

    def good(g: dict) -> bool:
        return g["validity"] >= 0.9 and g["novelty"] >= 0.5 and g["uniqueness"] >= 0.5

    claims = [
        Claim("Lossless: decode(encode(G)) is isomorphic to G for every training graph",
              "100% of graphs", lossless, None, lossless == 1.0),
        Claim("Unambiguous: >= 95% of graphs have exactly one derivation, while node strings are not unique "
              "(mean topological orders > 2, Bayesian networks)",
              ">= 95% unique; orders > 2", unique, {"orders_bn": orders_bn, "orders_enas": orders_enas},
              unique >= 0.95 and orders_bn > 2),
        Claim("Compact: a derivation has <= 0.6 rules per vertex (node strings: one token per vertex)",
              "rules / vertices <= 0.6", rule_ratio, 1.0, rule_ratio <= 0.6),
        # Measured at quick scale (3 seeds): 1.06x.  Random cells and random BN structures share
        # little structure: at 150 graphs nearly every graph keeps its own <S> rule, which costs
        # as much as the graph itself.  The ratio falls with more data (about 0.98 at 2,000 ENAS
        # graphs, seed 0) but not to 0.7 within a quick run.
        Claim(DL_CLAIM, "DL ratio <= 0.7", dl_ratio, 1.0, dl_ratio <= 0.7),
        # The paper decodes with an interactive validity mask instead; ``metrics["generation"]["masked"]``
        # reports our version of it (``enas_feasible``), about 0.88 valid: most failures run to the
        # length cap because the only terminating rules would add a second input vertex.
        Claim(UNIFORM_CLAIM, "validity >= 0.9, novelty >= 0.5, uniqueness >= 0.5", gen["uniform"], None,
              good(gen["uniform"])),
        # Measured at quick scale: ENAS rule tokens RMSE about 0.08 against 0.013 for node strings
        # (a chain fixes the order, so 'random' is D-VAE's own string); BN both about the
        # property's sd (neither beats the mean).  Most rule ids occur once (one <S> rule per
        # graph), so a small model cannot learn their meaning from 120 training graphs; the
        # paper trains on 19k graphs.
        Claim(PREDICTION_CLAIM, "RMSE(rule tokens) <= RMSE(random-order node strings)",
              {name: rmse[name]["rules"] for name in rmse}, {name: rmse[name]["ns_random"] for name in rmse},
              wins == len(both)),
    ]
    metrics = {
        "per_seed": per_seed,
        "lossless_min": lossless,
        "unique_fraction_min": unique,
        "topological_orders": {"enas": orders_enas, "bn": orders_bn},
        "rules_per_vertex": rule_ratio,
        "dl_ratio": dl_ratio,
        "generation": gen,
        "rmse": rmse,
        "rule_wins": int(wins),
    }
    figures = [_figure(run, per_seed, rmse)]
    return Result(metrics=metrics, claims=claims, figures=figures)


def _figure(run: Run, per_seed: dict, rmse: dict) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    ax = axes[0]
    for name, color in (("enas", "tab:blue"), ("bn", "tab:orange")):
        first = per_seed[name][0]
        ax.plot(np.asarray(first["dl_history"]) / first["uncompressed_bits"], color=color, label=f"{name} (induction)")
        ax.axhline(first["description_length"] / first["uncompressed_bits"], color=color, ls="--",
                   label=f"{name} final grammar + derivations")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(xlabel="induction step", ylabel="description length / plain graphs", title="MDL compression (first seed)")
    ax.legend(fontsize=8)
    ax = axes[1]
    bn = per_seed["bn"][0]
    graphs = make_bn_like(bn["n_graphs"], seed=run.seeds[0])
    orders = [count_topological_orders(g) for g in graphs]
    bins = np.logspace(0, np.log10(max(orders) + 1), 20)
    ax.hist(orders, bins=bins, alpha=0.7, label="node strings (topological orders)")
    ax.hist(bn["derivation_counts"], bins=bins, alpha=0.7, label="grammar derivations")
    ax.set(xscale="log", xlabel="sequences per graph", ylabel="graphs", title="Ambiguity, Bayesian networks")
    ax.legend(fontsize=8)
    ax = axes[2]
    keys = ["rules", "rule_ids_only", "ns_random", "ns_bfs"]
    width = 0.2
    for j, key in enumerate(keys):
        ax.bar(np.arange(2) + (j - 1.5) * width, [rmse[name][key] for name in ("enas", "bn")], width, label=key)
    ax.set_xticks(range(2), ["ENAS-like", "BN (BIC)"])
    ax.set(ylabel="5-fold RMSE", title="Property prediction (GRU)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return run.savefig(fig, "dag_grammar")
