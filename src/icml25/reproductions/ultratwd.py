"""UltraTWD: ultrametric trees fitted to the cost matrix approximate W1 better than baseline trees.

Synthetic "word embedding" cloud (hierarchical Gaussian mixture, n = 200 in R^16) with sparse
topic documents, plus sklearn digits as histograms on the 8x8 pixel grid (reported, not
asserted).  Exact W1 is POT's ``ot.emd2`` on every pair, in the same process.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import ot
from matplotlib.ticker import NullFormatter
from scipy.cluster.hierarchy import dendrogram
from scipy.spatial.distance import cdist

from icml25.data.hierarchical_docs import digit_histograms, hierarchical_cloud, sparse_documents
from icml25.harness import Claim, Paper, Result, Run
from icml25.transport.trees import average_linkage_tree, cluster_tree, quadtree, single_linkage_tree
from icml25.transport.ultratwd import (
    WeightedTree,
    fit_ultrametric,
    subdominant_ultrametric,
    tree_fit_error,
    ultratwd_pairwise,
)

CLAIM_RESCALED = "UltraTWD-IP and -GD MRE >= 20% lower than least-squares rescaled QuadTree and ClusterTree"
CLAIM_FROBENIUS = "UltraTWD-IP and -GD Frobenius errors <= UltraTWD-MST's"

PAPER = Paper(
    id="ultratwd",
    title="UltraTWD: Optimizing Ultrametric Trees for Tree-Wasserstein Distance",
    seed="000_2b600ba1808e0b5e.txt",
    abstract=11,
    module="icml25.transport.ultratwd",
    anchors=("POT", "NeXAIS/UltraTWD"),
    default_seeds=(0, 1, 2, 3, 4),
    known_misses=(CLAIM_RESCALED, CLAIM_FROBENIUS),  # explained beside the claims in reproduce()
)

ULTRA = ("UltraTWD-MST", "UltraTWD-IP", "UltraTWD-GD")
ULTRAMETRIC = (*ULTRA, "UltraTWD-IP (3 sweeps)", "UltraTWD-GD (init D)", "SingleLinkage", "UPGMA")
BASELINES = ("QuadTree", "ClusterTree")


def _emd_pairs(H: np.ndarray, G: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Exact W1 between every row of ``H`` and every row of ``G`` (POT, supports restricted)."""
    out = np.zeros((H.shape[0], G.shape[0]))
    supp_h = [np.flatnonzero(h) for h in H]
    supp_g = [np.flatnonzero(g) for g in G]
    for i, s in enumerate(supp_h):
        for j, t in enumerate(supp_g):
            out[i, j] = ot.emd2(H[i, s], G[j, t], D[np.ix_(s, t)])
    return out


def _emd_all_pairs(H: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Exact W1 on all pairs ``i < j`` of the rows of ``H``, as a symmetric matrix."""
    m = H.shape[0]
    out = np.zeros((m, m))
    supp = [np.flatnonzero(h) for h in H]
    for i in range(m):
        for j in range(i + 1, m):
            s, t = supp[i], supp[j]
            out[i, j] = out[j, i] = ot.emd2(H[i, s], H[j, t], D[np.ix_(s, t)])
    return out


def _rescaled(tree: WeightedTree, D: np.ndarray) -> WeightedTree:
    """The same tree with all edges scaled by the least-squares factor fitting its metric to ``D``.

    Unsupervised (it sees only ``D``, as UltraTWD does); it removes the baselines' arbitrary
    global scale so that the comparison is about the tree shape, not the units.
    """
    T = tree.leaf_distances()
    factor = float(np.sum(T * D) / np.sum(T * T))
    return WeightedTree(tree.parent, tree.edge_weight * factor, tree.n_leaves)


def _trees(D: np.ndarray, points: np.ndarray, seed: int) -> tuple[dict[str, WeightedTree], dict[str, float]]:
    builders: dict[str, Callable[[], WeightedTree]] = {
        "UltraTWD-MST": lambda: fit_ultrametric(D, "mst"),
        "UltraTWD-IP": lambda: fit_ultrametric(D, "ip"),
        "UltraTWD-GD": lambda: fit_ultrametric(D, "gd"),
        "UltraTWD-IP (3 sweeps)": lambda: fit_ultrametric(D, "ip", n_iter=3),
        "UltraTWD-GD (init D)": lambda: fit_ultrametric(D, "gd", init="data"),
        "SingleLinkage": lambda: single_linkage_tree(D),
        "UPGMA": lambda: average_linkage_tree(D),
        "QuadTree": lambda: quadtree(points, max_depth=6, random_state=seed),
        "ClusterTree": lambda: cluster_tree(points, k=4, max_depth=5, random_state=seed),
    }
    trees, seconds = {}, {}
    for name, build in builders.items():
        start = time.perf_counter()
        trees[name] = build()
        seconds[name] = time.perf_counter() - start
    for name in BASELINES:
        trees[f"{name} (rescaled)"] = _rescaled(trees[name], D)
    return trees, seconds


def _mre(approx: np.ndarray, exact: np.ndarray) -> float:
    keep = exact > 1e-12
    return float(np.mean(np.abs(approx[keep] - exact[keep]) / exact[keep]))


def _knn_accuracy(dist: np.ndarray, y_train: np.ndarray, y_test: np.ndarray, k: int) -> float:
    """k-NN accuracy from a (n_test, n_train) distance matrix; ties go to the nearest neighbour's class."""
    near = np.argsort(dist, axis=1, kind="stable")[:, :k]
    correct = 0
    for row, label in zip(near, y_test, strict=True):
        votes = np.bincount(y_train[row], minlength=int(y_train.max()) + 1)
        winners = np.flatnonzero(votes == votes.max())
        pred = next(y_train[j] for j in row if y_train[j] in winners)
        correct += int(pred == label)
    return correct / len(y_test)


def _precision_at(dist: np.ndarray, exact: np.ndarray, k: int) -> float:
    near = np.argsort(dist, axis=1, kind="stable")[:, :k]
    truth = np.argsort(exact, axis=1, kind="stable")[:, :k]
    return float(np.mean([np.intersect1d(a, b).size / k for a, b in zip(near, truth, strict=True)]))


def _sinkhorn_mre(H: np.ndarray, D: np.ndarray, W: np.ndarray, pairs: list[tuple[int, int]]) -> float:
    """Mean relative error of POT's Sinkhorn (reg = 0.01 max D) on a few pairs (reported only)."""
    approx, exact = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings at this small regularisation
        for i, j in pairs:
            s, t = np.flatnonzero(H[i]), np.flatnonzero(H[j])
            approx.append(float(ot.sinkhorn2(H[i, s], H[j, t], D[np.ix_(s, t)], 0.01 * D.max())))
            exact.append(W[i, j])
    return _mre(np.array(approx), np.array(exact))


def _synthetic(seed: int, n_points: int, n_docs: int, n_train: int, repeats: int, n_sinkhorn: int) -> dict:
    cloud = hierarchical_cloud(n_points, 16, seed=seed)
    docs = sparse_documents(cloud, n_docs, seed=seed + 1000)
    D = cdist(cloud.points, cloud.points)
    H, y = docs.histograms, docs.labels
    trees, fit_seconds = _trees(D, cloud.points, seed)

    start = time.perf_counter()
    W = _emd_all_pairs(H, D)
    emd_seconds = time.perf_counter() - start
    iu = np.triu_indices(n_docs, 1)
    train, test = np.arange(n_train), np.arange(n_train, n_docs)

    out: dict = {"mre": {}, "max_err": {}, "rel_fro": {}, "knn5": {}, "p_at_10": {}}
    distances = {}
    for name, tree in trees.items():
        P = ultratwd_pairwise(H, tree)
        distances[name] = P
        out["mre"][name] = _mre(P[iu], W[iu])
        err = tree_fit_error(tree, D)
        out["max_err"][name], out["rel_fro"][name] = err["max"], err["rel_fro"]
        out["knn5"][name] = _knn_accuracy(P[np.ix_(test, train)], y[train], y[test], 5)
        out["p_at_10"][name] = _precision_at(P[np.ix_(test, train)], W[np.ix_(test, train)], 10)
    out["knn5"]["exact W1"] = _knn_accuracy(W[np.ix_(test, train)], y[train], y[test], 5)
    every = max(1, iu[0].size // n_sinkhorn)
    out["sinkhorn_mre"] = _sinkhorn_mre(H, D, W, list(zip(*iu, strict=True))[::every][:n_sinkhorn])

    timings = []
    for _ in range(repeats):
        start = time.perf_counter()
        ultratwd_pairwise(H, trees["UltraTWD-GD"])
        timings.append(time.perf_counter() - start)
    out["twd_seconds"] = float(np.median(timings))
    out["emd_seconds"] = emd_seconds
    out["fit_seconds"] = fit_seconds
    out["half_delta"] = float(np.max(D - subdominant_ultrametric(D)) / 2)

    # exactness of the linear-time formula: TWD on the tree = exact OT under the tree metric
    tree = trees["UltraTWD-GD"]
    Dt = tree.leaf_distances()
    pairs = [(i, j) for i, j in zip(*iu, strict=True)][:: max(1, iu[0].size // 50)]
    P = distances["UltraTWD-GD"]
    out["exact_gap"] = float(max(abs(P[i, j] - ot.emd2(H[i], H[j], Dt)) for i, j in pairs))
    out["scatter"] = {"W1": W[iu][:400].tolist(),
                      **{k: distances[k][iu][:400].tolist()
                         for k in ("UltraTWD-GD", "ClusterTree (rescaled)", "QuadTree (rescaled)")}}
    out["linkage"] = tree.to_linkage()
    out["n_nodes"] = {name: t.n_nodes for name, t in trees.items()}
    return out


def _digits(seed: int, n_train: int, n_test: int) -> dict:
    grid, train, test = digit_histograms(n_train, n_test, seed=seed)
    D = cdist(grid, grid)
    trees, _ = _trees(D, grid, seed)
    W = _emd_pairs(test.histograms, train.histograms, D)
    out: dict = {"mre": {}, "knn1": {}, "knn5": {}, "rel_fro": {}}
    for name, tree in trees.items():
        P = ultratwd_pairwise(test.histograms, tree, train.histograms)
        out["mre"][name] = _mre(P, W)
        out["rel_fro"][name] = tree_fit_error(tree, D)["rel_fro"]
        out["knn1"][name] = _knn_accuracy(P, train.labels, test.labels, 1)
        out["knn5"][name] = _knn_accuracy(P, train.labels, test.labels, 5)
    out["knn1"]["exact W1"] = _knn_accuracy(W, train.labels, test.labels, 1)
    out["knn5"]["exact W1"] = _knn_accuracy(W, train.labels, test.labels, 5)
    return out


def _stack(runs: list[dict], key: str) -> dict[str, list[float]]:
    return {name: [r[key][name] for r in runs] for name in runs[0][key]}


def _summary(values: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {k: {"mean": float(np.mean(v)), "std": float(np.std(v))} for k, v in values.items()}


def _figure(run: Run, syn: dict[str, list[float]], dig: dict[str, list[float]], scatter: dict, n: int) -> str:
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    panels = ((axes[0], syn, f"synthetic embeddings (n={n})"), (axes[1], dig, "digits (8x8 grid)"))
    for ax, values, title in panels:
        names = list(values)
        means = [np.mean(values[k]) for k in names]
        stds = [np.std(values[k]) for k in names]
        colors = ["tab:blue" if k.startswith("UltraTWD") else "tab:gray" for k in names]
        ax.barh(names, means, xerr=stds, color=colors)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.invert_yaxis()
        ax.set_xlabel("mean relative error |TWD - W1| / W1 (log)")
        ax.set_title(title)
    ax = axes[2]
    w = np.asarray(scatter["W1"])
    for name, marker in (("UltraTWD-GD", "o"), ("ClusterTree (rescaled)", "^"), ("QuadTree (rescaled)", "x")):
        ax.scatter(w, scatter[name], s=8, marker=marker, label=name, alpha=0.5)
    ax.plot([w.min(), w.max()], [w.min(), w.max()], "k--", lw=1, label="TWD = W1")
    ax.set_xlabel("exact W1 (ot.emd2)")
    ax.set_ylabel("tree-Wasserstein distance")
    ax.set_title("first seed, 400 document pairs")
    ax.legend()
    fig.tight_layout()
    return run.savefig(fig, "ultratwd_mre")


def _dendrogram_figure(run: Run, Z: np.ndarray) -> str:
    fig, ax = plt.subplots(figsize=(10, 3.5))
    dendrogram(Z, ax=ax, no_labels=True, color_threshold=0)
    ax.set_ylabel("tree distance U_ij")
    ax.set_title("UltraTWD-GD tree on the synthetic cloud (first seed), via UltrametricTree.to_linkage()")
    return run.savefig(fig, "ultratwd_dendrogram")


def reproduce(run: Run) -> Result:
    n_points, n_docs, n_train = run.pick(smoke=(60, 40, 25), quick=(200, 120, 80), full=(400, 300, 200))
    dig_train, dig_test = run.pick(smoke=(30, 10), quick=(60, 30), full=(200, 100))
    repeats = run.pick(smoke=3, quick=5, full=9)
    n_sinkhorn = run.pick(smoke=5, quick=30, full=500)
    syn, dig = [], []
    for i, seed in enumerate(run.seeds):
        syn.append(_synthetic(seed, n_points, n_docs, n_train, repeats, n_sinkhorn))
        dig.append(_digits(seed, dig_train, dig_test))
        run.progress((i + 1) / len(run.seeds), f"seed {seed}")

    mre, max_err, rel_fro = _stack(syn, "mre"), _stack(syn, "max_err"), _stack(syn, "rel_fro")
    knn5, p10 = _stack(syn, "knn5"), _stack(syn, "p_at_10")
    seeds = len(run.seeds)

    # Claim 1 (brief): IP and GD beat QuadTree and ClusterTree (their own edge weights: cell side,
    # centroid distance) by >= 20% in MRE on every seed.
    ours_ip_gd = [max(mre["UltraTWD-IP"][s], mre["UltraTWD-GD"][s]) for s in range(seeds)]
    raw_base = [min(mre[b][s] for b in BASELINES) for s in range(seeds)]
    ratio1 = [o / b for o, b in zip(ours_ip_gd, raw_base, strict=True)]
    # Claim 1b (ours, stricter): those edge weights overestimate W1 several-fold, so we also compare
    # with each baseline tree rescaled by the least-squares factor fitting its metric to D (it sees
    # only D, like UltraTWD).  Known miss at quick scale: measured MRE IP 0.101 / GD 0.080 (mean of
    # 5 seeds) against 0.092 for the rescaled ClusterTree (k-means recovers the Gaussian mixture's
    # hierarchy); per-seed ratios 0.79-1.51.  Kept at the brief's 20% margin and reported.
    scaled_base = [min(mre[f"{b} (rescaled)"][s] for b in BASELINES) for s in range(seeds)]
    ratio1b = [o / b for o, b in zip(ours_ip_gd, scaled_base, strict=True)]
    # Claim 2: the best UltraTWD variant beats the plain single-linkage tree by >= 20%.
    best_ultra = [min(mre[k][s] for k in ULTRA) for s in range(seeds)]
    ratio2 = [b / s for b, s in zip(best_ultra, mre["SingleLinkage"], strict=True)]
    # Claim 3: MST attains the smallest max-norm error among ultrametric fits, equal to delta/2.
    mst_gap = [abs(max_err["UltraTWD-MST"][s] - syn[s]["half_delta"]) for s in range(seeds)]
    mst_smallest = all(max_err["UltraTWD-MST"][s] <= min(max_err[k][s] for k in ULTRAMETRIC) + 1e-9
                       for s in range(seeds))
    # Claim 4: IP and GD Frobenius errors <= MST's on every seed.  GD keeps its best iterate and
    # starts at the MST solution (our reading), so GD <= MST holds by construction.  Known miss for
    # IP with the paper's default single sweep: relative Frobenius 0.173 +- 0.036 against MST's
    # 0.178 +- 0.027 (mean of 5 seeds), better on 3 of 5 seeds only; with 3 sweeps (reported row
    # "UltraTWD-IP (3 sweeps)") it is 0.119.  Threshold kept as in the brief.
    fro_ok = {k: sum(rel_fro[k][s] <= rel_fro["UltraTWD-MST"][s] for s in range(seeds))
              for k in ("UltraTWD-IP", "UltraTWD-GD")}
    # Claims 5-6: downstream kNN / retrieval, judged on the mean over seeds.
    exact_knn = np.mean(knn5["exact W1"])
    knn_gap = {k: 100 * (exact_knn - np.mean(knn5[k])) for k in ("UltraTWD-GD", "UltraTWD-IP")}
    best_knn = min(knn_gap, key=knn_gap.get)
    quad_knn = max(np.mean(knn5["QuadTree"]), np.mean(knn5["QuadTree (rescaled)"]))
    quad_p10 = max(np.mean(p10["QuadTree"]), np.mean(p10["QuadTree (rescaled)"]))
    # Claim 7: all-pairs speed, ratio of medians measured in this process.
    emd_s = float(np.median([r["emd_seconds"] for r in syn]))
    twd_s = float(np.median([r["twd_seconds"] for r in syn]))
    speedup = emd_s / twd_s
    exact_gap = max(r["exact_gap"] for r in syn)

    claims = [
        Claim(text="TWD on the learned tree equals exact OT (ot.emd2) under the tree metric",
              paper="exact (closed form of W1 on a tree)", measured=exact_gap, baseline=None,
              holds=exact_gap <= 1e-9),
        Claim(text="UltraTWD-IP and -GD approximate W1 >= 20% better (MRE) than QuadTree and ClusterTree",
              paper="MRE(IP), MRE(GD) <= 0.8 x each baseline's, every seed",
              measured=float(np.mean(ours_ip_gd)), baseline=float(np.mean(raw_base)),
              holds=all(r <= 0.8 for r in ratio1)),
        Claim(text=CLAIM_RESCALED, paper="MRE(IP), MRE(GD) <= 0.8 x each rescaled baseline's, every seed",
              measured=float(np.mean(ours_ip_gd)), baseline=float(np.mean(scaled_base)),
              holds=all(r <= 0.8 for r in ratio1b)),
        Claim(text="best UltraTWD variant beats the plain single-linkage tree MST(D) by >= 20% (MRE)",
              paper="MRE ratio <= 0.8, every seed", measured=float(np.mean(best_ultra)),
              baseline=float(np.mean(mre["SingleLinkage"])), holds=all(r <= 0.8 for r in ratio2)),
        Claim(text="UltraTWD-MST: smallest max-norm error of the ultrametric fits, = ||MST(D)-D||_inf / 2",
              paper="optimal, error delta/2 to 1e-9", measured=float(np.mean(max_err["UltraTWD-MST"])),
              baseline=float(np.mean([min(max_err[k][s] for k in ULTRAMETRIC[1:]) for s in range(seeds)])),
              holds=mst_smallest and max(mst_gap) <= 1e-9),
        Claim(text=CLAIM_FROBENIUS,
              paper="||D_T - D||_F (IP, GD) <= (MST), every seed",
              measured={k: float(np.mean(rel_fro[k])) for k in fro_ok},
              baseline=float(np.mean(rel_fro["UltraTWD-MST"])),
              holds=all(c == seeds for c in fro_ok.values())),
        Claim(text=f"{best_knn} 5-NN accuracy within 5 points of exact W1 and >= QuadTree's",
              paper="gap <= 5 points; >= QuadTree", measured=float(np.mean(knn5[best_knn])),
              baseline={"exact W1": float(np.mean(knn5["exact W1"])), "QuadTree": float(quad_knn)},
              holds=knn_gap[best_knn] <= 5 and np.mean(knn5[best_knn]) >= quad_knn),
        Claim(text="UltraTWD-GD retrieval precision@10 (vs exact-W1 neighbours) >= QuadTree's",
              paper=">= QuadTree", measured=float(np.mean(p10["UltraTWD-GD"])), baseline=float(quad_p10),
              holds=bool(np.mean(p10["UltraTWD-GD"]) >= quad_p10)),
        Claim(text="all-pairs TWD >= 20x faster than all-pairs ot.emd2 (m documents, same run)",
              paper=">= 20x", measured=speedup, baseline=1.0, holds=speedup >= 20),
    ]

    dig_mre = _stack(dig, "mre")
    metrics = {
        "sizes": {"n_points": n_points, "n_docs": n_docs, "n_train": n_train, "n_test": n_docs - n_train,
                  "digits_train": dig_train, "digits_test": dig_test},
        "synthetic": {
            "mre": mre, "max_err": max_err, "rel_fro": rel_fro, "knn5": knn5, "p_at_10": p10,
            "mre_summary": _summary(mre), "rel_fro_summary": _summary(rel_fro),
            "half_delta": [r["half_delta"] for r in syn],
            "sinkhorn_mre": [r["sinkhorn_mre"] for r in syn],
            "ratio_ip_gd_vs_baselines": ratio1, "ratio_ip_gd_vs_rescaled_baselines": ratio1b,
            "ratio_best_ultra_vs_single": ratio2, "frobenius_seeds_le_mst": fro_ok,
            "n_nodes": syn[0]["n_nodes"],
        },
        "digits": {"mre": dig_mre, "mre_summary": _summary(dig_mre), "rel_fro": _stack(dig, "rel_fro"),
                   "knn1": _stack(dig, "knn1"), "knn5": _stack(dig, "knn5")},
        "timing_seconds": {"emd2_all_pairs": [r["emd_seconds"] for r in syn],
                           "twd_all_pairs": [r["twd_seconds"] for r in syn],
                           "speedup": speedup, "fit": _stack(syn, "fit_seconds")},
    }
    figures = [_figure(run, mre, dig_mre, syn[0]["scatter"], n_points),
               _dendrogram_figure(run, syn[0]["linkage"])]
    return Result(metrics=metrics, claims=claims, figures=figures)
