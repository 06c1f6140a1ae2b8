"""Property prediction on a representation: a small message-passing GNN on the graphs (CGCNN-style gated
convolutions, our implementation) and, as a continuous-invariant baseline, kernel ridge regression on the
average minimum distance (AMD, Widdowson & Kurlin 2022) plus composition."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from icml25.materials.rep_codegen.crystal import Crystal
from icml25.materials.rep_codegen.graph import Graph
from icml25.utils.random import Seed, as_generator, init_rng
from icml25.utils.validation import check_array, check_instance, check_scalar, check_sequence, check_tensor


def _edge_inputs(g: Graph) -> np.ndarray:
    """Invariant edge inputs: the invariant features and the squares of the pseudo-scalars."""
    return np.concatenate([g.edge_feats, g.edge_pseudo ** 2], axis=1)


class CrystalGNN(nn.Module):
    """Gated graph convolutions (``h_i += sum_j sigmoid(W_f z_ij) * softplus(W_s z_ij)``, ``z_ij = [h_i, h_j, e_ij]``)
    and a mean readout over atoms (the target is a per-atom property).

    Parameters
    ----------
    node_dim, edge_dim : input feature sizes.
    hidden : width; layers : number of convolutions; seed : weight initialisation (torch's global RNG untouched).
    """

    def __init__(self, node_dim: int, edge_dim: int, hidden: int = 64, layers: int = 3, seed: Seed = None) -> None:
        super().__init__()
        node_dim = check_scalar(node_dim, "node_dim", "int", min=1)
        edge_dim = check_scalar(edge_dim, "edge_dim", "int", min=1)
        hidden = check_scalar(hidden, "hidden", "int", min=1)
        layers = check_scalar(layers, "layers", "int", min=1)
        with init_rng(seed):
            self.embed = nn.Linear(node_dim, hidden)
            self.edge = nn.Linear(edge_dim, hidden)
            self.filters = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(layers))
            self.cores = nn.ModuleList(nn.Linear(3 * hidden, hidden) for _ in range(layers))
            self.norms = nn.ModuleList(nn.LayerNorm(hidden) for _ in range(layers))
            self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, nodes: torch.Tensor, edge_index: torch.Tensor, edges: torch.Tensor,
                batch: torch.Tensor, n_graphs: int) -> torch.Tensor:
        """One prediction per graph of a disjoint union (``batch`` gives each node's graph)."""
        nodes = check_tensor(nodes, "nodes", ndim=2, floating=True)
        edges = check_tensor(edges, "edges", ndim=2, floating=True)
        edge_index = check_tensor(edge_index, "edge_index", ndim=2)
        batch = check_tensor(batch, "batch", ndim=1)
        n_graphs = check_scalar(n_graphs, "n_graphs", "int", min=1)
        if edge_index.shape[0] != 2 or edge_index.shape[1] != len(edges) or len(batch) != len(nodes):
            raise ValueError(f"edge_index must be (2, E) with E = len(edges) and batch one entry per node, got "
                             f"{tuple(edge_index.shape)}, {len(edges)} edges, {len(batch)} for {len(nodes)} nodes")
        if edge_index.is_floating_point() or batch.is_floating_point():
            raise TypeError("edge_index and batch must be integer tensors")
        if len(nodes) == 0 or (len(batch) and int(batch.max()) >= n_graphs):
            raise ValueError(f"nodes must be non-empty and batch must be < n_graphs, got {n_graphs}")
        h = self.embed(nodes)
        e = self.edge(edges)
        src, dst = edge_index
        for filt, core, norm in zip(self.filters, self.cores, self.norms, strict=True):
            z = torch.cat([h[src], h[dst], e], dim=1)
            msg = torch.sigmoid(filt(z)) * nn.functional.softplus(core(z))
            h = h + norm(torch.zeros_like(h).index_add_(0, src, msg))
        pooled = torch.zeros(n_graphs, h.shape[1], dtype=h.dtype).index_add_(0, batch, h)
        counts = torch.bincount(batch, minlength=n_graphs).to(h.dtype)[:, None]
        return self.head(pooled / counts).squeeze(-1)


def _collate(graphs: Sequence[Graph], idx: np.ndarray, scale: tuple[np.ndarray, ...]) -> tuple:
    nm, ns, em, es = scale
    sizes = np.array([graphs[i].n_nodes for i in idx])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    nodes = np.concatenate([(graphs[i].node_feats - nm) / ns for i in idx])
    edges = np.concatenate([(_edge_inputs(graphs[i]) - em) / es for i in idx])
    index = np.concatenate([graphs[i].edge_index + o for i, o in zip(idx, offsets, strict=True)], axis=1)
    batch = np.repeat(np.arange(len(idx)), sizes)
    return (torch.as_tensor(nodes, dtype=torch.float32), torch.as_tensor(index), torch.as_tensor(edges,
            dtype=torch.float32), torch.as_tensor(batch), len(idx))


def fit_property(train_graphs: Sequence[Graph], y_train: np.ndarray, test_graphs: Sequence[Graph],
                 y_test: np.ndarray, hidden: int = 64, layers: int = 3, epochs: int = 60, batch_size: int = 32,
                 lr: float = 3e-3, seed: Seed = 0) -> tuple[CrystalGNN, float]:
    """Train a :class:`CrystalGNN` (Adam, cosine learning-rate decay, L1 loss on standardised targets) and
    return it with its test mean absolute error (in the units of ``y``)."""
    train_graphs = check_sequence(train_graphs, "train_graphs", min_len=2,
                                  item=lambda g, n: check_instance(g, n, Graph))
    test_graphs = check_sequence(test_graphs, "test_graphs", min_len=1, item=lambda g, n: check_instance(g, n, Graph))
    y_train = check_array(y_train, "y_train", dtype=float, ndim=1)
    y_test = check_array(y_test, "y_test", dtype=float, ndim=1)
    if len(y_train) != len(train_graphs) or len(y_test) != len(test_graphs):
        raise ValueError(f"y_train and y_test must have one value per graph, got {len(y_train)} for "
                         f"{len(train_graphs)} and {len(y_test)} for {len(test_graphs)}")
    epochs = check_scalar(epochs, "epochs", "int", min=1)
    batch_size = check_scalar(batch_size, "batch_size", "int", min=1)
    lr = check_scalar(lr, "lr", "real", min=0.0, inclusive="neither")
    nodes = np.concatenate([g.node_feats for g in train_graphs])
    edges = np.concatenate([_edge_inputs(g) for g in train_graphs])
    if edges.shape[1] == 0 or len(edges) == 0:
        raise ValueError("train_graphs must have edges with at least one feature")
    scale = (nodes.mean(0), nodes.std(0) + 1e-8, edges.mean(0), edges.std(0) + 1e-8)
    mu, sd = y_train.mean(), y_train.std() + 1e-12
    model = CrystalGNN(nodes.shape[1], edges.shape[1], hidden, layers, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    steps = epochs * int(np.ceil(len(train_graphs) / batch_size))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    rng = as_generator(seed)
    target = torch.as_tensor((y_train - mu) / sd, dtype=torch.float32)
    for _ in range(epochs):
        order = rng.permutation(len(train_graphs))
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            loss = (model(*_collate(train_graphs, idx, scale)) - target[idx]).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    with torch.no_grad():
        pred = model(*_collate(test_graphs, np.arange(len(test_graphs)), scale)).double().numpy() * sd + mu
    return model, float(np.abs(pred - y_test).mean())


def amd(crystal: Crystal, k: int = 24) -> np.ndarray:
    """The average minimum distance vector: AMD_j = mean over the cell's atoms of the distance to their j-th
    nearest neighbour (periodic images included), j = 1..k (Widdowson & Kurlin 2022, Definition 3.1)."""
    check_instance(crystal, "crystal", Crystal)
    k = check_scalar(k, "k", "int", min=1, max=500)
    lattice, frac = crystal.lattice, crystal.frac_coords
    radius = 2.0 * (3 * k * abs(np.linalg.det(lattice)) / crystal.n_atoms / (4 * np.pi)) ** (1 / 3) + 1.0
    while True:
        reach = np.ceil(radius * np.linalg.norm(np.linalg.inv(lattice), axis=0)).astype(int)
        shifts = np.array(np.meshgrid(*[np.arange(-r, r + 1) for r in reach], indexing="ij")).reshape(3, -1).T
        d = np.linalg.norm((frac[None, :, None] + shifts[None, None] - frac[:, None, None]) @ lattice, axis=-1)
        d = np.sort(d.reshape(crystal.n_atoms, -1), axis=1)[:, 1:]
        if d.shape[1] >= k and np.all(d[:, k - 1] <= radius):
            return d[:, :k].mean(axis=0)
        radius *= 1.5


def fit_kernel_ridge(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray,
                     seed: Seed = 0) -> float:
    """Test MAE of Gaussian-kernel ridge regression on standardised features; the regularisation and kernel
    width are chosen on a random quarter of the training set held out for validation, then refit on all of it."""
    x_train = check_array(x_train, "x_train", dtype=float, ndim=2, min_len=4)
    x_test = check_array(x_test, "x_test", dtype=float, ndim=2, min_len=1)
    y_train = check_array(y_train, "y_train", dtype=float, ndim=1)
    y_test = check_array(y_test, "y_test", dtype=float, ndim=1)
    if len(x_train) != len(y_train) or len(x_test) != len(y_test) or x_train.shape[1] != x_test.shape[1]:
        raise ValueError("x_train, y_train, x_test and y_test must agree in length and feature count")
    mean, std = x_train.mean(0), x_train.std(0) + 1e-12
    x_train, x_test = (x_train - mean) / std, (x_test - mean) / std
    order = as_generator(seed).permutation(len(x_train))
    val, fit = order[: len(order) // 4], order[len(order) // 4:]

    def predict(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, alpha: float, gamma: float) -> np.ndarray:
        sq = lambda u, v: ((u[:, None, :] - v[None, :, :]) ** 2).sum(-1) / u.shape[1]  # noqa: E731
        weights = np.linalg.solve(np.exp(-gamma * sq(xa, xa)) + alpha * np.eye(len(xa)), ya - ya.mean())
        return np.exp(-gamma * sq(xb, xa)) @ weights + ya.mean()

    grid = [(a, g) for a in (1e-4, 1e-3, 1e-2, 1e-1) for g in (0.1, 0.3, 1.0, 3.0, 10.0)]
    scores = [np.abs(predict(x_train[fit], y_train[fit], x_train[val], a, g) - y_train[val]).mean() for a, g in grid]
    alpha, gamma = grid[int(np.argmin(scores))]
    return float(np.abs(predict(x_train, y_train, x_test, alpha, gamma) - y_test).mean())
