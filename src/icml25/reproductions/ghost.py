"""GHOST: one-shot subgraph federated learning with proxy generators and topology consolidation.

Data (the brief's quick scale): contextual stochastic block models (``icml25.data.graphs.make_csbm``),
1200 nodes, 5 classes, 64 Gaussian features, average degree 8, homophily 0.8 (and 0.2 for the
heterophilous check); 5 clients with Dirichlet(0.1) label skew, each keeping its induced subgraph
with a 20/40/40 train/val/test node split.  Global evaluation: the induced subgraph of the whole
graph on the union of the clients' test nodes (validation: the same on their validation nodes).

Per seed, each client trains its proxy generator once (T_L epochs, feature alignment + POT's fused
Gromov-Wasserstein) and uploads it in ONE round of :func:`icml25.federated.simulate`; the upload
size is read from the ledger.  On the same uploads the server integrates:

- GHOST: sequential proxies (M = 3, T_G = 5) with the TCC penalty; ``lambda_r`` and ``proxy_labels``
  chosen on the validation graph (grid below);
- ablations: no consolidation (lambda_r = 0), uniform importance (Ω = 1, its lambda tuned the same
  way), joint training on all clients' proxies at once (no sequential order), and (homophilous only)
  generators trained without the FGW term or without the feature term;
- baselines on the shared runtime: one-round FedAvg (local GCN training T_L epochs, one average),
  local-only models (mean over clients), FedAvg with R = 50 rounds (communication reference) and a
  centralized GCN (upper bound, reported).

Forgetting: accuracy on the test nodes of the first integrated client's classes, right after its
proxies and at the end.  Cora (bundled, 10 clients, alpha = 0.05, as in the paper) is a reported row.
"""

from __future__ import annotations

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch

from icml25.data.graphs import GraphData, edge_homophily, induced_subgraph, load_cora, make_csbm
from icml25.federated import FedAvg, simulate
from icml25.federated.ghost import (
    GCN,
    GcnClient,
    GhostClient,
    GhostStrategy,
    gcn_accuracy,
    split_graph,
    train_gcn,
)
from icml25.federated.torch_clients import load_arrays
from icml25.harness import Claim, Paper, Result, Run
from icml25.harness.parallel import run_jobs

PAPER = Paper(
    id="ghost",
    title="GHOST: Generalizable One-Shot Federated Graph Learning with Proxy-Based Topology Knowledge Retention",
    seed="002_2c1988cfcab16aa4.txt",
    abstract=1,
    module="icml25.federated.ghost",
    anchors=("JiaruQian/GHOST", "POT", "pyg-team/pytorch_geometric", "OpenFGL"),
    default_seeds=(0, 1, 2),
    quick_budget_s=120.0,
    extras=("torch",),
    known_misses=(
        # Seeds 0-2, both lambdas chosen on validation from LAMBDA_GRID: GHOST 0.684 vs uniform 0.730 (per seed
        # 0.61/0.72, 0.78/0.80, 0.66/0.67); on held-out seeds 3-5 it holds, 0.800 vs 0.737.  The seed-to-seed spread
        # (about 10 points) exceeds the 1-point margin, and TCC only anchors the first layer while most forgetting
        # happens in the output layer.
        "TCC importance beats uniform importance (plain L2 anchoring, lambda tuned alike)",
        # Measured 0.1385: at 64 features the generator (62k float32) is larger than the 64-128-5 GCN (8.9k), so one
        # upload is 1/7 of 50 FedAvg rounds; with Cora's 1433 features the ratio is 0.045 (the next claim).
        "uplink of GHOST's single message vs FedAvg with R = 50 rounds (ledger bits)",
    ),
)

# One log grid of consolidation strengths for GHOST's TCC penalty and for uniform importance alike, each
# chosen on the validation graph only (the test graph never picks a hyperparameter).  Earlier versions used two
# narrow grids centred on test-set sweet spots found in calibration (TCC {0.01, 0.03, 0.1}, uniform
# {0.001, 0.003, 0.01}; GHOST 0.684 vs uniform 0.720).  With this grid validation picks lambda_r 0.03 / 0.1 / 0.03
# for TCC (the same as before, GHOST 0.684) and 0.03 / 0.003 / 0.001 for uniform importance (0.730) on seeds 0-2.
LAMBDA_GRID = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)
GHOST_GRID = {"lambda_r": LAMBDA_GRID, "proxy_labels": ("client_histogram", "uniform")}


def _first_client_classes(upload: dict[str, np.ndarray]) -> np.ndarray:
    hist = upload["label_hist"]
    return np.flatnonzero(hist >= 0.1 * hist.sum())


def _class_accuracy(model: GCN, graph: GraphData, classes: np.ndarray) -> float:
    return gcn_accuracy(model, graph, np.isin(graph.y, classes))


def _integrate(strategy: GhostStrategy, uploads, test: GraphData, val: GraphData):
    model = strategy.integrate(uploads)
    return model, gcn_accuracy(model, test), gcn_accuracy(model, val)


def one_setting(graph: GraphData, seed: int, n_clients: int, alpha: float, gen_epochs: int,
                fedavg_rounds: int, tune: bool = True, ablate_client_losses: bool = False) -> dict:
    """Every method on one graph and split; returns accuracies, forgetting, ledger sizes and timings.
    ``tune=False`` (the Cora row) picks only ``lambda_r`` in {0.03, 1} on validation (histogram labels) and skips
    the uniform and joint ablations."""
    clients, test, val, parts = split_graph(graph, n_clients, alpha, seed=seed)
    f, c = graph.num_features, graph.n_classes
    out: dict = {"client_nodes": [g.num_nodes for g in clients]}

    ghost_clients = [GhostClient(g, gen_epochs=gen_epochs, seed=1000 * seed + i) for i, g in enumerate(clients)]
    t0 = time.perf_counter()
    base = GhostStrategy(f, c, lambda_r=0.0, seed=seed)
    history = simulate(ghost_clients, base, rounds=1, seed=seed)
    uploads = base.uploads_
    out["client_seconds"] = (time.perf_counter() - t0) / n_clients
    out["ghost_up_bits"] = history.ledger.total("up", "message")
    out["ghost_down_bits"] = history.ledger.total("down", "message")
    out["failures"] = len(history.failures)

    def strategy(**kw) -> GhostStrategy:
        return GhostStrategy(f, c, seed=seed, **kw)

    # GHOST: lambda_r and proxy_labels chosen on the validation graph
    best = None
    grid = GHOST_GRID if tune else {"lambda_r": (0.03, 1.0), "proxy_labels": ("client_histogram",)}
    for labels in grid["proxy_labels"]:
        for lam in grid["lambda_r"]:
            t0 = time.perf_counter()
            s = strategy(lambda_r=lam, proxy_labels=labels)
            model, acc, vacc = _integrate(s, uploads, test, val)
            seconds = time.perf_counter() - t0
            if best is None or vacc > best["val"]:
                best = {"val": vacc, "test": acc, "lambda_r": lam, "proxy_labels": labels, "trace": s.trace_,
                        "seconds": seconds}
            out[f"ghost_{labels}_lambda{lam}"], out[f"ghost_{labels}_lambda{lam}_val"] = acc, vacc
    out["ghost"], out["server_seconds"] = best["test"], best["seconds"]
    out["ghost_lambda_r"], out["ghost_proxy_labels"] = best["lambda_r"], best["proxy_labels"]
    labels = best["proxy_labels"]

    no_cons = strategy(lambda_r=0.0, proxy_labels=labels)
    _, out["no_consolidation"], _ = _integrate(no_cons, uploads, test, val)
    if tune:
        best_val = -1.0
        for lam in LAMBDA_GRID:
            _, acc, vacc = _integrate(strategy(lambda_r=lam, importance="uniform", proxy_labels=labels), uploads,
                                      test, val)
            out[f"uniform_lambda{lam}"], out[f"uniform_lambda{lam}_val"] = acc, vacc
            if vacc > best_val:
                best_val, out["uniform_importance"], out["uniform_lambda"] = vacc, acc, lam
        _, out["joint_proxies"], _ = _integrate(strategy(schedule="joint", proxy_labels=labels), uploads, test, val)

    if ablate_client_losses:   # the same server (chosen lambda_r and labels) on generators without one loss term
        for name, kw in (("no_fgw_term", {"lambda_f": 0.0}), ("no_feature_term", {"feature_loss": False})):
            ablated = [GhostClient(g, gen_epochs=gen_epochs, seed=1000 * seed + i, **kw).fit(None).arrays
                       for i, g in enumerate(clients)]
            s_abl = strategy(lambda_r=best["lambda_r"], proxy_labels=labels)
            _, out[name], _ = _integrate(s_abl, list(enumerate(ablated)), test, val)

    # forgetting of the first integrated client's classes
    first_cid = best["trace"][0][0]
    classes = _first_client_classes(dict(uploads)[first_cid])
    for name, trace in (("ghost", best["trace"]), ("no_consolidation", no_cons.trace_)):
        curve = [_class_accuracy(load_arrays(base.make_model(), arrays), test, classes) for _, arrays in trace]
        out[f"{name}_first_client_curve"] = curve
        out[f"{name}_forgetting"] = curve[0] - curve[-1]

    # baselines on the shared runtime
    init = base.initialize()

    def gcn_from(arrays) -> GCN:
        return load_arrays(GCN(f, c), arrays)

    gcn_clients = [GcnClient(g, epochs=gen_epochs, seed=1000 * seed + i) for i, g in enumerate(clients)]
    one_shot = simulate(gcn_clients, FedAvg(init), rounds=1, seed=seed)
    out["fedavg_one_shot"] = gcn_accuracy(gcn_from(one_shot.arrays), test)
    out["fedavg_one_round_up_bits"] = one_shot.ledger.total("up", "message")
    out["local_only"] = [gcn_accuracy(train_gcn(gcn_from(init), g, gen_epochs, seed=1000 * seed + i), test)
                         for i, g in enumerate(clients)]
    if fedavg_rounds:
        many = simulate([GcnClient(g, epochs=2, seed=1000 * seed + i) for i, g in enumerate(clients)],
                        FedAvg(init), rounds=fedavg_rounds, seed=seed)
        out["fedavg_many"] = gcn_accuracy(gcn_from(many.arrays), test)
        out["fedavg_many_up_bits"] = many.ledger.total("up", "message")
        out["fedavg_rounds"] = fedavg_rounds
    train = np.zeros(graph.num_nodes, bool)
    for nodes, g in zip(parts, clients, strict=True):
        train[nodes[g.train_mask]] = True
    out["centralized"] = gcn_accuracy(train_gcn(gcn_from(init), graph, 100, mask=train, seed=seed), test)
    return out


def _job(name: str, *args) -> dict:
    """One reproduction job: a CSBM setting and seed, or (``name == "cora"``) the Cora row."""
    torch.manual_seed(0)
    if name == "cora":
        first_nodes, seed, n_clients, gen_epochs = args
        cora = load_cora()
        if first_nodes:   # smoke: the pipeline only, on the first nodes of Cora
            cora = induced_subgraph(cora, np.arange(first_nodes))
        return one_setting(cora, seed, n_clients=n_clients, alpha=0.05, gen_epochs=gen_epochs, fedavg_rounds=0,
                           tune=False)
    homophily, seed, n_nodes, gen_epochs, fedavg_rounds = args
    graph = make_csbm(n_nodes, 5, 64, avg_degree=8, homophily=homophily, class_sep=3.0, seed=seed)
    row = one_setting(graph, seed, n_clients=5, alpha=0.1, gen_epochs=gen_epochs, fedavg_rounds=fedavg_rounds,
                      ablate_client_losses=name == "homophilous")
    row["edge_homophily"] = edge_homophily(graph)
    return row


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([np.mean(r[key]) for r in rows]))


def reproduce(run: Run) -> Result:
    n_nodes = run.pick(smoke=300, quick=1200, full=2400)
    gen_epochs = run.pick(smoke=5, quick=60, full=100)
    rounds = run.pick(smoke=3, quick=50, full=50)
    settings = {"homophilous": 0.8, "heterophilous": 0.2}
    jobs = [(name, homophily, seed, n_nodes, gen_epochs, rounds if name == "homophilous" else 0)
            for name, homophily in settings.items() for seed in run.seeds]
    jobs.append(("cora", run.pick(smoke=600, quick=0, full=0), run.seeds[0], run.pick(smoke=3, quick=10, full=10),
                 run.pick(smoke=3, quick=20, full=100)))
    # the settings and seeds are independent and fully seeded: 2 single-threaded processes give the numbers of
    # running them one after another
    outcome = run_jobs(_job, jobs, run.pick(smoke=1, quick=2, full=2), run.progress,
                       describe=lambda job: f"{job[0]} seed {job[2]}")
    rows = {name: [row for job, row in zip(jobs, outcome, strict=True) if job[0] == name] for name in settings}
    cora_row = outcome[-1]

    homo, hetero = rows["homophilous"], rows["heterophilous"]
    ghost, fedavg1, local = _mean(homo, "ghost"), _mean(homo, "fedavg_one_shot"), _mean(homo, "local_only")
    no_cons, uniform = _mean(homo, "no_consolidation"), _mean(homo, "uniform_importance")
    forget_g, forget_n = _mean(homo, "ghost_forgetting"), _mean(homo, "no_consolidation_forgetting")
    up_ratio = float(np.mean([r["ghost_up_bits"] / r["fedavg_many_up_bits"] for r in homo]))
    speed = float(np.median([r["server_seconds"] / r["client_seconds"] for r in homo]))
    h_ghost, h_fedavg = _mean(hetero, "ghost"), _mean(hetero, "fedavg_one_shot")
    # Cora: 50 FedAvg rounds upload 50 times the one-round message measured by the ledger (same arrays each round)
    cora_up_ratio = cora_row["ghost_up_bits"] / (50 * cora_row["fedavg_one_round_up_bits"])

    def seeds_where(a: str, b: str, margin: float) -> int:
        return int(sum(np.mean(r[a]) >= np.mean(r[b]) + margin for r in homo))

    per_seed_wins = {"ghost_vs_fedavg_one_shot_+5": seeds_where("ghost", "fedavg_one_shot", 0.05),
                     "ghost_vs_local_only_+5": seeds_where("ghost", "local_only", 0.05),
                     "ghost_vs_no_consolidation_+2": seeds_where("ghost", "no_consolidation", 0.02),
                     "ghost_vs_uniform_importance_+1": seeds_where("ghost", "uniform_importance", 0.01),
                     "hetero_ghost_vs_fedavg_one_shot": int(sum(r["ghost"] >= r["fedavg_one_shot"] for r in hetero)),
                     "of": len(homo)}

    claims = [
        Claim(text="GHOST beats one-round FedAvg on global test accuracy (homophilous CSBM)",
              paper="GHOST >= one-shot FedAvg + 5 points", measured=ghost, baseline=fedavg1,
              holds=bool(ghost >= fedavg1 + 0.05)),
        Claim(text="GHOST beats the clients' local-only models", paper="GHOST >= mean local-only + 5 points",
              measured=ghost, baseline=local, holds=bool(ghost >= local + 0.05)),
        Claim(text="topology consolidation beats no consolidation (lambda_r = 0, same proxies)",
              paper="GHOST >= no-consolidation + 2 points", measured=ghost, baseline=no_cons,
              holds=bool(ghost >= no_cons + 0.02)),
        Claim(text="consolidation reduces forgetting of the first client's classes",
              paper="accuracy drop at least 30% smaller", measured=forget_g, baseline=forget_n,
              holds=bool(forget_g <= 0.7 * forget_n)),
        Claim(text="TCC importance beats uniform importance (plain L2 anchoring, lambda tuned alike)",
              paper="GHOST >= uniform + 1 point", measured=ghost, baseline=uniform,
              holds=bool(ghost >= uniform + 0.01)),
        Claim(text="GHOST beats one-round FedAvg on a heterophilous CSBM (homophily 0.2)",
              paper="GHOST >= one-shot FedAvg", measured=h_ghost, baseline=h_fedavg,
              holds=bool(h_ghost >= h_fedavg)),
        Claim(text="uplink of GHOST's single message vs FedAvg with R = 50 rounds (ledger bits)",
              paper="<= 1/10", measured=up_ratio, baseline=0.1, holds=bool(up_ratio <= 0.1)),
        Claim(text="uplink of GHOST's single message vs FedAvg with R = 50 rounds on Cora (ledger bits)",
              paper="<= 1/10", measured=cora_up_ratio, baseline=0.1, holds=bool(cora_up_ratio <= 0.1)),
        Claim(text="server integration time vs one client's generator training (same run)",
              paper="<= 3x", measured=speed, baseline=3.0, holds=bool(speed <= 3.0)),
    ]

    metrics = {
        "config": {"n_nodes": n_nodes, "n_classes": 5, "n_features": 64, "avg_degree": 8, "class_sep": 3.0,
                   "n_clients": 5, "alpha": 0.1, "gen_epochs": gen_epochs, "proxy_steps": 3, "server_steps": 5,
                   "fedavg_rounds": rounds, "ghost_grid": {k: list(v) for k, v in GHOST_GRID.items()},
                   "uniform_grid": list(LAMBDA_GRID)},
        "homophilous": homo, "heterophilous": hetero, "cora": cora_row, "per_seed_wins": per_seed_wins,
        "summary": {"ghost": ghost, "fedavg_one_shot": fedavg1, "local_only": local, "no_consolidation": no_cons,
                    "uniform_importance": uniform, "joint_proxies": _mean(homo, "joint_proxies"),
                    "no_fgw_term": _mean(homo, "no_fgw_term"), "no_feature_term": _mean(homo, "no_feature_term"),
                    "centralized": _mean(homo, "centralized"), "fedavg_many": _mean(homo, "fedavg_many"),
                    "hetero_ghost": h_ghost, "hetero_fedavg_one_shot": h_fedavg,
                    "cora_ghost": cora_row["ghost"], "cora_fedavg_one_shot": cora_row["fedavg_one_shot"],
                    "cora_local_only": float(np.mean(cora_row["local_only"])),
                    "cora_uplink_ratio_vs_50_rounds": cora_up_ratio,
                    "uplink_ratio": up_ratio, "server_over_client_seconds": speed},
    }

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    methods = ["ghost", "no_consolidation", "uniform_importance", "joint_proxies", "fedavg_one_shot", "local_only",
               "centralized"]
    width = 0.38
    for k, (name, data) in enumerate((("homophilous", homo), ("heterophilous", hetero))):
        means = [_mean(data, m) for m in methods]
        spread = [np.std([np.mean(r[m]) for r in data]) for m in methods]
        axes[0].bar(np.arange(len(methods)) + (k - 0.5) * width, means, width, yerr=spread, label=name)
    axes[0].set_xticks(np.arange(len(methods)), [m.replace("_", "\n") for m in methods], fontsize=7)
    axes[0].set_ylabel("global test accuracy")
    axes[0].set_title("one-shot subgraph FL on CSBM (mean over seeds)")
    axes[0].legend()
    for key, style in (("ghost", "-"), ("no_consolidation", "--")):
        for i, r in enumerate(homo):
            curve = r[f"{key}_first_client_curve"]
            axes[1].plot(np.arange(1, len(curve) + 1), curve, style, color=f"C{i}", label=f"{key} seed {run.seeds[i]}")
    axes[1].set_xticks(np.arange(1, len(homo[0]["ghost_first_client_curve"]) + 1))
    axes[1].set_xlabel("clients integrated (the first client's classes are measured)")
    axes[1].set_ylabel("accuracy on the first client's classes")
    axes[1].set_title("forgetting during sequential integration")
    axes[1].legend(fontsize=6)
    figure = run.savefig(fig, "ghost")
    return Result(metrics=metrics, claims=claims, figures=[figure])

